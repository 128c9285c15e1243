//! A form sent to an OpenID provider's token endpoint: the one kind of
//! request tfmirror makes with a body. It goes out through the same
//! connector as every other request to an origin, so through the request
//! forgery guard, and under the same limits. It follows no redirect: a
//! token endpoint that answers with one is refused, since a form carrying
//! a code and a client secret is not sent on to wherever a `Location` says.

use std::time::Instant;

use bytes::Bytes;
use http::{header, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use url::Url;

use super::client::{error_chain, not_answered, Client, UpstreamError, MAX_METADATA_BYTES};
use crate::metrics::UpstreamOutcome;

/// What a form was answered with: its status, content type and body (at
/// most [`MAX_METADATA_BYTES`]), whatever the status, so that the caller
/// can tell an OAuth error's body.
#[derive(Debug, Clone)]
pub struct FormAnswer {
    /// The status.
    pub status: StatusCode,
    /// The `Content-Type`, when the answer names one.
    pub content_type: Option<String>,
    /// The body.
    pub body: Bytes,
}

impl Client {
    /// POSTs `form` (`application/x-www-form-urlencoded`) to `url`, with
    /// HTTP Basic credentials when `basic` is given, and reads the answer
    /// whole within the request timeout. Only `https` URLs (or a host
    /// `upstream.hosts` lets use plain http) are asked; a redirect is
    /// refused, never followed.
    pub async fn post_form(
        &self,
        url: &Url,
        form: String,
        basic: Option<(&str, &str)>,
    ) -> Result<FormAnswer, UpstreamError> {
        let allowed = match url.scheme() {
            "https" => true,
            "http" => self.allows_plain_http(url),
            _ => false,
        };
        if !allowed {
            return Err(UpstreamError::invalid(
                url,
                "only https URLs are sent forms (plain http only for hosts whose upstream.hosts entry sets insecure_http = true)",
            ));
        }
        let total = self.limits.acquire_total(url, self.request_timeout).await?;
        let host = url.host_str().unwrap_or("").to_owned();
        let per_host = self
            .limits
            .acquire_host(url, &host, self.request_timeout)
            .await?;
        let mut req = Request::post(url.as_str())
            .header(
                header::USER_AGENT,
                concat!("tfmirror/", env!("CARGO_PKG_VERSION")),
            )
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json");
        if let Some((user, password)) = basic {
            req = req.header(header::AUTHORIZATION, basic_credentials(user, password));
        }
        let req = req
            .body(Full::new(Bytes::from(form)))
            .map_err(|e| UpstreamError::invalid(url, e))?;
        let started = Instant::now();
        let exchange = async {
            let resp = (self.posts.request(req).await).map_err(|e| not_answered(url, &e))?;
            let (parts, body) = resp.into_parts();
            let body = Limited::new(body, MAX_METADATA_BYTES)
                .collect()
                .await
                .map_err(|e| UpstreamError::Unreachable {
                    url: url.to_string(),
                    reason: format!("reading the answer failed: {}", error_chain(&*e)),
                })?
                .to_bytes();
            Ok::<_, UpstreamError>((parts, body))
        };
        let sent = tokio::time::timeout(self.request_timeout, exchange).await;
        drop((total, per_host));
        let outcome = match &sent {
            Err(_) => UpstreamOutcome::Timeout,
            Ok(Err(_)) => UpstreamOutcome::Unreachable,
            Ok(Ok((parts, _))) if parts.status.is_success() => UpstreamOutcome::Ok,
            Ok(Ok((parts, _))) if parts.status == StatusCode::NOT_FOUND => {
                UpstreamOutcome::NotFound
            }
            Ok(Ok(_)) => UpstreamOutcome::Error,
        };
        self.metrics.upstream(&host, outcome, started.elapsed());
        let (parts, body) = sent.map_err(|_| UpstreamError::Timeout {
            url: url.to_string(),
            secs: self.request_timeout.as_secs(),
        })??;
        if parts.status.is_redirection() {
            return Err(UpstreamError::invalid(
                url,
                format!(
                    "answered {} (a redirect): a form is never sent on",
                    parts.status
                ),
            ));
        }
        let content_type = (parts.headers.get(header::CONTENT_TYPE))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Ok(FormAnswer {
            status: parts.status,
            content_type,
            body,
        })
    }
}

/// `Basic <base64(user:password)>`, with both parts form-encoded first as
/// RFC 6749 (2.3.1) has a client do for its ID and secret.
fn basic_credentials(user: &str, password: &str) -> String {
    use base64::Engine as _;
    let encode =
        |s: &str| -> String { url::form_urlencoded::byte_serialize(s.as_bytes()).collect() };
    let pair = format!("{}:{}", encode(user), encode(password));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        // RFC 6749 2.3.1: "client_id:secret" after form encoding each.
        assert_eq!(
            basic_credentials("tfmirror", "s3cret"),
            "Basic dGZtaXJyb3I6czNjcmV0"
        );
        // "a b:c/d" → "a+b:c%2Fd"
        assert_eq!(basic_credentials("a b", "c/d"), "Basic YStiOmMlMkZk");
    }
}
