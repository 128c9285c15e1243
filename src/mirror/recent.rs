//! What arrived in the cache lately (archives, module packages, release
//! files stored by this daemon or by another process it learned of
//! through the store's journal), newest last, for the home page.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::Mirror;
use crate::store::Item;

/// How many arrivals are remembered.
const KEPT: usize = 50;

/// The arrivals remembered.
#[derive(Debug, Default)]
pub(super) struct Recent {
    arrived: Mutex<VecDeque<(Item, u64)>>,
}

impl Mirror {
    /// Remembers that `item` arrived now.
    pub(super) fn arrived(&self, item: Item) {
        let mut arrived = self.recent.arrived.lock().expect("recent lock");
        if arrived.len() == KEPT {
            arrived.pop_front();
        }
        arrived.push_back((item, self.clock.unix_ms()));
    }

    /// What arrived lately, newest first, with when (ms since the epoch).
    pub fn arrivals(&self) -> Vec<(Item, u64)> {
        let arrived = self.recent.arrived.lock().expect("recent lock");
        arrived.iter().rev().cloned().collect()
    }
}
