//! The reader's side of the journal: a daemon looks every few seconds for
//! entries other processes wrote since its last look, and learns which
//! items changed and which writers died with their session open.
//!
//! Each look lists the entries named after its last look less [`MARGIN`],
//! which covers entries still being written at that look and writers whose
//! clocks are behind the reader's by less than that; entries already read
//! are passed over. A writer's session is judged by the reader's own
//! clock: open, and silent for [`super::STALE`], means dead.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::{written_at, Entry, Kind, DIR, KEEP, STALE};
use crate::store::{Item, Store, StoreError};

/// How far before its last look a look reaches back.
pub const MARGIN: Duration = Duration::from_secs(60);

/// What one look found.
#[derive(Debug, Default)]
pub struct News {
    /// The items other processes changed (each once).
    pub items: Vec<Item>,
    /// Writers whose sessions were left open and silent, with their role:
    /// some of their changes may not have been written.
    pub lost: Vec<(String, String)>,
    /// Entries that could not be read as entries.
    pub unreadable: usize,
}

/// A writer's session, as this reader knows it.
#[derive(Debug)]
struct Session {
    role: String,
    /// When this reader last saw an entry of it (the reader's clock, ms).
    heard_ms: u64,
}

/// The reader: see the module documentation.
#[derive(Debug)]
pub struct Follower {
    /// This process's own writer, whose entries it does not read.
    own: Option<String>,
    /// When the last look began (ms since the epoch, the reader's clock).
    looked_ms: Option<u64>,
    /// Entries read, by name, with when they were written.
    read: BTreeMap<String, u64>,
    /// Writers with a session open.
    open: HashMap<String, Session>,
}

impl Follower {
    /// A reader that passes over the entries of the writer `own` (its own
    /// process's).
    pub fn new(own: Option<String>) -> Follower {
        Follower {
            own,
            looked_ms: None,
            read: BTreeMap::new(),
            open: HashMap::new(),
        }
    }

    /// Reads what was written since the last look (the first look reads
    /// the last [`MARGIN`]). `now_ms` is the system's clock, which names
    /// the entries; `clock_ms` the reader's, by which silence is judged
    /// (the daemon's clock, which tests move by hand).
    pub async fn look(
        &mut self,
        store: &dyn Store,
        now_ms: u64,
        clock_ms: u64,
    ) -> Result<News, StoreError> {
        let margin = u64::try_from(MARGIN.as_millis()).unwrap_or(u64::MAX);
        let from = self.looked_ms.unwrap_or(now_ms).saturating_sub(margin);
        let names = store
            .list_documents_after(&DIR, &format!("{from:013}"))
            .await?;
        let mut news = News::default();
        let mut seen = std::collections::HashSet::new();
        for name in names {
            let Some(at) = written_at(&name) else {
                continue;
            };
            if self.read.contains_key(&name) {
                continue;
            }
            let Some(bytes) = store.read_document(&[DIR[0], DIR[1], &name]).await? else {
                // Removed as too old between the listing and the read.
                continue;
            };
            self.read.insert(name, at);
            let Ok(entry) = serde_json::from_slice::<Entry>(&bytes) else {
                news.unreadable += 1;
                continue;
            };
            if self.own.as_deref() == Some(entry.writer.as_str()) {
                continue;
            }
            match entry.kind {
                Kind::Close => {
                    self.open.remove(&entry.writer);
                }
                Kind::Open | Kind::Beat | Kind::Changes => {
                    self.open.insert(
                        entry.writer.clone(),
                        Session {
                            role: entry.role.clone(),
                            heard_ms: clock_ms,
                        },
                    );
                }
            }
            for item in entry.items {
                if seen.insert(item.clone()) {
                    news.items.push(item);
                }
            }
        }
        self.looked_ms = Some(now_ms);
        self.read.retain(|_, at| *at >= from);
        let stale = u64::try_from(STALE.as_millis()).unwrap_or(u64::MAX);
        let lost: Vec<String> = (self.open.iter())
            .filter(|(_, s)| clock_ms.saturating_sub(s.heard_ms) > stale)
            .map(|(w, _)| w.clone())
            .collect();
        for writer in lost {
            if let Some(session) = self.open.remove(&writer) {
                news.lost.push((writer, session.role));
            }
        }
        Ok(news)
    }
}

/// Removes the entries written before `now_ms` less [`KEEP`]. Returns how
/// many.
pub async fn prune(store: &dyn Store, now_ms: u64) -> Result<usize, StoreError> {
    let keep = u64::try_from(KEEP.as_millis()).unwrap_or(u64::MAX);
    let before = now_ms.saturating_sub(keep);
    let mut removed = 0;
    for name in store.list_documents_after(&DIR, "").await? {
        match written_at(&name) {
            Some(at) if at < before => {
                store.remove_document(&[DIR[0], DIR[1], &name]).await?;
                removed += 1;
            }
            Some(_) => break,
            None => {}
        }
    }
    Ok(removed)
}
