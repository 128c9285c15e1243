//! The pages for people, on a mirror filled through the real protocol
//! paths, in a real browser: Debian's chromium through chromedriver. A
//! person finds a provider and a module by the search box and by links,
//! and each page says what the mirror holds (the lock file block as the
//! real Terraform writes it, a module's inputs as its `variables.tf` has
//! them); axe-core finds no accessibility violation on any kind of page;
//! the pages work with JavaScript off; hostile READMEs run nothing and
//! fetch nothing, with the pages' own script policy set aside and every
//! event fired on every element; people sign in and out.

mod common;

use common::browser::{accessible, axe_js, screenshot, text, Browser, Elsewhere};
use common::pages::{h1_set, world};
use fantoccini::Locator;

const HOST: &str = "registry.origin.test";

#[cfg_attr(
    any(tfmirror_no_chromium, tfmirror_no_terraform),
    ignore = "needs Debian's chromium and chromium-driver, axe-core and Terraform; scripts/test installs them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_finds_and_understands_what_the_mirror_holds() {
    let w = world(&[]).await;
    let m = &w.mirror;
    let elsewhere = Elsewhere::start().await;
    let b = Browser::start(true, &elsewhere).await;
    assert!(b.runs_scripts().await, "JavaScript is on");
    let axe = axe_js();

    // Home: counts, the configuration to copy, what arrived lately.
    b.client.goto(&m.url("/")).await.unwrap();
    assert_eq!(b.client.title().await.unwrap(), "Home · tfmirror");
    let counts = text(&b, "#counts").await;
    assert!(
        counts.contains("2 providers, 4 versions, 5 archives"),
        "{counts}"
    );
    assert!(
        counts.contains(&format!("{} module versions", 1 + w.hostile.len())),
        "{counts}"
    );
    assert!(text(&b, "#cli-config")
        .await
        .contains(&format!("url = \"{}\"", m.url("/"))));
    let recent = text(&b, "#recent").await;
    assert!(
        recent.starts_with(
            "What Version Detail When\nmodule registry.origin.test/acme/hostile-big/aws 1.0.0"
        ),
        "the newest first: {recent}"
    );
    assert!(
        recent.contains("provider registry.origin.test/acme/widget 1.2.0"),
        "{recent}"
    );
    accessible(&b, &axe, "home").await;
    screenshot(&b, "page-home").await;

    // Search by the box, as a person would: the exact name first.
    b.fill("q", "widget").await;
    b.click("form[role=search] button").await;
    assert!(b
        .client
        .current_url()
        .await
        .unwrap()
        .as_str()
        .ends_with("/-/search?q=widget"));
    let results = text(&b, "#providers").await;
    assert!(
        results.starts_with("registry.origin.test/acme/widget (exact; 1.2.0, 1.1.0, 1.0.0)"),
        "{results}"
    );
    accessible(&b, &axe, "search").await;
    screenshot(&b, "page-search").await;

    // The provider, by its link.
    b.follow("registry.origin.test/acme/widget").await;
    assert_eq!(
        text(&b, "#provider").await,
        "registry.origin.test/acme/widget"
    );
    let versions: Vec<String> = {
        let mut out = Vec::new();
        for h in b
            .client
            .find_all(Locator::Css("section.version h3"))
            .await
            .unwrap()
        {
            out.push(h.text().await.unwrap());
        }
        out
    };
    assert_eq!(versions, ["1.2.0", "1.1.0", "1.0.0"], "newest first");
    let newest = "section.version:first-of-type";
    assert_eq!(
        text(&b, &format!("{newest} .platforms")).await,
        "darwin_arm64, linux_amd64"
    );
    assert_eq!(
        text(&b, &format!("{newest} .verification")).await,
        format!(
            "signed by key {}, which its registry lists for the provider",
            w.key_id
        )
    );
    // Verified while the world was built; listed at the mirror's first
    // listing of the provider.
    let verified = text(&b, &format!("{newest} .verified-at")).await;
    let at = humantime::parse_rfc3339(&verified).unwrap_or_else(|e| panic!("{verified}: {e}"));
    let second = std::time::Duration::from_secs(1);
    assert!(
        at + second >= w.began && at <= std::time::SystemTime::now(),
        "{verified}"
    );
    assert_eq!(
        text(&b, &format!("{newest} .first-listed")).await,
        "already listed when this mirror first asked its origin"
    );
    assert_eq!(
        text(&b, &format!("{newest} .policy")).await,
        "allowed: the policy has no rule"
    );
    let lock = text(&b, &format!("{newest} .lock")).await;
    assert!(
        lock.contains("provider \"registry.origin.test/acme/widget\"")
            && lock.contains("version = \"1.2.0\""),
        "{lock}"
    );
    assert!(text(&b, "#required-providers")
        .await
        .contains("source  = \"registry.origin.test/acme/widget\""));
    accessible(&b, &axe, "provider").await;
    screenshot(&b, "page-provider").await;

    // The block's h1: set is what the real Terraform writes for the same
    // platforms through this mirror.
    let mut written = String::new();
    for (cli, bin) in common::terraform::clis() {
        let work = w
            .setup
            .dir
            .path()
            .join(format!("lock-{}", cli.replace(' ', "-")));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("main.tf"), "terraform {\n  required_providers {\n    widget = {\n      source  = \"registry.origin.test/acme/widget\"\n      version = \"1.2.0\"\n    }\n  }\n}\n").unwrap();
        let cli_config = work.join("cli.tfrc");
        std::fs::write(&cli_config, "").unwrap();
        let out = common::terraform::command(&bin, &work, &cli_config, &m.ca_file)
            .args([
                "providers",
                "lock",
                "-no-color",
                &format!("-net-mirror={}", m.url("/")),
                "-platform=linux_amd64",
                "-platform=darwin_arm64",
            ])
            .output()
            .unwrap();
        let (ok, said) = common::terraform::outcome(&out);
        assert!(ok, "{cli}: {said}");
        written = std::fs::read_to_string(work.join(".terraform.lock.hcl")).unwrap();
        assert_eq!(
            h1_set(&lock),
            h1_set(&written),
            "{cli}: the page's block against\n{written}"
        );
        assert_eq!(h1_set(&lock).len(), 2);
    }

    // The newest version's documentation, by its link: the pages by
    // kind, and one page as its Markdown says.
    b.client
        .goto(&m.url(&format!("/-/providers/{HOST}/acme/widget")))
        .await
        .unwrap();
    assert_eq!(
        text(&b, &format!("{newest} .docs")).await,
        format!("{} pages", w.docs.len())
    );
    assert_eq!(
        text(&b, "section.version:nth-of-type(2) .docs").await,
        "none kept"
    );
    b.follow(&format!("{} pages", w.docs.len())).await;
    assert_eq!(
        text(&b, "#docs").await,
        format!("{HOST}/acme/widget 1.2.0: documentation")
    );
    let resources = text(&b, "#kind-resource").await;
    assert!(
        resources.starts_with(&format!(
            "Resources ({})\nresource\nhostile_",
            w.docs.iter().filter(|d| d.category == "resources").count()
        )),
        "{resources}"
    );
    assert!(text(&b, "#provenance .source")
        .await
        .ends_with("/v1/providers/acme/widget/1.2.0"));
    assert_eq!(text(&b, "#passed-over").await, "1: language \"python\"");
    accessible(&b, &axe, "documentation").await;
    screenshot(&b, "page-docs").await;
    b.follow("data_source").await;
    assert_eq!(text(&b, "#doc-title").await, "data_source");
    assert_eq!(
        b.run("return document.querySelector('#doc h1').textContent")
            .await,
        "null_data_source"
    );
    // Its links to developer.hashicorp.com and registry.terraform.io
    // leave the mirror, and say so.
    let leaving = b
        .run("return [...document.querySelectorAll('#doc a[href]')].map(a => [a.href, getComputedStyle(a, '::after').content])")
        .await;
    let leaving = leaving.as_array().unwrap();
    assert!(leaving.len() >= 3, "{leaving:?}");
    for link in leaving {
        assert!(link[0].as_str().unwrap().starts_with("https://"), "{link}");
        assert!(
            link[1].as_str().unwrap().contains("(leaves this mirror)"),
            "{link}"
        );
    }
    accessible(&b, &axe, "documentation page").await;
    screenshot(&b, "page-doc").await;
    // What changed in it: since the next older version held by default,
    // whose documentation is not kept; then since 1.0.0, chosen.
    b.follow("What changed in this page since the next older version held")
        .await;
    assert!(text(&b, "#none")
        .await
        .contains("no documentation of registry.origin.test/acme/widget 1.1.0 is kept"));
    accessible(&b, &axe, "page changes, nothing to compare").await;
    b.run("document.querySelector('#from').value = '1.0.0'")
        .await;
    b.click("#compare button").await;
    assert_eq!(
        text(&b, "#changes-title").await,
        "data_source: what changed from 1.0.0 to 1.2.0"
    );
    let rows = b
        .run("return [...document.querySelectorAll('table.diff tr.inserted, table.diff tr.deleted')].length")
        .await;
    assert!(rows.as_u64().unwrap() > 0, "{rows}");
    accessible(&b, &axe, "page changes").await;
    screenshot(&b, "page-doc-changes").await;
    b.follow("Every page changed in registry.origin.test/acme/widget 1.2.0")
        .await;
    assert!(text(&b, "#counts")
        .await
        .contains(", 0 removed, 2 changed, "));
    accessible(&b, &axe, "documentation changes").await;
    b.client
        .goto(&m.url(&format!("/-/providers/{HOST}/acme/widget/1.1.0/docs")))
        .await
        .unwrap();
    assert!(text(&b, "#none-kept").await.contains("none is kept yet"));
    accessible(&b, &axe, "documentation not kept").await;

    // The documentation, found by search: the data source's page, once,
    // with both versions that keep it, by its name as configurations
    // write it.
    let searched = m.url("/-/api/search?q=null_data_source");
    common::wait_until_answered(
        "both versions' documentation is in the search index",
        std::time::Duration::from_secs(60),
        || {
            let (http, searched) = (&w.http, &searched);
            async move {
                http.get(searched).await.json()["docs"][0]["older"] == serde_json::json!(["1.0.0"])
            }
        },
    )
    .await;
    b.client
        .goto(&m.url("/-/search?q=null_data_source"))
        .await
        .unwrap();
    let found = text(&b, "#docs").await;
    assert_eq!(
        found.lines().next(),
        Some(
            format!("data_source (data-source data_source; {HOST}/acme/widget 1.2.0, also 1.0.0)")
                .as_str()
        ),
        "{found}"
    );
    accessible(&b, &axe, "documentation search").await;
    b.client
        .find(Locator::Css("#docs a"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    assert_eq!(text(&b, "#doc-title").await, "data_source");

    // The module: found by search, its inputs as variables.tf has them.
    b.client.goto(&m.url("/-/search?q=vpc")).await.unwrap();
    b.follow("registry.origin.test/acme/vpc/aws").await;
    accessible(&b, &axe, "module").await;
    b.follow("1.0.0").await;
    let mut inputs = Vec::new();
    for row in b
        .client
        .find_all(Locator::Css("#inputs tbody tr"))
        .await
        .unwrap()
    {
        let mut cells = Vec::new();
        for cell in row.find_all(Locator::Css("td")).await.unwrap() {
            cells.push(cell.text().await.unwrap());
        }
        inputs.push(cells);
    }
    assert_eq!(
        inputs,
        [
            [
                "cidr",
                "string",
                "\"10.0.0.0/16\"",
                "Its address range",
                "no",
                "no"
            ],
            ["name", "string", "", "The network's name", "yes", "no"],
            ["secret", "string", "null", "", "no", "yes"],
            ["zones", "list(string)", "[]", "", "no", "no"],
        ]
    );
    assert!(text(&b, "#outputs").await.contains("The network's id"));
    assert!(text(&b, "#providers")
        .await
        .contains("registry.origin.test/acme/widget ~> 1.2"));
    assert_eq!(text(&b, "#required-version").await, "CLI: >= 1.0");
    let parts = text(&b, "#parts").await;
    assert!(
        parts.contains("modules/subnet")
            && parts.contains("cidr*")
            && parts.contains("examples/basic"),
        "{parts}"
    );
    assert_eq!(
        b.run("return document.querySelectorAll('#readme table').length")
            .await,
        1
    );
    assert!(text(&b, "#usage")
        .await
        .contains("source  = \"registry.origin.test/acme/vpc/aws\""));
    accessible(&b, &axe, "module version").await;
    screenshot(&b, "page-module").await;

    // Will it install? The lock file Terraform wrote: ready. One that
    // pins a version the mirror lacks: not ready, and why.
    for (lock, verdict) in [
        (
            written.clone(),
            "ready: 2 held, 0 missing, 0 not matching their lock files",
        ),
        (
            written.replace("1.2.0", "1.9.0"),
            "not ready: 0 held, 1 missing, 0 not matching their lock files",
        ),
    ] {
        b.client.goto(&m.url("/-/check")).await.unwrap();
        b.fill("lock", &lock).await;
        b.fill("platforms", "linux_amd64 darwin_arm64").await;
        b.click("form.stacked button").await;
        assert_eq!(text(&b, "#verdict").await, verdict);
    }
    accessible(&b, &axe, "check").await;
    screenshot(&b, "page-check").await;

    // The other kinds of page.
    for (path, name) in [
        ("/-/releases", "releases"),
        ("/-/status", "status"),
        ("/-/signin", "sign-in"),
        ("/-/providers/registry.origin.test/acme/none", "not found"),
    ] {
        b.client.goto(&m.url(path)).await.unwrap();
        accessible(&b, &axe, name).await;
    }

    // Everything the browser asked for came from the mirror.
    let base = m.url("/");
    let elsewhere_asked: Vec<String> = b
        .requested()
        .await
        .into_iter()
        .filter(|u| !u.starts_with(&base))
        .collect();
    assert!(elsewhere_asked.is_empty(), "{elsewhere_asked:?}");
    assert_eq!(elsewhere.connections(), 0);
    b.stop().await;
}

#[cfg_attr(
    tfmirror_no_chromium,
    ignore = "needs Debian's chromium and chromium-driver; scripts/test installs them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_work_with_javascript_off() {
    let w = world(&[]).await;
    let m = &w.mirror;
    let elsewhere = Elsewhere::start().await;
    let b = Browser::start(false, &elsewhere).await;
    assert!(!b.runs_scripts().await, "JavaScript is off");
    b.client.goto(&m.url("/")).await.unwrap();
    b.fill("q", "gadget").await;
    b.click("form[role=search] button").await;
    b.follow("registry.origin.test/acme/gadget").await;
    assert_eq!(
        text(&b, "section.version .platforms").await,
        "windows_amd64"
    );
    b.client.goto(&m.url("/-/check")).await.unwrap();
    let lock = "provider \"registry.origin.test/acme/gadget\" {\n  version = \"0.9.1\"\n}\n";
    b.fill("lock", lock).await;
    b.fill("platforms", "windows_amd64").await;
    b.click("form.stacked button").await;
    assert_eq!(
        text(&b, "#verdict").await,
        "ready: 1 held, 0 missing, 0 not matching their lock files"
    );
    b.stop().await;
}

/// Fires every event a handler could wait for (hover, click, focus, keys,
/// toggles, loads and errors) on every element of the README (its first
/// 2,000: the 5 MiB README repeats one paragraph) and of the page around
/// it, with a link's or form's own action held back, so that only
/// handlers can act; then returns the page's title and the URL of every
/// link among them as the browser reads it.
const FIRE_EVERYTHING: &str = r"
document.addEventListener('click', (e) => e.preventDefault(), true);
document.addEventListener('submit', (e) => e.preventDefault(), true);
const kinds = ['mouseover', 'mouseenter', 'mousemove', 'mousedown', 'mouseup', 'click',
  'dblclick', 'contextmenu', 'pointerover', 'pointerdown', 'pointerup', 'focus', 'focusin',
  'blur', 'keydown', 'keyup', 'keypress', 'input', 'change', 'toggle', 'load', 'error',
  'animationstart', 'transitionend', 'wheel', 'scroll', 'copy', 'paste', 'drag', 'drop'];
const all = document.querySelectorAll('#readme, #readme *, #doc, #doc *');
const readme = Array.from({ length: Math.min(all.length, 2000) }, (_, i) => all[i]);
const around = [];
const outside = document.createTreeWalker(document.body, NodeFilter.SHOW_ELEMENT, {
  acceptNode: (el) => (el.id === 'readme' || el.id === 'doc' ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
});
for (let el = outside.nextNode(); el; el = outside.nextNode()) { around.push(el); }
for (const el of [document.documentElement, document.body, ...around, ...readme]) {
  for (const kind of kinds) {
    // Dispatched, not performed: a handler runs the same, and nothing
    // moves the page (focusing would lay a 5 MiB page out each time).
    el.dispatchEvent(new Event(kind, { bubbles: true, cancelable: true }));
  }
  if (el.tagName === 'DETAILS') { el.open = !el.open; }
}
return { title: document.title, links: readme.filter((el) => el.tagName === 'A').map((a) => a.href) };
";

/// A page served with `policy` as its Content-Security-Policy, whose
/// inline script and handler set its title: the positive control, on
/// `127.0.0.1` over plain HTTP.
async fn control_page(policy: String) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let policy = policy.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let body = "<!DOCTYPE html><title>quiet</title><script>document.title='ran'</script><div id=\"h\" onmouseover=\"document.title+='-hovered'\">h</div>";
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-security-policy: {policy}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/")
}

#[cfg_attr(
    tfmirror_no_chromium,
    ignore = "needs Debian's chromium and chromium-driver; scripts/test installs them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_readmes_run_nothing_and_fetch_nothing() {
    let w = world(&[]).await;
    let m = &w.mirror;
    let elsewhere = Elsewhere::start().await;
    let b = Browser::start(true, &elsewhere).await;
    assert!(
        b.runs_scripts().await,
        "JavaScript is on, so a script let through would run"
    );
    // The pages' own policy would stop any script a README smuggled in;
    // here it is set aside, so that the sanitiser alone stands between a
    // README and the browser. The control: a page served under that very
    // policy, whose inline script and handler do not run until the policy
    // is bypassed, and then do.
    let page = m.url(&format!("/-/modules/{HOST}/acme/vpc/aws/1.0.0"));
    let policy = w.http.get(&page).await.headers["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.contains("default-src 'none'"), "{policy}");
    let control = control_page(policy).await;
    b.client.goto(&control).await.unwrap();
    let fired = b.run(FIRE_EVERYTHING).await;
    assert_eq!(
        fired["title"], "quiet",
        "the policy stops the control's script"
    );
    b.bypass_csp().await;
    b.client.goto(&control).await.unwrap();
    let fired = b.run(FIRE_EVERYTHING).await;
    assert_eq!(
        fired["title"], "ran-hovered",
        "with the policy bypassed, the control's script and handler run"
    );
    b.requested().await;

    // Each hostile README as a module's README, then as a page of a
    // provider's documentation.
    let mut shown: Vec<(String, String, String)> = (w.hostile.iter())
        .map(|(name, module)| {
            (
                name.clone(),
                m.url(&format!("/-/modules/{HOST}/acme/{module}/aws/1.0.0")),
                format!("registry.origin.test/acme/{module}/aws 1.0.0 · tfmirror"),
            )
        })
        .collect();
    for doc in w.docs.iter().filter(|d| d.name.starts_with("hostile_")) {
        shown.push((
            doc.name.clone(),
            m.url(&format!(
                "/-/providers/{HOST}/acme/widget/1.2.0/docs/resource/{}",
                doc.name
            )),
            format!("{} · {HOST}/acme/widget 1.2.0 · tfmirror", doc.name),
        ));
        // What changed in it since 1.0.0, which has no such page: every
        // line of it, as text.
        shown.push((
            format!("{} changed", doc.name),
            m.url(&format!(
                "/-/providers/{HOST}/acme/widget/1.2.0/docs/changes/resource/{}?from=1.0.0",
                doc.name
            )),
            format!("{HOST}/acme/widget 1.2.0: what changed in a page · tfmirror"),
        ));
    }
    assert!(shown.len() >= 22, "{shown:?}");
    for (name, page, title) in &shown {
        b.client.goto(page).await.unwrap();
        assert_eq!(b.client.title().await.unwrap(), *title, "{name}: on load");
        let fired = b.run(FIRE_EVERYTHING).await;
        assert_eq!(
            fired["title"],
            title.as_str(),
            "{name}: once every event fired"
        );
        // Every link goes out by http, https or mail, or nowhere (an
        // anchor whose relative href was taken out).
        for link in fired["links"].as_array().unwrap() {
            let link = link.as_str().unwrap();
            assert!(
                link.is_empty()
                    || ["http:", "https:", "mailto:"]
                        .iter()
                        .any(|s| link.starts_with(s)),
                "{name}: a link to {link}"
            );
        }
        assert!(
            b.client.get_alert_text().await.is_err(),
            "{name}: an alert is open"
        );
        assert_eq!(
            b.client.current_url().await.unwrap().as_str(),
            page.as_str(),
            "{name}: the page navigated away"
        );
        let asked: Vec<String> = b
            .requested()
            .await
            .into_iter()
            .filter(|u| !u.starts_with(&m.url("/")))
            .collect();
        assert!(asked.is_empty(), "{name}: asked for {asked:?}");
    }
    assert_eq!(elsewhere.connections(), 0, "a page reached evil.example");
    b.stop().await;
}

#[cfg_attr(
    tfmirror_no_chromium,
    ignore = "needs Debian's chromium and chromium-driver; scripts/test installs them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_with_a_token_and_out_again() {
    let w = world(&["s3cret-token"]).await;
    let m = &w.mirror;
    let elsewhere = Elsewhere::start().await;
    let b = Browser::start(false, &elsewhere).await;
    // Without a sign-in, the home page says how, and the others send the
    // browser to sign in, and back.
    b.client.goto(&m.url("/")).await.unwrap();
    assert!(text(&b, "#sign-in-note").await.contains("sign in"));
    assert!(
        b.client.find(Locator::Id("counts")).await.is_err(),
        "no counts before a sign-in"
    );
    b.client.goto(&m.url("/-/status")).await.unwrap();
    assert!(b
        .client
        .current_url()
        .await
        .unwrap()
        .as_str()
        .contains("/-/signin?next=%2F-%2Fstatus"));
    b.fill("token", "wrong").await;
    b.click("form.stacked button").await;
    assert_eq!(
        text(&b, "#refused").await,
        "This token is not valid for this mirror."
    );
    b.fill("token", "s3cret-token").await;
    b.click("form.stacked button").await;
    let at = b.client.current_url().await.unwrap();
    assert!(
        at.as_str().ends_with("/-/status"),
        "{at}: {}",
        b.client.source().await.unwrap()
    );
    assert!(text(&b, "#cache-size").await.contains("5 archives"));
    // Out again: back to the note.
    b.click("form.inline button").await;
    assert!(text(&b, "#sign-in-note").await.contains("sign in"));
    b.client.goto(&m.url("/-/releases")).await.unwrap();
    assert!(b
        .client
        .current_url()
        .await
        .unwrap()
        .as_str()
        .contains("/-/signin"));
    b.stop().await;
}

#[cfg_attr(
    tfmirror_no_chromium,
    ignore = "needs Debian's chromium and chromium-driver; scripts/test installs them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_a_failing_test_leaves_ends_with_it() {
    // A test that fails drops its browser unwinding, without `stop`:
    // chromedriver, chromium and every helper end all the same.
    let elsewhere = Elsewhere::start().await;
    let b = Browser::start(true, &elsewhere).await;
    let processes = b.processes();
    assert!(
        processes.len() > 2,
        "chromedriver started chromium: {processes:?}"
    );
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _held = b;
        panic!("a failing test");
    }));
    assert!(unwound.is_err());
    // Gone, or a zombie its parent has not reaped yet: no longer running.
    let running = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    common::wait_until(
        "the browser's processes to end",
        std::time::Duration::from_secs(10),
        || !processes.iter().any(running),
    )
    .await;
}
