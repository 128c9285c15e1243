//! The one error type of request handling, with its single mapping to an
//! HTTP status and a JSON body `{"errors": ["…"]}`.
//!
//! Every message here is written for the person running `terraform init`:
//! it names the provider, version and platform involved and says what went
//! wrong, without internal detail such as file paths.

use http::StatusCode;

use crate::address::InvalidName;

/// Why a request could not be answered.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RequestError {
    /// The request path is not one the mirror protocol defines, or one of its
    /// parts is not a valid name.
    #[error("{0}")]
    BadRequest(String),
    /// The provider's registry hostname is neither allowed nor configured.
    #[error("registry host {0} is not allowed by this mirror; add it to upstream.allowed_hosts (or configure it under [upstream.hosts]) to mirror its providers")]
    HostNotAllowed(String),
    /// The request carries no valid token.
    #[error("{0}")]
    Unauthorized(String),
    /// An archive link is unsigned, tampered with or expired.
    #[error("{0}")]
    Forbidden(String),
    /// The request method is not GET or HEAD.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// The origin registry says the thing asked for does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The origin answered, but with something unusable, or a package failed
    /// verification.
    #[error("{0}")]
    BadGateway(String),
    /// The origin did not answer in time.
    #[error("{0}")]
    GatewayTimeout(String),
    /// The mirror itself cannot do the work right now (disk trouble, overload).
    #[error("{0}")]
    Unavailable(String),
}

impl RequestError {
    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            RequestError::BadRequest(_) => StatusCode::BAD_REQUEST,
            RequestError::HostNotAllowed(_) | RequestError::Forbidden(_) => StatusCode::FORBIDDEN,
            RequestError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            RequestError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            RequestError::NotFound(_) => StatusCode::NOT_FOUND,
            RequestError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            RequestError::GatewayTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
            RequestError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The JSON body of the error answer.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({ "errors": [self.to_string()] })
    }

    /// Adds context in front of the message, keeping the status.
    pub fn context(self, what: impl std::fmt::Display) -> Self {
        use RequestError::*;
        match self {
            BadRequest(m) => BadRequest(format!("{what}: {m}")),
            NotFound(m) => NotFound(format!("{what}: {m}")),
            BadGateway(m) => BadGateway(format!("{what}: {m}")),
            GatewayTimeout(m) => GatewayTimeout(format!("{what}: {m}")),
            Unavailable(m) => Unavailable(format!("{what}: {m}")),
            other => other,
        }
    }

    /// A local disk failure, reported without the path.
    pub fn disk(what: &str, err: &std::io::Error) -> Self {
        tracing::error!(error = %err, "{what}");
        RequestError::Unavailable(format!(
            "the mirror's cache is not usable right now ({what})"
        ))
    }
}

impl From<InvalidName> for RequestError {
    fn from(e: InvalidName) -> Self {
        RequestError::BadRequest(e.to_string())
    }
}
