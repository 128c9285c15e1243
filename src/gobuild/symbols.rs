//! Symbols: the functions an advisory names (`Client.Do` in `net/http`),
//! asked for by package, and what a function table said of them
//! ([`super::names`] reads each name as its symbol). Only the symbols
//! asked for are kept: a binary's table names tens of thousands of
//! functions, an advisory database a few thousand.

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

#[cfg(test)]
mod tests {
    use super::Wanted;

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
