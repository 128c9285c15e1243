//! The store's note of the last time a process other than the daemon
//! (`sync`, `import`, `gc`, `verify`) changed its archives, module
//! packages or release files: `index/changed.json`, on disk or under the
//! bucket prefix. The daemon reads it when it starts and seals its index
//! snapshot with it (`mirror::residency::snapshot`), so that a snapshot
//! taken before such a change is not trusted: the next start walks the
//! store instead.
//!
//! A process writes the note before its first change (its journal does:
//! [`super::journal`]), so that a change cut short by a crash is noted too.

use serde::{Deserialize, Serialize};

use super::place::Place;
use super::{Store, StoreError};

/// Where the note is kept.
const NOTE: [&str; 2] = ["index", "changed.json"];

#[derive(Serialize, Deserialize)]
struct Note {
    /// When, in nanoseconds since the Unix epoch: also what tells one
    /// note from the next.
    at_ns: u64,
    /// Which build wrote it, for a reader of the file.
    #[serde(default)]
    written_by: Option<String>,
}

/// The last change another process noted (`None`: none ever was). An
/// unreadable note counts as a change made now, so that no snapshot is
/// trusted over it.
pub async fn last(store: &dyn Store) -> Result<Option<u64>, StoreError> {
    let Some(bytes) = store.read_document(&NOTE).await? else {
        return Ok(None);
    };
    Ok(Some(match serde_json::from_slice::<Note>(&bytes) {
        Ok(note) => note.at_ns,
        Err(_) => now_ns(),
    }))
}

/// Notes in `place` (a store's root) that this process is about to
/// change what the store holds.
pub async fn note(place: &dyn Place) -> Result<(), StoreError> {
    let note = Note {
        at_ns: now_ns(),
        written_by: Some(super::format::THIS_VERSION.to_owned()),
    };
    let bytes = serde_json::to_vec(&note).expect("a note encodes");
    place.put(&NOTE, bytes).await
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
