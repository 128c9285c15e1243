//! The shape of the code: no file of `src/` imports, at any depth, a file
//! that imports it back, and no file of `src/` is over 500 lines.
//!
//! A file's imports are the `crate::…`, `super::…` and `self::…` paths it
//! names, and the bare paths that start with one of its own child modules
//! (`advisories::AdvisoryState` in a file that says `mod advisories;`), in
//! `use` items (braces expanded) and anywhere in its code, each resolved to
//! the file of the longest module prefix it names. Paths inside an inline
//! module (`mod tests { … }`) resolve from that module.
//!
//! A folder's front file (`mirror/mod.rs`) and the files below it may name
//! each other: the front holds the room's shared state and its files
//! extend it. So two checks: with the front's paths into its own folder
//! left out, no cycle at all; with them in, no cycle that leaves a folder,
//! that is, every group of files that import each other lies below one of
//! them (a cycle from `mirror/mod.rs` through its own files and out to
//! `releases/` and back is one).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines a file of `src/` may have.
const MAX_LINES: usize = 500;

/// A module, by its path below the crate (`["mirror", "archive"]`).
type ModulePath = Vec<String>;
/// Which files each file imports.
type Edges = BTreeMap<ModulePath, BTreeSet<ModulePath>>;
/// Each module's file.
type Files = BTreeMap<ModulePath, PathBuf>;

/// Every `.rs` file under `src/`, by module path (`["mirror", "archive"]`).
fn modules() -> Files {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            match parts.last().map(String::as_str) {
                Some("lib") if parts.len() == 1 => parts.clear(),
                Some("main") if parts.len() == 1 => parts = vec!["<main>".into()],
                Some("mod") => {
                    parts.pop();
                }
                _ => {}
            }
            out.insert(parts, path);
        }
    }
    out
}

/// The text without comments (line comments, doc comments included) and
/// without the contents of string literals, so that neither names a path.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => {
                    in_string = false;
                    out.push('"');
                }
                '\n' => out.push('\n'),
                _ => {}
            }
            continue;
        }
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                in_string = true;
                out.push('"');
            }
            // A character literal such as '"' or '{' is not code either.
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') && rest.len() == 3 && rest.ends_with('\'') {
                    chars.nth(2);
                    out.push_str("' '");
                } else if rest.len() >= 2 && rest.chars().nth(1) == Some('\'') {
                    chars.nth(1);
                    out.push_str("' '");
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The inline modules of a file: where each body starts and ends, and its
/// name.
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = code[at..].find("mod ") {
        let start = at + found;
        at = start + 4;
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let rest = &code[at..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let after = rest[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = at + name.len() + (rest.len() - name.len() - after.len());
        let mut depth = 0usize;
        for (i, b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        out.push((open, i, name.clone()));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into whole paths.
fn expand(prefix: &[String], tree: &str) -> Vec<Vec<String>> {
    let mut parts = Vec::new();
    let (mut depth, mut current) = (0usize, String::new());
    for c in tree.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    let mut out = Vec::new();
    for part in parts {
        let part = part.split_whitespace().collect::<Vec<_>>().join(" ");
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if let Some(open) = part.find('{') {
            let head: Vec<String> = part[..open]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            let inner = part[open + 1..].trim_end().trim_end_matches('}');
            let mut with = prefix.to_vec();
            with.extend(head);
            out.extend(expand(&with, inner));
        } else {
            let path = part.split(" as ").next().unwrap_or(part);
            let mut with = prefix.to_vec();
            with.extend(
                path.split("::")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            );
            out.push(with);
        }
    }
    out
}

/// The paths a file names, each with the inline modules it stands in.
fn paths_named(code: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let inline = inline_modules(code);
    let within = |at: usize| -> Vec<String> {
        inline
            .iter()
            .filter(|(start, end, _)| *start <= at && at <= *end)
            .map(|(_, _, name)| name.clone())
            .collect()
    };
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let word_start =
        |i: usize| i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
    // `use` items.
    let mut at = 0;
    while let Some(found) = code[at..].find("use ") {
        let start = at + found;
        at = start + 4;
        if !word_start(start) {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            break;
        };
        for path in expand(&[], &code[at..at + end]) {
            out.push((within(start), path));
        }
    }
    // Paths anywhere in the code.
    for root in ["crate::", "super::", "self::"] {
        let mut at = 0;
        while let Some(found) = code[at..].find(root) {
            let start = at + found;
            at = start + root.len();
            if !word_start(start) {
                continue;
            }
            let path: String = code[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let parts: Vec<String> = path
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            out.push((within(start), parts));
        }
    }
    out
}

/// The child modules a file declares in files of their own (`mod x;`,
/// `pub mod x;`, `pub(crate) mod x;`).
fn child_modules(code: &str) -> BTreeSet<String> {
    code.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub(crate) ")
                .or_else(|| line.strip_prefix("pub(super) "))
                .or_else(|| line.strip_prefix("pub "))
                .unwrap_or(line);
            let name = rest.strip_prefix("mod ")?.strip_suffix(';')?.trim();
            (!name.is_empty()).then(|| name.to_owned())
        })
        .collect()
}

/// The bare paths a file names that start with one of `children`, at a
/// word's start and not after `::` (outside `use` items, which
/// [`paths_named`] reads whole).
fn bare_paths(code: &str, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for child in children {
        let head = format!("{child}::");
        let mut at = 0;
        while let Some(found) = code[at..].find(&head) {
            let start = at + found;
            at = start + head.len();
            let before = start.checked_sub(1).map(|i| bytes[i]);
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') {
                continue;
            }
            let path: String = code[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            out.push(
                path.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect(),
            );
        }
    }
    out
}

/// Which files each file imports: without the front files' paths into
/// their own folders, and with them.
fn imports() -> (Edges, Edges, Files) {
    let modules = modules();
    let mut edges = Edges::new();
    let mut all = Edges::new();
    for (module, file) in &modules {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let children = child_modules(&code);
        let named = paths_named(&code).into_iter().chain(
            bare_paths(&code, &children)
                .into_iter()
                .map(|p| (Vec::new(), p)),
        );
        for (inline, path) in named {
            let Some(first) = path.first() else { continue };
            let mut here = module.clone();
            here.extend(inline.iter().cloned());
            let own = inline.is_empty() && children.contains(first);
            let mut full = match first.as_str() {
                "crate" => Vec::new(),
                "self" | "super" => here.clone(),
                _ if own => module.clone(),
                _ => continue,
            };
            let mut rest = &path[..];
            if first == "crate" || first == "self" {
                rest = &path[1..];
            }
            while let Some(("super", tail)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
                full.pop();
                rest = tail;
            }
            full.extend(rest.iter().cloned());
            let target = (0..=full.len())
                .rev()
                .map(|n| full[..n].to_vec())
                .find(|prefix| modules.contains_key(prefix));
            if let Some(target) = target.filter(|t| t != module) {
                all.entry(module.clone())
                    .or_default()
                    .insert(target.clone());
                if !own {
                    edges.entry(module.clone()).or_default().insert(target);
                }
            }
        }
    }
    (edges, all, modules)
}

/// The groups of files that import each other (strongly connected, more
/// than one file), by Tarjan's algorithm.
fn cycles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<Vec<String>, usize>,
        low: BTreeMap<Vec<String>, usize>,
        stack: Vec<Vec<String>>,
        on_stack: BTreeSet<Vec<String>>,
        found: Vec<Vec<Vec<String>>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, v: &Vec<String>) {
            let n = self.index.len();
            self.index.insert(v.clone(), n);
            self.low.insert(v.clone(), n);
            self.stack.push(v.clone());
            self.on_stack.insert(v.clone());
            for w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v.clone(), low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v.clone(), low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(&w);
                    let done = w == *v;
                    group.push(w);
                    if done {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

fn shown(module: &[String], modules: &BTreeMap<Vec<String>, PathBuf>) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"));
    modules[module]
        .strip_prefix(src)
        .unwrap()
        .display()
        .to_string()
}

/// Each cycle as lines naming what each of its files imports of it.
fn report(found: &[Vec<Vec<String>>], edges: &Edges, modules: &Files) -> Vec<String> {
    found
        .iter()
        .map(|group| {
            let members: BTreeSet<&Vec<String>> = group.iter().collect();
            let lines: Vec<String> = group
                .iter()
                .map(|m| {
                    let into: Vec<String> = edges[m]
                        .iter()
                        .filter(|t| members.contains(t))
                        .map(|t| shown(t, modules))
                        .collect();
                    format!("  {} imports {}", shown(m, modules), into.join(", "))
                })
                .collect();
            format!("a cycle of {} files:\n{}", group.len(), lines.join("\n"))
        })
        .collect()
}

/// The cycles that leave a folder: those no member of which has every
/// other below it.
fn leaving(found: Vec<Vec<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    found
        .into_iter()
        .filter(|group| {
            !group
                .iter()
                .any(|front| group.iter().all(|m| m.starts_with(front)))
        })
        .collect()
}

#[test]
fn no_cycle_leaves_a_folder_through_its_front_file() {
    let (_, all, modules) = imports();
    let found = leaving(cycles(&all));
    let report = report(&found, &all, &modules);
    assert!(report.is_empty(), "{}", report.join("\n"));
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let (edges, _, modules) = imports();
    assert!(
        edges.values().map(BTreeSet::len).sum::<usize>() > 100,
        "the import reader found too few imports to be reading the code"
    );
    let found = cycles(&edges);
    let report = report(&found, &edges, &modules);
    assert!(report.is_empty(), "{}", report.join("\n"));
}

#[test]
fn the_cycle_reader_sees_a_cycle_where_there_is_one() {
    let code = code_of(
        "use crate::a::{b::C, d};\n// use crate::ignored;\nlet s = \"crate::not::code\";\nmod tests {\n    use super::*;\n    fn f() { crate::e::f(); }\n}\n",
    );
    let named: Vec<Vec<String>> = paths_named(&code).into_iter().map(|(_, p)| p).collect();
    let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert!(
        named.contains(&strings(&["crate", "a", "b", "C"])),
        "{named:?}"
    );
    assert!(named.contains(&strings(&["crate", "a", "d"])), "{named:?}");
    assert!(named.contains(&strings(&["crate", "e", "f"])), "{named:?}");
    assert!(!named.iter().any(|p| p.contains(&"ignored".to_owned())));
    assert!(!named.iter().any(|p| p.contains(&"not".to_owned())));
    let (inline, _) = paths_named(&code)
        .into_iter()
        .find(|(_, p)| p.first().map(String::as_str) == Some("super"))
        .unwrap();
    assert_eq!(inline, ["tests"]);
    let edge = |a: &[&str], b: &[&str]| (strings(a), BTreeSet::from([strings(b)]));
    let looped: BTreeMap<_, _> = [
        edge(&["a"], &["b"]),
        edge(&["b"], &["c"]),
        edge(&["c"], &["a"]),
    ]
    .into_iter()
    .collect();
    assert_eq!(cycles(&looped).len(), 1);
    let chain: BTreeMap<_, _> = [edge(&["a"], &["b"]), edge(&["b"], &["c"])]
        .into_iter()
        .collect();
    assert!(cycles(&chain).is_empty());
    // A front file and its own files: within the folder; out of it and
    // back: leaving it.
    let inside: BTreeMap<_, _> = [edge(&["m"], &["m", "a"]), edge(&["m", "a"], &["m"])]
        .into_iter()
        .collect();
    assert!(leaving(cycles(&inside)).is_empty());
    let out_and_back: BTreeMap<_, _> = [
        edge(&["m"], &["m", "a"]),
        edge(&["m", "a"], &["r", "b"]),
        edge(&["r", "b"], &["m"]),
    ]
    .into_iter()
    .collect();
    assert_eq!(leaving(cycles(&out_and_back)).len(), 1);
    // Bare paths into a file's own modules, not after `::`.
    let code = code_of("mod advisories;\npub mod census;\nstruct S { a: advisories::AdvisoryState, b: crate::x::census::C }\n");
    let children = child_modules(&code);
    assert_eq!(
        children,
        BTreeSet::from(["advisories".to_owned(), "census".to_owned()])
    );
    assert_eq!(
        bare_paths(&code, &children),
        [strings(&["advisories", "AdvisoryState"])]
    );
}
#[test]
fn no_source_file_is_over_500_lines() {
    let modules = modules();
    let long: Vec<String> = modules
        .iter()
        .filter_map(|(m, file)| {
            let lines = std::fs::read_to_string(file).unwrap().lines().count();
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", shown(m, &modules)))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files of src/ over {MAX_LINES} lines; split them along their jobs: {}",
        long.join(", ")
    );
}
