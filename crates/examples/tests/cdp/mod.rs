//! A small Chrome DevTools Protocol client for the browser test: starts headless Chromium with a
//! fresh profile, talks to it over its WebSocket, records console errors.
//!
//! (The CDP crates were tried first: `headless_chrome` downloads the protocol definition while it
//! builds, which an offline build cannot do; the few commands this test needs fit in this file.)

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// Where Debian's `chromium` package puts the browser.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Whether Chromium is installed. Without it a browser test is skipped with a printed reason,
/// unless `R4C_REQUIRE_EXTERNAL=1` (set by `.ci/test`), which makes the test fail instead.
pub fn available() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    let reason = format!("{CHROMIUM} not found (Debian package `chromium`)");
    if std::env::var("R4C_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1") {
        panic!("R4C_REQUIRE_EXTERNAL=1 and {reason}");
    }
    println!("skipped: {reason}; `bash .ci/test` installs it");
    false
}

/// A headless Chromium with one page attached.
pub struct Browser {
    child: Child,
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    /// Console errors, uncaught exceptions and error log entries (failed loads, CSP), in order.
    pub errors: Vec<String>,
    _profile: TempDir,
}

impl Browser {
    /// Starts Chromium with the flags a sandbox-less CI needs and opens one blank page.
    pub fn launch() -> Browser {
        let profile = TempDir::new("r4c-chromium-profile");
        let mut child = Command::new(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--window-size=1440,1000",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.0.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let endpoint = devtools_endpoint(&mut child);
        let (socket, _) = tungstenite::connect(endpoint.as_str()).expect("connect to DevTools");
        if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
            stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        }
        let mut browser =
            Browser { child, socket, session: String::new(), next_id: 0, errors: Vec::new(), _profile: profile };
        browser.attach_to_page();
        browser
    }

    fn attach_to_page(&mut self) {
        let targets = self.call("Target.getTargets", json!({}));
        let page =
            targets["targetInfos"].as_array().unwrap().iter().find(|t| t["type"] == "page").expect("a page").clone();
        let attached = self.call("Target.attachToTarget", json!({ "targetId": page["targetId"], "flatten": true }));
        self.session = attached["sessionId"].as_str().unwrap().to_owned();
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
            self.call(domain, json!({}));
        }
    }

    /// Loads `url` in the page.
    pub fn navigate(&mut self, url: &str) {
        let result = self.call("Page.navigate", json!({ "url": url }));
        assert!(result.get("errorText").is_none(), "navigation failed: {result}");
    }

    /// Evaluates `expression` every 100 ms until its text satisfies `done` (up to 30 s), and
    /// returns that text; fails with the last text and the page's errors otherwise.
    pub fn poll(&mut self, expression: &str, done: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        for _ in 0..300 {
            last = self.eval(expression).as_str().unwrap_or_default().to_owned();
            if done(&last) {
                return last;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{expression} stayed {last:?}; errors: {:?}", self.errors);
    }

    /// Evaluates `expression` in the page and returns its value (JSON).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call("Runtime.evaluate", json!({ "expression": expression, "returnByValue": true }));
        assert!(result.get("exceptionDetails").is_none(), "{expression}: {result}");
        result["result"]["value"].clone()
    }

    /// Makes every later request whose URL matches one of `patterns` (`*` wildcards) fail, as if
    /// the server never answered: what a page shows then, it had before asking.
    pub fn block_urls(&mut self, patterns: &[&str]) {
        self.call("Network.enable", json!({}));
        self.call("Network.setBlockedURLs", json!({ "urls": patterns }));
    }

    /// Makes the page see `prefers-color-scheme: <scheme>` (`"light"` or `"dark"`).
    pub fn color_scheme(&mut self, scheme: &str) {
        let features = json!([{ "name": "prefers-color-scheme", "value": scheme }]);
        self.call("Emulation.setEmulatedMedia", json!({ "features": features }));
    }

    /// Saves a PNG of the page.
    pub fn screenshot(&mut self, path: &Path) {
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        let png = base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    /// Sends one command and waits for its answer, recording the events that arrive meanwhile.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            message["sessionId"] = Value::from(self.session.clone());
        }
        self.socket.send(Message::text(message.to_string())).expect("send to DevTools");
        loop {
            let Message::Text(text) = self.socket.read().expect("read from DevTools") else { continue };
            let reply: Value = serde_json::from_str(&text).unwrap();
            if reply["id"] == id {
                assert!(reply.get("error").is_none(), "{method}: {}", reply["error"]);
                return reply["result"].clone();
            }
            self.record(&reply);
        }
    }

    fn record(&mut self, event: &Value) {
        let params = &event["params"];
        let error = match event["method"].as_str() {
            Some("Runtime.consoleAPICalled") if matches!(params["type"].as_str(), Some("error" | "assert")) => {
                Some(format!("console.{}: {}", params["type"], params["args"]))
            }
            Some("Runtime.exceptionThrown") => Some(format!("uncaught: {}", params["exceptionDetails"])),
            Some("Log.entryAdded") if params["entry"]["level"] == "error" => Some(format!("log: {}", params["entry"])),
            _ => None,
        };
        self.errors.extend(error);
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads Chromium's stderr until it prints its DevTools address; keeps draining it after.
fn devtools_endpoint(child: &mut Child) -> String {
    let stderr = child.stderr.take().unwrap();
    let (found, endpoint) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                let _ = found.send(url.trim().to_owned());
            }
        }
    });
    endpoint.recv_timeout(Duration::from_secs(30)).expect("chromium printed no DevTools address")
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(prefix: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("{prefix}-{}-{}", std::process::id(), fastrand::u64(..)));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
