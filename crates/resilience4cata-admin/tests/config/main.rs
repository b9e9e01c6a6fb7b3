//! `PUT /config` over real HTTP on loopback (SPEC §16): the token rules of the other control
//! routes, `200` with the changed instances, `400` with the coded error and nothing changed, and
//! the admin's record of when each instance last changed, whichever way the change came; and in
//! `browser.rs`, the dashboard's edit form in headless Chromium (one test binary for both: one
//! link less in CI).

// The examples' small DevTools client (launch, navigate, eval, console errors), shared as it is.
#[allow(dead_code)]
#[path = "../../../examples/tests/cdp/mod.rs"]
mod cdp;

mod browser;

use std::time::Duration;

use reqwest::StatusCode;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Registry};
use resilience4cata_admin::{AdminOptions, AdminServer, serve};
use serde_json::{Value, json};

const ID: &str = "host-a/shop::Api::get";
const OTHER: &str = "shop::Api::search";
const TOKEN: &str = "t0ken-for-tests";

type Calls = Pipeline<u32, std::io::Error>;

/// Two pipelines: `ID` with a breaker and a rate limiter of 1000 permits, `OTHER` with a bulkhead.
fn registry() -> (Registry, Calls, Calls, ManualClock) {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let calls = Pipeline::builder(&registry, ID)
        .circuit_breaker_with(|c| c.window_size(4).minimum_calls(4))
        .rate_limiter_with(|r| r.permits(1000).period(Duration::from_secs(1)))
        .build::<u32, std::io::Error>()
        .unwrap();
    let other = Pipeline::builder(&registry, OTHER)
        .bulkhead_with(|b| b.max_concurrent_calls(3))
        .build::<u32, std::io::Error>()
        .unwrap();
    (registry, calls, other, clock)
}

async fn start(registry: &Registry, options: AdminOptions) -> AdminServer {
    serve("127.0.0.1:0", registry.clone(), options).await.unwrap()
}

fn url(server: &AdminServer, path: &str) -> String {
    format!("http://{}{path}", server.local_addr())
}

fn permits(registry: &Registry) -> u32 {
    registry.rate_limiter(ID).unwrap().snapshot().config.permits
}

fn put(server: &AdminServer, body: impl Into<reqwest::Body>) -> reqwest::RequestBuilder {
    reqwest::Client::new().put(url(server, "/config")).body(body)
}

/// `body` sent with the token: its status and JSON answer.
async fn put_config(server: &AdminServer, body: &str) -> (StatusCode, Value) {
    let response = put(server, body.to_owned()).bearer_auth(TOKEN).send().await.unwrap();
    let status = response.status();
    assert_eq!(response.headers()["content-type"], "application/json", "{status}");
    (status, response.json().await.unwrap())
}

const FIVE_PERMITS: &str = "[instances.\"host-a/shop::Api::get\".rate_limiter]\npermits = 5\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_config_needs_the_token_as_the_breaker_controls_do() {
    let (registry, _calls, _other, _clock) = registry();
    // Without a token the write routes do not exist: the breaker controls' answer.
    let open = start(&registry, AdminOptions::new()).await;
    let status = put(&open, FIVE_PERMITS).bearer_auth(TOKEN).send().await.unwrap().status();
    assert_eq!(status, StatusCode::NOT_FOUND);
    let breaker = reqwest::Client::new().post(url(&open, "/circuit-breakers/x/reset")).bearer_auth(TOKEN);
    assert_eq!(breaker.send().await.unwrap().status(), StatusCode::NOT_FOUND);

    let server = start(&registry, AdminOptions::new().token(TOKEN)).await;
    let missing = put(&server, FIVE_PERMITS).send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(missing.headers()["www-authenticate"], "Bearer");
    let wrong = put(&server, FIVE_PERMITS).bearer_auth("t0ken-for-test").send().await.unwrap().status();
    assert_eq!(wrong, StatusCode::UNAUTHORIZED);
    let cross = put(&server, FIVE_PERMITS).bearer_auth(TOKEN).header("origin", "http://evil.example");
    assert_eq!(cross.send().await.unwrap().status(), StatusCode::FORBIDDEN, "cross-origin, even with the token");
    // The breaker controls answer the same.
    let breaker = reqwest::Client::new().post(url(&server, "/circuit-breakers/x/reset"));
    assert_eq!(breaker.send().await.unwrap().status(), StatusCode::UNAUTHORIZED);
    assert_eq!(permits(&registry), 1000, "refused requests change nothing");
    // Writes stay writes: no GET on the route.
    let get = reqwest::Client::new().get(url(&server, "/config")).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_config_applies_the_body_and_lists_what_changed() {
    let (registry, calls, _other, clock) = registry();
    let server = start(&registry, AdminOptions::new().token(TOKEN)).await;
    let body = format!(
        "{FIVE_PERMITS}[instances.\"{ID}\".circuit_breaker]\nwindow_size = 8\n\
         [instances.\"{OTHER}\".bulkhead]\nmax_concurrent_calls = 3\n"
    );
    let (status, answer) = put_config(&server, &body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    // The bulkhead already had 3 slots: not a change.
    let expected = json!({ "changed": [
        { "instance": ID, "policy": "circuit_breaker" },
        { "instance": ID, "policy": "rate_limiter" },
    ] });
    assert_eq!(answer, expected);
    assert_eq!(permits(&registry), 5);
    let snapshot: Value = reqwest::get(url(&server, "/snapshot")).await.unwrap().json().await.unwrap();
    assert_eq!(snapshot["rate_limiters"][0]["config"]["permits"], 5, "the snapshot shows it at once");
    assert_eq!(snapshot["circuit_breakers"][0]["config"]["window_size"], 8);
    // The new limit holds: a full period later, 5 permits, then a refusal. (Right away, at the
    // manual clock's origin, the runtime's update moves the limiter's schedule 1 ns later, so the
    // fifth permit would wait for time to move: rate_limiter/state.rs, `reconfigure`.)
    clock.advance(Duration::from_secs(1));
    let passed = (0..6).filter(|_| calls.execute(|| Ok(1)).is_ok()).count();
    assert_eq!(passed, 5);

    // The same body again changes nothing.
    let (status, answer) = put_config(&server, &body).await;
    assert_eq!((status, answer), (StatusCode::OK, json!({ "changed": [] })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_body_is_a_coded_400_and_changes_nothing() {
    let (registry, _calls, _other, _clock) = registry();
    let server = start(&registry, AdminOptions::new().token(TOKEN)).await;
    let breaker_window = || registry.circuit_breaker(ID).unwrap().snapshot().config.window_size;
    // A good change on line 2, a bad value on line 4: all or nothing.
    let bad_value = format!("{FIVE_PERMITS}[instances.\"{ID}\".circuit_breaker]\nwindow_size = \"lots\"\n");
    let duplicate_table = format!("{FIVE_PERMITS}[instances.\"{ID}\".rate_limiter]\n");
    let cases = [
        (bad_value.as_str(), "R4C-CFG-003", vec![":4", "circuit_breaker.window_size"]),
        ("[defaults.retry]\nmax_attemps = 3\n", "R4C-CFG-002", vec![":2", "defaults.retry", "max_attempts"]),
        ("[defaults.retry]\nmax_attempts = 0\n", "R4C-CFG-004", vec![":2", "defaults.retry.max_attempts"]),
        ("[defaults.retry\n", "R4C-CFG-001", vec![":1"]),
        (duplicate_table.as_str(), "R4C-CFG-001", vec![":3"]),
    ];
    for (body, code, says) in cases {
        let (status, answer) = put_config(&server, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_eq!(answer["code"], code, "{body}: {answer}");
        let message = answer["message"].as_str().unwrap();
        for part in says {
            assert!(message.contains(part), "{body}: {message:?} does not say {part:?}");
        }
        let error = answer["error"].as_str().unwrap();
        assert!(error.starts_with(&format!("[{code}]")) && error.contains(message), "{error}");
        assert_eq!((permits(&registry), breaker_window()), (1000, 4), "{body}: nothing changed");
    }
    // Not text at all: the same answer's shape, before the registry is asked.
    let response = put(&server, vec![0xff, 0xfe, b'\n']).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["code"], "R4C-CFG-001");
    assert!(answer["error"].as_str().unwrap().starts_with("[R4C-CFG-001] "), "{answer}");
    assert_eq!(permits(&registry), 1000);
    // The good change alone applies.
    assert_eq!(put_config(&server, FIVE_PERMITS).await.0, StatusCode::OK);
    assert_eq!(permits(&registry), 5);
}

/// `/counters`' `config.changed.<id>.<policy>`: when the admin saw the change (ms since the epoch).
async fn changed_at(server: &AdminServer, id: &str, policy: &str) -> Option<u64> {
    let counters: Value = reqwest::get(url(server, "/counters")).await.unwrap().json().await.unwrap();
    counters["config"]["changed"][id][policy].as_u64()
}

fn epoch_millis() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Polls `done` until it holds (the counting task runs beside the test); gives up after ~10 s.
async fn wait_until<F: std::future::Future<Output = bool>>(mut done: impl FnMut() -> F) {
    for _ in 0..1000 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition never held");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_records_when_each_instance_last_changed_whichever_way() {
    let (registry, _calls, _other, _clock) = registry();
    let server = start(&registry, AdminOptions::new().token(TOKEN)).await;
    assert_eq!(changed_at(&server, ID, "rate_limiter").await, None, "nothing changed yet");
    let counters: Value = reqwest::get(url(&server, "/counters")).await.unwrap().json().await.unwrap();
    assert_eq!(counters["config"], json!({ "changed": {}, "last_rejected": null }));

    // Through the route.
    let before = epoch_millis();
    assert_eq!(put_config(&server, FIVE_PERMITS).await.0, StatusCode::OK);
    wait_until(|| async { changed_at(&server, ID, "rate_limiter").await.is_some() }).await;
    let at = changed_at(&server, ID, "rate_limiter").await.unwrap();
    assert!(before <= at && at <= epoch_millis(), "{before} ≤ {at}");
    assert_eq!(changed_at(&server, ID, "circuit_breaker").await, None, "only what changed");

    // Through the application's own update_toml.
    let body = format!("[instances.\"{OTHER}\".bulkhead]\nmax_concurrent_calls = 9\n");
    registry.update_toml(&body).unwrap();
    wait_until(|| async { changed_at(&server, OTHER, "bulkhead").await.is_some() }).await;
}

/// Writes `text` to a new file and renames it over `path`, as editors and deployments do: a
/// watcher never reads it half-written (`fs::write` truncates first, and a poll that reads the
/// empty file in between applies an empty configuration).
fn replace(path: &std::path::Path, text: &str) {
    let next = path.with_extension("next");
    std::fs::write(&next, text).unwrap();
    std::fs::rename(&next, path).unwrap();
}

async fn last_rejected(server: &AdminServer) -> Value {
    let counters: Value = reqwest::get(url(server, "/counters")).await.unwrap().json().await.unwrap();
    counters["config"]["last_rejected"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_file_change_and_a_refused_file_are_recorded_too() {
    let (registry, _calls, _other, _clock) = registry();
    let server = start(&registry, AdminOptions::new()).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.toml");
    std::fs::write(&path, "").unwrap();
    let _watch = registry.watch_file_every(&path, Duration::from_millis(20)).unwrap();
    replace(&path, FIVE_PERMITS);
    wait_until(|| async { changed_at(&server, ID, "rate_limiter").await.is_some() }).await;
    assert_eq!(permits(&registry), 5);
    assert!(last_rejected(&server).await.is_null());
    // A bad file: the running configuration stays, and the admin shows why it was refused.
    replace(&path, "[defaults.retry]\nmax_attempts = 0\n");
    wait_until(|| async { !last_rejected(&server).await.is_null() }).await;
    let last = last_rejected(&server).await;
    assert_eq!(last["code"], "R4C-CFG-004", "{last}");
    let message = last["message"].as_str().unwrap();
    assert!(message.starts_with("[R4C-CFG-004]") && message.contains("live.toml:2"), "{last}");
    assert!(last["at"].as_u64().unwrap() <= epoch_millis());
    assert_eq!(permits(&registry), 5);
}
