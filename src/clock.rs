//! Wall-clock time as the mirror reads it: when a version list goes stale,
//! when a signed archive link expires, and when the next watch pass is due.
//! The daemon reads the system clock; tests hand it a [`ManualClock`] and
//! move time on by hand, so that expiry and schedules are checked without
//! waiting for them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A wait that ends at a time of a [`Clock`].
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> SystemTime;

    /// Milliseconds since the Unix epoch (0 before it).
    fn unix_ms(&self) -> u64 {
        unix_ms_of(self.now())
    }

    /// Seconds since the Unix epoch (0 before it).
    fn unix_secs(&self) -> u64 {
        self.unix_ms() / 1000
    }

    /// Waits until this clock reads `at` or later.
    fn sleep_until(&self, at: SystemTime) -> Sleep;
}

/// A time `ms` milliseconds after the Unix epoch.
pub fn from_unix_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// Milliseconds from the Unix epoch to `at` (0 before it).
pub fn unix_ms_of(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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

    fn sleep_until(&self, at: SystemTime) -> Sleep {
        // A timer measures elapsed time; should the wall clock be set back
        // meanwhile, the wait ends early rather than late, and the caller
        // reads the clock again.
        let wait = at.duration_since(SystemTime::now()).unwrap_or_default();
        Box::pin(tokio::time::sleep(wait))
    }
}

/// The system clock, shared.
#[must_use]
pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

/// A clock that stands still until [`ManualClock::advance`] moves it;
/// waits on it end when it is moved past their time.
#[derive(Debug)]
pub struct ManualClock {
    at: tokio::sync::watch::Sender<SystemTime>,
}

impl ManualClock {
    /// A clock standing at the system clock's current time.
    #[must_use]
    pub fn new() -> Arc<ManualClock> {
        Arc::new(ManualClock {
            at: tokio::sync::watch::Sender::new(SystemTime::now()),
        })
    }

    /// Moves the clock on by `by`, ending the waits it passes.
    pub fn advance(&self, by: Duration) {
        self.at.send_modify(|at| *at += by);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.at.borrow()
    }

    fn sleep_until(&self, at: SystemTime) -> Sleep {
        let mut moves = self.at.subscribe();
        Box::pin(async move {
            if moves.wait_for(|now| *now >= at).await.is_err() {
                // The clock is gone, and with it whatever would wake this.
                std::future::pending::<()>().await;
            }
        })
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

    #[tokio::test]
    async fn a_wait_on_a_manual_clock_ends_when_the_clock_passes_its_time() {
        let c = ManualClock::new();
        let due = c.now() + Duration::from_secs(3600);
        let mut wait = c.sleep_until(due);
        assert!(futures_util::poll!(&mut wait).is_pending());
        c.advance(Duration::from_secs(1800));
        assert!(
            futures_util::poll!(&mut wait).is_pending(),
            "the wait ended half way to its time"
        );
        c.advance(Duration::from_secs(1800));
        assert!(
            futures_util::poll!(&mut wait).is_ready(),
            "the wait did not end when the clock reached its time"
        );
        // A time already passed does not wait at all.
        assert!(futures_util::poll!(c.sleep_until(due)).is_ready());
    }
}
