//! A real headless Chromium driven through its WebDriver (`chromedriver`
//! from the distribution's `chromium-driver` package), one per test, with a
//! fresh profile.

use std::{
    net::TcpListener,
    os::unix::process::CommandExt,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;
use tempfile::TempDir;

/// How long a page or a condition gets.
pub const WAIT: Duration = Duration::from_secs(15);

/// Set in CI: a missing chromedriver fails the tests instead of skipping.
const REQUIRE: &str = "HOOKD_REQUIRE_BROWSER";

/// A running chromedriver and a Chromium session on it.
pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: TempDir,
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

impl Browser {
    /// Starts Chromium; `None` (with a message saying so) when chromedriver
    /// is not installed and `HOOKD_REQUIRE_BROWSER` is unset.
    pub async fn start(test: &str) -> Option<Browser> {
        let Some(driver_bin) = find_on_path("chromedriver") else {
            assert!(
                std::env::var_os(REQUIRE).is_none(),
                "{REQUIRE} is set but chromedriver is not on PATH: apt-get install chromium chromium-driver"
            );
            eprintln!(
                "SKIPPED {test}: chromedriver is not on PATH (apt-get install chromium chromium-driver; \
                 set {REQUIRE}=1 to make this a failure)"
            );
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("chromedriver starts");
        let profile = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--headless".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--window-size=1280,900".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        args.sort();
        let mut options = json!({ "args": args });
        if let Some(chromium) = find_on_path("chromium") {
            options["binary"] = json!(chromium);
        }
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert("goog:chromeOptions".into(), options);
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + WAIT;
        let client = loop {
            match ClientBuilder::new(HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("no WebDriver session on {url}: {e}"),
            }
        };
        Some(Browser {
            client,
            driver,
            _profile: profile,
        })
    }

    /// Opens `url` and returns the page's `<h1>`.
    pub async fn open(&self, url: &str) -> String {
        self.client.goto(url).await.unwrap();
        self.text("h1").await
    }

    /// The text of the first element matching `css`, waiting for it.
    pub async fn text(&self, css: &str) -> String {
        self.client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"))
            .text()
            .await
            .unwrap()
    }

    /// Clicks the first element matching `css`.
    pub async fn click(&self, css: &str) {
        self.client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"))
            .click()
            .await
            .unwrap();
    }

    /// Clicks the submit button whose text is `label` and waits until the
    /// next page replaced this one.
    pub async fn press(&self, label: &str) {
        let old = self.client.find(Locator::Css("html")).await.unwrap();
        let xpath = format!("//button[normalize-space()='{label}']");
        self.client
            .find(Locator::XPath(&xpath))
            .await
            .unwrap_or_else(|e| panic!("no button {label:?}: {e}"))
            .click()
            .await
            .unwrap();
        let deadline = Instant::now() + WAIT;
        while old.tag_name().await.is_ok() {
            assert!(Instant::now() < deadline, "{label:?} did not load a page");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Types `text` into the field matching `css`.
    pub async fn fill(&self, css: &str, text: &str) {
        let field = self.client.find(Locator::Css(css)).await.unwrap();
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    /// Signs in at `base` with `token`; returns the first page's `<h1>`.
    pub async fn sign_in(&self, base: &str, token: &str) -> String {
        self.open(&format!("{base}/sign-in")).await;
        self.fill("#token", token).await;
        self.press("Sign in").await;
        self.text("h1").await
    }

    /// Reloads `url` until `css`'s text is `want`.
    pub async fn wait_text(&self, url: &str, css: &str, want: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            self.client.goto(url).await.unwrap();
            let got = self.text(css).await;
            if got == want {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{css} on {url} is {got:?}, not {want:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A PNG of the viewport at `width` x `height` CSS pixels.
    pub async fn screenshot(&self, width: u32, height: u32) -> Vec<u8> {
        self.client.set_window_size(width, height).await.unwrap();
        self.client.screenshot().await.unwrap()
    }
}

impl Browser {
    /// Ends the WebDriver session (Chromium exits), then chromedriver.
    pub async fn quit(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    /// chromedriver leads a process group of its own, Chromium included:
    /// ending the group leaves no browser behind, even after a failed test.
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.driver.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.driver.wait();
    }
}
