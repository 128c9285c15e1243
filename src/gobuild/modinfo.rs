//! The module information lines a Go toolchain writes into a program:
//! `path`, `mod` (the main module), `dep` (each dependency), `=>` (a
//! replacement of the module on the line before) and `build` (a build
//! setting, `key=value`, either side quoted as a Go string where needed).
//! Read as Go's own `runtime/debug` does: a line without its newline is not
//! read, and lines of kinds written by later toolchains are passed over.

use serde::{Deserialize, Serialize};

use super::GoBuildError;

/// How a Go program was built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// The toolchain's version, as it names itself (`go1.21.3`,
    /// `go1.16.4`, `devel go1.23-abc`).
    pub go_version: String,
    /// The main package's import path; empty where the toolchain wrote
    /// none.
    pub path: String,
    /// The main module; `None` for a program built outside module mode.
    pub main: Option<Module>,
    /// Every dependency module, in the order written.
    pub deps: Vec<Module>,
    /// Build settings (`GOOS`, `-ldflags`, `vcs.revision`, …), in order.
    pub settings: Vec<Setting>,
}

/// A module and its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    /// The module path.
    pub path: String,
    /// Its version (`v1.2.3`, a pseudo-version, `(devel)` for a main
    /// module built from a checkout; empty for a replacement by a
    /// directory).
    pub version: String,
    /// Its `h1:` checksum; empty where none was written.
    pub sum: String,
    /// The module that replaced it in the build, if one did.
    pub replace: Option<Box<Module>>,
}

/// One build setting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    /// Its key.
    pub key: String,
    /// Its value.
    pub value: String,
}

/// Which module a `=>` line replaces: the main module or the last
/// dependency, and only on the line right after it.
#[derive(Clone, Copy)]
enum Last {
    None,
    Main,
    Dep,
}

/// Reads the module information of a program built with `go_version`.
pub(super) fn parse(go_version: String, text: &str) -> Result<BuildInfo, GoBuildError> {
    let mut info = BuildInfo {
        go_version,
        path: String::new(),
        main: None,
        deps: Vec::new(),
        settings: Vec::new(),
    };
    let mut last = Last::None;
    let mut rest = text;
    let mut number = 0;
    while let Some((line, after)) = rest.split_once('\n') {
        rest = after;
        number += 1;
        let bad = |reason: &str| GoBuildError::ModInfo {
            line: number,
            reason: reason.to_string(),
        };
        if let Some(p) = line.strip_prefix("path\t") {
            info.path = p.to_string();
        } else if let Some(m) = line.strip_prefix("mod\t") {
            info.main = Some(module(m).map_err(|r| bad(&r))?);
            last = Last::Main;
            continue;
        } else if let Some(m) = line.strip_prefix("dep\t") {
            info.deps.push(module(m).map_err(|r| bad(&r))?);
            last = Last::Dep;
            continue;
        } else if let Some(r) = line.strip_prefix("=>\t") {
            let fields: Vec<&str> = r.split('\t').collect();
            let [path, version, sum] = fields[..] else {
                return Err(bad(&format!(
                    "a replacement has {} columns (3 expected)",
                    fields.len()
                )));
            };
            let replaced = match last {
                Last::Main => info.main.as_mut(),
                Last::Dep => info.deps.last_mut(),
                Last::None => None,
            }
            .ok_or_else(|| bad("a replacement with no module on the line before"))?;
            replaced.replace = Some(Box::new(Module {
                path: path.to_string(),
                version: version.to_string(),
                sum: sum.to_string(),
                replace: None,
            }));
        } else if let Some(kv) = line.strip_prefix("build\t") {
            info.settings.push(setting(kv).map_err(|r| bad(&r))?);
        }
        last = Last::None;
    }
    Ok(info)
}

/// A `mod` or `dep` line's columns: path, version and, optionally, sum.
fn module(columns: &str) -> Result<Module, String> {
    let fields: Vec<&str> = columns.split('\t').collect();
    let (path, version, sum) = match fields[..] {
        [path, version] => (path, version, ""),
        [path, version, sum] => (path, version, sum),
        _ => {
            return Err(format!(
                "a module line has {} columns (2 or 3 expected)",
                fields.len()
            ))
        }
    };
    Ok(Module {
        path: path.to_string(),
        version: version.to_string(),
        sum: sum.to_string(),
        replace: None,
    })
}

/// A `build` line's `key=value`.
fn setting(kv: &str) -> Result<Setting, String> {
    let (key, raw) = match kv.as_bytes().first() {
        None => return Err("a build line without '='".to_string()),
        Some(b'=') => return Err("a build line without a key".to_string()),
        Some(b'"' | b'`') => {
            let end = quoted_len(kv).ok_or("a build line's quoted key does not end")?;
            let (quoted, after) = kv.split_at(end);
            let raw = after
                .strip_prefix('=')
                .ok_or("a build line's quoted key is not followed by '='")?;
            (
                unquote(quoted).ok_or("a build line's key is not a Go string")?,
                raw,
            )
        }
        Some(_) => {
            let (key, raw) = kv
                .split_once('=')
                .ok_or("a build line without '=' after its key")?;
            (key.to_string(), raw)
        }
    };
    let value = match raw.as_bytes().first() {
        Some(b'"' | b'`') => unquote(raw).ok_or("a build line's value is not a Go string")?,
        _ => raw.to_string(),
    };
    Ok(Setting { key, value })
}

/// The length of the Go string literal `s` starts with.
fn quoted_len(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let quote = *bytes.first()?;
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 2,
            c if c == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The value of a whole Go string literal: `` `raw` `` or `"escaped"`.
fn unquote(literal: &str) -> Option<String> {
    if let Some(raw) = literal.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        return (!raw.contains('`')).then(|| raw.replace('\r', ""));
    }
    let bytes = literal.strip_prefix('"')?.strip_suffix('"')?.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        at += 1;
        match byte {
            b'"' | b'\n' => return None,
            b'\\' => {
                let kind = *bytes.get(at)?;
                at += 1;
                let (value, used) = escape(kind, &bytes[at..])?;
                at += used;
                match value {
                    Escaped::Byte(v) => out.push(v),
                    Escaped::Char(ch) => {
                        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                }
            }
            _ => out.push(byte),
        }
    }
    String::from_utf8(out).ok()
}

/// What an escape stands for.
enum Escaped {
    Byte(u8),
    Char(char),
}

/// The escape `\e…`, given the bytes after `e`, and how many of them it
/// took.
fn escape(e: u8, after: &[u8]) -> Option<(Escaped, usize)> {
    let digits = |n: usize, radix: u32| -> Option<u32> {
        let d = after.get(..n)?;
        d.iter()
            .all(|c| char::from(*c).is_digit(radix))
            .then(|| u32::from_str_radix(std::str::from_utf8(d).ok()?, radix).ok())?
    };
    let byte = |v: u8| Some((Escaped::Byte(v), 0));
    match e {
        b'a' => byte(0x07),
        b'b' => byte(0x08),
        b'f' => byte(0x0c),
        b'n' => byte(b'\n'),
        b'r' => byte(b'\r'),
        b't' => byte(b'\t'),
        b'v' => byte(0x0b),
        b'\\' | b'"' | b'\'' => byte(e),
        b'x' => Some((Escaped::Byte(u8::try_from(digits(2, 16)?).ok()?), 2)),
        b'u' => Some((Escaped::Char(char::from_u32(digits(4, 16)?)?), 4)),
        b'U' => Some((Escaped::Char(char::from_u32(digits(8, 16)?)?), 8)),
        b'0'..=b'7' => {
            let d = [e, *after.first()?, *after.get(1)?];
            let v = u32::from_str_radix(std::str::from_utf8(&d).ok()?, 8).ok()?;
            d.iter().all(|c| (b'0'..=b'7').contains(c)).then_some(())?;
            Some((Escaped::Byte(u8::try_from(v).ok()?), 2))
        }
        _ => None,
    }
}
