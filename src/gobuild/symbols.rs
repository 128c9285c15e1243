//! Symbols: the functions an advisory names (`Client.Do` in `net/http`),
//! looked for among a function table's names as Go's own vulnerability
//! checker names them (the receiver's `(*T)` read as `T`, type arguments
//! left out). Only the symbols asked for are kept: a binary's table names
//! tens of thousands of functions, an advisory database a few thousand.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::verify::Sha256;

/// The symbols to look for, by package import path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wanted {
    /// By package: the symbols, and their digest ([`Wanted::digest`]).
    by_package: BTreeMap<String, (BTreeSet<String>, String)>,
}

impl Wanted {
    /// Asks for `symbols` of `package` too. A symbol written with the
    /// package's own name before it (`regexp.Compile` of `regexp`, as some
    /// entries write it) is asked for without it as well.
    pub fn ask(&mut self, package: &str, symbols: &[String]) {
        if symbols.is_empty() {
            return;
        }
        let (asked, digest) = self.by_package.entry(package.to_string()).or_default();
        for symbol in symbols {
            asked.insert(symbol.clone());
            if let Some(bare) = without_package_name(package, symbol) {
                asked.insert(bare.to_string());
            }
        }
        *digest = digest_of(asked);
    }

    /// The symbols asked for of `package`, where any are.
    pub fn of(&self, package: &str) -> Option<&BTreeSet<String>> {
        self.by_package.get(package).map(|(asked, _)| asked)
    }

    /// Whether nothing is asked for.
    pub fn is_empty(&self) -> bool {
        self.by_package.is_empty()
    }

    /// The packages some symbols are asked for of, in order.
    pub fn packages(&self) -> impl Iterator<Item = &str> {
        self.by_package.keys().map(String::as_str)
    }

    /// What is asked of `package`, as a digest (the SHA-256 of the sorted
    /// symbols, one per line, in hex): a record keeps it beside what it
    /// found, so that a later database that asks for other symbols of the
    /// package is told from this one.
    pub fn digest(&self, package: &str) -> Option<&str> {
        self.by_package.get(package).map(|(_, d)| d.as_str())
    }
}

/// `symbol` without the last element of `package` and a dot before it,
/// where it starts so (`Compile` for `regexp.Compile` of `regexp`).
pub fn without_package_name<'s>(package: &str, symbol: &'s str) -> Option<&'s str> {
    let name = package.rsplit('/').next()?;
    symbol
        .strip_prefix(name)?
        .strip_prefix('.')
        .filter(|rest| !rest.is_empty())
}

/// The digest of a set of symbols ([`Wanted::digest`]).
fn digest_of(symbols: &BTreeSet<String>) -> String {
    let mut hash = Sha256::new();
    for s in symbols {
        hash.update(s.as_bytes());
        hash.update(b"\n");
    }
    hex::encode(hash.finalize())
}

/// What a function table said of the symbols asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbols {
    /// For each package held that symbols were asked for of.
    pub by_package: BTreeMap<String, Looked>,
    /// Whether the table's names include the functions inlined into
    /// others (the layouts of Go 1.16 on list every name in one block,
    /// inlined ones too; before, names are reached through each
    /// function's own record, and a function inlined everywhere it is
    /// called is in none): only then does a symbol not found mean that
    /// the binary holds no code of it.
    pub inlined_listed: bool,
}

/// The symbols of one package looked for, and found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Looked {
    /// The digest of those looked for ([`Wanted::digest`]).
    pub asked: String,
    /// Those found.
    pub found: BTreeSet<String>,
}

/// A function name as a package and a symbol, as Go's vulnerability
/// checker reads it: type arguments (`[...]`) left out; `Recv.Name` for
/// a method, the receiver's `(*` and `)` trimmed off (`net/http.(*Client).Do`
/// is `Client.Do` in `net/http`); the name itself for a function. The
/// package is [`super::names::package_of`]'s. Closures and the like
/// (`F.func1`) read as symbols no advisory names.
pub(super) fn symbol_of(name: &str) -> Option<(String, String)> {
    let package = super::names::package_of(name)?;
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

#[cfg(test)]
mod tests {
    use super::{symbol_of, Wanted};

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
    fn a_digest_tells_what_was_asked_of_a_package() {
        let mut a = Wanted::default();
        a.ask("net/http", &["Client.Do".into()]);
        let mut b = a.clone();
        b.ask("net/http", &["Client.Do".into()]);
        assert_eq!(a.digest("net/http"), b.digest("net/http"));
        b.ask("net/http", &["Server.Serve".into()]);
        assert_ne!(a.digest("net/http"), b.digest("net/http"));
        b.ask("crypto/tls", &[]);
        assert_eq!(b.of("crypto/tls"), None);
        assert_eq!(a.digest("crypto/tls"), None);
    }
}
