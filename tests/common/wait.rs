//! Waiting for a condition, with a deadline, instead of sleeping for a
//! fixed time.

use std::time::Duration;

/// How often a condition is looked at again. A fixed pause is right here:
/// the conditions are files and counters that announce no change, and
/// the deadline, not the pause, decides when a test gives up.
const POLL: Duration = Duration::from_millis(10);

/// Waits until `condition` holds, looking again every few milliseconds;
/// panics naming `what` when it still does not hold after `deadline`.
pub async fn wait_until(what: &str, deadline: Duration, mut condition: impl FnMut() -> bool) {
    let give_up = tokio::time::Instant::now() + deadline;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < give_up,
            "waited {deadline:?} for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Like [`wait_until`], for a condition that must be asked for
/// asynchronously (a server's answer).
pub async fn wait_until_answered<F, Fut>(what: &str, deadline: Duration, condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    assert!(
        answered_within(deadline, condition).await,
        "waited {deadline:?} for {what}"
    );
}

/// Whether an asynchronously asked `condition` comes to hold within
/// `deadline`, for a caller that reports the failure itself.
pub async fn answered_within<F, Fut>(deadline: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let give_up = tokio::time::Instant::now() + deadline;
    while !condition().await {
        if tokio::time::Instant::now() >= give_up {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
    true
}
