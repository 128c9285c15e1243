//! Debian's chromium, driven through `chromedriver` (`WebDriver`) with
//! fantoccini: headless, with or without JavaScript, `evil.example` (the
//! host hostile READMEs point at) resolving to a listener that counts who
//! came, and the browser's own network log read back.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fantoccini::wd::Capabilities;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use super::wait::answered_within;

/// Debian's chromium (or `$CHROMIUM`).
pub fn chromium() -> PathBuf {
    let path = std::env::var_os("CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.is_file(),
        "{} not found: install Debian's chromium (the README's test command does)",
        path.display()
    );
    path
}

/// Debian's chromedriver (or `$CHROMEDRIVER`).
pub fn chromedriver() -> PathBuf {
    let path = std::env::var_os("CHROMEDRIVER")
        .map_or_else(|| PathBuf::from("/usr/bin/chromedriver"), PathBuf::from);
    assert!(
        path.is_file(),
        "{} not found: install Debian's chromium-driver (the README's test command does)",
        path.display()
    );
    path
}

/// A listener that stands in for `evil.example`: it counts the
/// connections made to it, which a page should never make.
pub struct Elsewhere {
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    connections: Arc<AtomicUsize>,
}

impl Elsewhere {
    /// Starts listening on loopback.
    pub async fn start() -> Elsewhere {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        tokio::spawn(async move {
            while let Ok((_stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        Elsewhere { addr, connections }
    }

    /// Connections made so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// A browser session, and the chromedriver behind it.
pub struct Browser {
    /// The `WebDriver` session.
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// A headless chromium, with JavaScript on or off, where
    /// `evil.example` resolves to `elsewhere`.
    pub async fn start(javascript: bool, elsewhere: &Elsewhere) -> Browser {
        let port = super::free_port();
        // In a process group of its own, which chromium and its helpers
        // join: the whole group ends with the session ([`Drop`]).
        let driver = {
            use std::os::unix::process::CommandExt;
            Command::new(chromedriver())
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .expect("chromedriver starts")
        };
        let url = format!("http://127.0.0.1:{port}");
        let up = answered_within(Duration::from_secs(30), || async move {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
        })
        .await;
        assert!(up, "chromedriver did not listen within 30 s");
        let profile = tempfile::tempdir().unwrap();
        let args = vec![
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--window-size=1280,1600".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
            format!("--host-resolver-rules=MAP evil.example {}", elsewhere.addr),
        ];
        let caps: Capabilities = serde_json::from_value(json!({
            "browserName": "chrome",
            "acceptInsecureCerts": true,
            "goog:loggingPrefs": { "performance": "ALL" },
            "goog:chromeOptions": {
                "binary": chromium(),
                "args": args,
                "prefs": {
                    "profile.managed_default_content_settings.javascript": if javascript { 1 } else { 2 }
                }
            }
        }))
        .unwrap();
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&url)
            .await
            .expect("a chromium session through chromedriver");
        let browser = Browser {
            client,
            driver,
            _profile: profile,
        };
        // What chromium loads for its own first tab (chrome:// pages) is
        // not the tests' to count: start from a blank page, log emptied.
        browser.client.goto("about:blank").await.unwrap();
        browser.requested().await;
        browser
    }

    /// Whether pages' scripts run: a page whose script changes its title
    /// is shown, and its title read.
    pub async fn runs_scripts(&self) -> bool {
        let page = "data:text/html,<title>off</title><script>document.title='on'</script>";
        self.client.goto(page).await.unwrap();
        let title = self.client.title().await.unwrap();
        self.requested().await;
        assert!(title == "on" || title == "off", "{title}");
        title == "on"
    }

    /// Clicks the button `css` finds, and waits for the page it leads to.
    pub async fn click(&self, css: &str) {
        let button = self.client.find(Locator::Css(css)).await;
        self.navigate(button.unwrap_or_else(|e| panic!("{css}: {e}")))
            .await;
    }

    /// Follows the link whose text is `text`, and waits for its page.
    pub async fn follow(&self, text: &str) {
        let link = self.client.find(Locator::LinkText(text)).await;
        self.navigate(link.unwrap_or_else(|e| panic!("{text}: {e}")))
            .await;
    }

    /// Clicks `element`, which leads to another page, and waits (up to
    /// 30 s) until the page shown is no longer the one it was on: that
    /// page's root element has gone stale.
    async fn navigate(&self, element: fantoccini::elements::Element) {
        let left = self.client.find(Locator::Css("html")).await.unwrap();
        element.click().await.unwrap();
        let gone = answered_within(Duration::from_secs(30), || {
            let left = left.clone();
            async move { left.tag_name().await.is_err() }
        })
        .await;
        assert!(gone, "the click led nowhere within 30 s");
    }

    /// Types `text` into the field whose ID is `id`, emptied first.
    pub async fn fill(&self, id: &str, text: &str) {
        let field = self.client.find(Locator::Id(id)).await;
        let field = field.unwrap_or_else(|e| panic!("#{id}: {e}"));
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    /// Runs a script in the page and returns what it returns.
    pub async fn run(&self, script: &str) -> Value {
        self.client.execute(script, Vec::new()).await.unwrap()
    }

    /// Every URL the browser asked for since the last call (from its
    /// performance log).
    pub async fn requested(&self) -> Vec<String> {
        let log = self
            .client
            .issue_cmd(DriverCmd::performance_log())
            .await
            .unwrap();
        log.as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| {
                let message: Value = serde_json::from_str(entry["message"].as_str()?).ok()?;
                let m = &message["message"];
                (m["method"] == "Network.requestWillBeSent")
                    .then(|| m["params"]["request"]["url"].as_str().map(str::to_owned))?
            })
            .collect()
    }

    /// Has the browser ignore every page's Content-Security-Policy from now
    /// on (`DevTools`' `Page.setBypassCSP`, through chromedriver), so that
    /// what a page's markup holds runs as it would without the policy.
    pub async fn bypass_csp(&self) {
        let done = self
            .client
            .issue_cmd(DriverCmd::devtools(
                "Page.setBypassCSP",
                &json!({"enabled": true}),
            ))
            .await;
        done.expect("chromedriver runs DevTools commands");
    }

    /// Ends the session and chromedriver.
    pub async fn stop(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }

    /// The processes behind the session: chromedriver and every process
    /// it started, and theirs, as `/proc` lists them.
    pub fn processes(&self) -> Vec<u32> {
        let mut found = vec![self.driver.id()];
        let mut at = 0;
        while at < found.len() {
            let tasks = std::fs::read_dir(format!("/proc/{}/task", found[at]))
                .into_iter()
                .flatten()
                .flatten();
            for task in tasks {
                let children =
                    std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
                found.extend(
                    children
                        .split_whitespace()
                        .filter_map(|c| c.parse::<u32>().ok()),
                );
            }
            at += 1;
        }
        found
    }
}

impl Drop for Browser {
    /// Ends chromedriver's whole process group (chromium and its helpers
    /// with it), whether the test passed or is unwinding from a failure.
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A command of `ChromeDriver`'s own: a POST of `body` to `path` below
/// the session.
#[derive(Debug)]
struct DriverCmd {
    path: &'static str,
    body: Value,
}

impl DriverCmd {
    /// The command that hands over (and empties) the performance log.
    fn performance_log() -> DriverCmd {
        DriverCmd {
            path: "se/log",
            body: json!({"type": "performance"}),
        }
    }

    /// The command that runs the `DevTools` command `cmd` in the page.
    fn devtools(cmd: &str, params: &Value) -> DriverCmd {
        DriverCmd {
            path: "goog/cdp/execute",
            body: json!({"cmd": cmd, "params": params}),
        }
    }
}

impl fantoccini::wd::WebDriverCompatibleCommand for DriverCmd {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/{}",
            session_id.unwrap_or_default(),
            self.path
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(self.body.to_string()))
    }
}

/// The text of the element `css` finds, waiting up to 30 s for it (a
/// form's answer may still be loading); panics with the page's address
/// and source when there is none.
pub async fn text(b: &Browser, css: &str) -> String {
    let found = (b.client.wait())
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css(css))
        .await;
    match found {
        Ok(element) => element.text().await.unwrap(),
        Err(e) => {
            let at = b.client.current_url().await.map(|u| u.to_string());
            let source = b.client.source().await.unwrap_or_default();
            panic!("{css}: {e}\nat {at:?}:\n{source}")
        }
    }
}

/// Runs axe-core on the page shown; panics naming every violation.
pub async fn accessible(b: &Browser, axe: &str, page: &str) {
    b.run(axe).await;
    let result = b
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1]; axe.run(document).then(r => done(r.violations.map(v => v.id + ': ' + v.help + ' (' + v.nodes.map(n => n.target.join(' ')).join(', ') + ')')));",
            Vec::new(),
        )
        .await
        .unwrap();
    let violations: Vec<String> = serde_json::from_value(result).unwrap();
    assert!(violations.is_empty(), "{page}: {violations:#?}");
}

/// axe-core's script (`AXE_JS`, which the README's test command sets).
pub fn axe_js() -> String {
    let path = std::env::var("AXE_JS")
        .expect("AXE_JS names axe.min.js (the README's test command installs it)");
    std::fs::read_to_string(path).unwrap()
}

/// Takes a screenshot of the page shown and checks it is a picture; keeps
/// it as `<name>.png` in the directory `TFMIRROR_SCREENSHOTS` names when
/// it is set (the guide's pictures are these, taken with
/// `TFMIRROR_SCREENSHOTS=docs`).
pub async fn screenshot(b: &Browser, name: &str) {
    let png = b.client.screenshot().await.unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{name}: {} bytes",
        png.len()
    );
    if let Some(dir) = std::env::var_os("TFMIRROR_SCREENSHOTS") {
        let dir = Path::new(&dir);
        std::fs::create_dir_all(dir).unwrap();
        std::fs::File::create(dir.join(format!("{name}.png")))
            .unwrap()
            .write_all(&png)
            .unwrap();
    }
}
