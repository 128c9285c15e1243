//! The names held providers are found by, kept as the index changes: a
//! provider's address, its type, and on the default registry
//! `namespace/type`, each in lower case, made once when the provider's
//! first archive is indexed and dropped with its last. They are kept in a
//! persistent map, so that a search takes them under the index's lock for
//! the cost of a reference count and reads them after the lock is let go.
//! The first search after a change packs every name into one text, which
//! the searches after it share until the next change: a search is one
//! pass of a substring search over that text, not a walk of the map.

use std::sync::{Arc, OnceLock};

use crate::address::Provider;

/// How a name matched a query: a whole name, a name's start, or anywhere
/// in a name (the order results are shown in).
pub type Rank = u8;

/// The held providers' names, by the provider's number in the index.
#[derive(Debug, Clone, Default)]
pub struct ProviderNames {
    by_id: imbl::OrdMap<u32, Arc<Names>>,
    /// The names packed for searching: made by the first search after a
    /// change, shared with every copy taken since it.
    packed: Arc<OnceLock<Packed>>,
}

/// One provider's names.
#[derive(Debug)]
struct Names {
    /// The address as written.
    shown: Arc<str>,
    /// What it is found by, in lower case.
    keys: Box<[Box<str>]>,
}

/// Every name in one text, each followed by [`END`], with where each
/// starts and whose it is.
#[derive(Debug, Default)]
struct Packed {
    text: String,
    /// Each name's start in `text`, and its provider's place in `shown`.
    starts: Vec<(usize, usize)>,
    /// Each provider's address as written.
    shown: Vec<Arc<str>>,
}

/// Ends each name in [`Packed::text`]: no address or type holds it.
const END: char = '\n';

/// The providers a search found.
#[derive(Debug, Default)]
pub struct FoundProviders {
    /// The best ones, best first (rank, then address), as many as asked.
    pub shown: Vec<(Rank, Arc<str>)>,
    /// How many matched in all.
    pub matched: usize,
}

impl ProviderNames {
    /// Takes in provider number `id`, whose first archive was indexed.
    pub(super) fn add(&mut self, id: u32, provider: &Provider) {
        let shown: Arc<str> = provider.to_string().into();
        let mut keys = vec![shown.to_lowercase(), provider.kind.as_str().to_lowercase()];
        if provider.hostname.as_str() == Provider::DEFAULT_HOSTNAME {
            keys.push(format!("{}/{}", provider.namespace, provider.kind).to_lowercase());
        }
        let keys = keys.into_iter().map(String::into_boxed_str).collect();
        self.by_id.insert(id, Arc::new(Names { shown, keys }));
        self.packed = Arc::default();
    }

    /// Drops provider number `id`, whose last archive left the index.
    pub(super) fn remove(&mut self, id: u32) {
        if self.by_id.remove(&id).is_some() {
            self.packed = Arc::default();
        }
    }

    /// How many providers are named.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The names packed, made now if no search made them since the last
    /// change.
    fn packed(&self) -> &Packed {
        self.packed.get_or_init(|| {
            let mut packed = Packed::default();
            for names in self.by_id.values() {
                for key in &names.keys {
                    packed.starts.push((packed.text.len(), packed.shown.len()));
                    packed.text.push_str(key);
                    packed.text.push(END);
                }
                packed.shown.push(names.shown.clone());
            }
            packed
        })
    }

    /// The providers a name of which matches `query` (in lower case; an
    /// empty one matches every name anywhere), each by its best match,
    /// the best `shown` of them first.
    pub fn find(&self, query: &str, shown: usize) -> FoundProviders {
        let packed = self.packed();
        let mut best: Vec<Option<Rank>> = vec![None; packed.shown.len()];
        if query.is_empty() {
            best.fill(Some(2));
        } else if !query.contains(END) {
            // Each match lies within one name (none spans an END), and a
            // name's start is the first place in it a match can be, so
            // the matches that do not overlap include every name's best.
            let mut at = 0;
            for found in memchr::memmem::find_iter(packed.text.as_bytes(), query.as_bytes()) {
                while packed.starts.get(at + 1).is_some_and(|(s, _)| *s <= found) {
                    at += 1;
                }
                let (start, owner) = packed.starts[at];
                let end = packed.starts.get(at + 1).map_or(packed.text.len(), |n| n.0) - 1;
                let rank = match (found == start, found + query.len() == end) {
                    (true, true) => 0,
                    (true, false) => 1,
                    _ => 2,
                };
                let kept = &mut best[owner];
                *kept = Some(kept.map_or(rank, |r| r.min(rank)));
            }
        }
        let mut hits: Vec<(Rank, Arc<str>)> = (best.iter().zip(&packed.shown))
            .filter_map(|(rank, name)| Some(((*rank)?, name.clone())))
            .collect();
        let matched = hits.len();
        if hits.len() > shown && shown > 0 {
            hits.select_nth_unstable(shown - 1);
        }
        hits.truncate(shown);
        hits.sort_unstable();
        FoundProviders {
            shown: hits,
            matched,
        }
    }
}

/// How `key` matches `query`: 0 as a whole, 1 by its start, 2 anywhere.
pub fn rank(query: &str, key: &str) -> Option<Rank> {
    if query.is_empty() {
        Some(2)
    } else if key == query {
        Some(0)
    } else if key.starts_with(query) {
        Some(1)
    } else if key.contains(query) {
        Some(2)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every provider's best rank, all of them sorted: what `find` must
    /// give the first of. Each name is ranked on its own by [`rank`], the
    /// rule the modules' search uses, not by the packed text's positions.
    fn all_sorted(providers: &[Provider], query: &str) -> Vec<(Rank, String)> {
        let mut all: Vec<(Rank, String)> = (providers.iter())
            .filter_map(|p| {
                let mut keys = vec![p.to_string(), p.kind.to_string()];
                if p.hostname.as_str() == Provider::DEFAULT_HOSTNAME {
                    keys.push(format!("{}/{}", p.namespace, p.kind));
                }
                let best = (keys.iter())
                    .filter_map(|k| rank(query, &k.to_lowercase()))
                    .min()?;
                Some((best, p.to_string()))
            })
            .collect();
        all.sort();
        all
    }

    #[test]
    fn the_best_are_found_first_and_the_rest_counted() {
        let mut providers = Vec::new();
        for n in 0..300 {
            let host = if n % 3 == 0 {
                "registry.terraform.io"
            } else {
                "r.example"
            };
            let kind = ["net", "netbox", "dns", "subnet"][n % 4];
            providers.push(Provider::from_source(&format!("{host}/ns{}/{kind}", n % 7)).unwrap());
        }
        providers.sort();
        providers.dedup();
        let mut names = ProviderNames::default();
        for (id, p) in (0u32..).zip(&providers) {
            names.add(id, p);
        }
        for query in [
            "net",
            "ns3/net",
            "r.example/ns1/netbox",
            "bo",
            "",
            "zzz",
            "ns",
            "t",
            "net\nr.example",
            "/",
        ] {
            for shown in [0, 1, 5, 100, 1000] {
                let found = names.find(query, shown);
                let all = all_sorted(&providers, query);
                let got: Vec<(Rank, String)> = (found.shown.iter())
                    .map(|(r, n)| (*r, n.to_string()))
                    .collect();
                let want: Vec<(Rank, String)> = all.iter().take(shown).cloned().collect();
                assert_eq!(got, want, "{query:?}, {shown} shown");
                assert_eq!(found.matched, all.len(), "{query:?}");
            }
        }
        // A whole name ranks first; `namespace/type` counts on the default
        // registry only.
        let found = names.find("ns3/net", 3);
        assert_eq!(found.shown[0], (0, "registry.terraform.io/ns3/net".into()));
        // Dropped with the provider's last archive.
        let id = (0u32..)
            .zip(&providers)
            .find(|(_, p)| p.to_string() == "registry.terraform.io/ns3/net")
            .unwrap()
            .0;
        names.remove(id);
        assert!(names.find("ns3/net", 3).shown.iter().all(|(r, _)| *r > 0));
        // And found again when it comes back.
        names.add(id, &providers[id as usize]);
        assert_eq!(names.find("ns3/net", 3).shown, found.shown);
    }
}
