//! The dashboard in a real browser: headless Chromium loads the page while the demo's script runs
//! (time-scaled), the breaker card turns Open in the failing phase and Closed after recovery, the
//! page logs no console error, and a screenshot of the failing phase is saved.
//!
//! Without Chromium (`apt-get install chromium`) the test is skipped with a printed reason, unless
//! `R4C_REQUIRE_EXTERNAL=1` (set by `.ci/test`), which makes it fail instead.

mod cdp;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use resilience4cata_examples::demo::{Demo, DemoOptions, Narrator, Phase};

/// Each phase lasts 15 s × this: 3 s, long enough for the breaker to open and to recover.
/// `R4C_DEMO_TIME_SCALE=1` plays the real one-minute script (how the README's screenshot was taken).
fn time_scale() -> f64 {
    std::env::var("R4C_DEMO_TIME_SCALE").ok().and_then(|v| v.parse().ok()).unwrap_or(0.2)
}

const RETRIES_SHOWN: &str = "document.querySelector('article[data-policy=\"retry\"] .fig .v')?.textContent ?? ''";
const BREAKER_STATE: &str = "document.querySelector('article[data-policy=\"circuit_breaker\"]')?.dataset.state ?? ''";

fn chromium_available() -> bool {
    if Path::new(cdp::CHROMIUM).exists() {
        return true;
    }
    let reason = format!("{} not found (Debian package `chromium`)", cdp::CHROMIUM);
    if std::env::var("R4C_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1") {
        panic!("R4C_REQUIRE_EXTERNAL=1 and {reason}");
    }
    println!("skipped: {reason}; `bash .ci/test` installs it");
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_breaker_card_follows_the_demo_script() {
    if !chromium_available() {
        return;
    }
    let _one_browser = BROWSER.lock().await;
    let narrate: Narrator = Arc::new(|line| println!("{line}"));
    let options = DemoOptions { time_scale: time_scale(), admin_addr: "127.0.0.1:0".into(), ..DemoOptions::default() };
    let demo = Arc::new(Demo::start(options, Arc::clone(&narrate)).await.unwrap());
    let url = demo.dashboard_url();

    let mut browser = open_dashboard(url).await;

    let finished = Arc::new(AtomicBool::new(false));
    let script = tokio::spawn({
        let (demo, finished) = (Arc::clone(&demo), Arc::clone(&finished));
        async move {
            demo.run_script(&narrate).await;
            finished.store(true, Ordering::SeqCst);
        }
    });
    let screenshot = screenshot_path();
    let (seen, mut browser) = tokio::task::spawn_blocking({
        let (demo, screenshot) = (Arc::clone(&demo), screenshot.clone());
        move || {
            let seen = watch(&mut browser, &demo, &finished, &screenshot);
            (seen, browser)
        }
    })
    .await
    .unwrap();
    script.await.unwrap();

    println!("card states seen, by phase: {seen:?}");
    let open = seen.iter().position(|(phase, state)| *phase == Phase::Failing && state == "Open");
    let open = open.expect("the breaker card never showed Open during the failing phase");
    let closed = seen[open..].iter().any(|(phase, state)| *phase == Phase::Recovered && state == "Closed");
    assert!(closed, "the breaker card never showed Closed after recovery");
    assert_eq!(seen.last().map(|(_, s)| s.as_str()), Some("Closed"));
    let dark = tokio::task::spawn_blocking(move || {
        // The retry card shows what the admin counted from events: the failing phase retried.
        poll(&mut browser, RETRIES_SHOWN, |n| n.parse::<u64>().is_ok_and(|n| n > 0));
        let dark = dark_mode(&mut browser);
        (dark, browser)
    });
    let (dark, browser) = dark.await.unwrap();
    assert!(dark.exists());
    assert_eq!(browser.errors, Vec::<String>::new(), "the page logged errors");
    let png = std::fs::read(&screenshot).expect("a screenshot of the failing phase");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    println!("screenshot: {}", screenshot.display());
}

/// Switches the page to dark, checks its background follows, and saves a screenshot.
fn dark_mode(browser: &mut cdp::Browser) -> PathBuf {
    const BACKGROUND: &str = "getComputedStyle(document.body).backgroundColor";
    browser.color_scheme("light");
    let light = browser.eval(BACKGROUND);
    browser.color_scheme("dark");
    let dark = browser.eval(BACKGROUND);
    assert_ne!(light, dark, "the page has a dark palette");
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard-dark.png");
    browser.screenshot(&path);
    path
}

/// Polls the breaker card until the script ends; returns each (phase, state) change seen.
/// Every poll that sees the card Open during the failing phase retakes the screenshot, so the
/// last one shows most of that phase.
fn watch(browser: &mut cdp::Browser, demo: &Demo, finished: &AtomicBool, screenshot: &Path) -> Vec<(Phase, String)> {
    let mut seen: Vec<(Phase, String)> = Vec::new();
    while !finished.load(Ordering::SeqCst) {
        let phase = demo.phase();
        let state = browser.eval(BREAKER_STATE).as_str().unwrap_or_default().to_owned();
        if phase == Phase::Failing && state == "Open" {
            browser.screenshot(screenshot);
        }
        if seen.last() != Some(&(phase, state.clone())) {
            seen.push((phase, state));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    seen
}

/// Launches Chromium on the dashboard at `url` and waits for the first snapshot's breaker card.
async fn open_dashboard(url: String) -> cdp::Browser {
    tokio::task::spawn_blocking(move || {
        let mut browser = cdp::Browser::launch();
        browser.navigate(&url);
        wait_for(&mut browser, |state| state == "Closed");
        browser
    })
    .await
    .unwrap()
}

/// Polls until the breaker card's state satisfies `done` (the first snapshot has arrived).
fn wait_for(browser: &mut cdp::Browser, done: impl Fn(&str) -> bool) {
    for _ in 0..300 {
        if done(browser.eval(BREAKER_STATE).as_str().unwrap_or_default()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let page = browser.eval("document.body.innerText.slice(0, 400)");
    panic!("the dashboard never showed the breaker card; page: {page}; errors: {:?}", browser.errors);
}

/// Under cargo's scratch directory for integration tests: tests never write into the source tree.
fn screenshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard-failing.png")
}

/// One browser at a time: the script test's timing should not compete with another Chromium.
static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const CONNECTION: &str = "document.getElementById('conn').textContent";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_reconnects_when_the_server_restarts() {
    if !chromium_available() {
        return;
    }
    let _one_browser = BROWSER.lock().await;
    let registry = resilience4cata::Registry::builder().build().unwrap();
    let _calls = resilience4cata::Pipeline::builder(&registry, "restart::Api::get")
        .circuit_breaker()
        .build::<u32, std::io::Error>()
        .unwrap();
    let admin = resilience4cata_admin::serve("127.0.0.1:0", registry.clone(), Default::default()).await.unwrap();
    let (addr, url) = (admin.local_addr(), admin.url());
    let mut browser = open_dashboard(url).await;
    browser = tokio::task::spawn_blocking(move || {
        poll(&mut browser, CONNECTION, |c| c == "live");
        browser
    })
    .await
    .unwrap();

    admin.shutdown();
    browser = tokio::task::spawn_blocking(move || {
        poll(&mut browser, CONNECTION, |c| c != "live");
        browser
    })
    .await
    .unwrap();

    let _admin = resilience4cata_admin::serve(addr, registry, Default::default()).await.unwrap();
    let browser = tokio::task::spawn_blocking(move || {
        poll(&mut browser, CONNECTION, |c| c == "live");
        wait_for(&mut browser, |state| state == "Closed");
        browser
    })
    .await
    .unwrap();
    // While the server was down, the browser may only have complained about refused connections.
    let other: Vec<_> = browser.errors.iter().filter(|e| !e.contains("ERR_CONNECTION_REFUSED")).collect();
    assert_eq!(other, Vec::<&String>::new());
}

/// Polls `expression` until its text satisfies `done` (up to 30 s).
fn poll(browser: &mut cdp::Browser, expression: &str, done: impl Fn(&str) -> bool) {
    let mut last = String::new();
    for _ in 0..300 {
        last = browser.eval(expression).as_str().unwrap_or_default().to_owned();
        if done(&last) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{expression} stayed {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_drives_the_breaker_from_the_page() {
    if !chromium_available() {
        return;
    }
    let _one_browser = BROWSER.lock().await;
    const TOKEN: &str = "typed-by-the-operator";
    let registry = resilience4cata::Registry::builder().build().unwrap();
    let _calls = resilience4cata::Pipeline::builder(&registry, "host-a/shop::Api::get")
        .circuit_breaker()
        .build::<u32, std::io::Error>()
        .unwrap();
    let options = resilience4cata_admin::AdminOptions::new().token(TOKEN);
    let admin = resilience4cata_admin::serve("127.0.0.1:0", registry.clone(), options).await.unwrap();
    let url = admin.url();
    let breaker = registry.circuit_breaker("host-a/shop::Api::get").unwrap();
    let click = |action: &str| {
        format!(
            "document.querySelector('article[data-policy=\"circuit_breaker\"] button[data-action=\"{action}\"]').click()"
        )
    };

    let browser = open_dashboard(url).await;

    let (force_open, reset) = (click("force-open"), click("reset"));
    let browser = tokio::task::spawn_blocking(move || {
        let mut browser = browser;
        // Without the token typed in, nothing is sent.
        browser.eval(&force_open);
        poll(&mut browser, NOTE, |note| note.contains("token first"));
        browser.eval(&format!("document.getElementById('token').value = '{TOKEN}'"));
        browser.eval(&force_open);
        wait_for(&mut browser, |state| state == "ForcedOpen");
        browser
    })
    .await
    .unwrap();
    assert_eq!(breaker.state(), resilience4cata::circuit_breaker::State::ForcedOpen, "the page changed the breaker");

    let browser = tokio::task::spawn_blocking(move || {
        let mut browser = browser;
        browser.eval(&reset);
        wait_for(&mut browser, |state| state == "Closed");
        browser
    })
    .await
    .unwrap();
    assert_eq!(breaker.state(), resilience4cata::circuit_breaker::State::Closed);
    assert_eq!(browser.errors, Vec::<String>::new());
}

const NOTE: &str = "document.querySelector('article[data-policy=\"circuit_breaker\"] .note')?.textContent ?? ''";
