//! The index built while the daemon serves. A daemon with no snapshot it
//! can trust (the first start, a start after a crash or after another
//! process changed the store) answers at once and walks the store, or
//! lists the bucket, behind its answers: a million archives take seconds
//! on disk and minutes on a bucket, and nothing a client asks for waits
//! on the index.
//!
//! Meanwhile the index takes what the daemon stores and serves as usual,
//! and each archive the walk reports joins it unless it is already there
//! (a use since the start is newer than what the store recorded) or it
//! left the store since the walk began (the walk may still report it).
//! Nothing is evicted until the walk ends: until then the index does not
//! know what is least recently used. A daemon that stops before the walk
//! ends writes no snapshot, so its next start walks again.

use super::held::listed;
use super::{Evicted, Residency};
use crate::address::ArchiveKey;
use crate::store::CachedArchive;

impl Residency {
    /// Marks the index as being built by a walk of the store that runs
    /// while the daemon serves.
    pub fn walk_begins(&self) {
        self.lock().walking = Some(std::collections::HashSet::default());
        self.metrics.set_index_walking(true);
    }

    /// Whether the store is still being walked.
    pub fn walking(&self) -> bool {
        self.lock().walking.is_some()
    }

    /// Indexes what the walk found, except archives indexed since it
    /// began and archives that left the store meanwhile. Does nothing
    /// when no walk is under way.
    pub fn found(&self, archives: &[CachedArchive]) {
        let mut guard = self.lock();
        let index = &mut *guard;
        let Some(gone) = &index.walking else {
            return;
        };
        let mut added = false;
        for archive in archives {
            if !gone.is_empty()
                && gone.contains(&ArchiveKey::new(
                    &archive.provider,
                    &archive.version,
                    &archive.platform,
                ))
            {
                continue;
            }
            let Some((name, held)) = listed(&mut index.archives, archive, index.turns + 1) else {
                continue;
            };
            if index.archives.get(&name).is_some() {
                continue;
            }
            index.turns += 1;
            index.queue.joined(held.stamp);
            index.archives.put(&name, held);
            index.bytes += archive.size;
            added = true;
        }
        drop(guard);
        if added {
            self.publish();
        }
    }

    /// Ends the walk, and picks what to evict now that the index is whole
    /// (the caller removes it from the store, as after
    /// [`Residency::stored`]).
    pub fn walked(&self) -> Vec<Evicted> {
        let mut index = self.lock();
        index.walking = None;
        let chosen = match self.max_bytes {
            Some(max) => index.evict_over(max, None),
            None => Vec::new(),
        };
        drop(index);
        self.metrics.set_index_walking(false);
        self.publish();
        chosen
    }
}
