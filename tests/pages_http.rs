//! The pages over plain HTTP: every page's headers, its data as JSON,
//! the sign-in the pages need when tokens are on, the forms' guard
//! against other sites, the size limit and the session cookie; a
//! configuration sent to "Will it install?" as files or an archive; the
//! HTML a module page serves for each hostile README.

mod common;

use common::pages::{form, world};
use http::StatusCode;

/// What must never be in a README's HTML
/// (`tests/fixtures/hostile-readmes/forbidden.txt`).
fn forbidden() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hostile-readmes/forbidden.txt");
    (std::fs::read_to_string(path).unwrap().lines())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// Asserts that `fragment`, the part of a served page that shows what
/// `name`'s author wrote, holds nothing that runs, loads or sends and no
/// link into the mirror, and every link is without a referrer.
fn assert_text_and_structure_only(name: &str, fragment: &str) {
    let handler = regex::Regex::new(r"<[^>]*\son[a-z]+\s*=").unwrap();
    let fragment = fragment.to_lowercase();
    for never in &forbidden() {
        assert!(
            !fragment.contains(never.as_str()),
            "{name}: {never} served\n{fragment}"
        );
    }
    assert!(
        !handler.is_match(&fragment),
        "{name}: an event handler served"
    );
    for link in fragment.split("<a ").skip(1) {
        let href = link
            .split("href=\"")
            .nth(1)
            .map(|h| h.split('"').next().unwrap());
        if let Some(href) = href {
            assert!(
                ["http://", "https://", "mailto:"]
                    .iter()
                    .any(|s| href.starts_with(s)),
                "{name}: a link to {href}"
            );
        }
        let tag = link.split('>').next().unwrap();
        assert!(tag.contains("noreferrer"), "{name}: <a {tag}>");
    }
}

/// Asserts that `fragment`, a page's table of lines changed, holds only
/// the table's own elements and attributes: what the lines say is text.
fn assert_the_diff_s_own_markup_only(name: &str, fragment: &str) {
    let tag = regex::Regex::new(r"<(/?)([^\s>/]*)([^>]*)>").unwrap();
    let attribute = regex::Regex::new(r#"\s([a-z-]+)="[^"<>]*""#).unwrap();
    let elements = [
        "table", "caption", "thead", "tbody", "tr", "th", "td", "code", "span",
    ];
    let attributes = ["class", "scope", "aria-hidden"];
    for found in tag.captures_iter(fragment) {
        assert!(
            elements.contains(&&found[2]),
            "{name}: <{}{}> served",
            &found[2],
            &found[3]
        );
        let rest = attribute.replace_all(&found[3], "");
        assert!(
            rest.trim().is_empty(),
            "{name}: <{} {}>",
            &found[2],
            &found[3]
        );
        for a in attribute.captures_iter(&found[3]) {
            assert!(attributes.contains(&&a[1]), "{name}: {} served", &a[1]);
        }
    }
}

/// The part of `page` from `start` to the end of its main content.
fn shown<'a>(name: &str, page: &'a str, start: &str) -> &'a str {
    let at = page
        .find(start)
        .unwrap_or_else(|| panic!("{name}: no {start} on the page"));
    &page[at..page.rfind("</main>").unwrap()]
}

/// The module page of each hostile README, the documentation page of
/// each and what changed in it, as served: the part that shows it holds
/// its text and nothing that runs, loads or sends, however the page's
/// own headers would treat it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_hostile_readme_is_served_as_text_and_structure_only() {
    let w = world(&[]).await;
    let (m, c) = (&w.mirror, &w.http);
    assert!(w.hostile.len() >= 8, "{:?}", w.hostile);
    for (name, module) in &w.hostile {
        let path = format!("/-/modules/registry.origin.test/acme/{module}/aws/1.0.0");
        let got = c.get(&m.url(&path)).await;
        assert_eq!(got.status, StatusCode::OK, "{name}");
        let page = String::from_utf8_lossy(&got.body).into_owned();
        let readme = shown(name, &page, "<div class=\"readme\" id=\"readme\">");
        // The README is there: its heading, or the big one's link text.
        let text = if name == "big" { ">link</a>" } else { "<h1>" };
        assert!(readme.contains(text), "{name}: not shown\n{readme}");
        assert_text_and_structure_only(name, readme);
    }
    let hostile_docs: Vec<&str> = (w.docs.iter())
        .map(|d| d.name.as_str())
        .filter(|n| n.starts_with("hostile_"))
        .collect();
    assert!(hostile_docs.len() >= 7, "{hostile_docs:?}");
    for name in hostile_docs {
        let path =
            format!("/-/providers/registry.origin.test/acme/widget/1.2.0/docs/resource/{name}");
        let got = c.get(&m.url(&path)).await;
        assert_eq!(got.status, StatusCode::OK, "{name}");
        let page = String::from_utf8_lossy(&got.body).into_owned();
        let doc = shown(name, &page, "<div class=\"readme\" id=\"doc\">");
        assert!(doc.contains("<h1>"), "{name}: not shown\n{doc}");
        assert_text_and_structure_only(name, doc);
        // What changed in it since 1.0.0, which has no such page: all its
        // lines inserted, shown as text.
        let changes = format!(
            "/-/providers/registry.origin.test/acme/widget/1.2.0/docs/changes/resource/{name}?from=1.0.0"
        );
        let got = c.get(&m.url(&changes)).await;
        assert_eq!(got.status, StatusCode::OK, "{changes}");
        let page = String::from_utf8_lossy(&got.body).into_owned();
        let diff = shown(name, &page, "<table class=\"diff\">");
        assert!(
            diff.contains("<tr class=\"inserted\">"),
            "{name}: not shown\n{diff}"
        );
        assert_the_diff_s_own_markup_only(name, diff);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_is_guarded_and_its_data_is_json() {
    let w = world(&["s3cret-token"]).await;
    let (m, c) = (&w.mirror, &w.http);
    let bearer = "Bearer s3cret-token";
    let pages = [
        "/",
        "/-/search?q=widget",
        "/-/providers/registry.origin.test/acme/widget",
        "/-/modules/registry.origin.test/acme/vpc/aws",
        "/-/modules/registry.origin.test/acme/vpc/aws/1.0.0",
        "/-/providers/registry.origin.test/acme/widget/1.2.0/docs",
        "/-/providers/registry.origin.test/acme/widget/1.2.0/docs/resource/resource",
        "/-/providers/registry.origin.test/acme/widget/1.2.0/docs/changes?from=1.0.0",
        "/-/providers/registry.origin.test/acme/widget/1.2.0/docs/changes/resource/resource?from=1.0.0",
        "/-/releases",
        "/-/check",
        "/-/status",
    ];
    for path in pages {
        let got = c
            .request_with(http::Method::GET, &m.url(path), Some(bearer))
            .await;
        assert_eq!(got.status, StatusCode::OK, "{path}");
        for (name, value) in [
            ("content-security-policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
            ("x-content-type-options", "nosniff"),
            ("referrer-policy", "same-origin"),
            ("cache-control", "no-store"),
        ] {
            assert_eq!(got.headers[name], value, "{path}");
        }
        let html = String::from_utf8_lossy(&got.body);
        assert!(!html.contains("<script"), "{path}: no script at all");
        let api = if path == "/" {
            "/-/api/".to_owned()
        } else {
            path.replacen("/-/", "/-/api/", 1)
        };
        let json = c
            .request_with(http::Method::GET, &m.url(&api), Some(bearer))
            .await;
        if path == "/-/check" {
            assert_eq!(
                json.status,
                StatusCode::BAD_REQUEST,
                "the check's data needs a form"
            );
            continue;
        }
        assert_eq!(json.status, StatusCode::OK, "{api}");
        assert_eq!(json.headers["content-type"], "application/json", "{api}");
        // Without a token: the JSON is refused, the page sends to sign in.
        if path != "/" {
            assert_eq!(
                c.get(&m.url(&api)).await.status,
                StatusCode::UNAUTHORIZED,
                "{api}"
            );
            let page = c.get(&m.url(path)).await;
            assert_eq!(page.status, StatusCode::SEE_OTHER, "{path}");
        }
    }
    let provider = c
        .request_with(
            http::Method::GET,
            &m.url("/-/api/providers/registry.origin.test/acme/widget"),
            Some(bearer),
        )
        .await
        .json();
    assert_eq!(provider["versions"][0]["version"], "1.2.0");
    assert_eq!(provider["versions"][0]["verified"], "signed");
    assert_eq!(
        provider["versions"][0]["platforms"],
        serde_json::json!(["darwin_arm64", "linux_amd64"])
    );

    // The check through the API with a bearer token: a script needs no
    // form token.
    let lock = "provider \"registry.origin.test/acme/gadget\" {\n  version = \"0.9.1\"\n}\n";
    let body = form(&[("lock", lock), ("platforms", "windows_amd64")]);
    let headers = [
        ("authorization", bearer),
        ("content-type", "application/x-www-form-urlencoded"),
    ];
    let checked = c.post(&m.url("/-/api/check"), &headers, body.clone()).await;
    assert_eq!(
        checked.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&checked.body)
    );
    assert_eq!(checked.json()["verdict"]["ready"], true);
    // The page's form without its token, or from another site: refused.
    let refused = c.post(&m.url("/-/check"), &headers, body.clone()).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let foreign = [
        ("authorization", bearer),
        ("content-type", "application/x-www-form-urlencoded"),
        ("origin", "https://evil.example"),
    ];
    assert_eq!(
        c.post(&m.url("/-/api/check"), &foreign, body).await.status,
        StatusCode::FORBIDDEN
    );
    // Too large a form: 413, before it is read whole.
    let big = vec![b'a'; 9 << 20];
    assert_eq!(
        c.post(&m.url("/-/api/check"), &headers, big).await.status,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    // Bad input says what is wrong.
    let bad = c
        .post(
            &m.url("/-/api/check"),
            &headers,
            form(&[("lock", "provider {"), ("platforms", "linux_amd64")]),
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.error_text().contains("the lock file"),
        "{}",
        bad.error_text()
    );
    // A POST to anything else is not allowed.
    assert_eq!(
        c.post(&m.url("/-/status"), &headers, Vec::new())
            .await
            .status,
        StatusCode::METHOD_NOT_ALLOWED
    );

    // Signing in: the session cookie's flags, and a token taken out of
    // force ends it.
    let page = c.get(&m.url("/-/signin")).await;
    let form_cookie = page.headers["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let token = form_cookie.split_once('=').unwrap().1.to_owned();
    let signed_in = c
        .post(
            &m.url("/-/signin"),
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("cookie", &form_cookie),
            ],
            form(&[
                ("csrf", &token),
                ("token", "s3cret-token"),
                ("next", "/-/status"),
            ]),
        )
        .await;
    assert_eq!(signed_in.status, StatusCode::SEE_OTHER);
    assert_eq!(signed_in.headers["location"], "/-/status");
    let session = signed_in.headers["set-cookie"].to_str().unwrap().to_owned();
    for flag in [
        "HttpOnly",
        "Secure",
        "SameSite=Strict",
        "Max-Age=28800",
        "Path=/",
    ] {
        assert!(session.contains(flag), "{session}");
    }
    let session_cookie = session.split(';').next().unwrap().to_owned();
    let status = c
        .request_headers(
            http::Method::GET,
            &m.url("/-/status"),
            &[("cookie", &session_cookie)],
        )
        .await;
    assert_eq!(status.status, StatusCode::OK);
    // Each cookie in a header of its own, as HTTP/2 sends them.
    let status = c
        .request_headers(
            http::Method::GET,
            &m.url("/-/status"),
            &[("cookie", &form_cookie), ("cookie", &session_cookie)],
        )
        .await;
    assert_eq!(status.status, StatusCode::OK);
    // A forged session (its signature changed) is no session. The last
    // character is swapped for another, never for itself.
    let (kept, last) = session_cookie.split_at(session_cookie.len() - 1);
    let forged = format!("{kept}{}", if last == "0" { "1" } else { "0" });
    assert_ne!(forged, session_cookie);
    let status = c
        .request_headers(
            http::Method::GET,
            &m.url("/-/status"),
            &[("cookie", &forged)],
        )
        .await;
    assert_eq!(status.status, StatusCode::SEE_OTHER);
    // A next page elsewhere is not followed.
    let elsewhere = c
        .post(
            &m.url("/-/signin"),
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("cookie", &form_cookie),
            ],
            form(&[
                ("csrf", &token),
                ("token", "s3cret-token"),
                ("next", "//evil.example/"),
            ]),
        )
        .await;
    assert_eq!(elsewhere.headers["location"], "/");
}

/// A `multipart/form-data` body of `files` (name, bytes) as the `files`
/// field and the `platforms` field, with its content type.
fn multipart(files: &[(&str, Vec<u8>)], platforms: &str) -> (String, Vec<u8>) {
    const BOUNDARY: &str = "tfmirror-test-boundary";
    let mut body = Vec::new();
    for (name, bytes) in files {
        body.extend_from_slice(
            format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"platforms\"\r\n\r\n{platforms}\r\n--{BOUNDARY}--\r\n").as_bytes(),
    );
    (format!("multipart/form-data; boundary={BOUNDARY}"), body)
}

/// A `.zip` of `files`.
fn zip(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (path, bytes) in files {
        zip.start_file(*path, zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut zip, bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_sent_as_files_or_an_archive_is_checked() {
    let w = world(&[]).await;
    let (m, c) = (&w.mirror, &w.http);
    let main_tf = |version: &str| {
        format!("terraform {{\n  required_providers {{\n    widget = {{\n      source  = \"registry.origin.test/acme/widget\"\n      version = \"{version}\"\n    }}\n  }}\n}}\n")
    };
    let held = main_tf("1.2.0");
    let missing = main_tf("1.9.0");
    let check = |files: Vec<(&'static str, Vec<u8>)>, platforms: &'static str| async move {
        let (content_type, body) = multipart(&files, platforms);
        let headers = [("content-type", content_type.as_str())];
        c.post(&m.url("/-/api/check"), &headers, body).await
    };
    // The files themselves, a .tar.gz of the directory, a .zip of it:
    // each read as `tfmirror check --from` reads the directory.
    let tar = common::pages::tar_gz(&[("config/main.tf", held.as_bytes())]);
    let zipped = zip(&[("config/main.tf", held.as_bytes())]);
    for (what, files) in [
        ("files", vec![("main.tf", held.clone().into_bytes())]),
        ("a .tar.gz", vec![("config.tar.gz", tar)]),
        ("a .zip", vec![("config.zip", zipped)]),
    ] {
        let got = check(files, "linux_amd64 darwin_arm64").await;
        assert_eq!(
            got.status,
            StatusCode::OK,
            "{what}: {}",
            String::from_utf8_lossy(&got.body)
        );
        let verdict = &got.json()["verdict"];
        assert_eq!(verdict["ready"], true, "{what}: {verdict}");
        assert_eq!(
            verdict["summary"], "ready: 2 held, 0 missing, 0 not matching their lock files",
            "{what}: {verdict}"
        );
    }
    // A platform the mirror lacks, and a version it lacks: not ready.
    let got = check(
        vec![("main.tf", held.clone().into_bytes())],
        "windows_amd64",
    )
    .await;
    assert_eq!(got.json()["verdict"]["ready"], false, "{}", got.json());
    // A version the mirror lacks: missing.
    let got = check(vec![("main.tf", missing.into_bytes())], "linux_amd64").await;
    let verdict = &got.json()["verdict"];
    assert_eq!(verdict["ready"], false, "{verdict}");
    assert_eq!(
        verdict["summary"], "not ready: 0 held, 1 missing, 0 not matching their lock files",
        "{verdict}"
    );
    // A provider the origin has and the mirror never listed: missing too,
    // and nothing is asked of the origin for it.
    w.origin.publish(
        "acme",
        "newer",
        "1.0.0",
        &["linux_amd64"],
        &w.signer,
        &[&w.signer],
    );
    let asked = w.origin.all_hits();
    let newer = held.replace("widget", "newer").replace("1.2.0", "1.0.0");
    let got = check(vec![("main.tf", newer.into_bytes())], "linux_amd64").await;
    let verdict = &got.json()["verdict"];
    assert_eq!(verdict["ready"], false, "{verdict}");
    assert_eq!(w.origin.all_hits(), asked, "a check fetches nothing");
    // An archive that unpacks past the limits is refused, named.
    let many: Vec<(String, Vec<u8>)> = (0..5001)
        .map(|i| (format!("c/f{i}.tf"), Vec::new()))
        .collect();
    let refs: Vec<(&str, &[u8])> = many
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let got = check(
        vec![("many.tar.gz", common::pages::tar_gz(&refs))],
        "linux_amd64",
    )
    .await;
    assert_eq!(got.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        got.error_text()
            .contains("many.tar.gz unpacks to more than"),
        "{}",
        got.error_text()
    );
    // Nothing that is not a configuration's: a clear refusal.
    let got = check(vec![("config.tar.gz", b"not gzip".to_vec())], "linux_amd64").await;
    assert_eq!(got.status, StatusCode::BAD_REQUEST);
    assert!(
        got.error_text().contains("config.tar.gz"),
        "{}",
        got.error_text()
    );
}

/// A provider's page checks each version's stored record before it says
/// how the version was verified. Read again unchanged, the record is not
/// checked again; changed in the store, it is, and the page says it no
/// longer passes; put back, it passes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_changed_in_the_store_is_checked_again() {
    use common::{Client, FakeOrigin, RunningMirror, Setup, Signer};
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    origin.publish(
        "acme",
        "widget",
        "1.2.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    let config = setup.config(&origin, &[], &["registry.origin.test"]);
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    let zip = "/registry.origin.test/acme/widget/terraform-provider-widget_1.2.0_linux_amd64.zip";
    assert_eq!(c.get(&m.url(zip)).await.status, StatusCode::OK);
    m.stop().await;

    // A mirror that holds nothing in memory yet reads the record from the
    // store for its pages.
    let mut offline = config;
    offline.upstream.offline = true;
    let m = RunningMirror::start(offline).await;
    let c = Client::trusting(&m.ca_file);
    let page = m.url("/-/api/providers/registry.origin.test/acme/widget");
    assert_eq!(verified(&c, &page).await, "signed");
    assert_eq!(verified(&c, &page).await, "signed", "read again, unchanged");

    let path = setup
        .cache_dir()
        .join("providers/registry.origin.test/acme/widget/1.2.0/version.json");
    let kept = std::fs::read(&path).unwrap();
    let mut record: serde_json::Value = serde_json::from_slice(&kept).unwrap();
    let sha256 = &mut record["packages"]["linux_amd64"]["sha256"];
    assert!(sha256.is_string(), "{record}");
    *sha256 = serde_json::json!("0".repeat(64));
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    assert_eq!(
        verified(&c, &page).await,
        "unknown",
        "a checksum the signed SHA256SUMS does not list"
    );

    std::fs::write(&path, &kept).unwrap();
    assert_eq!(verified(&c, &page).await, "signed", "put back");
    m.stop().await;
}

/// How a provider page's newest version was verified, as its JSON says.
async fn verified(c: &common::Client, page: &str) -> String {
    let got = c.get(page).await;
    assert_eq!(got.status, StatusCode::OK);
    got.json()["versions"][0]["verified"]
        .as_str()
        .unwrap()
        .to_owned()
}
