//! Answers whose links are signed for their caller, kept for the signing
//! window they were made in.
//!
//! With access control on, the links of a `:version.json` answer carry a
//! signature, its expiry, and for an issuer's identity who asked
//! ([`super::links`]). Links are signed per window ([`Auth::link_window`]):
//! every link to one resource made for one caller within a window is the
//! same, so the answer made for that caller is too, and it is kept and
//! served again until the window ends. A link handed out from a kept
//! answer still has at least `auth.url_lifetime` to live.
//!
//! What keeps one caller's answer from another's: an answer is kept with
//! the caller its links name ([`Auth::link_name`]: an issuer's identity,
//! all of it; nobody for a configured token, whose links name nobody) and
//! is handed only to that same caller asking for the same path. The answers
//! carry no host: their links are relative to the document or rooted
//! paths, so whatever base URL a request came through, the same bytes
//! hold. Each kept answer also names the unsigned answer it was made from,
//! and is used only while that is still the answer: a record amended, an
//! archive stored or evicted, anything that changes the unsigned answer
//! makes it stale. Access is checked on every request before a kept answer
//! is looked for, so a token removed from `auth.token_file`, an issuer
//! removed, or a token past its expiry gets no answer, kept or not.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::{Auth, Who, WhoKind};
use crate::protocol::Rendered;

/// The most bytes the kept answers (and their keys) take.
pub const KEPT_ANSWERS_BYTES: u64 = 32 * 1024 * 1024;

/// Answers made for callers, by caller and path.
pub struct SignedAnswers {
    kept: moka::sync::Cache<String, Arc<Kept>>,
}

/// An answer made for one caller in one window.
struct Kept {
    /// The window its links were signed in.
    window: u64,
    /// Whom they name (none: nobody).
    who: Option<Who>,
    /// The unsigned answer it was made from.
    from: Bytes,
    answer: Rendered,
}

impl SignedAnswers {
    /// No answers kept yet; each is dropped once its window is past
    /// (`window` long), and the least used first beyond
    /// [`KEPT_ANSWERS_BYTES`].
    pub fn new(window: Duration) -> SignedAnswers {
        SignedAnswers {
            kept: moka::sync::Cache::builder()
                .max_capacity(KEPT_ANSWERS_BYTES)
                .weigher(|key: &String, kept: &Arc<Kept>| {
                    let who = kept.who.as_ref().map_or(0, |w| {
                        w.subject.len()
                            + w.claims
                                .iter()
                                .map(|(k, v)| k.len() + v.len())
                                .sum::<usize>()
                    });
                    let bytes = key.len() + who + kept.from.len() + kept.answer.bytes.len() + 256;
                    u32::try_from(bytes).unwrap_or(u32::MAX)
                })
                .time_to_live(window * 2)
                .build(),
        }
    }

    /// How many answers are kept (for tests and the benchmarks' notes).
    pub fn len(&self) -> u64 {
        self.kept.run_pending_tasks();
        self.kept.entry_count()
    }

    /// How many bytes the kept answers weigh (at most
    /// [`KEPT_ANSWERS_BYTES`]).
    pub fn weighted_bytes(&self) -> u64 {
        self.kept.run_pending_tasks();
        self.kept.weighted_size()
    }

    /// Whether no answer is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Auth {
    /// The answer to `path` for `who`: the one kept for them, if it was
    /// made in this window from the unsigned answer `plain`, or else the
    /// one `sign` makes with their link name ([`Auth::link_name`]), kept
    /// for the rest of the window.
    pub fn signed_answer<E>(
        &self,
        who: Option<&Who>,
        path: &str,
        plain: &Bytes,
        sign: impl FnOnce(Option<&str>) -> Result<Rendered, E>,
    ) -> Result<Rendered, E> {
        // Only what a link names tells answers apart: a configured token's
        // links name nobody.
        let who = who.filter(|w| w.kind != WhoKind::Token);
        let window = self.link_window();
        // The key finds a caller's answers quickly; the caller kept with
        // each decides whether it is theirs.
        let (issuer, subject) = who.map_or(("", ""), |w| (&w.issuer, &w.subject));
        let mut key = String::with_capacity(issuer.len() + subject.len() + path.len() + 2);
        for part in [issuer, subject] {
            key.push_str(part);
            key.push('\n');
        }
        key.push_str(path);
        if let Some(kept) = self.answers.kept.get(&key) {
            if kept.window == window && kept.who.as_ref() == who && kept.from == plain {
                return Ok(kept.answer.clone());
            }
        }
        let answer = sign(self.link_name(who).as_deref())?;
        let kept = Kept {
            window,
            who: who.cloned(),
            from: plain.clone(),
            answer: answer.clone(),
        };
        self.answers.kept.insert(key, Arc::new(kept));
        Ok(answer)
    }

    /// The answers kept for callers.
    pub fn kept_answers(&self) -> &SignedAnswers {
        &self.answers
    }
}
