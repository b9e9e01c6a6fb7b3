//! One replica of a fleet, for the multi-process tests of this crate (and for trying a fleet by
//! hand): shares the rate limiter `<instance>` through Redis and calls it as fast as it lets
//! through, from `<start_at_unix_ms>` for `<run_ms>`.
//!
//! `r4c-redis-fleet-member <url> <instance> <permits> <lease> <start_at_unix_ms> <run_ms>`
//!
//! `<url>` is one server's URL, or a Redis Cluster's node URLs separated by commas
//! (`redis://127.0.0.1:7000,redis://127.0.0.1:7001`). An `<instance>` of the form `<name>*<n>`
//! shares `n` limiters, `<name>-0` … `<name>-<n - 1>`, calls each once a millisecond and prints
//! `ok <unix µs> <i>` with the limiter's number. `R4C_STORE_TIMEOUT_MS` sets the store timeout.
//!
//! Prints one line per admitted call (`ok <unix µs>`), one per shared-state event
//! (`degraded <policy> <unix µs>`, `recovered <policy> <unix µs>`), and at the end `max_call_us
//! <µs>` (the slowest decision), `refused <count>` and `errors <count>` (calls that failed other
//! than by a refusal: Redis trouble must never be one).
//!
//! `r4c-redis-fleet-member hold <url> <instance> <max> <slots> <lease_ttl_ms>`
//!
//! Takes `<slots>` slots of the shared bulkhead `<instance>` (fleet cap `<max>`), prints `holding`
//! and holds them until killed.
//!
//! `r4c-redis-fleet-member keyed-limiter|keyed-breaker|keyed-hold …`: the keyed modes (SPEC §15),
//! described in `keyed.rs`.
//!
//! `r4c-redis-fleet-member breaker <url> <instance> <fail|succeed> <start_at_unix_ms> <run_ms>`
//!
//! Shares the breaker `<instance>` (window 5, wait_in_open 1.5 s, 2 half-open probes) and calls it
//! every millisecond: `fail` fails until its own breaker opens (`opened <unix µs>`), then succeeds
//! like `succeed`. Prints `first_refusal <unix µs>`, one `probe <unix µs>` per call that ran while
//! the breaker was half-open, and `state <final state>`.

mod keyed;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use resilience4cata::shared::SharedStateEvent;
use resilience4cata::{Pipeline, Registry, Rejection, ResilienceError};
use resilience4cata_redis::RedisStore;

fn unix_us() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0)
}

/// One server, or a cluster when `url` lists nodes separated by commas; the store timeout from
/// `R4C_STORE_TIMEOUT_MS` when set.
async fn connect(url: &str) -> Result<RedisStore, resilience4cata_redis::ConnectError> {
    let builder =
        if url.contains(',') { RedisStore::cluster_builder(url.split(',')) } else { RedisStore::builder(url) };
    match std::env::var("R4C_STORE_TIMEOUT_MS").ok().and_then(|ms| ms.parse().ok()) {
        Some(ms) => builder.store_timeout(Duration::from_millis(ms)).connect().await,
        None => builder.connect().await,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("breaker") {
        return breaker(&args[1..]);
    }
    match args.first().map(String::as_str) {
        Some("hold") => return hold(&args[1..]),
        Some("keyed-limiter") => return keyed::limiter(&args[1..]),
        Some("keyed-breaker") => return keyed::breaker(&args[1..]),
        Some("keyed-hold") => return keyed::hold(&args[1..]),
        _ => {}
    }
    let [url, instance, permits, lease, start_at, run_ms] = args.as_slice() else {
        return Err(
            "usage: r4c-redis-fleet-member <url> <instance> <permits> <lease> <start_at_unix_ms> <run_ms>".into()
        );
    };
    let (permits, lease): (u32, u32) = (permits.parse()?, lease.parse()?);
    let (start_at, run): (u128, u64) = (start_at.parse()?, run_ms.parse()?);
    if let Some((name, count)) = instance.rsplit_once('*') {
        return many(url, name, count.parse()?, (permits, lease), start_at, run);
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let store = runtime.block_on(connect(url))?;
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let events = Arc::clone(&lines);
    let registry = Registry::builder()
        .shared_state(store)
        .listen(move |e: &SharedStateEvent| events.lock().unwrap().push(event_line(e)))
        .rate_limiter_instance(instance.as_str(), |r| r.shared(true).permits(permits).lease(lease))
        .build()?;
    let limiter =
        Pipeline::builder(&registry, instance.as_str()).rate_limiter_with(|r| r).build::<(), std::io::Error>()?;
    while unix_us() < start_at * 1000 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let end = Instant::now() + Duration::from_millis(run);
    let (mut slowest, mut refused, mut errors) = (Duration::ZERO, 0u64, 0u64);
    while Instant::now() < end {
        let started = Instant::now();
        let outcome = limiter.execute(|| Ok(()));
        slowest = slowest.max(started.elapsed());
        match outcome {
            Ok(()) => lines.lock().unwrap().push(format!("ok {}", unix_us())),
            Err(e) if e.rejection().is_none() => errors += 1,
            Err(e) => {
                refused += 1;
                let pause = match e.rejection() {
                    Some(Rejection::RateLimitExceeded { retry_after, .. }) => *retry_after,
                    _ => Duration::ZERO,
                };
                std::thread::sleep(pause.clamp(Duration::from_micros(200), Duration::from_millis(2)));
            }
        }
    }
    let mut out = std::io::stdout().lock();
    for line in lines.lock().unwrap().iter() {
        writeln!(out, "{line}")?;
    }
    writeln!(out, "max_call_us {}", slowest.as_micros())?;
    writeln!(out, "refused {refused}")?;
    writeln!(out, "errors {errors}")?;
    Ok(())
}

/// `<name>*<count>`: the limiters `<name>-0` … `<name>-<count - 1>`, all shared, each called once
/// a pass, a pass every millisecond. Prints `ok <unix µs> <i>` per admitted call (the limiter's
/// number), the events, then `refused <count>` and `errors <count>`.
fn many(
    url: &str,
    name: &str,
    count: usize,
    (permits, lease): (u32, u32),
    start_at: u128,
    run: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let store = runtime.block_on(connect(url))?;
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let events = Arc::clone(&lines);
    let ids: Vec<String> = (0..count).map(|i| format!("{name}-{i}")).collect();
    let mut builder = Registry::builder()
        .shared_state(store)
        .listen(move |e: &SharedStateEvent| events.lock().unwrap().push(event_line(e)));
    for id in &ids {
        builder = builder.rate_limiter_instance(id.as_str(), |r| r.shared(true).permits(permits).lease(lease));
    }
    let registry = builder.build()?;
    let limiters = ids
        .iter()
        .map(|id| Pipeline::builder(&registry, id.as_str()).rate_limiter_with(|r| r).build::<(), std::io::Error>())
        .collect::<Result<Vec<_>, _>>()?;
    while unix_us() < start_at * 1000 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let end = Instant::now() + Duration::from_millis(run);
    let (mut refused, mut errors) = (0u64, 0u64);
    let mut admitted = Vec::new();
    while Instant::now() < end {
        for (i, limiter) in limiters.iter().enumerate() {
            match limiter.execute(|| Ok(())) {
                Ok(()) => admitted.push(format!("ok {} {i}", unix_us())),
                Err(e) if e.rejection().is_none() => errors += 1,
                Err(_) => refused += 1,
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut out = std::io::stdout().lock();
    for line in admitted.iter().chain(lines.lock().unwrap().iter()) {
        writeln!(out, "{line}")?;
    }
    writeln!(out, "refused {refused}")?;
    writeln!(out, "errors {errors}")?;
    Ok(())
}

/// `degraded <policy> <unix µs>` or `recovered <policy> <unix µs>`.
fn event_line(e: &SharedStateEvent) -> String {
    let kind = if e.is_degraded() { "degraded" } else { "recovered" };
    format!("{kind} {} {}", e.policy(), unix_us())
}

fn breaker(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    use resilience4cata::circuit_breaker::State;
    let (url, instance, role, start_at, run_ms, fail_after, wait_ms) = match args {
        [url, instance, role, start_at, run_ms] => (url, instance, role, start_at, run_ms, "0", "1500"),
        [url, instance, role, start_at, run_ms, fail_after, wait] => {
            (url, instance, role, start_at, run_ms, fail_after.as_str(), wait.as_str())
        }
        _ => {
            return Err("usage: r4c-redis-fleet-member breaker <url> <instance> <fail|succeed> <start_at_unix_ms> \
             <run_ms> [<fail_after_ms> <wait_in_open_ms>]"
                .into());
        }
    };
    let (start_at, run): (u128, u64) = (start_at.parse()?, run_ms.parse()?);
    let (fail_after, wait_in_open): (u64, u64) = (fail_after.parse()?, wait_ms.parse()?);
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let (events, transitions) = (Arc::clone(&lines), Arc::clone(&lines));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let store = runtime.block_on(connect(url))?;
    let registry = Registry::builder()
        .shared_state(store)
        .listen(move |e: &SharedStateEvent| events.lock().unwrap().push(event_line(e)))
        .listen(move |e: &resilience4cata::circuit_breaker::CircuitBreakerEvent| {
            if let resilience4cata::circuit_breaker::CircuitBreakerEvent::StateTransition { to, .. } = e {
                transitions.lock().unwrap().push(format!("to_{to:?} {}", unix_us()));
            }
        })
        .circuit_breaker_instance(instance.as_str(), |c| {
            c.shared(true)
                .window_size(5)
                .minimum_calls(5)
                .wait_in_open(Duration::from_millis(wait_in_open))
                .permitted_calls_in_half_open(2)
        })
        .build()?;
    let breaker =
        Pipeline::builder(&registry, instance.as_str()).circuit_breaker_with(|c| c).build::<(), std::io::Error>()?;
    let handle = registry.circuit_breaker(instance).ok_or("no breaker")?;
    let mut failing = role == "fail";
    let mut refused_once = false;
    while unix_us() < start_at * 1000 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let started = Instant::now();
    let end = started + Duration::from_millis(run);
    let (mut slowest, mut errors) = (Duration::ZERO, 0u64);
    while Instant::now() < end {
        let fails_now = failing && started.elapsed() >= Duration::from_millis(fail_after);
        let called = Instant::now();
        let outcome = breaker.execute(|| {
            if handle.snapshot().state == State::HalfOpen {
                lines.lock().unwrap().push(format!("probe {}", unix_us()));
            }
            if fails_now { Err(std::io::Error::other("down")) } else { Ok(()) }
        });
        slowest = slowest.max(called.elapsed());
        let mut lines = lines.lock().unwrap();
        if let Err(e) = &outcome
            && e.rejection().is_none()
            && !fails_now
        {
            errors += 1;
        }
        if let Err(e) = outcome
            && e.rejection().is_some()
        {
            if failing {
                failing = false;
                lines.push(format!("opened {}", unix_us()));
            } else if !refused_once {
                refused_once = true;
                lines.push(format!("first_refusal {}", unix_us()));
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut out = std::io::stdout().lock();
    for line in lines.lock().unwrap().iter() {
        writeln!(out, "{line}")?;
    }
    writeln!(out, "state {:?}", handle.snapshot().state)?;
    writeln!(out, "max_call_us {}", slowest.as_micros())?;
    writeln!(out, "errors {errors}")?;
    Ok(())
}

fn hold(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let [url, instance, max, slots, ttl_ms] = args else {
        return Err("usage: r4c-redis-fleet-member hold <url> <instance> <max> <slots> <lease_ttl_ms>".into());
    };
    let (max, slots, ttl): (u32, usize, u64) = (max.parse()?, slots.parse()?, ttl_ms.parse()?);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let store = runtime.block_on(connect(url))?;
    let registry = Registry::builder()
        .shared_state(store)
        .bulkhead_instance(instance.as_str(), |b| {
            b.shared(true).max_concurrent_calls(max).lease(1).lease_ttl(Duration::from_millis(ttl))
        })
        .build()?;
    let bulkhead =
        Pipeline::builder(&registry, instance.as_str()).bulkhead_with(|b| b).build::<(), std::io::Error>()?;
    let entered = std::sync::Barrier::new(slots + 1);
    std::thread::scope(|s| {
        for _ in 0..slots {
            s.spawn(|| {
                let _ = bulkhead.execute(|| {
                    entered.wait();
                    loop {
                        std::thread::park();
                    }
                });
            });
        }
        entered.wait();
        println!("holding");
        let _ = std::io::stdout().flush();
        loop {
            std::thread::park();
        }
    })
}
