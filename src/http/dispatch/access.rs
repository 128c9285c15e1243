//! The one access check: what a route declares it needs, against the
//! request's credentials or its signed link; who the caller is goes on the
//! request for the audit trail and the links its answer hands out.

use std::sync::Arc;

use super::Asked;
use crate::auth::Who;
use crate::error::RequestError;
use crate::http::routes::Access;
use crate::http::App;

/// The one access check: what the route declares it needs. Who the
/// caller is goes on `asked`.
pub(super) async fn authorize(
    app: &App,
    access: Access<'_>,
    asked: &Asked<'_>,
) -> Result<(), RequestError> {
    if let Some(done) = authorize_now(app, access, asked) {
        return done;
    }
    let identity = match access {
        Access::TokenOrBasic => {
            app.auth
                .identify_token_or_basic(asked.authorization)
                .await?
        }
        _ => app.auth.identify(asked.authorization).await?,
    };
    asked.note(identity.who);
    Ok(())
}

/// [`authorize`] when it needs no wait (`None`: an issuer's keys must be
/// fetched first).
pub(super) fn authorize_now(
    app: &App,
    access: Access<'_>,
    asked: &Asked<'_>,
) -> Option<Result<(), RequestError>> {
    let query = asked.query;
    let linked = match access {
        Access::Open => return Some(Ok(())),
        // Basic authentication (release paths) is read on the way that
        // may wait.
        Access::TokenOrBasic => return None,
        Access::Token => {
            return Some(
                app.auth
                    .identify_now(asked.authorization)?
                    .map(|identity| asked.note(identity.who)),
            );
        }
        Access::SignedArchive(key) => app.auth.check_archive(key, query),
        Access::SignedSums(provider, version, index) => {
            app.auth.check_sums(provider, version, index, query)
        }
        Access::SignedModule(module, version) => app.auth.check_module(module, version, query),
    };
    Some(linked.map(|by| {
        // A link that names nobody, followed with credentials that
        // authenticate (a script, a proxy that adds them): those name the
        // caller.
        let by = by.map(Arc::new).or_else(|| {
            asked.authorization?;
            app.auth.identify_now(asked.authorization)?.ok()?.who
        });
        asked.note(by);
    }))
}

impl Asked<'_> {
    /// Who sent the request, as access control told.
    pub(super) fn who(&self) -> Option<&Who> {
        self.who.get().map(|w| &**w)
    }

    /// Notes who sent the request.
    fn note(&self, who: Option<Arc<Who>>) {
        if let Some(who) = who {
            let _ = self.who.set(who);
        }
    }
}
