//! The authorization code a person's sign-in brought back, traded for
//! tokens at the issuer's token endpoint (OpenID Connect Core 3.1.3): with
//! the PKCE verifier, the redirect URI the code was issued for, and the
//! client's secret (HTTP Basic) when the mirror is a confidential client.
//! Through the upstream client, so through the request forgery guard,
//! and never following a redirect.

use serde_json::Value;

use super::token::Refusal;
use super::Oidc;

/// The most bytes a client secret file is read to (a secret is tens of
/// bytes; a longer file is refused, not read on).
const MAX_SECRET: u64 = 64 * 1024;

/// The client secret in the file at `path`, its surrounding white space
/// trimmed: read off the async threads (tokio's file reads run on its
/// blocking pool), so that a file that is slow to open or read (a FIFO,
/// a network file system) holds up only the sign-in that asked for it.
async fn read_secret(path: &std::path::Path) -> std::io::Result<String> {
    use tokio::io::AsyncReadExt;
    let invalid = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_owned());
    let file = tokio::fs::File::open(path).await?;
    let mut bytes = Vec::new();
    file.take(MAX_SECRET + 1).read_to_end(&mut bytes).await?;
    if bytes.len() as u64 > MAX_SECRET {
        return Err(invalid("longer than 64 KiB"));
    }
    let text = String::from_utf8(bytes).map_err(|_| invalid("not UTF-8"))?;
    Ok(text.trim().to_owned())
}

/// What the token endpoint handed out for a code.
#[derive(Debug, Clone)]
pub struct Tokens {
    /// The ID token.
    pub id_token: String,
    /// The access token, which the UserInfo endpoint takes (when the
    /// answer holds one).
    pub access_token: Option<String>,
}

/// What the mirror sends to trade a code.
pub struct Code<'a> {
    /// The code the issuer sent back.
    pub code: &'a str,
    /// The PKCE code verifier the sign-in began with.
    pub verifier: &'a str,
    /// The callback URL the sign-in named.
    pub redirect_uri: &'a str,
}

impl Oidc {
    /// Trades `code` at the token endpoint of the issuer at `index`.
    pub(super) async fn exchange(&self, index: usize, code: &Code<'_>) -> Result<Tokens, Refusal> {
        let failed = |detail: String| Refusal::new("code_exchange", detail);
        let issuer = &self.issuers[index];
        let client = (self.client.as_ref()).ok_or_else(|| failed("no upstream client".into()))?;
        let endpoints = (issuer.keys.endpoints().await).map_err(|e| failed(format!("{e:#}")))?;
        let to = endpoints
            .token
            .ok_or_else(|| failed("the issuer names no token endpoint".into()))?;
        let client_id = issuer.config.client_id.as_deref().unwrap_or_default();
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "authorization_code")
            .append_pair("code", code.code)
            .append_pair("redirect_uri", code.redirect_uri)
            .append_pair("code_verifier", code.verifier)
            .append_pair("client_id", client_id)
            .finish();
        let secret = match &issuer.config.client_secret_file {
            Some(path) => Some(read_secret(path).await.map_err(|e| {
                failed(format!(
                    "reading client_secret_file {}: {e}",
                    path.display()
                ))
            })?),
            None => None,
        };
        let basic = secret.as_deref().map(|s| (client_id, s));
        let answer =
            (client.post_form(&to, form, basic).await).map_err(|e| failed(format!("{e}")))?;
        let text = String::from_utf8_lossy(&answer.body[..answer.body.len().min(300)]);
        if !answer.status.is_success() {
            return Err(failed(format!("{to} answered {}: {text}", answer.status)));
        }
        let doc: Value = (serde_json::from_slice(&answer.body))
            .map_err(|e| failed(format!("{to}: the answer is not JSON ({e}): {text}")))?;
        let field = |name: &str| doc.get(name).and_then(Value::as_str).map(str::to_owned);
        let id_token = field("id_token")
            .ok_or_else(|| failed(format!("{to}: the answer carries no id_token")))?;
        Ok(Tokens {
            id_token,
            access_token: field("access_token").filter(|t| !t.is_empty()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::read_secret;
    use std::time::Duration;

    #[tokio::test(flavor = "current_thread")]
    async fn a_secret_file_that_does_not_open_holds_up_nothing_else() {
        // A FIFO no one writes: opening it waits. On the one thread of this
        // runtime, a timer still fires meanwhile.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("secret");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // Were the read to block this thread, a writer lets it go by a
        // deadline, so that the test fails rather than hangs; otherwise it
        // is told the test is done.
        let (done, told) = std::sync::mpsc::channel::<()>();
        let writer = fifo.clone();
        std::thread::spawn(move || {
            if told.recv_timeout(Duration::from_secs(5)).is_err() {
                let _ = std::fs::OpenOptions::new().write(true).open(writer);
            }
        });
        let waited = tokio::time::timeout(Duration::from_millis(200), read_secret(&fifo)).await;
        let _ = done.send(());
        assert!(waited.is_err(), "{waited:?}");
        // The blocked open let go: a writer comes and goes.
        drop(std::fs::OpenOptions::new().write(true).open(&fifo).unwrap());
    }

    #[tokio::test]
    async fn a_secret_is_trimmed_and_a_long_file_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "  s3cret\n").unwrap();
        assert_eq!(read_secret(&path).await.unwrap(), "s3cret");
        std::fs::write(&path, vec![b'a'; 64 * 1024 + 1]).unwrap();
        let refused = read_secret(&path).await.map(|s| s.len()).unwrap_err();
        assert!(refused.to_string().contains("64 KiB"), "{refused}");
    }
}
