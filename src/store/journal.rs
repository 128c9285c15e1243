//! The store's journal: which archives, module packages and CLI release
//! files each process changed, kept in the store itself (`index/journal/`
//! in the cache directory, or under the bucket's prefix), so that a daemon
//! sharing the store learns of another process's changes within seconds
//! without walking the store or listing the bucket.
//!
//! Every process that opens the store writes one (the daemon, `sync`,
//! `import`, `gc`, `verify`, …), in sessions. Before its first change it
//! writes an `open` entry and waits for it; each item it then changes
//! joins the next `changes` entry, written within [`FLUSH_AFTER`]; while
//! the session is open and nothing else was written for [`BEAT`], a
//! `beat`; once nothing has changed for [`IDLE`], `close`. A reader that
//! sees a session left open with no entry for [`STALE`] takes its writer
//! to have died mid-change, and checks the whole store ([`follow`]).
//!
//! An entry names what changed, not how: a reader asks the store what it
//! holds of each item now ([`super::Store::held`]), so an entry read late,
//! twice or out of order still leaves the reader right.
//!
//! Entries are named `<ms since the epoch>-<writer>-<seq>.json`, so that a
//! listing in key order is in time order. Daemons remove entries older
//! than [`KEEP`].

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use super::place::{DiskPlace, Place};
use super::{Item, StoreError};

pub mod follow;

/// Where entries are kept below the store's root.
pub const DIR: [&str; 2] = ["index", "journal"];

/// How long a changed item waits to be written with the items changed
/// after it.
pub const FLUSH_AFTER: Duration = Duration::from_millis(250);

/// How long an open session stays silent at most: a writer with changes
/// under way writes a `beat` after this long without another entry.
pub const BEAT: Duration = Duration::from_secs(5);

/// How long after its last change a session closes.
pub const IDLE: Duration = Duration::from_secs(5);

/// How long a reader waits for a word from an open session before it
/// takes its writer to be dead.
pub const STALE: Duration = Duration::from_secs(30);

/// How long entries are kept.
pub const KEEP: Duration = Duration::from_secs(3600);

/// The most items one `changes` entry lists.
const MAX_ITEMS: usize = 1000;

/// How long the writing task waits after a write failed (a full or
/// read-only disk, a bucket refusing writes) before it tries again.
const RETRY: Duration = Duration::from_secs(5);

/// What an entry says of its writer's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The writer is about to change the store.
    Open,
    /// The writer changed these items.
    Changes,
    /// The writer is still changing the store.
    Beat,
    /// The writer's changes are all written.
    Close,
}

/// One entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Who wrote it: `<pid>-<random>`, unique to one process.
    pub writer: String,
    /// What the writer is (`serve`, `sync`, `gc`, …), for people.
    #[serde(default)]
    pub role: String,
    /// What it says.
    pub kind: Kind,
    /// The items changed (`changes` only).
    #[serde(default)]
    pub items: Vec<Item>,
}

/// An entry's file name: when, who, and the writer's count.
pub fn entry_name(at_ms: u64, writer: &str, seq: u64) -> String {
    format!("{at_ms:013}-{writer}-{seq:010}.json")
}

/// When an entry was written, read from its name.
pub fn written_at(name: &str) -> Option<u64> {
    name.split_once('-')?.0.parse().ok()
}

/// The writer's side: see the module documentation.
pub struct Journal {
    place: Box<dyn Place>,
    writer: String,
    role: String,
    /// Whether this writer also writes the store's change note
    /// ([`super::changes`]) before its first change: every writer but the
    /// daemon does, so that the daemon's next start does not trust an
    /// index snapshot taken before.
    notes_changes: bool,
    state: Mutex<State>,
    /// Wakes the task that writes what is due.
    wake: Arc<tokio::sync::Notify>,
    /// Held while an entry is written, so that entries are numbered and
    /// written in turn.
    writing: tokio::sync::Mutex<()>,
}

#[derive(Debug)]
struct State {
    open: bool,
    noted: bool,
    in_flight: usize,
    pending: Vec<Item>,
    pending_since: Option<Instant>,
    /// After a failed write, nothing is written before this.
    retry_at: Option<Instant>,
    last_write: Instant,
    last_change: Instant,
    seq: u64,
    last_ms: u64,
}

/// A change under way: dropping it notes its item, whether the change
/// succeeded or not (a reader asks the store what it holds).
#[must_use = "the item is noted when the change ends, by dropping this"]
pub struct Change<'a> {
    journal: &'a Journal,
    item: Option<Item>,
}

impl Drop for Change<'_> {
    fn drop(&mut self) {
        if let Some(item) = self.item.take() {
            self.journal.changed(item);
        }
    }
}

/// What the writing task does next.
enum Next {
    /// Writes an entry of this kind (with the pending items for
    /// `changes`).
    Write(Kind, Vec<Item>),
    /// Waits this long, or for a change.
    Wait(Option<Duration>),
}

impl Journal {
    /// A journal written to `place` by this process in `role`, with its
    /// writing task started on the current runtime.
    pub fn start(place: Box<dyn Place>, role: &str, notes_changes: bool) -> Arc<Journal> {
        let now = Instant::now();
        let journal = Arc::new(Journal {
            place,
            writer: writer_id(),
            role: role.to_owned(),
            notes_changes,
            state: Mutex::new(State {
                open: false,
                noted: false,
                in_flight: 0,
                pending: Vec::new(),
                pending_since: None,
                retry_at: None,
                last_write: now,
                last_change: now,
                seq: 0,
                last_ms: 0,
            }),
            wake: Arc::new(tokio::sync::Notify::new()),
            writing: tokio::sync::Mutex::new(()),
        });
        tokio::spawn(write_what_is_due(
            Arc::downgrade(&journal),
            journal.wake.clone(),
        ));
        journal
    }

    /// This writer's name in the entries.
    pub fn writer(&self) -> &str {
        &self.writer
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("journal lock")
    }

    /// Before a change to `item`: opens the session (waiting for its entry
    /// and, for a command, the change note) when it is not open. Noted
    /// when the returned [`Change`] is dropped.
    pub async fn changing(&self, item: Item) -> Result<Change<'_>, StoreError> {
        let (open, noted) = {
            let mut state = self.lock();
            state.in_flight += 1;
            state.last_change = Instant::now();
            (state.open, state.noted)
        };
        let change = Change {
            journal: self,
            item: Some(item),
        };
        if !noted && self.notes_changes {
            if let Err(e) = super::changes::note(self.place.as_ref()).await {
                self.abandon(change);
                return Err(e);
            }
            self.lock().noted = true;
        }
        if !open {
            if let Err(e) = self.open().await {
                self.abandon(change);
                return Err(e);
            }
        }
        Ok(change)
    }

    /// A change that will not happen: nothing to note.
    fn abandon(&self, mut change: Change<'_>) {
        change.item = None;
        let mut state = self.lock();
        state.in_flight -= 1;
    }

    /// Writes the `open` entry unless another change did meanwhile.
    async fn open(&self) -> Result<(), StoreError> {
        let _turn = self.writing.lock().await;
        if self.lock().open {
            return Ok(());
        }
        self.write_now(Kind::Open, Vec::new()).await?;
        self.lock().open = true;
        Ok(())
    }

    fn changed(&self, item: Item) {
        let mut state = self.lock();
        state.in_flight -= 1;
        let now = Instant::now();
        state.last_change = now;
        state.pending_since.get_or_insert(now);
        state.pending.push(item);
        drop(state);
        self.wake.notify_one();
    }

    /// Writes one entry (the caller holds `writing`).
    async fn write_now(&self, kind: Kind, items: Vec<Item>) -> Result<(), StoreError> {
        let name = {
            let mut state = self.lock();
            state.seq += 1;
            state.last_ms = now_ms().max(state.last_ms);
            entry_name(state.last_ms, &self.writer, state.seq)
        };
        let entry = Entry {
            writer: self.writer.clone(),
            role: self.role.clone(),
            kind,
            items,
        };
        let bytes = serde_json::to_vec(&entry).expect("an entry encodes");
        self.place.put(&[DIR[0], DIR[1], &name], bytes).await?;
        self.lock().last_write = Instant::now();
        Ok(())
    }

    /// What is due now.
    fn next(&self) -> Next {
        let now = Instant::now();
        let mut state = self.lock();
        if let Some(at) = state.retry_at.filter(|at| *at > now) {
            return Next::Wait(Some(at - now));
        }
        if let Some(since) = state.pending_since {
            if now >= since + FLUSH_AFTER || state.pending.len() >= MAX_ITEMS {
                let take = state.pending.len().min(MAX_ITEMS);
                let items: Vec<Item> = state.pending.drain(..take).collect();
                state.pending_since = (!state.pending.is_empty()).then_some(now);
                return Next::Write(Kind::Changes, items);
            }
            return Next::Wait(Some(since + FLUSH_AFTER - now));
        }
        if !state.open {
            return Next::Wait(None);
        }
        if state.in_flight == 0 && now >= state.last_change + IDLE {
            state.open = false;
            return Next::Write(Kind::Close, Vec::new());
        }
        if now >= state.last_write + BEAT {
            return Next::Write(Kind::Beat, Vec::new());
        }
        let close_at = state.last_change + IDLE;
        let beat_at = state.last_write + BEAT;
        Next::Wait(Some(close_at.min(beat_at).saturating_duration_since(now)))
    }

    /// Writes `kind` with `items`; on failure the items wait for the next
    /// turn, and a `close` is not taken as written. Returns whether it was
    /// written.
    async fn write_due(&self, kind: Kind, items: Vec<Item>) -> bool {
        let _turn = self.writing.lock().await;
        let written = self.write_now(kind, items.clone()).await;
        self.lock().retry_at = written.is_err().then(|| Instant::now() + RETRY);
        let Err(e) = written else {
            return true;
        };
        tracing::warn!(error = %e, retry_in_s = RETRY.as_secs(), "could not write the store's journal of changes");
        let mut state = self.lock();
        if kind == Kind::Close {
            state.open = true;
        }
        if !items.is_empty() {
            let mut pending = items;
            pending.append(&mut state.pending);
            state.pending = pending;
            state.pending_since = Some(Instant::now());
        }
        false
    }

    /// Writes what is pending and closes the session: the end of a
    /// command. Later changes open a new one. When the pending items
    /// cannot be written, the session stays open: a reader takes its
    /// silence for a writer that died, and checks the whole store.
    pub async fn close(&self) {
        let items = {
            let mut state = self.lock();
            state.pending_since = None;
            std::mem::take(&mut state.pending)
        };
        for chunk in items.chunks(MAX_ITEMS) {
            if !self.write_due(Kind::Changes, chunk.to_vec()).await {
                return;
            }
        }
        let open = {
            let mut state = self.lock();
            std::mem::replace(&mut state.open, false)
        };
        if open {
            self.write_due(Kind::Close, Vec::new()).await;
        }
    }
}

/// Before a change to `item` in a store whose journal is `journal` (none:
/// nothing is noted).
pub async fn changing(
    journal: Option<&Arc<Journal>>,
    item: Item,
) -> Result<Option<Change<'_>>, StoreError> {
    match journal {
        Some(journal) => Ok(Some(journal.changing(item).await?)),
        None => Ok(None),
    }
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("writer", &self.writer)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

/// The writing task: writes what is due, then waits for the next thing or
/// a change. Ends when the journal is dropped.
async fn write_what_is_due(journal: Weak<Journal>, wake: Arc<tokio::sync::Notify>) {
    loop {
        let Some(j) = journal.upgrade() else {
            return;
        };
        match j.next() {
            Next::Write(kind, items) => {
                j.write_due(kind, items).await;
            }
            Next::Wait(wait) => {
                drop(j);
                match wait {
                    Some(wait) => {
                        let _ = tokio::time::timeout(wait, wake.notified()).await;
                    }
                    None => wake.notified().await,
                }
            }
        }
    }
}

/// A name for this process's entries: its process ID and a random part.
fn writer_id() -> String {
    let mut bytes = [0u8; 4];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .expect("the system's random source works");
    format!("{}-{}", std::process::id(), hex::encode(bytes))
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests;
