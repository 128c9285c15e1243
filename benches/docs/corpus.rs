//! Generated documentation for the benchmarks: pages made of paragraphs
//! of the null provider's real documentation
//! (`tests/fixtures/docs/null-v3.2.4`), of sizes drawn from 1 KiB to
//! 24 KiB, and providers' counts of pages drawn from a spread like the
//! registries'.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use rand::rngs::StdRng;
use rand::Rng;
use tfmirror::address::{DocName, Provider, Version};
use tfmirror::docs::DocKind;
use tfmirror::store::docs::{PageEntry, VersionDocs, DOCS_FORMAT};

/// The paragraphs of the real tree the pages are made of.
pub fn paragraphs() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/docs/null-v3.2.4/docs");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.extend(
                    text.split("\n\n")
                        .map(str::to_owned)
                        .filter(|p| p.len() > 40),
                );
            }
        }
    }
    out
}

/// A page titled `name`: paragraphs drawn at random to a size drawn from
/// 1 KiB to 24 KiB.
pub fn page(rng: &mut StdRng, paragraphs: &[String], name: &str) -> String {
    let size = rng.gen_range(1_024..24_576);
    let mut text = format!("# {name}\n\nThe `{name}` resource.\n\n");
    while text.len() < size {
        text.push_str(&paragraphs[rng.gen_range(0..paragraphs.len())]);
        text.push_str("\n\n");
    }
    text
}

/// How many pages a provider has: `pages`, or where `spread` a count
/// drawn from a spread like the registries' (most providers tens of
/// pages, one in ten hundreds, one in a hundred over a thousand).
pub fn page_count(rng: &mut StdRng, pages: usize, spread: bool) -> usize {
    if !spread {
        return pages;
    }
    match rng.gen_range(0..100) {
        0 => rng.gen_range(1_000..1_600),
        1..=9 => rng.gen_range(100..400),
        _ => rng.gen_range(10..100),
    }
}

/// One provider's generated pages, version after version: page `i` is the
/// resource `res_i`, titled `TYPE_res_i`.
pub struct Pages {
    kind: String,
    /// Each page's content in the version made last.
    pub contents: BTreeMap<usize, String>,
    /// Each page's SHA-256, once [`Pages::keep_fresh`] has kept it.
    shas: BTreeMap<usize, String>,
    /// The pages whose content is new since [`Pages::keep_fresh`] last ran.
    fresh: HashSet<usize>,
}

impl Pages {
    /// `count` pages of the provider of type `kind`.
    pub fn new(rng: &mut StdRng, paragraphs: &[String], kind: &str, count: usize) -> Pages {
        let contents = (0..count)
            .map(|i| (i, page(rng, paragraphs, &format!("{kind}_res_{i}"))))
            .collect();
        Pages {
            kind: kind.to_owned(),
            contents,
            shas: BTreeMap::new(),
            fresh: (0..count).collect(),
        }
    }

    /// The next version's pages: two in a hundred made anew.
    pub fn change(&mut self, rng: &mut StdRng, paragraphs: &[String]) {
        let count = self.contents.len();
        for _ in 0..count / 50 {
            let i = rng.gen_range(0..count);
            let name = format!("{}_res_{i}", self.kind);
            self.contents.insert(i, page(rng, paragraphs, &name));
            self.fresh.insert(i);
        }
    }

    /// Gives `keep` each page whose content is new since the last call,
    /// which answers its SHA-256; how many.
    pub fn keep_fresh(&mut self, mut keep: impl FnMut(&[u8]) -> String) -> usize {
        let fresh: Vec<usize> = self.fresh.drain().collect();
        for &i in &fresh {
            let sha = keep(self.contents[&i].as_bytes());
            self.shas.insert(i, sha);
        }
        fresh.len()
    }

    /// The list of `provider` `version` naming the pages as they are now.
    pub fn docs(&self, provider: &Provider, version: &Version) -> VersionDocs {
        let pages = (self.contents.iter())
            .map(|(i, content)| PageEntry {
                kind: DocKind::Resource,
                name: DocName::parse(&format!("res_{i}")).unwrap(),
                title: format!("{}_res_{i}", self.kind),
                subcategory: String::new(),
                description: String::new(),
                sha256: self.shas[i].clone(),
                size: content.len() as u64,
                truncated: false,
            })
            .collect();
        VersionDocs {
            format: DOCS_FORMAT,
            provider: provider.clone(),
            version: version.clone(),
            source: String::new(),
            fetched_at_ms: 0,
            licenses: Vec::new(),
            pages,
            passed_over: BTreeMap::new(),
        }
    }
}
