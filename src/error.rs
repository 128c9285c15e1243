//! The one error type of request handling: each variant names a cause and
//! carries a message written for the person running `terraform init` (it
//! names the provider, version and platform involved and says what went
//! wrong, without internal detail such as file paths). [`RequestError::status`]
//! is the single mapping to an HTTP status; the HTTP layer logs each error
//! once, with the request's ID, and answers `{"errors": ["…"]}`.

use http::StatusCode;

use crate::address::InvalidName;
use crate::store::health::Unwritable;
use crate::upstream::download::DownloadError;
use crate::upstream::UpstreamError;

/// Why a request could not be answered.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RequestError {
    /// The request path or query is not one tfmirror serves, or one of its
    /// parts is not a valid name.
    #[error("{0}")]
    InvalidRequest(String),
    /// The request method is not GET or HEAD.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// The provider's registry hostname is neither allowed nor configured.
    #[error("registry host {0} is not allowed by this mirror; add it to upstream.allowed_hosts (or configure it under [upstream.hosts]) to mirror its providers")]
    HostNotAllowed(String),
    /// The request carries no token, or one the mirror does not know.
    #[error("{0}")]
    Unauthenticated(String),
    /// The client asked for this more often than the mirror allows one
    /// client address (sign-ins through an issuer).
    #[error("{0}")]
    TooOften(String),
    /// An archive link is unsigned, tampered with or expired.
    #[error("{0}")]
    LinkRefused(String),
    /// The caller is known, and their grant does not cover what they ask
    /// (a person with `read` at the status page, say).
    #[error("{0}")]
    NotPermitted(String),
    /// The mirror's policy does not allow the version (the message names
    /// the rule and its reason).
    #[error("{0}")]
    Denied(String),
    /// The origin registry says the provider or version does not exist.
    #[error("{0}")]
    NotAtOrigin(String),
    /// The mirror is offline and does not hold what was asked for.
    #[error("{0}")]
    NotHeld(String),
    /// The version exists but has no verified package for the platform.
    #[error("{0}")]
    NoPackage(String),
    /// The origin could not be reached.
    #[error("{0}")]
    UpstreamUnreachable(String),
    /// The origin answered with something unusable.
    #[error("{0}")]
    UpstreamInvalid(String),
    /// The origin did not answer in time.
    #[error("{0}")]
    UpstreamTimeout(String),
    /// Too many upstream fetches were in flight for too long.
    #[error("{0}")]
    UpstreamBusy(String),
    /// What the origin published failed verification: a bad signature, a
    /// checksum that does not match, a package that is not a zip archive.
    #[error("{0}")]
    VerificationFailed(String),
    /// The cache cannot be read or written.
    #[error("{0}")]
    DiskUnavailable(String),
    /// What would be downloaded does not fit in the cache's free space
    /// (keeping `cache.min_free_space`).
    #[error("{0}")]
    InsufficientStorage(String),
    /// A module's source is of a kind the mirror does not fetch.
    #[error("{0}")]
    UnsupportedSource(String),
    /// A module's source no longer yields what the mirror pinned.
    #[error("{0}")]
    PinMismatch(String),
    /// The mirror is shutting down or cannot store new content.
    #[error("{0}")]
    NotReady(String),
    /// A task of the mirror's own failed (a bug).
    #[error("{0}")]
    Internal(String),
    /// No page has this path.
    #[error("{0}")]
    NoSuchPage(String),
    /// What a form sent is larger than the page takes.
    #[error("{0}")]
    TooLarge(String),
    /// A form was sent from another site, or without the token its page
    /// gave.
    #[error("{0}")]
    FormRefused(String),
}

impl RequestError {
    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        use RequestError::{
            Denied, DiskUnavailable, FormRefused, HostNotAllowed, InsufficientStorage, Internal,
            InvalidRequest, LinkRefused, MethodNotAllowed, NoPackage, NoSuchPage, NotAtOrigin,
            NotHeld, NotPermitted, NotReady, PinMismatch, TooLarge, TooOften, Unauthenticated,
            UnsupportedSource, UpstreamBusy, UpstreamInvalid, UpstreamTimeout, UpstreamUnreachable,
            VerificationFailed,
        };
        match self {
            InvalidRequest(_) => StatusCode::BAD_REQUEST,
            Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            TooOften(_) => StatusCode::TOO_MANY_REQUESTS,
            HostNotAllowed(_) | LinkRefused(_) | Denied(_) | FormRefused(_) | NotPermitted(_) => {
                StatusCode::FORBIDDEN
            }
            NotAtOrigin(_) | NotHeld(_) | NoPackage(_) | NoSuchPage(_) => StatusCode::NOT_FOUND,
            TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            UpstreamUnreachable(_)
            | UpstreamInvalid(_)
            | VerificationFailed(_)
            | UnsupportedSource(_)
            | PinMismatch(_) => StatusCode::BAD_GATEWAY,
            UpstreamTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
            UpstreamBusy(_) | DiskUnavailable(_) | NotReady(_) => StatusCode::SERVICE_UNAVAILABLE,
            InsufficientStorage(_) => StatusCode::INSUFFICIENT_STORAGE,
            Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The JSON body of the error answer.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({ "errors": [self.to_string()] })
    }

    /// Adds context in front of the message, keeping the cause.
    #[must_use]
    pub fn context(self, what: impl std::fmt::Display) -> Self {
        use RequestError::{
            DiskUnavailable, InvalidRequest, NoPackage, NotAtOrigin, NotHeld, UpstreamBusy,
            UpstreamInvalid, UpstreamTimeout, UpstreamUnreachable, VerificationFailed,
        };
        let with = |m: String| format!("{what}: {m}");
        match self {
            InvalidRequest(m) => InvalidRequest(with(m)),
            NotAtOrigin(m) => NotAtOrigin(with(m)),
            NotHeld(m) => NotHeld(with(m)),
            NoPackage(m) => NoPackage(with(m)),
            UpstreamUnreachable(m) => UpstreamUnreachable(with(m)),
            UpstreamInvalid(m) => UpstreamInvalid(with(m)),
            UpstreamTimeout(m) => UpstreamTimeout(with(m)),
            UpstreamBusy(m) => UpstreamBusy(with(m)),
            VerificationFailed(m) => VerificationFailed(with(m)),
            DiskUnavailable(m) => DiskUnavailable(with(m)),
            other => other,
        }
    }

    /// An upstream failure while doing `what`.
    pub fn upstream(e: &UpstreamError, what: &str) -> Self {
        let message = format!("{what}: {e}");
        match e {
            UpstreamError::Timeout { .. } => RequestError::UpstreamTimeout(message),
            UpstreamError::Busy { .. } => RequestError::UpstreamBusy(message),
            UpstreamError::Unreachable { .. } | UpstreamError::Refused { .. } => {
                RequestError::UpstreamUnreachable(message)
            }
            _ => RequestError::UpstreamInvalid(message),
        }
    }

    /// A failed download of `what` (a provider, version and platform).
    pub fn download(e: &DownloadError, what: &str) -> Self {
        match e {
            DownloadError::Upstream(e) => Self::upstream(e, &format!("could not download {what}")),
            DownloadError::Stalled(_) => {
                RequestError::UpstreamTimeout(format!("downloading {what} {e}"))
            }
            DownloadError::Broken(_) => {
                RequestError::UpstreamUnreachable(format!("downloading {what} {e}"))
            }
            DownloadError::AnnouncedTooLarge { .. }
            | DownloadError::TooLarge(_)
            | DownloadError::WrongLength { .. } => {
                RequestError::UpstreamInvalid(format!("{what}: {e}; nothing was stored"))
            }
            DownloadError::Write(io) => RequestError::DiskUnavailable(format!(
                "the cache cannot be written (writing an archive: {io}); what is already cached is still served"
            )),
            DownloadError::NoRoomAnnounced(_) | DownloadError::NoRoom { .. } => {
                RequestError::InsufficientStorage(format!("{what}: {e}"))
            }
        }
    }
}

impl From<InvalidName> for RequestError {
    fn from(e: InvalidName) -> Self {
        RequestError::InvalidRequest(e.to_string())
    }
}

impl From<Unwritable> for RequestError {
    fn from(e: Unwritable) -> Self {
        RequestError::DiskUnavailable(format!("{e}; what is already cached is still served"))
    }
}
