//! Function names read as the packages they belong to: the import path
//! a name starts with, the compiler's and the linker's own names passed
//! over, and the set of packages a table names, bounded in count and in
//! bytes; and as the symbols advisories name, as Go's own vulnerability
//! checker names them (the receiver's `(*T)` read as `T`, type arguments
//! left out), kept where asked for.

use std::collections::{BTreeMap, BTreeSet};

use super::symbols::Wanted;
use super::GoBuildError;

/// The most distinct packages one binary is read to hold (a large
/// provider holds a few thousand).
pub const MAX_PACKAGES: usize = 1 << 16;

/// The most bytes of package paths kept for one binary.
pub const MAX_PACKAGE_BYTES: usize = 8 << 20;

/// The packages read so far, bounded in count and in bytes, and the
/// symbols asked for found among the names.
#[derive(Debug)]
pub(super) struct Packages<'w> {
    /// The import paths.
    pub(super) set: BTreeSet<String>,
    /// Their bytes, added up.
    bytes: usize,
    /// The symbols to look for.
    wanted: &'w Wanted,
    /// Those found, by package: a subset of `wanted`, so bounded by it.
    pub(super) found: BTreeMap<String, BTreeSet<String>>,
}

impl<'w> Packages<'w> {
    /// None read yet; `wanted` says which symbols to look for.
    pub(super) fn new(wanted: &'w Wanted) -> Packages<'w> {
        Packages {
            set: BTreeSet::new(),
            bytes: 0,
            wanted,
            found: BTreeMap::new(),
        }
    }

    /// Notes the package of one function name; an error once more than
    /// [`MAX_PACKAGES`] packages or [`MAX_PACKAGE_BYTES`] bytes of them
    /// have been read. Whether symbols are asked for of its package.
    pub(super) fn add(&mut self, name: &[u8]) -> Result<bool, GoBuildError> {
        let Ok(name) = std::str::from_utf8(name) else {
            return Ok(false);
        };
        let Some(package) = package_of(name) else {
            return Ok(false);
        };
        let wanted = self.wanted.of(&package).is_some();
        if self.set.contains(package.as_str()) {
            return Ok(wanted);
        }
        self.bytes += package.len();
        if self.set.len() >= MAX_PACKAGES || self.bytes > MAX_PACKAGE_BYTES {
            return Err(GoBuildError::Damaged(format!(
                "this binary's function table names more than {MAX_PACKAGES} packages or \
                 {MAX_PACKAGE_BYTES} bytes of package paths"
            )));
        }
        self.set.insert(package);
        Ok(wanted)
    }

    /// Notes the symbol `name` is, where it is one asked for.
    fn look_up(&mut self, name: &[u8]) {
        let Some((package, symbol)) = std::str::from_utf8(name).ok().and_then(symbol_of) else {
            return;
        };
        if self
            .wanted
            .of(&package)
            .is_some_and(|s| s.contains(&symbol))
        {
            self.found.entry(package).or_default().insert(symbol);
        }
    }
}

/// Names noted one after another. A package's functions come together in
/// the table: a name in the package just noted costs one comparison, and
/// a symbol lookup where symbols of that package are asked for.
#[derive(Debug, Default)]
pub(super) struct Noted {
    /// The package part of the last name noted, as written.
    last: Vec<u8>,
    /// Whether symbols of it are asked for.
    last_wanted: bool,
}

impl Noted {
    /// Notes the package of `name` in `packages`, and its symbol where
    /// it is asked for.
    pub(super) fn note(
        &mut self,
        packages: &mut Packages<'_>,
        name: &[u8],
    ) -> Result<(), GoBuildError> {
        if !self.in_last(name) {
            self.last_wanted = packages.add(name)?;
            self.last.clear();
            if let Some(len) = std::str::from_utf8(name).ok().and_then(raw_package_len) {
                self.last.extend_from_slice(&name[..len]);
            }
        }
        if self.last_wanted {
            packages.look_up(name);
        }
        Ok(())
    }

    /// Whether `name`'s package is the last one noted, as [`package_of`]
    /// finds it: the name starts with it and a `.`, and no `/` follows
    /// before any type arguments or receiver.
    fn in_last(&self, name: &[u8]) -> bool {
        let last = self.last.as_slice();
        if last.is_empty() || name.len() <= last.len() || !name.starts_with(last) {
            return false;
        }
        let rest = &name[last.len()..];
        if rest[0] != b'.' {
            return false;
        }
        let head = rest
            .split(|b| *b == b'[' || *b == b'(')
            .next()
            .unwrap_or(rest);
        !head.contains(&b'/')
    }
}

/// The length of the package part of a name, as written (before `%2e` is
/// read back): [`package_of`]'s cut, whether or not it names a package.
fn raw_package_len(name: &str) -> Option<usize> {
    let head = name.split(['[', '(']).next()?;
    let last_slash = head.rfind('/').map_or(0, |i| i + 1);
    Some(head[last_slash..].find('.')? + last_slash)
}

/// The import path a function name starts with: up to the first `.`
/// after its last `/`, with the `%2e` the linker writes for a dot in the
/// path's last element read back. `None` for the compiler's and the
/// linker's own names (`type:.eq.…`, `go:buildid`, and before Go 1.20
/// `type..eq.…` and `go.…`) and names without a package. A name that
/// starts with `go.` is a package's where what it starts with is an
/// import path with a `/` (`go.etcd.io/etcd/pkg/tlsutil.NewCert`): the
/// compiler's own `go.` names are no import path.
pub(super) fn package_of(name: &str) -> Option<String> {
    if name.starts_with("type:") || name.starts_with("type..") || name.starts_with("go:") {
        return None;
    }
    if name.starts_with("_cgo") {
        return None;
    }
    // A generic instantiation's type arguments, and a method's receiver
    // and what follows it (the package of an embedded interface, in a
    // promoted method's name), may hold paths of their own.
    let name = name.split(['[', '(']).next()?;
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let dot = name[last_slash..].find('.')? + last_slash;
    let package = &name[..dot];
    if package.is_empty() || (name.starts_with("go.") && !is_import_path(package)) {
        return None;
    }
    Some(package.replace("%2e", "."))
}

/// A function name as a package and a symbol, as Go's vulnerability
/// checker reads it: type arguments (`[...]`) left out; `Recv.Name` for
/// a method, the receiver's `(*` and `)` trimmed off (`net/http.(*Client).Do`
/// is `Client.Do` in `net/http`); the name itself for a function. The
/// package is [`package_of`]'s. Closures and the like
/// (`F.func1`) read as symbols no advisory names.
pub(super) fn symbol_of(name: &str) -> Option<(String, String)> {
    let package = package_of(name)?;
    let plain = without_type_arguments(name);
    // The package as written (`%2e` and all) is where the name starts.
    let head = plain.split(['(']).next().unwrap_or(&plain);
    let last_slash = head.rfind('/').map_or(0, |i| i + 1);
    let dot = head[last_slash..].find('.')? + last_slash;
    let rest = plain.get(dot + 1..)?;
    let symbol = match rest.rfind('.') {
        Some(r) => {
            let receiver = &rest[..r];
            let receiver = if receiver.starts_with("(*") {
                receiver.trim_matches(|c| matches!(c, '(' | '*' | ')'))
            } else {
                receiver
            };
            format!("{receiver}.{}", &rest[r + 1..])
        }
        None => rest.to_string(),
    };
    Some((package, symbol))
}

/// `name` without its first `[` to its last `]`, as Go's symbol table
/// reader leaves out type arguments.
fn without_type_arguments(name: &str) -> std::borrow::Cow<'_, str> {
    match (name.find('['), name.rfind(']')) {
        (Some(start), Some(end)) if start < end => {
            format!("{}{}", &name[..start], &name[end + 1..]).into()
        }
        _ => name.into(),
    }
}

/// Whether `path` reads as a module's import path: elements of letters,
/// digits and `-._~+!%` joined by `/`, at least two of them, the first
/// with a dot (a domain, as module paths start).
fn is_import_path(path: &str) -> bool {
    let mut elements = path.split('/');
    let first = elements.next().unwrap_or_default();
    let allowed = |e: &str| {
        !e.is_empty()
            && e.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~+!%".contains(&b))
    };
    let mut rest = elements.peekable();
    first.contains('.') && allowed(first) && rest.peek().is_some() && rest.all(allowed)
}

#[cfg(test)]
mod tests {
    use super::{package_of, symbol_of, Noted, Packages};
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn names_noted_in_turn_give_each_names_package() {
        // Runs of one package, broken by names whose package starts the
        // same way, is longer, or is none; the oracle is each name's own
        // package.
        let names = [
            "a/b.F",
            "a/b.(*T).M",
            "a/b.F[go.shape.*net/http.Request]",
            "a/b.x/y.G",
            "a/b.x/y.H",
            "a/b.(*T).x/y.M",
            "a/bc.F",
            "a/b%2ec.F",
            "type:.eq.a/b.T",
            "a/b.G",
            "a.F",
            "a.b/c.F",
            "runtime.main",
            "go:buildid",
            "runtime.gopark",
            "go.buildid",
            "go.etcd.io/etcd/pkg/tlsutil.NewCert",
            "go.etcd.io/etcd/pkg/tlsutil.(*T).M",
            "go.foo.Bar",
        ];
        let mut noted = Noted::default();
        let wanted = super::Wanted::default();
        let mut packages = Packages::new(&wanted);
        for name in names {
            noted.note(&mut packages, name.as_bytes()).unwrap();
        }
        let each: BTreeSet<String> = names.iter().filter_map(|n| package_of(n)).collect();
        assert_eq!(packages.set, each);
        assert!(packages.set.contains("go.etcd.io/etcd/pkg/tlsutil"));
        assert!(packages.set.contains("a/b.x/y") && packages.set.contains("a/b.c"));
    }

    #[test]
    fn a_function_name_reads_as_its_package_and_symbol() {
        for (name, want) in [
            ("net/http.(*Client).Do", Some(("net/http", "Client.Do"))),
            ("net/http.Header.Get", Some(("net/http", "Header.Get"))),
            (
                "net/http.ListenAndServe",
                Some(("net/http", "ListenAndServe")),
            ),
            (
                "golang.org/x/net/http2.(*Framer).ReadFrame",
                Some(("golang.org/x/net/http2", "Framer.ReadFrame")),
            ),
            (
                "gopkg.in/yaml%2ev3.(*parser).parse",
                Some(("gopkg.in/yaml.v3", "parser.parse")),
            ),
            (
                "slices.SortFunc[go.shape.[]github.com/x/y.T,go.shape.int]",
                Some(("slices", "SortFunc")),
            ),
            (
                "github.com/a/b.(*Set[go.shape.string]).Add",
                Some(("github.com/a/b", "Set.Add")),
            ),
            (
                "go.etcd.io/etcd/pkg/tlsutil.NewCert",
                Some(("go.etcd.io/etcd/pkg/tlsutil", "NewCert")),
            ),
            // A closure is no symbol an advisory names.
            (
                "net/http.(*Client).Do.func1",
                Some(("net/http", "Client).Do.func1")),
            ),
            ("main.main", Some(("main", "main"))),
            ("type:.eq.net/http.Header", None),
            ("go:buildid", None),
        ] {
            let got = symbol_of(name);
            let got = got.as_ref().map(|(p, s)| (p.as_str(), s.as_str()));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn the_symbols_asked_for_are_found_in_runs_of_a_package_and_across() {
        // Names of one package in a run (noted by the one comparison),
        // broken by others; the oracle is each name's own symbol.
        let names = [
            "net/http.(*Client).Do",
            "net/http.(*Client).Do.func1",
            "net/http.(*Server).Serve",
            "net/http.ListenAndServe",
            "net/http/httputil.(*ReverseProxy).ServeHTTP",
            "net/http.Header.Get",
            "regexp.Compile",
            "regexp.MustCompile",
            "go.etcd.io/etcd/pkg/tlsutil.NewCert",
            "main.main",
        ];
        let mut wanted = super::Wanted::default();
        wanted.ask(
            "net/http",
            &[
                "Client.Do".into(),
                "Header.Get".into(),
                "Transport.RoundTrip".into(),
            ],
        );
        wanted.ask("regexp", &["regexp.Compile".into()]);
        wanted.ask("go.etcd.io/etcd/pkg/tlsutil", &["NewCert".into()]);
        wanted.ask("crypto/tls", &["Conn.Handshake".into()]);
        let mut noted = Noted::default();
        let mut packages = Packages::new(&wanted);
        for name in names {
            noted.note(&mut packages, name.as_bytes()).unwrap();
        }
        let mut each: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (package, symbol) in names.iter().filter_map(|n| symbol_of(n)) {
            if wanted.of(&package).is_some_and(|s| s.contains(&symbol)) {
                each.entry(package).or_default().insert(symbol);
            }
        }
        assert_eq!(packages.found, each);
        assert_eq!(
            packages.found["net/http"],
            BTreeSet::from(["Client.Do".to_string(), "Header.Get".to_string()])
        );
        assert!(packages.found["regexp"].contains("Compile"));
        assert!(!packages.found.contains_key("crypto/tls"));
    }

    #[test]
    fn a_function_names_its_package() {
        for (name, package) in [
            (
                "golang.org/x/net/http2.(*Framer).ReadFrame",
                Some("golang.org/x/net/http2"),
            ),
            ("net/http.(*Server).Serve", Some("net/http")),
            ("runtime.gcWriteBarrier", Some("runtime")),
            ("main.main", Some("main")),
            (
                "gopkg.in/yaml%2ev3.(*parser).parse",
                Some("gopkg.in/yaml.v3"),
            ),
            (
                "slices.SortFunc[go.shape.[]github.com/x/y.T,go.shape.int]",
                Some("slices"),
            ),
            ("github.com/a/b.Map[...].func1", Some("github.com/a/b")),
            (
                "go.etcd.io/etcd/clientv3.(*retryOption).google.golang.org/grpc.applyCallOption",
                Some("go.etcd.io/etcd/clientv3"),
            ),
            ("type:.eq.github.com/a/b.T", None),
            ("type..eq.[2]interface {}", None),
            ("go:buildid", None),
            ("go.shape.int", None),
            (
                "go.etcd.io/etcd/pkg/tlsutil.NewCert",
                Some("go.etcd.io/etcd/pkg/tlsutil"),
            ),
            ("go.uber.org/zap.(*Logger).Info", Some("go.uber.org/zap")),
            (
                "go.opentelemetry.io/otel/trace.SpanFromContext",
                Some("go.opentelemetry.io/otel/trace"),
            ),
            ("go.buildid", None),
            ("go.(*struct { sync.Mutex; x int }).Lock", None),
            ("go.itab.*net/http.conn,io.Reader", None),
            ("_cgo_init", None),
            ("noDotHere", None),
        ] {
            assert_eq!(package_of(name).as_deref(), package, "{name}");
        }
    }
}
