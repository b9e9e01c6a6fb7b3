//! Keyed instances (SPEC §15) on the admin: `/snapshot`'s `keys` (each keyed instance's busiest
//! keys), the per-key breaker controls by key text over real HTTP on loopback, and the dashboard's
//! keyed card in headless Chromium (the examples' DevTools client), updating live.
//!
//! Without Chromium (`apt-get install chromium`) the browser test is skipped with a printed
//! reason, unless `R4C_REQUIRE_EXTERNAL=1` (set by `.ci/test`), which makes it fail instead.

// The examples' small DevTools client (launch, navigate, eval, console errors), shared as it is.
#[allow(dead_code)]
#[path = "../../examples/tests/cdp/mod.rs"]
mod cdp;

use std::path::PathBuf;

use reqwest::{StatusCode, Url};
use resilience4cata::circuit_breaker::State;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Registry, Rejection, ResilienceError, resilient};
use resilience4cata_admin::{AdminOptions, AdminServer, serve};
use serde_json::Value;

const LIMITER: &str = "keyed::Tenants::call";
const BREAKER: &str = "keyed::Tenants::fetch";
const TOKEN: &str = "t0ken-for-keys";

#[derive(Debug, ResilienceError)]
pub enum Error {
    Down,
    #[rejection]
    Refused(Rejection),
}

#[resilient]
pub trait Tenants: Send + Sync {
    #[rate_limiter(permits = 3, period = "1s", key = tenant)]
    fn call(&self, tenant: &str) -> Result<(), Error>;

    #[circuit_breaker(window_size = 2, minimum_calls = 2, key = host)]
    fn fetch(&self, host: &str, fail: bool) -> Result<(), Error>;
}

struct Service;

impl Tenants for Service {
    fn call(&self, _tenant: &str) -> Result<(), Error> {
        Ok(())
    }

    fn fetch(&self, _host: &str, fail: bool) -> Result<(), Error> {
        if fail { Err(Error::Down) } else { Ok(()) }
    }
}

type Api = ResilientTenants<Service>;

fn api() -> (Registry, Api, ManualClock) {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let api = ResilientTenants::new(Service, &registry).unwrap();
    (registry, api, clock)
}

/// Calls `tenant` until its limiter refuses (3 permits a second).
fn exhaust(api: &Api, tenant: &str) {
    while api.call(tenant).is_ok() {}
}

async fn start(registry: &Registry, options: AdminOptions) -> AdminServer {
    serve("127.0.0.1:0", registry.clone(), options).await.unwrap()
}

async fn snapshot(server: &AdminServer) -> Value {
    let response = reqwest::get(format!("http://{}/snapshot", server.local_addr())).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

/// `POST /circuit-breakers/{id}/keys/{key}/{action}`, each segment percent-encoded (a `/` as
/// `%2F`, a space as `%20`, `"` as `%22`, non-ASCII as its UTF-8 bytes).
async fn control_key(
    server: &AdminServer,
    id: &str,
    key: &str,
    action: &str,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut url = Url::parse(&format!("http://{}/", server.local_addr())).unwrap();
    url.path_segments_mut().unwrap().clear().extend(["circuit-breakers", id, "keys", key, action]);
    let mut request = reqwest::Client::new().post(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_snapshot_lists_each_keyed_instance_and_its_busiest_keys() {
    let (registry, api, _clock) = api();
    exhaust(&api, "acme");
    api.call("globex").unwrap();
    assert!(api.call("acme").is_err(), "acme is refused after globex was served");
    let server = start(&registry, AdminOptions::new()).await;
    let snapshot = snapshot(&server).await;

    let limiter = snapshot["rate_limiters"].as_array().unwrap().iter().find(|s| s["instance"] == LIMITER).unwrap();
    assert_eq!(
        (limiter["keys"].as_u64(), limiter["evicted"].as_u64(), limiter["keys_exhausted"].as_u64()),
        (Some(2), Some(0), Some(0))
    );
    assert_eq!(limiter["available_permits"], 2, "the instance shows globex, its last served key");
    let keys = snapshot["keys"]["rate_limiters"][LIMITER].as_array().unwrap();
    let permits: Vec<(&str, u64)> = keys
        .iter()
        .map(|k| (k["key"].as_str().unwrap(), k["snapshot"]["available_permits"].as_u64().unwrap()))
        .collect();
    assert_eq!(permits.len(), 2);
    assert!(permits.contains(&("\"acme\"", 0)) && permits.contains(&("\"globex\"", 2)), "{permits:?}");
    assert_eq!(keys[0]["snapshot"]["instance"], LIMITER, "each key's snapshot as the runtime writes it");
    assert!(snapshot["keys"]["circuit_breakers"].get(BREAKER).is_none(), "a keyed instance without keys is not listed");

    for n in 0..20 {
        api.call(&format!("tenant-{n}")).unwrap();
    }
    let snapshot = self::snapshot(&server).await;
    assert_eq!(
        snapshot["keys"]["rate_limiters"][LIMITER].as_array().unwrap().len(),
        8,
        "the 8 most recently used keys"
    );
    let limiter = snapshot["rate_limiters"].as_array().unwrap().iter().find(|s| s["instance"] == LIMITER).unwrap();
    assert_eq!(limiter["keys"], 22);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_breaker_is_driven_by_key_text_whatever_the_text_holds() {
    let (registry, api, _clock) = api();
    let huge = "h".repeat(1000);
    let hosts = ["a\"quoted\"", "x/y z", "ünïcødé.example", huge.as_str()];
    for host in hosts {
        api.fetch(host, false).unwrap();
    }
    let server = start(&registry, AdminOptions::new().token(TOKEN)).await;
    let handle = registry.circuit_breaker(BREAKER).unwrap();
    for host in hosts {
        let text = format!("{host:?}"); // the key's text: its Debug form
        let text = if text.len() > 256 { format!("{}…", &text[..256]) } else { text };
        assert!(handle.key(&text).is_some(), "{text}");

        let (status, body) = control_key(&server, BREAKER, &text, "force-open", Some(TOKEN)).await;
        assert_eq!(status, StatusCode::OK, "{text}");
        assert_eq!(body["state"], "ForcedOpen");
        assert_eq!(handle.key(&text).unwrap().snapshot().state, State::ForcedOpen);
        assert!(matches!(api.fetch(host, false), Err(Error::Refused(Rejection::CallNotPermitted { .. }))));
        let others: Vec<State> =
            handle.keys(10).into_iter().filter(|(t, _)| **t != *text).map(|(_, s)| s.state).collect();
        assert!(others.iter().all(|s| *s == State::Closed), "only this key: {others:?}");

        let (status, _) = control_key(&server, BREAKER, &text, "reset", Some(TOKEN)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(handle.key(&text).unwrap().snapshot().state, State::Closed);
        api.fetch(host, false).unwrap();
    }
    let (status, _) = control_key(&server, BREAKER, "\"a\"", "disable", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "an unknown key");
    let (status, _) = control_key(&server, "no::Such::breaker", "\"x/y z\"", "disable", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "an unknown id");
    let (status, _) = control_key(&server, BREAKER, "\"x/y z\"", "explode", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "an unknown action");
    let (status, _) = control_key(&server, BREAKER, "\"x/y z\"", "disable", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = control_key(&server, BREAKER, "\"x/y z\"", "disable", Some("wrong")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(handle.key("\"x/y z\"").unwrap().snapshot().state, State::Closed, "nothing changed");

    let read_only = start(&registry, AdminOptions::new()).await;
    let (status, _) = control_key(&read_only, BREAKER, "\"x/y z\"", "disable", Some(TOKEN)).await;
    assert!(
        status == StatusCode::NOT_FOUND || status == StatusCode::METHOD_NOT_ALLOWED,
        "no token, no route: {status}"
    );
}

/// `expression` evaluated inside the keyed limiter's card (`card` is the element), as text.
fn in_card(expression: &str) -> String {
    format!(
        "(() => {{ const card = document.querySelector('article[data-policy=\"rate_limiter\"][data-instance=\"{LIMITER}\"]'); \
         return card ? String({expression}) : ''; }})()"
    )
}

/// The card's key lines, `text=figure@tone` joined by `|`.
fn key_lines() -> String {
    in_card(
        "[...card.querySelectorAll('ol.keys li')].map(li => li.dataset.key + '=' + li.querySelector('b').textContent + '@' + li.dataset.tone).sort().join('|')",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_a_keyed_card_with_its_keys_live() {
    if !cdp::available() {
        return;
    }
    let (registry, api, _clock) = api();
    exhaust(&api, "acme");
    api.call("globex").unwrap();
    api.call("initech").unwrap();
    let server = start(&registry, AdminOptions::new()).await;
    let url = server.url();
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard-keyed.png");

    let api = std::sync::Arc::new(api);
    let browser = tokio::task::spawn_blocking({
        let api = std::sync::Arc::clone(&api);
        let shot = shot.clone();
        move || {
            let mut browser = cdp::Browser::launch();
            browser.navigate(&url);
            // One card for the instance, three key lines: acme exhausted, the others not.
            let lines = browser.poll(&key_lines(), |l| l.matches('|').count() == 2);
            assert_eq!(
                lines, "\"acme\"=0 / 3 permits@fail|\"globex\"=2 / 3 permits@ok|\"initech\"=2 / 3 permits@ok",
                "{lines}"
            );
            assert_eq!(browser.eval(&in_card("card.dataset.keyed")), "true");
            assert_eq!(browser.eval(&in_card("card.querySelector('[data-fig=\"keys\"] .v').textContent")), "3 / 10000");
            let cards =
                browser.eval("String(document.querySelectorAll('article[data-policy=\"rate_limiter\"]').length)");
            assert_eq!(cards, "1", "a keyed instance is one card, not one per key");

            // Live: globex spends its permits, and a new key with a huge text and markup in it
            // arrives; the card follows without a reload.
            exhaust(&api, "globex");
            let huge = format!("<img src=x onerror=alert(1)>{}", "k".repeat(2000));
            api.call(&huge).unwrap();
            browser.poll(&key_lines(), |l| l.contains("\"globex\"=0 / 3 permits@fail") && l.matches('|').count() == 3);
            assert_eq!(browser.eval(&in_card("card.querySelector('[data-fig=\"keys\"] .v').textContent")), "4 / 10000");

            // The huge key: its text is the runtime's 256 bytes and "…", shown on one line cut
            // with an ellipsis, inside the card; its markup is text, never an element.
            let text = browser.eval(&in_card(
                "[...card.querySelectorAll('ol.keys li')].map(li => li.dataset.key).find(k => k.startsWith('\"<img'))",
            ));
            let text = text.as_str().unwrap().to_owned();
            assert!(text.ends_with('…') && text.len() == 256 + '…'.len_utf8(), "{text}");
            assert_eq!(browser.eval("String(document.querySelectorAll('main img').length)"), "0");
            let fits = browser.eval(&in_card(
                "card.scrollWidth <= card.clientWidth && [...card.querySelectorAll('ol.keys .key')].every(k => k.getBoundingClientRect().right <= card.getBoundingClientRect().right)",
            ));
            assert_eq!(fits, "true", "the card does not grow with its keys' texts");
            browser.screenshot(&shot);
            assert!(browser.errors.is_empty(), "console errors: {:?}", browser.errors);
        }
    });
    browser.await.unwrap();
    println!("screenshot: {}", shot.display());
}

/// `expression` evaluated inside the keyed breaker's card (`card` is the element), as text.
fn in_breaker_card(expression: &str) -> String {
    format!(
        "(() => {{ const card = document.querySelector('article[data-policy=\"circuit_breaker\"][data-instance=\"{BREAKER}\"]'); \
         return card ? String({expression}) : ''; }})()"
    )
}

/// The line of `key` in the breaker's card, as a JS expression (`li`), matched on its text.
fn key_line(key: &str) -> String {
    format!(
        "[...card.querySelectorAll('ol.keys li')].find(li => li.dataset.key === {})",
        serde_json::to_string(key).unwrap()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_forces_one_key_of_a_keyed_breaker_open_from_the_page() {
    if !cdp::available() {
        return;
    }
    let (registry, api, _clock) = api();
    for host in ["a.example", "b/c d.example"] {
        api.fetch(host, false).unwrap();
    }
    let server = start(&registry, AdminOptions::new().token(TOKEN)).await;
    let url = server.url();
    let handle = registry.circuit_breaker(BREAKER).unwrap();
    let browser = tokio::task::spawn_blocking(move || {
        let mut browser = cdp::Browser::launch();
        browser.navigate(&url);
        let target = "\"b/c d.example\"";
        let state = in_breaker_card(&format!("{}?.querySelector('b').textContent ?? ''", key_line(target)));
        browser.poll(&state, |s| s == "closed");
        let click = |action: &str| {
            in_breaker_card(&format!(
                "({}.querySelector('button[data-action=\"{action}\"]').click(), 'clicked')",
                key_line(target)
            ))
        };
        browser.eval(&format!("document.getElementById('token').value = '{TOKEN}'"));
        browser.eval(&click("force-open"));
        browser.poll(&state, |s| s == "forced open");
        assert_eq!(handle.key(target).unwrap().snapshot().state, State::ForcedOpen, "the page reached the key");
        assert_eq!(handle.key("\"a.example\"").unwrap().snapshot().state, State::Closed, "and that key only");
        let other = in_breaker_card(&format!("{}.querySelector('b').textContent", key_line("\"a.example\"")));
        assert_eq!(browser.eval(&other), "closed");
        browser.eval(&click("reset"));
        browser.poll(&state, |s| s == "closed");
        assert_eq!(handle.key(target).unwrap().snapshot().state, State::Closed);
        assert!(browser.errors.is_empty(), "console errors: {:?}", browser.errors);
    });
    browser.await.unwrap();
}
