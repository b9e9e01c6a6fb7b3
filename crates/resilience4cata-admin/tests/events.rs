//! `GET /events` over real HTTP: SSE framing, one JSON object per event, and a slow client that
//! loses events (counted) without slowing the calls going through the policies.

use std::time::{Duration, Instant};

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Registry};
use resilience4cata_admin::{AdminOptions, AdminServer, serve};
use serde_json::Value;

type Calls = Pipeline<u32, std::io::Error>;

fn registry() -> (Registry, Calls, ManualClock) {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let calls = Pipeline::builder(&registry, "shop::Api::get")
        .circuit_breaker_with(|c| c.window_size(4).minimum_calls(4))
        .bulkhead_with(|b| b.max_concurrent_calls(4))
        .build::<u32, std::io::Error>()
        .unwrap();
    (registry, calls, clock)
}

/// One SSE frame: its `event:` name (`message` when absent) and its `data:`.
#[derive(Debug)]
struct Frame {
    event: String,
    data: String,
}

/// Reads an SSE response frame by frame, as a browser's EventSource does.
struct Frames {
    response: reqwest::Response,
    pending: String,
}

impl Frames {
    async fn open(server: &AdminServer) -> Frames {
        let response = reqwest::get(format!("http://{}/events", server.local_addr())).await.unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let mut frames = Frames { response, pending: String::new() };
        let ready = frames.next().await;
        assert_eq!(ready.event, "ready", "the first frame says the subscription exists");
        frames
    }

    /// The next frame that is not a keep-alive comment.
    async fn next(&mut self) -> Frame {
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let raw: String = self.pending.drain(..end + 2).collect();
                if let Some(frame) = parse(&raw) {
                    return frame;
                }
                continue;
            }
            let chunk = self.response.chunk().await.unwrap().expect("the stream stays open");
            self.pending.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

fn parse(raw: &str) -> Option<Frame> {
    let mut frame = Frame { event: "message".into(), data: String::new() };
    let mut any = false;
    for line in raw.lines() {
        if let Some(name) = line.strip_prefix("event: ").or_else(|| line.strip_prefix("event:")) {
            frame.event = name.to_owned();
        } else if let Some(data) = line.strip_prefix("data: ").or_else(|| line.strip_prefix("data:")) {
            assert!(frame.data.is_empty(), "one data line per event: {raw:?}");
            frame.data = data.to_owned();
            any = true;
        }
    }
    any.then_some(frame)
}

async fn start(registry: &Registry, options: AdminOptions) -> AdminServer {
    serve("127.0.0.1:0", registry.clone(), options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_is_one_json_object() {
    let (registry, calls, _clock) = registry();
    let server = start(&registry, AdminOptions::new()).await;
    let mut frames = Frames::open(&server).await;
    let _ = calls.execute(|| Err(std::io::Error::other("down")));
    let mut seen = Vec::new();
    for _ in 0..3 {
        let frame = frames.next().await;
        assert_eq!(frame.event, "message");
        let event: Value = serde_json::from_str(&frame.data).unwrap();
        assert_eq!(event["instance"], "shop::Api::get");
        seen.push((event["policy"].as_str().unwrap().to_owned(), event["kind"].as_str().unwrap().to_owned()));
    }
    seen.sort();
    let expected = [("bulkhead", "Finished"), ("bulkhead", "Permitted"), ("circuit_breaker", "Failure")];
    assert_eq!(seen, expected.map(|(p, k)| (p.to_owned(), k.to_owned())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breaker_transition_carries_both_states() {
    let (registry, calls, _clock) = registry();
    let server = start(&registry, AdminOptions::new()).await;
    let mut frames = Frames::open(&server).await;
    for _ in 0..4 {
        let _ = calls.execute(|| Err(std::io::Error::other("down")));
    }
    loop {
        let event: Value = serde_json::from_str(&frames.next().await.data).unwrap();
        if event["kind"] == "StateTransition" {
            assert_eq!((&event["from"], &event["to"]), (&Value::from("Closed"), &Value::from("Open")));
            break;
        }
    }
}

/// Runs `n` successful calls and says how long they took.
fn run(calls: &Calls, n: u32) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        assert_eq!(calls.execute(|| Ok(i)).unwrap(), i);
    }
    start.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_client_loses_events_and_never_slows_a_call() {
    const CALLS: u32 = 100_000; // three events each: far more than a socket buffers
    let (registry, calls, _clock) = registry();
    let server = start(&registry, AdminOptions::new().event_buffer(8)).await;

    // Baseline: a client that keeps up, draining on another task.
    let mut reader = Frames::open(&server).await;
    let draining = tokio::spawn(async move {
        loop {
            reader.next().await;
        }
    });
    let reading = tokio::task::spawn_blocking({
        let calls = calls.clone();
        move || run(&calls, CALLS)
    })
    .await
    .unwrap();
    draining.abort();

    // The same calls while a client is connected and reads nothing at all.
    let mut stalled = Frames::open(&server).await;
    let stalled_time = tokio::task::spawn_blocking({
        let calls = calls.clone();
        move || run(&calls, CALLS)
    })
    .await
    .unwrap();
    println!("{CALLS} calls: {reading:?} with a reading client, {stalled_time:?} with a stalled one");
    assert!(
        stalled_time < reading * 3,
        "a stalled client slowed the calls: {stalled_time:?} vs {reading:?} with a reading client"
    );

    // When the client reads again, it is told how many events it lost.
    let lost = loop {
        let frame = stalled.next().await;
        if frame.event == "lost" {
            break serde_json::from_str::<Value>(&frame.data).unwrap()["lost"].as_u64().unwrap();
        }
    };
    assert!(lost > 0 && lost < u64::from(CALLS) * 3, "lost {lost}");
}
