//! An OpenID provider that misbehaves on request, over real TLS: what a
//! conforming provider (npm's oidc-provider, `oidc`) cannot be made to
//! send, such as an ID token for another audience or with another nonce,
//! a UserInfo answer about someone else, unsigned where signed was
//! registered, or signed by the wrong key. Its authorization endpoint
//! signs the person in at once (no pages) and sends the browser back with
//! a code; its token endpoint checks the code, the PKCE verifier, the
//! redirect URI and the client as a real one does. It counts every
//! request by path, so a test can tell what the mirror asked.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Map, Value};

use super::TestCa;

/// The client ID the mirror is registered under.
pub const CLIENT_ID: &str = "tfmirror-fake";

/// How the UserInfo endpoint answers.
#[derive(Debug, Clone)]
pub enum UserInfo {
    /// Plain JSON: these claims, with the person's `sub` unless they name
    /// one.
    Json(Map<String, Value>),
    /// A JWT, with these claims (`iss`, `aud` and `sub` filled in unless
    /// they name their own), signed with the issuer's key (or another
    /// key of the same kind: `by_stranger`), or unsigned (`alg: none`).
    Signed {
        claims: Map<String, Value>,
        by_stranger: bool,
        unsigned: bool,
    },
    /// This status, with no claims.
    Status(u16),
}

/// What the issuer does; a test changes it between sign-ins.
#[derive(Debug, Clone)]
pub struct Behaviour {
    /// Who signs in at the authorization endpoint.
    pub person: String,
    /// Claims the ID token carries beyond the registered ones.
    pub id_token_claims: Map<String, Value>,
    /// Overrides of the ID token's registered claims (`aud`, `iss`,
    /// `nonce`, `exp`, …).
    pub id_token_overrides: Map<String, Value>,
    /// How UserInfo answers.
    pub userinfo: UserInfo,
    /// What the discovery document says of `claims_parameter_supported`.
    pub claims_parameter_supported: bool,
    /// A token endpoint the discovery document names instead of its own.
    pub token_endpoint: Option<String>,
    /// A UserInfo endpoint the discovery document names instead of its
    /// own.
    pub userinfo_endpoint: Option<String>,
    /// The discovery document answers this status instead (an issuer
    /// that is down).
    pub discovery_status: Option<u16>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            person: "alice".into(),
            id_token_claims: Map::new(),
            id_token_overrides: Map::new(),
            userinfo: UserInfo::Json(Map::new()),
            claims_parameter_supported: false,
            token_endpoint: None,
            userinfo_endpoint: None,
            discovery_status: None,
        }
    }
}

/// A code handed out and what it was handed out for.
struct Issued {
    challenge: String,
    nonce: String,
    redirect_uri: String,
    person: String,
    used: bool,
}

#[derive(Default)]
struct State {
    behaviour: Behaviour,
    codes: BTreeMap<String, Issued>,
    access: BTreeMap<String, String>,
    requests: BTreeMap<String, usize>,
    /// The query of each authorization request.
    authorizations: Vec<BTreeMap<String, String>>,
    /// Why the token endpoint refused, each time it did.
    token_refusals: Vec<String>,
}

/// The running issuer.
pub struct FakeIssuer {
    /// Its issuer URL (`https://localhost:<port>`).
    pub issuer: String,
    /// Its public key set.
    pub jwks: Value,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeIssuer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An ES256 key: its signing half and its public JWK.
pub struct EcKey {
    pub key: EncodingKey,
    pub jwk: Value,
}

impl EcKey {
    /// A new key named `kid`.
    pub fn new(kid: &str) -> EcKey {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let raw = pair.public_key_raw();
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        EcKey {
            key: EncodingKey::from_ec_der(&pair.serialize_der()),
            jwk: json!({"kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
                        "x": b64(&raw[1..33]), "y": b64(&raw[33..65])}),
        }
    }

    /// `claims` signed with this key under its key ID.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = self.jwk["kid"].as_str().map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

/// 16 random bytes in hex: a code, an access token.
fn random_name() -> String {
    use rand::RngCore as _;
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

struct Served {
    issuer: String,
    key: EcKey,
    stranger: EcKey,
    jwks: Value,
    state: Arc<Mutex<State>>,
}

impl FakeIssuer {
    /// Starts the issuer on `localhost`, with a certificate of `ca`.
    pub async fn start(ca: &TestCa) -> FakeIssuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let issuer = format!("https://localhost:{port}");
        let key = EcKey::new("fake-1");
        let jwks = json!({"keys": [key.jwk]});
        let state = Arc::new(Mutex::new(State::default()));
        let served = Arc::new(Served {
            issuer: issuer.clone(),
            key,
            stranger: EcKey::new("fake-1"),
            jwks: jwks.clone(),
            state: state.clone(),
        });
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (acceptor, served) = (acceptor.clone(), served.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let svc = service_fn(move |req| {
                        let served = served.clone();
                        async move { Ok::<_, Infallible>(served.answer(req).await) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
        FakeIssuer {
            issuer,
            jwks,
            state,
            task,
        }
    }

    /// Changes what it does.
    pub fn behave(&self, change: impl FnOnce(&mut Behaviour)) {
        change(&mut self.state.lock().unwrap().behaviour);
    }

    /// How many requests it answered at `path`.
    pub fn requests(&self, path: &str) -> usize {
        let state = self.state.lock().unwrap();
        state.requests.get(path).copied().unwrap_or(0)
    }

    /// The query of the last authorization request.
    pub fn last_authorization(&self) -> BTreeMap<String, String> {
        let state = self.state.lock().unwrap();
        state.authorizations.last().cloned().unwrap_or_default()
    }

    /// Why the token endpoint refused, each time it did.
    pub fn token_refusals(&self) -> Vec<String> {
        self.state.lock().unwrap().token_refusals.clone()
    }
}

fn answer(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(body.into()))
        .unwrap()
}

fn json_answer(status: StatusCode, value: &Value) -> Response<Full<Bytes>> {
    answer(status, "application/json", value.to_string())
}

fn form(text: &str) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

impl Served {
    async fn answer(&self, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        let path = req.uri().path().to_owned();
        let query = form(req.uri().query().unwrap_or(""));
        let bearer = (req.headers().get("authorization"))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned);
        let body = req.into_body().collect().await.unwrap().to_bytes();
        let body = form(&String::from_utf8_lossy(&body));
        let mut state = self.state.lock().unwrap();
        *state.requests.entry(path.clone()).or_default() += 1;
        match path.as_str() {
            "/.well-known/openid-configuration" => {
                if let Some(status) = state.behaviour.discovery_status {
                    return json_answer(StatusCode::from_u16(status).unwrap(), &json!({}));
                }
                let token = (state.behaviour.token_endpoint.clone())
                    .unwrap_or_else(|| format!("{}/token", self.issuer));
                let userinfo = (state.behaviour.userinfo_endpoint.clone())
                    .unwrap_or_else(|| format!("{}/userinfo", self.issuer));
                json_answer(
                    StatusCode::OK,
                    &json!({
                        "issuer": self.issuer,
                        "jwks_uri": format!("{}/jwks", self.issuer),
                        "authorization_endpoint": format!("{}/authorize", self.issuer),
                        "token_endpoint": token,
                        "userinfo_endpoint": userinfo,
                        "claims_parameter_supported": state.behaviour.claims_parameter_supported,
                        "response_types_supported": ["code"],
                        "subject_types_supported": ["public"],
                        "id_token_signing_alg_values_supported": ["ES256"],
                        "code_challenge_methods_supported": ["S256"],
                    }),
                )
            }
            "/jwks" => json_answer(StatusCode::OK, &self.jwks),
            "/authorize" => {
                state.authorizations.push(query.clone());
                let code = random_name();
                let redirect_uri = query.get("redirect_uri").cloned().unwrap_or_default();
                let person = state.behaviour.person.clone();
                state.codes.insert(
                    code.clone(),
                    Issued {
                        challenge: query.get("code_challenge").cloned().unwrap_or_default(),
                        nonce: query.get("nonce").cloned().unwrap_or_default(),
                        redirect_uri: redirect_uri.clone(),
                        person,
                        used: false,
                    },
                );
                let back = url::Url::parse_with_params(
                    &redirect_uri,
                    &[
                        ("code", code.as_str()),
                        ("state", query.get("state").map_or("", String::as_str)),
                    ],
                )
                .unwrap();
                Response::builder()
                    .status(StatusCode::FOUND)
                    .header("location", back.as_str())
                    .body(Full::new(Bytes::new()))
                    .unwrap()
            }
            "/token" => self.token(&mut state, &body),
            "/userinfo" => {
                let person = bearer.and_then(|b| state.access.get(&b).cloned());
                let Some(person) = person else {
                    return json_answer(
                        StatusCode::UNAUTHORIZED,
                        &json!({"error": "invalid_token"}),
                    );
                };
                self.userinfo(&state.behaviour, &person)
            }
            _ => json_answer(StatusCode::NOT_FOUND, &json!({"error": "not_found"})),
        }
    }

    fn token(&self, state: &mut State, body: &BTreeMap<String, String>) -> Response<Full<Bytes>> {
        let field = |name: &str| body.get(name).cloned().unwrap_or_default();
        let code = field("code");
        let verifier = field("code_verifier");
        let challenge =
            b64(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()).as_ref());
        let refusal = match state.codes.get(&code) {
            None => Some("unknown code".to_owned()),
            Some(issued) if issued.used => Some("code used before".to_owned()),
            Some(issued) if verifier.is_empty() => {
                Some(format!("no code_verifier for {}", issued.person))
            }
            Some(issued) if issued.challenge != challenge => {
                Some("code_verifier does not match".to_owned())
            }
            Some(issued) if issued.redirect_uri != field("redirect_uri") => {
                Some("redirect_uri differs".to_owned())
            }
            Some(_) if field("client_id") != CLIENT_ID => Some("another client".to_owned()),
            Some(_) if field("grant_type") != "authorization_code" => Some("grant_type".to_owned()),
            Some(_) => None,
        };
        if let Some(why) = refusal {
            state.token_refusals.push(why.clone());
            return json_answer(
                StatusCode::BAD_REQUEST,
                &json!({"error": "invalid_grant", "error_description": why}),
            );
        }
        let issued = state.codes.get_mut(&code).unwrap();
        issued.used = true;
        let (person, nonce) = (issued.person.clone(), issued.nonce.clone());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut claims = json!({
            "iss": self.issuer, "aud": CLIENT_ID, "sub": person, "nonce": nonce,
            "iat": now, "exp": now + 300,
        });
        let claims_map = claims.as_object_mut().unwrap();
        for (k, v) in &state.behaviour.id_token_claims {
            claims_map.insert(k.clone(), v.clone());
        }
        for (k, v) in &state.behaviour.id_token_overrides {
            claims_map.insert(k.clone(), v.clone());
        }
        let access = random_name();
        state.access.insert(access.clone(), person);
        json_answer(
            StatusCode::OK,
            &json!({
                "access_token": access, "token_type": "Bearer", "expires_in": 300,
                "id_token": self.key.sign(&claims), "scope": "openid groups",
            }),
        )
    }

    fn userinfo(&self, behaviour: &Behaviour, person: &str) -> Response<Full<Bytes>> {
        match &behaviour.userinfo {
            UserInfo::Status(status) => {
                json_answer(StatusCode::from_u16(*status).unwrap(), &json!({}))
            }
            UserInfo::Json(claims) => {
                let mut all = json!({"sub": person});
                for (k, v) in claims {
                    all[k] = v.clone();
                }
                json_answer(StatusCode::OK, &all)
            }
            UserInfo::Signed {
                claims,
                by_stranger,
                unsigned,
            } => {
                let mut all = json!({"sub": person, "iss": self.issuer, "aud": CLIENT_ID});
                for (k, v) in claims {
                    all[k] = v.clone();
                }
                let jwt = if *unsigned {
                    format!(
                        "{}.{}.",
                        b64(json!({"alg": "none"}).to_string().as_bytes()),
                        b64(all.to_string().as_bytes())
                    )
                } else if *by_stranger {
                    self.stranger.sign(&all)
                } else {
                    self.key.sign(&all)
                };
                answer(StatusCode::OK, "application/jwt", jwt)
            }
        }
    }
}
