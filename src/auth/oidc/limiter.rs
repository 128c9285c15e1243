//! How often one client address may begin a sign-in through an issuer,
//! and how often it may bring one back (`auth.signins_per_minute` each):
//! each start makes the mirror build an authorization request (and, while
//! an issuer's endpoints are unknown, ask for them), each callback makes
//! it trade a code at the issuer, so a client that sends either in a loop
//! is refused with `429` before the mirror does any of that work.
//!
//! The counting is governor's (a generic cell rate algorithm per key) on
//! the mirror's clock, so that tests move time instead of waiting. IPv6
//! addresses count by their /64, which one host usually holds whole;
//! addresses that have been quiet for a minute are forgotten, so the
//! table holds only the addresses of the last minute.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

use governor::clock::{Clock as GovernorClock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};

use crate::clock::SharedClock;

/// Which step of a sign-in is counted; each has a limit of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// `/-/signin/with/:issuer`.
    Start,
    /// `/-/signin/callback`.
    Callback,
}

/// The mirror's clock as governor reads it: nanoseconds since the epoch.
#[derive(Clone)]
pub struct MirrorClock(SharedClock);

impl GovernorClock for MirrorClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        Nanos::new(self.0.unix_ms().saturating_mul(1_000_000))
    }
}

/// How many checks pass between two sweeps of the quiet addresses.
const SWEEP_EVERY: u64 = 1024;

/// What is counted: a step, from an address.
type Key = (Step, String);

/// Governor's limiter, keyed by step and address, on the mirror's clock.
type Keyed = RateLimiter<Key, DashMapStateStore<Key>, MirrorClock, NoOpMiddleware<Nanos>>;

/// The limit on sign-ins per client address.
pub struct SigninLimiter {
    limiter: Keyed,
    clock: MirrorClock,
    checks: AtomicU64,
}

impl SigninLimiter {
    /// At most `per_minute` of each step a minute from one address (and
    /// as many at once).
    pub fn new(per_minute: u32, clock: SharedClock) -> SigninLimiter {
        let per_minute = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
        let clock = MirrorClock(clock);
        SigninLimiter {
            limiter: RateLimiter::dashmap_with_clock(Quota::per_minute(per_minute), clock.clone()),
            clock,
            checks: AtomicU64::new(0),
        }
    }

    /// Whether the client at `address` (a peer's address as text, or a
    /// proxy's `X-Forwarded-For`) may take `step` now: `Err` holds how many
    /// seconds until it may.
    pub fn check(&self, step: Step, address: &str) -> Result<(), u64> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.limiter.retain_recent();
        }
        self.limiter
            .check_key(&(step, key_of(address)))
            .map_err(|not_until| {
                let wait = not_until
                    .earliest_possible()
                    .duration_since(self.clock.now());
                (wait.as_u64() / 1_000_000_000).max(1)
            })
    }

    /// How many addresses the table holds now.
    pub fn tracked(&self) -> usize {
        self.limiter.len()
    }

    /// Forgets the addresses that have been quiet long enough.
    pub fn sweep(&self) {
        self.limiter.retain_recent();
    }
}

/// What an address counts under: an IPv4 address whole, an IPv6 address
/// by its /64 (its first four groups), anything else as written.
fn key_of(address: &str) -> String {
    match address.trim().parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4.to_string();
            }
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        Ok(ip) => ip.to_string(),
        Err(_) => address.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn each_address_gets_its_own_minute_and_ipv6_counts_by_its_64() {
        let clock = ManualClock::new();
        let limiter = SigninLimiter::new(3, clock.clone());
        for _ in 0..3 {
            assert_eq!(limiter.check(Step::Start, "192.0.2.1"), Ok(()));
        }
        let wait = limiter.check(Step::Start, "192.0.2.1").unwrap_err();
        assert!((1..=20).contains(&wait), "{wait}");
        // The other step, and another address, have their own.
        assert_eq!(limiter.check(Step::Callback, "192.0.2.1"), Ok(()));
        assert_eq!(limiter.check(Step::Start, "192.0.2.2"), Ok(()));
        // One /64 is one client, however it spells its addresses.
        for host in ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::9"] {
            let _ = limiter.check(Step::Start, host);
        }
        assert!(limiter.check(Step::Start, "2001:db8:1:2::77").is_err());
        assert_eq!(limiter.check(Step::Start, "2001:db8:1:3::1"), Ok(()));
        // An IPv4 address mapped into IPv6 is that IPv4 address.
        assert!(limiter.check(Step::Start, "::ffff:192.0.2.1").is_err());
        // A minute on, the address may again.
        clock.advance(Duration::from_secs(20));
        assert_eq!(limiter.check(Step::Start, "192.0.2.1"), Ok(()));
        assert!(limiter.check(Step::Start, "192.0.2.1").is_err());
        clock.advance(Duration::from_secs(60));
        for _ in 0..3 {
            assert_eq!(limiter.check(Step::Start, "192.0.2.1"), Ok(()));
        }
        // Quiet addresses are forgotten.
        assert!(limiter.tracked() > 0);
        clock.advance(Duration::from_secs(120));
        limiter.sweep();
        assert_eq!(limiter.tracked(), 0);
    }
}
