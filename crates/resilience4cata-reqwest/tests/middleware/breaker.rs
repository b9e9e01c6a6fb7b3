//! One circuit breaker per host, against two axum servers on loopback (two ports, two hosts):
//! host A's breaker opens and refuses without a request while host B is served; events,
//! snapshots and handles show one instance per host; hosts past `max_hosts` share `<name>/*`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{Reply, client, serve};
use resilience4cata::circuit_breaker::{CircuitBreakerEvent, State};
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Jitter, Registry, Rejection};
use resilience4cata_reqwest::{ResilientMiddleware, rejection};

/// Breaker transitions seen: instance, from, to.
type Transitions = Arc<Mutex<Vec<(String, State, State)>>>;

fn registry(clock: &ManualClock, transitions: &Transitions) -> Registry {
    let transitions = Arc::clone(transitions);
    testing::registry(clock)
        .retry_defaults(|r| r.jitter(Jitter::None))
        .listen(move |e: &CircuitBreakerEvent| {
            if let CircuitBreakerEvent::StateTransition { instance, from, to, .. } = e {
                transitions.lock().unwrap().push((instance.to_string(), *from, *to));
            }
        })
        .build()
        .unwrap()
}

fn middleware(registry: &Registry) -> ResilientMiddleware {
    ResilientMiddleware::builder(registry, "api")
        .retry_with(|r| r.max_attempts(2).delay(Duration::from_millis(10)))
        .circuit_breaker_with(|c| c.window_size(4).minimum_calls(4).wait_in_open(Duration::from_secs(30)))
        .build()
        .unwrap()
}

#[tokio::test]
async fn host_a_opens_while_host_b_is_served() {
    let a = serve(|_| Reply::status(503)).await;
    let b = serve(|_| Reply::ok()).await;
    let (clock, transitions) = (ManualClock::new(), Arc::default());
    let registry = registry(&clock, &transitions);
    let middleware = middleware(&registry);
    let client = client(middleware.clone());

    // Two calls of two attempts each fill A's window with four failures: the breaker opens.
    for _ in 0..2 {
        assert_eq!(client.get(a.url("/")).send().await.unwrap().status(), 503);
    }
    assert_eq!(a.hits(), 4);
    let refused = client.get(a.url("/")).send().await.unwrap_err();
    let a_id = format!("api/{}", a.host());
    assert_eq!(rejection(&refused), Some(&Rejection::CallNotPermitted { instance: a_id.as_str().into() }));
    assert_eq!(a.hits(), 4, "an open breaker sends nothing");

    for _ in 0..5 {
        assert_eq!(client.get(b.url("/")).send().await.unwrap().status(), 200);
    }
    assert_eq!(b.hits(), 5);

    let b_id = format!("api/{}", b.host());
    assert_eq!(registry.circuit_breaker(&a_id).unwrap().state(), State::Open);
    assert_eq!(registry.circuit_breaker(&b_id).unwrap().state(), State::Closed);
    assert_eq!(*transitions.lock().unwrap(), [(a_id.clone(), State::Closed, State::Open)]);

    let snapshot = registry.snapshot();
    let mut breakers: Vec<(String, State, u64)> =
        snapshot.circuit_breakers().iter().map(|s| (s.instance.to_string(), s.state, s.buffered_calls)).collect();
    breakers.sort_by(|x, y| x.0.cmp(&y.0));
    let mut expected = vec![(a_id.clone(), State::Open, 0), (b_id.clone(), State::Closed, 4)];
    expected.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(breakers, expected);
    let mut retries: Vec<String> = snapshot.retries().iter().map(|s| s.instance.to_string()).collect();
    retries.sort();
    assert_eq!(retries, { expected.iter().map(|e| e.0.clone()).collect::<Vec<_>>() });
    assert_eq!(middleware.instances().len(), 2);
}

#[tokio::test]
async fn a_429_is_retried_but_never_opens_the_breaker() {
    let server = serve(|_| Reply::status(429).header("retry-after", "1")).await;
    let (clock, transitions) = (ManualClock::new(), Arc::default());
    let registry = registry(&clock, &transitions);
    let client = client(middleware(&registry));

    for _ in 0..4 {
        assert_eq!(client.get(server.url("/")).send().await.unwrap().status(), 429);
    }

    assert_eq!(server.hits(), 8);
    assert_eq!(clock.elapsed(), Duration::from_secs(4));
    let breaker = registry.circuit_breaker(&format!("api/{}", server.host())).unwrap().snapshot();
    assert_eq!((breaker.state, breaker.buffered_calls), (State::Closed, 0));
    assert!(transitions.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_breaker_closes_again_after_wait_in_open() {
    let healthy = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&healthy);
    let server =
        serve(move |_| Reply::status(if flag.load(std::sync::atomic::Ordering::SeqCst) { 200 } else { 500 })).await;
    let (clock, transitions) = (ManualClock::new(), Arc::default());
    let registry = registry(&clock, &transitions);
    let middleware = ResilientMiddleware::builder(&registry, "api")
        .circuit_breaker_with(|c| {
            c.window_size(2).minimum_calls(2).wait_in_open(Duration::from_secs(30)).permitted_calls_in_half_open(1)
        })
        .build()
        .unwrap();
    let client = client(middleware);

    for _ in 0..2 {
        assert_eq!(client.get(server.url("/")).send().await.unwrap().status(), 500);
    }
    assert!(client.get(server.url("/")).send().await.is_err());
    healthy.store(true, std::sync::atomic::Ordering::SeqCst);
    clock.advance(Duration::from_secs(30));
    assert_eq!(client.get(server.url("/")).send().await.unwrap().status(), 200);

    let id = format!("api/{}", server.host());
    assert_eq!(
        *transitions.lock().unwrap(),
        [
            (id.clone(), State::Closed, State::Open),
            (id.clone(), State::Open, State::HalfOpen),
            (id.clone(), State::HalfOpen, State::Closed)
        ]
    );
    assert_eq!(server.hits(), 3);
}

#[tokio::test]
async fn hosts_past_max_hosts_share_the_overflow_instances() {
    let (a, b, c) = (serve(|_| Reply::ok()).await, serve(|_| Reply::ok()).await, serve(|_| Reply::ok()).await);
    let (clock, transitions) = (ManualClock::new(), Arc::default());
    let registry = registry(&clock, &transitions);
    let middleware = ResilientMiddleware::builder(&registry, "api").circuit_breaker().max_hosts(1).build().unwrap();
    let client = client(middleware.clone());

    for server in [&a, &b, &c, &a] {
        assert_eq!(client.get(server.url("/")).send().await.unwrap().status(), 200);
    }

    let a_id = format!("api/{}", a.host());
    let mut expected = vec![a_id.clone(), "api/*".to_owned()];
    expected.sort();
    assert_eq!(middleware.instances().iter().map(|i| i.to_string()).collect::<Vec<_>>(), expected);
    assert_eq!(registry.circuit_breaker(&a_id).unwrap().snapshot().buffered_calls, 2);
    assert_eq!(registry.circuit_breaker("api/*").unwrap().snapshot().buffered_calls, 2);
    assert_eq!(registry.snapshot().circuit_breakers().len(), 2);
}

#[tokio::test]
async fn instances_take_their_configuration_from_toml() {
    let server = serve(|_| Reply::status(503)).await;
    let toml = format!(
        "[instances.\"api/{}\".circuit_breaker]\nwindow_size = 1\nminimum_calls = 1\n\n[instances.\"api/{}\".retry]\nmax_attempts = 1\n",
        server.host(),
        server.host()
    );
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).config_toml(&toml).build().unwrap();
    let middleware = middleware(&registry);

    let first = client(middleware.clone()).get(server.url("/")).send().await.unwrap();
    let second = client(middleware).get(server.url("/")).send().await.unwrap_err();

    assert_eq!(first.status(), 503);
    assert!(matches!(rejection(&second), Some(Rejection::CallNotPermitted { .. })));
    assert_eq!(server.hits(), 1, "one attempt (the instance's max_attempts), then the open breaker");
}

#[tokio::test]
async fn two_middlewares_of_one_name_share_instances_and_must_agree() {
    let server = serve(|_| Reply::status(503)).await;
    let registry = testing::registry(&ManualClock::new()).build().unwrap();
    let build = |window: u32| {
        ResilientMiddleware::builder(&registry, "api")
            .circuit_breaker_with(move |c| c.window_size(window).minimum_calls(2))
            .host(server.host())
            .build()
    };

    let (first, same) = (build(2).unwrap(), build(2).unwrap());
    assert_eq!(build(3).unwrap_err().code(), "R4C-REG-008");

    assert_eq!(client(first).get(server.url("/")).send().await.unwrap().status(), 503);
    assert_eq!(client(same.clone()).get(server.url("/")).send().await.unwrap().status(), 503);
    let refused = client(same).get(server.url("/")).send().await.unwrap_err();
    assert!(matches!(rejection(&refused), Some(Rejection::CallNotPermitted { .. })), "one breaker for both");
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn the_admin_endpoint_lists_each_hosts_instances() {
    let (a, b) = (serve(|_| Reply::ok()).await, serve(|_| Reply::status(503)).await);
    let registry = testing::registry(&ManualClock::new()).build().unwrap();
    let middleware = ResilientMiddleware::builder(&registry, "api").circuit_breaker().bulkhead().build().unwrap();
    let client = client(middleware);
    for server in [&a, &b] {
        client.get(server.url("/")).send().await.unwrap();
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = listener.local_addr().unwrap();
    let app = resilience4cata_admin::router(registry, resilience4cata_admin::AdminOptions::new());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let snapshot: serde_json::Value =
        reqwest::get(format!("http://{admin}/snapshot")).await.unwrap().json().await.unwrap();

    let ids = |policy: &str| {
        let mut ids: Vec<String> = snapshot[policy]
            .as_array()
            .unwrap_or_else(|| panic!("{policy} in {snapshot}"))
            .iter()
            .map(|s| s["instance"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    let mut expected = vec![format!("api/{}", a.host()), format!("api/{}", b.host())];
    expected.sort();
    assert_eq!(ids("circuit_breakers"), expected);
    assert_eq!(ids("bulkheads"), expected);
}
