//! A mirror whose people sign in to the pages through an issuer that
//! misbehaves on request ([`super::fake_issuer`]), and what a browser does
//! with it: begin a sign-in, visit the issuer, come back, read the counts.

use std::collections::BTreeMap;
use std::time::Duration;

use http::StatusCode;
use serde_json::{json, Map, Value};
use tfmirror::config::{ClaimsParameter, Config, Grant, OidcIssuerConfig, OidcRuleConfig};

use super::fake_issuer::{FakeIssuer, CLIENT_ID};
use super::{published, Answer, Client, Scene};

/// The issuer's entry, called `sso`: the platform approvers may approve,
/// developers and contractors read.
pub fn issuer_config(issuer: &str) -> OidcIssuerConfig {
    let rule = |claim: &str, pattern: &str, grant| OidcRuleConfig {
        claims: BTreeMap::from([(claim.to_owned(), pattern.to_owned())]),
        grant,
    };
    OidcIssuerConfig {
        name: "sso".into(),
        issuer: issuer.parse().unwrap(),
        audience: "https://mirror.signin.test".into(),
        algorithms: vec!["ES256".into()],
        max_lifetime: Duration::from_secs(3600),
        clock_skew: Duration::from_secs(60),
        keys_file: None,
        keys_max_age: Duration::from_secs(3600),
        keys_refetch_interval: Duration::from_secs(60),
        client_id: Some(CLIENT_ID.into()),
        client_secret_file: None,
        scopes: vec!["groups".into()],
        userinfo_signed_response_alg: None,
        claims_parameter: ClaimsParameter::Auto,
        rules: vec![
            rule("groups", "platform-approvers", Grant::Approve),
            rule("groups", "dev", Grant::Read),
            rule("email", "*@contractors.test", Grant::Read),
        ],
    }
}

/// A mirror whose people sign in through a fake issuer.
pub struct World {
    pub sc: Scene,
    pub fake: FakeIssuer,
    /// A browser's client towards the issuer (trusting its authority).
    pub at_issuer: Client,
}

/// A mirror of `acme/widget` 1.0.0 with the issuer `sso`, configured
/// further by `configure`.
pub async fn world(configure: impl FnOnce(&mut Config, &FakeIssuer)) -> World {
    let (setup, origin, signer, archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    let fake = FakeIssuer::start(&setup.ca).await;
    let sc = Scene::on(setup, origin, signer, archives, |config: &mut Config| {
        config.auth.oidc = vec![issuer_config(&fake.issuer)];
        configure(config, &fake);
    })
    .await;
    let at_issuer = Client::trusting(&sc.setup.dir.path().join("origin-ca.pem"));
    World {
        sc,
        fake,
        at_issuer,
    }
}

/// A `Set-Cookie`'s `name=value`, when it sets a value.
pub fn cookie_pair(answer: &Answer, name: &str) -> Option<String> {
    (answer.headers.get_all("set-cookie").iter())
        .filter_map(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap().to_owned())
        .find(|pair| pair.starts_with(&format!("{name}=")) && pair.len() > name.len() + 1)
}

/// The query parameter `name` of `url`.
pub fn query_param(url: &str, name: &str) -> String {
    let url = url::Url::parse(url).unwrap();
    let found = url.query_pairs().find(|(k, _)| k == name);
    found
        .unwrap_or_else(|| panic!("no {name} in {url}"))
        .1
        .into_owned()
}

/// A JSON object's members.
pub fn claims(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

impl World {
    /// `path` on the mirror (or a whole URL), with `cookie` when given.
    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Answer {
        let headers: Vec<(&str, &str)> = cookie.map(|c| ("cookie", c)).into_iter().collect();
        let url = if path.starts_with("https://") {
            path.to_owned()
        } else {
            self.sc.mirror.url(path)
        };
        (self.sc.client)
            .request_headers(http::Method::GET, &url, &headers)
            .await
    }

    /// The start of a sign-in: the sign-in cookie and where the browser
    /// is sent.
    pub async fn begin(&self) -> (String, String) {
        let start = self.get("/-/signin/with/sso?next=/-/releases", None).await;
        assert_eq!(start.status, StatusCode::SEE_OTHER, "{}", start.page_text());
        let cookie = cookie_pair(&start, "tfmirror_signin").expect("a sign-in cookie");
        let to = start.headers["location"].to_str().unwrap().to_owned();
        (cookie, to)
    }

    /// The browser at the issuer, which sends it back: the callback URL.
    pub async fn at_issuer(&self, authorize: &str) -> String {
        let back = self.at_issuer.get(authorize).await;
        assert_eq!(back.status, StatusCode::FOUND, "{}", back.page_text());
        back.headers["location"].to_str().unwrap().to_owned()
    }

    /// The callback with `cookie` (a sign-in cookie, or none).
    pub async fn callback(&self, url: &str, cookie: Option<&str>) -> Answer {
        self.get(url, cookie).await
    }

    /// A whole sign-in: the callback's answer.
    pub async fn sign_in(&self) -> Answer {
        let (cookie, authorize) = self.begin().await;
        let back = self.at_issuer(&authorize).await;
        self.callback(&back, Some(&cookie)).await
    }

    /// Signs `person` in, in `groups`: the session cookie.
    pub async fn session(&self, person: &str, groups: &[&str]) -> String {
        let claims = claims(json!({ "groups": groups }));
        self.fake.behave(|b| {
            b.person = person.into();
            b.id_token_claims = claims;
        });
        let answer = self.sign_in().await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.page_text());
        cookie_pair(&answer, "tfmirror_session").unwrap()
    }

    /// A metric's value, by its whole series name; 0 when it is not there.
    pub async fn metric(&self, series: &str) -> u64 {
        let text = self.get("/metrics", None).await.page_text();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{series} ")))
            .map_or(0, |n| n.trim().parse().unwrap())
    }

    /// `tfmirror_oidc_signins_total` for `issuer` and `outcome`.
    pub async fn counted(&self, issuer: &str, outcome: &str) -> u64 {
        self.metric(&format!(
            "tfmirror_oidc_signins_total{{issuer=\"{issuer}\",outcome=\"{outcome}\"}}"
        ))
        .await
    }

    /// Every outcome's count under `sso`.
    pub async fn outcomes(&self) -> BTreeMap<String, u64> {
        let text = self.get("/metrics", None).await.page_text();
        let prefix = "tfmirror_oidc_signins_total{issuer=\"sso\",outcome=\"";
        text.lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .map(|rest| {
                let (outcome, n) = rest.split_once("\"} ").unwrap();
                (outcome.to_owned(), n.trim().parse().unwrap())
            })
            .collect()
    }

    /// Asserts a sign-in is refused, counted once under `outcome` and
    /// under nothing else, and what the person is told holds `told`.
    pub async fn refused(
        &self,
        answer: &Answer,
        before: &BTreeMap<String, u64>,
        outcome: &str,
        told: &str,
    ) {
        assert_eq!(
            answer.status,
            StatusCode::UNAUTHORIZED,
            "{outcome}: {}",
            answer.page_text()
        );
        let text = answer.page_text();
        assert!(text.contains(told), "{outcome}: {text}");
        assert!(
            cookie_pair(answer, "tfmirror_session").is_none(),
            "{outcome}: a session was opened"
        );
        let after = self.outcomes().await;
        for (name, was) in before {
            let expected = was + u64::from(name == outcome);
            assert_eq!(
                after[name], expected,
                "{name} after a sign-in refused for {outcome}"
            );
        }
    }
}
