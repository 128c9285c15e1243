//! Wall-clock time as the mirror reads it: when a version list goes stale
//! and when a signed archive link expires. The daemon reads the system
//! clock; tests hand it a [`ManualClock`] and move time on by hand, so that
//! expiry is checked without waiting for it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> SystemTime;

    /// Milliseconds since the Unix epoch (0 before it).
    fn unix_ms(&self) -> u64 {
        self.now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    /// Seconds since the Unix epoch (0 before it).
    fn unix_secs(&self) -> u64 {
        self.unix_ms() / 1000
    }
}

/// A clock shared by the parts of one daemon.
pub type SharedClock = Arc<dyn Clock>;

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// The system clock, shared.
#[must_use]
pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

/// A clock that stands still until [`ManualClock::advance`] moves it.
#[derive(Debug)]
pub struct ManualClock {
    at: Mutex<SystemTime>,
}

impl ManualClock {
    /// A clock standing at the system clock's current time.
    #[must_use]
    pub fn new() -> Arc<ManualClock> {
        Arc::new(ManualClock {
            at: Mutex::new(SystemTime::now()),
        })
    }

    /// Moves the clock on by `by`.
    pub fn advance(&self, by: Duration) {
        *self.at.lock().expect("clock lock") += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.at.lock().expect("clock lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let c = ManualClock::new();
        let start = c.unix_ms();
        assert_eq!(c.unix_ms(), start);
        c.advance(Duration::from_millis(1500));
        assert_eq!(c.unix_ms(), start + 1500);
        assert_eq!(c.unix_secs(), (start + 1500) / 1000);
    }
}
