//! Redis killed and restarted under load (SPEC §13): the limiter keeps deciding on local state,
//! no call waits on Redis much past `store_timeout`, `Degraded` then `Recovered` are published,
//! and sharing resumes.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use resilience4cata::events::AnyEvent;
use resilience4cata::shared::{SharedPolicy, SharedStateEvent};
use resilience4cata::{Pipeline, Registry};
use resilience4cata_redis::RedisStore;

/// The shared-state events one registry published.
type Seen = Arc<Mutex<Vec<SharedStateEvent>>>;

/// A registry on `redis` sharing the limiter `id` (`permits` per second, leases of `lease`), the
/// limiter, and the shared-state events it publishes.
fn shared_limiter(
    redis: &common::RedisServer,
    id: &str,
    permits: u32,
    lease: u32,
) -> (Registry, Pipeline<(), std::io::Error>, Seen) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let store = runtime.block_on(RedisStore::connect(&redis.url())).unwrap();
    let seen: Seen = Arc::default();
    let sink = Arc::clone(&seen);
    let registry = Registry::builder()
        .shared_state(store)
        .listen(move |e: &SharedStateEvent| sink.lock().unwrap().push(e.clone()))
        .rate_limiter_instance(id, |r| r.shared(true).permits(permits).lease(lease))
        .build()
        .unwrap();
    let limiter = Pipeline::builder(&registry, id).rate_limiter_with(|r| r).build().unwrap();
    (registry, limiter, seen)
}

#[test]
fn redis_killed_mid_run_degrades_to_local_state_and_recovers_after_restart() {
    let Some(mut redis) = common::RedisServer::start() else { return };
    let (registry, limiter, seen) = shared_limiter(&redis, "prices", 200, 5);
    let mut events = registry.subscribe(100_000); // every per-call event fits: none is lost

    // Calls for `d`, one every 2 ms: how many passed, and the slowest decision.
    let run = |d: Duration| {
        let (mut passed, mut slowest) = (0, Duration::ZERO);
        let end = Instant::now() + d;
        while Instant::now() < end {
            let started = Instant::now();
            passed += usize::from(limiter.execute(|| Ok(())).is_ok());
            slowest = slowest.max(started.elapsed());
            std::thread::sleep(Duration::from_millis(2));
        }
        (passed, slowest)
    };

    let (shared, _) = run(Duration::from_millis(300));
    assert!(shared > 0);
    assert!(seen.lock().unwrap().is_empty(), "{:?}", seen.lock().unwrap());

    redis.kill();
    let (local, slowest_down) = run(Duration::from_millis(700));
    assert_eq!(
        *seen.lock().unwrap(),
        [SharedStateEvent::Degraded { instance: Arc::from("prices"), policy: SharedPolicy::RateLimiter }]
    );
    assert!(local > 50, "Redis down: calls still served on the local limiter ({local})");
    eprintln!("Redis down: {local} calls admitted locally, slowest decision {slowest_down:?}");
    assert!(slowest_down < Duration::from_millis(500), "a call waited {slowest_down:?} with Redis down");

    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut slowest_back = Duration::ZERO;
    while seen.lock().unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "no Recovered within 5 s: {:?}", seen.lock().unwrap());
        slowest_back = slowest_back.max(run(Duration::from_millis(50)).1);
    }
    assert_eq!(
        seen.lock().unwrap()[1],
        SharedStateEvent::Recovered { instance: Arc::from("prices"), policy: SharedPolicy::RateLimiter }
    );
    assert!(slowest_back < Duration::from_millis(500), "a call waited {slowest_back:?} while Redis came back");
    let key = redis.command(&["EXISTS", "r4c:rate_limiter:prices"]);
    let (_, _) = run(Duration::from_millis(100));
    assert!(
        redis.command(&["EXISTS", "r4c:rate_limiter:prices"]).contains(":1") || key.contains(":1"),
        "sharing resumed: the key is back"
    );
    let ttl = redis.command(&["PTTL", "r4c:rate_limiter:prices"]);
    assert!(ttl.starts_with(':') && !ttl.starts_with(":-"), "the key expires: {ttl}");
    let kinds: Vec<_> =
        std::iter::from_fn(|| events.try_recv()).filter(|e| matches!(e, AnyEvent::SharedState(_))).collect();
    assert_eq!(kinds.len(), 2, "subscribers see both: {kinds:?}");
}

/// Redis alive but not answering (`CLIENT PAUSE`): a call that needs a lease waits at most about
/// `store_timeout` (25 ms), then is decided locally; the instance degrades and recovers.
#[test]
fn a_slow_redis_costs_a_call_at_most_the_store_timeout() {
    let Some(redis) = common::RedisServer::start() else { return };
    let (_registry, limiter, seen) = shared_limiter(&redis, "slow", 1_000, 1);
    std::thread::sleep(Duration::from_millis(50));
    assert!(redis.command(&["CLIENT", "PAUSE", "600", "ALL"]).starts_with("+OK"));
    let (mut slowest, mut passed) = (Duration::ZERO, 0);
    let end = Instant::now() + Duration::from_millis(400);
    while Instant::now() < end {
        let started = Instant::now();
        passed += usize::from(limiter.execute(|| Ok(())).is_ok());
        slowest = slowest.max(started.elapsed());
    }
    eprintln!("Redis paused: {passed} calls admitted, slowest decision {slowest:?} (store_timeout 25 ms)");
    assert!(passed > 0);
    assert!(slowest < Duration::from_millis(250), "a call waited {slowest:?} on a paused Redis");
    assert_eq!(
        seen.lock().unwrap().first(),
        Some(&SharedStateEvent::Degraded { instance: Arc::from("slow"), policy: SharedPolicy::RateLimiter })
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.lock().unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "no Recovered after the pause: {:?}", seen.lock().unwrap());
        let _ = limiter.execute(|| Ok(()));
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The async form takes the same path: leased permits spent locally, the fleet's refusal carried
/// through, and no runtime of the caller's own needed for the round trips.
#[test]
fn async_calls_share_the_quota_too() {
    let Some(redis) = common::RedisServer::start() else { return };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let store = runtime.block_on(RedisStore::connect(&redis.url())).unwrap();
    let registry = Registry::builder()
        .shared_state(store)
        .rate_limiter_instance("async", |r| r.shared(true).permits(20).period(Duration::from_secs(60)).lease(5))
        .build()
        .unwrap();
    let limiter = Pipeline::builder(&registry, "async").rate_limiter_with(|r| r).build::<(), std::io::Error>().unwrap();
    let admitted = runtime.block_on(async {
        let mut admitted = 0;
        for _ in 0..40 {
            admitted += usize::from(limiter.execute_async(|| async { Ok(()) }).await.is_ok());
        }
        admitted
    });
    // The fleet grants a lease (5) plus one permit per 3 s: in a fraction of a second, one lease
    // and at most a permit or two more.
    assert!((5..=7).contains(&admitted), "admitted {admitted} of a quota of 20 per minute with leases of 5");
}
