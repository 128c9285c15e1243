//! Why a request to an origin failed, by cause: what decides whether the
//! cached copy is served in its place ([`UpstreamError::is_outage`]) and
//! which status a client's request answers with.

use http::StatusCode;
use url::Url;

use super::wire::FieldError;

/// Why an upstream request failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    /// No connection could be made, or it broke.
    #[error("could not reach {url}: {reason}")]
    Unreachable {
        /// The URL that was requested.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The origin did not answer within the configured time.
    #[error("{url} did not answer within {secs}s")]
    Timeout {
        /// The URL that was requested.
        url: String,
        /// The limit that passed.
        secs: u64,
    },
    /// The origin answered 404.
    #[error("{url} answered 404 Not Found")]
    NotFound {
        /// The URL that was requested.
        url: String,
    },
    /// The origin answered with another unsuccessful status.
    #[error("{url} answered {status}")]
    Status {
        /// The URL that was requested.
        url: String,
        /// The status it answered with.
        status: StatusCode,
    },
    /// The request forgery guard refused the connection.
    #[error("{url} was not fetched: {reason}")]
    Refused {
        /// The URL that was requested.
        url: String,
        /// Why.
        reason: String,
    },
    /// Too many upstream requests were in flight for too long.
    #[error("{url} was not fetched: {limit} upstream requests stayed in flight for {secs}s")]
    Busy {
        /// The URL that was requested.
        url: String,
        /// Which limit, e.g. "`upstream.max_fetches` (64)".
        limit: String,
        /// How long the request waited.
        secs: u64,
    },
    /// The answer could not be used.
    #[error("{url} answered with something unusable: {reason}")]
    Invalid {
        /// The URL that was requested.
        url: String,
        /// What is wrong with the answer.
        reason: String,
    },
}

impl UpstreamError {
    /// Whether this looks like the origin being down rather than the
    /// origin's definite answer: unreachable, too slow, a 5xx status, or
    /// `429 Too Many Requests` still after the retries. Cached content is
    /// served in place of an answer in these cases.
    pub fn is_outage(&self) -> bool {
        match self {
            UpstreamError::Unreachable { .. }
            | UpstreamError::Timeout { .. }
            | UpstreamError::Busy { .. } => true,
            UpstreamError::Status { status, .. } => {
                status.is_server_error() || *status == StatusCode::TOO_MANY_REQUESTS
            }
            _ => false,
        }
    }

    pub(crate) fn invalid(url: &Url, reason: impl std::fmt::Display) -> Self {
        UpstreamError::Invalid {
            url: url.to_string(),
            reason: reason.to_string(),
        }
    }
}

impl From<(&Url, FieldError)> for UpstreamError {
    /// A field of the answer from `url` that the clients would refuse too.
    fn from((url, e): (&Url, FieldError)) -> Self {
        UpstreamError::invalid(url, format!("field {e}"))
    }
}
