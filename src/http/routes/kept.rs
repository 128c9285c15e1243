//! The document routes each worker thread has parsed, kept by their raw
//! path. Nearly every request is for one of a few `index.json` and
//! `:version.json` paths, asked again and again; parsing one (decoding its
//! segments, checking and normalizing three names) costs more than the
//! rest of finding its answer. [`parse`](super::parse) depends on the path
//! alone, so a route parsed once is the route of that path for good.
//!
//! Each thread keeps its own paths (no lock, nothing shared between
//! cores), at most [`MAX_PATHS`]; a thread that meets more starts again
//! with none, so a client asking for ever new paths costs memory no more
//! than that, and its requests are parsed as they would be without the
//! memo. Only the document routes are kept, and only when parsed; a path
//! refused is refused every time, by the parser.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use super::{parse, Route};
use crate::error::RequestError;

/// How many paths a worker thread keeps.
pub const MAX_PATHS: usize = 1024;

/// This thread's parsed document paths, keyed with aHash seeded at random
/// (the paths are the clients' choice).
type Kept = HashMap<Box<str>, Arc<Route>, ahash::RandomState>;

thread_local! {
    /// This thread's parsed document paths.
    static KEPT: RefCell<Kept> = RefCell::new(Kept::default());
}

/// The route `raw_path` names: as [`parse`](super::parse) gives it,
/// from this thread's memo when it parsed the path before.
pub fn parse_kept(raw_path: &str) -> Result<Arc<Route>, RequestError> {
    if let Some(route) = KEPT.with_borrow(|kept| kept.get(raw_path).cloned()) {
        return Ok(route);
    }
    let route = Arc::new(parse(raw_path)?);
    if matches!(*route, Route::Index(_) | Route::Version(..)) {
        KEPT.with_borrow_mut(|kept| {
            if kept.len() >= MAX_PATHS {
                *kept = Kept::default();
            }
            kept.insert(raw_path.into(), route.clone());
        });
    }
    Ok(route)
}

/// How many paths this thread keeps (for tests).
#[cfg(test)]
fn kept_here() -> usize {
    KEPT.with_borrow(Kept::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_routes_are_kept_and_equal_to_a_fresh_parse() {
        for path in [
            "/registry.terraform.io/hashicorp/aws/index.json",
            "/registry.terraform.io/hashicorp/aws/5.1.0.json",
            // Normalized as the parser normalizes it.
            "/Registry.Terraform.IO:443/HashiCorp/AWS/index.json",
        ] {
            let first = parse_kept(path).unwrap();
            assert_eq!(*first, parse(path).unwrap(), "{path}");
            let again = parse_kept(path).unwrap();
            assert!(Arc::ptr_eq(&first, &again), "{path} was parsed again");
        }
    }

    #[test]
    fn other_routes_and_refusals_are_not_kept() {
        let before = kept_here();
        for path in [
            "/healthz",
            "/registry.terraform.io/hashicorp/aws/terraform-provider-aws_5.1.0_linux_amd64.zip",
            "/v1/providers/registry.terraform.io/hashicorp/aws/versions",
        ] {
            let first = parse_kept(path).unwrap();
            assert_eq!(*first, parse(path).unwrap(), "{path}");
            assert!(!Arc::ptr_eq(&first, &parse_kept(path).unwrap()), "{path}");
        }
        for path in [
            "/registry.terraform.io/hashicorp/aws/../index.json",
            "/registry.terraform.io/hash%2Fcorp/aws/index.json",
            "/registry.terraform.io/hashicorp/aws/not-a-version.json",
        ] {
            let refused = parse_kept(path).unwrap_err();
            assert_eq!(refused.to_string(), parse(path).unwrap_err().to_string());
            assert!(parse_kept(path).is_err(), "{path} refused once, then kept");
        }
        assert_eq!(kept_here(), before);
    }

    #[test]
    fn a_thread_keeps_at_most_max_paths() {
        // Each test runs on a thread of its own: this one starts empty.
        for n in 0..MAX_PATHS + 10 {
            let path = format!("/registry.terraform.io/ns{n}/aws/index.json");
            let route = parse_kept(&path).unwrap();
            assert_eq!(*route, parse(&path).unwrap());
            assert!(kept_here() <= MAX_PATHS, "{} kept", kept_here());
        }
        // Started again once full: the latest paths are kept.
        assert_eq!(kept_here(), 10);
        let last = format!("/registry.terraform.io/ns{}/aws/index.json", MAX_PATHS + 9);
        assert!(Arc::ptr_eq(
            &parse_kept(&last).unwrap(),
            &parse_kept(&last).unwrap()
        ));
    }
}
