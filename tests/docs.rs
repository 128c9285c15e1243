//! The guide holds together: `README.md` stays short, every relative link
//! and anchor in
//! `README.md`, `ARCHITECTURE.md` and `docs/` points somewhere, and every
//! key of the configuration (derived from the configuration type itself,
//! not from a list kept by hand) is in the configuration reference
//! (`docs/configuration.md`) and in the commented example
//! (`config/tfmirror.toml`).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files of the guide.
fn guide() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
}

/// The lines of a Markdown file outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The anchors of a Markdown file's headings, as GitHub and mdBook make
/// them: lowercased, punctuation dropped, spaces made hyphens, a repeated
/// heading numbered.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for line in prose(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#').trim();
        let slug: String = heading
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of the inline links of a line (`[text](target)`), outside
/// inline code.
fn links(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut code = false;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => code = !code,
            b']' if !code && bytes.get(i + 1) == Some(&b'(') => {
                if let Some(end) = line[i + 2..].find(')') {
                    out.push(line[i + 2..i + 2 + end].to_owned());
                    i += 2 + end;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

#[test]
fn every_link_and_anchor_in_the_guide_points_somewhere() {
    let files = guide();
    assert!(files.len() >= 10, "the guide lost pages: {files:?}");
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for line in prose(&text) {
            for target in links(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
                let linked = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().unwrap().join(path)
                };
                if !linked.exists() {
                    broken.push(format!("{}: {target}: no such file", file.display()));
                    continue;
                }
                if anchor.is_empty() || linked.is_dir() {
                    continue;
                }
                let text = std::fs::read_to_string(&linked).unwrap_or_default();
                if !anchors(&text).contains(anchor) {
                    broken.push(format!("{}: {target}: no such heading", file.display()));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} links found: is the reader reading?"
    );
    assert!(
        broken.is_empty(),
        "links that point nowhere:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_readme_is_short() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.chars().count() <= 12_000,
        "README.md has {} characters; move detail into docs/",
        readme.chars().count()
    );
}

#[test]
fn the_link_reader_finds_what_is_broken() {
    let text =
        "# A title\n## Two words, and more\n## Two words, and more\n```\n# not a heading\n```\n";
    let found = anchors(text);
    assert!(found.contains("a-title"));
    assert!(found.contains("two-words-and-more"));
    assert!(found.contains("two-words-and-more-1"));
    assert!(!found.contains("not-a-heading"));
    assert_eq!(
        links("see [a](b.md#c) and `[x](not-a-link)` and [d](https://e/f)"),
        ["b.md#c", "https://e/f"]
    );
}

/// The keys of a type that deserializes from a configuration file, found
/// by driving its `Deserialize` implementation: a struct names all its
/// fields when it asks for them. Each run follows one field per struct
/// level (`plan`) and records every field it is offered; a map is entered
/// with one key (written `*`), a list with one element (written `[]`).
struct Probe<'a> {
    path: String,
    plan: &'a [usize],
    found: &'a RefCell<BTreeSet<String>>,
    frontier: &'a RefCell<Vec<Vec<usize>>>,
    taken: Vec<usize>,
}

impl Probe<'_> {
    fn below(&self, segment: &str, taken: Vec<usize>) -> Probe<'_> {
        let path = if self.path.is_empty() {
            segment.to_owned()
        } else if segment.starts_with('[') {
            format!("{}{segment}", self.path)
        } else {
            format!("{}.{segment}", self.path)
        };
        Probe {
            path,
            plan: self.plan,
            found: self.found,
            frontier: self.frontier,
            taken,
        }
    }
}

/// What a probe answers where a value, not a key, is asked for.
fn leaf<T>() -> Result<T, de::value::Error> {
    Err(de::Error::custom("a value, not a key"))
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = de::value::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        for field in fields {
            self.found
                .borrow_mut()
                .insert(self.below(field, Vec::new()).path);
        }
        let level = self.taken.len();
        if level < self.plan.len() {
            let chosen = self.plan[level];
            visitor.visit_map(OneField {
                probe: &self,
                field: fields[chosen],
                done: false,
                chosen,
            })
        } else {
            for i in 0..fields.len() {
                let mut next = self.taken.clone();
                next.push(i);
                self.frontier.borrow_mut().push(next);
            }
            leaf()
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_seq(OneElement {
            probe: Some(self.below("[]", self.taken.clone())),
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_map(OneEntry {
            probe: Some(self.below("*", self.taken.clone())),
            key_given: false,
        })
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        leaf()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct tuple tuple_struct enum identifier ignored_any
    }
}

/// A struct with one field present: the one a plan follows.
struct OneField<'p, 'a> {
    probe: &'p Probe<'a>,
    field: &'static str,
    chosen: usize,
    done: bool,
}

impl<'de> MapAccess<'de> for OneField<'_, '_> {
    type Error = de::value::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        if self.done {
            return Ok(None);
        }
        self.done = true;
        seed.deserialize(de::value::StrDeserializer::<Self::Error>::new(self.field))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let mut taken = self.probe.taken.clone();
        taken.push(self.chosen);
        seed.deserialize(self.probe.below(self.field, taken))
    }
}

/// A list with one element.
struct OneElement<'a> {
    probe: Option<Probe<'a>>,
}

impl<'de> SeqAccess<'de> for OneElement<'_> {
    type Error = de::value::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        match self.probe.take() {
            Some(probe) => seed.deserialize(probe).map(Some),
            None => Ok(None),
        }
    }
}

/// A map with one entry, keyed by a name any key type here accepts.
struct OneEntry<'a> {
    probe: Option<Probe<'a>>,
    key_given: bool,
}

impl<'de> MapAccess<'de> for OneEntry<'_> {
    type Error = de::value::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        if self.key_given || self.probe.is_none() {
            return Ok(None);
        }
        self.key_given = true;
        seed.deserialize(de::value::StrDeserializer::<Self::Error>::new(
            "registry.example",
        ))
        .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let probe = self.probe.take().expect("a key came first");
        seed.deserialize(probe)
    }
}

/// Every key of `T` as a configuration file spells it: `server.listen`,
/// `upstream.hosts.*.token`, `trust[].hostname`.
fn keys_of<T: for<'de> Deserialize<'de>>() -> BTreeSet<String> {
    let found = RefCell::new(BTreeSet::new());
    let frontier = RefCell::new(vec![Vec::new()]);
    let mut runs = 0;
    loop {
        let next = frontier.borrow_mut().pop();
        let Some(plan) = next else { break };
        runs += 1;
        assert!(runs < 10_000, "the key probe does not end");
        let probe = Probe {
            path: String::new(),
            plan: &plan,
            found: &found,
            frontier: &frontier,
            taken: Vec::new(),
        };
        let _ = T::deserialize(probe);
    }
    found.into_inner()
}

/// The keys no other key lies beneath: the settings themselves.
fn settings(keys: &BTreeSet<String>) -> BTreeSet<String> {
    keys.iter()
        .filter(|k| {
            !keys.iter().any(|other| {
                other.starts_with(&format!("{k}.")) || other.starts_with(&format!("{k}["))
            })
        })
        .cloned()
        .collect()
}

/// A key as the reference or the example writes it, normalized:
/// `upstream.hosts."<hostname>".token` and `upstream.hosts."registry.x".token`
/// are `upstream.hosts.*.token`.
fn normalized(key: &str) -> String {
    let mut out = String::new();
    let mut rest = key;
    while let Some(start) = rest.find(['"', '<']) {
        out.push_str(&rest[..start]);
        let close = if rest[start..].starts_with('"') {
            '"'
        } else {
            '>'
        };
        let Some(end) = rest[start + 1..].find(close) else {
            rest = &rest[start..];
            break;
        };
        out.push('*');
        rest = &rest[start + 1 + end + 1..];
    }
    out.push_str(rest);
    out
}

/// The keys the commented example names, with their sections: `[server]`
/// then `listen = …` is `server.listen`, `[[trust]]` then `# hostname = …`
/// is `trust[].hostname`.
fn example_keys(text: &str) -> BTreeSet<String> {
    let mut section = String::new();
    let mut arrays: Vec<String> = Vec::new();
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim_start_matches(|c: char| c == '#' || c.is_whitespace());
        // A table's header stands alone on its line.
        if let Some(table) = line.strip_prefix("[[").and_then(|l| l.split_once("]]")) {
            if table.1.trim().is_empty() || table.1.trim().starts_with('#') {
                // A table of an array within an array (`[[auth.oidc.rules]]`
                // after `[[auth.oidc]]`) is the inner array of the outer's
                // entries: `auth.oidc[].rules[]`.
                let mut name = normalized(table.0.trim());
                for outer in &arrays {
                    if let Some(rest) = name.strip_prefix(&format!("{outer}.")) {
                        name = format!("{outer}[].{rest}");
                        break;
                    }
                }
                arrays.push(normalized(table.0.trim()));
                section = format!("{name}[]");
            }
            continue;
        }
        if let Some(table) = line.strip_prefix('[').and_then(|l| l.split_once(']')) {
            if table.1.trim().is_empty() || table.1.trim().starts_with('#') {
                // A table within an array's entry (`[policy.rule.advisories]`
                // after `[[policy.rule]]`) is `policy.rule[].advisories`.
                let name = normalized(table.0.trim());
                section = arrays
                    .iter()
                    .find_map(|outer| {
                        let rest = name.strip_prefix(&format!("{outer}."))?;
                        Some(format!("{outer}[].{rest}"))
                    })
                    .unwrap_or(name);
            }
            continue;
        }
        let Some((key, _)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            continue;
        }
        out.insert(if section.is_empty() {
            key.to_owned()
        } else {
            format!("{section}.{key}")
        });
    }
    out
}

/// The keys the reference names: every backticked name, normalized.
fn reference_keys(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in prose(text) {
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 1 {
                out.insert(normalized(part.trim()));
            }
        }
    }
    out
}

#[test]
fn every_configuration_key_is_in_the_reference_and_the_example() {
    let keys = settings(&keys_of::<tfmirror::config::Config>());
    for expected in [
        "server.listen",
        "upstream.hosts.*.unsigned",
        "trust[].keys_file",
        "policy.rule[].verification",
        "watch.provider[].platforms",
        "releases.tofu.key_files",
        "storage.s3.local_cache.max_size",
    ] {
        assert!(
            keys.contains(expected),
            "the probe missed {expected}: {keys:?}"
        );
    }
    let reference =
        reference_keys(&std::fs::read_to_string(root().join("docs/configuration.md")).unwrap());
    let example =
        example_keys(&std::fs::read_to_string(root().join("config/tfmirror.toml")).unwrap());
    let missing_reference: Vec<&String> = keys.iter().filter(|k| !reference.contains(*k)).collect();
    let missing_example: Vec<&String> = keys.iter().filter(|k| !example.contains(*k)).collect();
    assert!(
        missing_reference.is_empty() && missing_example.is_empty(),
        "keys missing from docs/configuration.md: {missing_reference:?}\nkeys missing from config/tfmirror.toml: {missing_example:?}"
    );
}

#[test]
fn the_key_readers_read_what_they_should() {
    assert_eq!(
        normalized("upstream.hosts.\"<hostname>\".token"),
        "upstream.hosts.*.token"
    );
    assert_eq!(
        normalized("upstream.hosts.<host>.token"),
        "upstream.hosts.*.token"
    );
    let example = example_keys(
        "[server]\nlisten = \"x\"\n# [[trust]]\n# hostname = \"h\"\n# # keys_file = \"k\"\n# [trust.extra]\n# depth = 1\n# [upstream.hosts.\"r.example\"]\n# token = \"t\"\n# Prose, not = a key\n",
    );
    assert_eq!(
        example,
        BTreeSet::from([
            "server.listen".to_owned(),
            "trust[].hostname".to_owned(),
            "trust[].keys_file".to_owned(),
            "trust[].extra.depth".to_owned(),
            "upstream.hosts.*.token".to_owned(),
        ])
    );
}
