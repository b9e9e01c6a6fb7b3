//! Keyed instances shared through Redis (SPEC §15 with §13): each key's fleet state is its own.
//! Three OS processes (`r4c-redis-fleet-member keyed-…`) share each key's quota within the bound
//! of §13 per key while a key they never call keeps its whole quota; a keyed breaker opened for
//! one host in one process opens that host in the others and no other host, over one subscription
//! per process; a keyed bulkhead's slots are counted per key fleet-wide; a key evicted at rest
//! keeps its fleet state (its Redis keys expire on their own).

mod common;

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use resilience4cata::shared::SharedStateEvent;
use resilience4cata::{Registry, Rejection, ResilienceError, resilient};
use resilience4cata_redis::RedisStore;

const LIMITER: &str = "fleet::keyed_limiter";
const BREAKER: &str = "fleet::keyed_breaker";
const BULKHEAD: &str = "fleet::keyed_bulkhead";

#[derive(Debug, ResilienceError)]
enum Failed {
    #[rejection]
    Refused(Rejection),
}

/// The member's keyed methods, on the same instance ids, from this process.
#[resilient]
trait Tenants {
    #[rate_limiter(name = "fleet::keyed_limiter", key = tenant)]
    fn call(&self, tenant: &str) -> Result<(), Failed>;

    #[bulkhead(name = "fleet::keyed_bulkhead", key = tenant)]
    fn enter(&self, tenant: &str, inside: &dyn Fn()) -> Result<(), Failed>;
}

struct Backend;

impl Tenants for Backend {
    fn call(&self, _tenant: &str) -> Result<(), Failed> {
        Ok(())
    }

    fn enter(&self, _tenant: &str, inside: &dyn Fn()) -> Result<(), Failed> {
        inside();
        Ok(())
    }
}

fn now_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()
}

fn member(args: &[String]) -> Child {
    common::fleet_member()
        .args(args)
        // A loaded two-core machine can take longer than the default 25 ms to answer; the
        // tests assert the store stayed shared, not that it was fast.
        .env("R4C_STORE_TIMEOUT_MS", "100")
        .spawn()
        .expect("spawn member")
}

fn output(member: Child) -> String {
    let out = member.wait_with_output().expect("member runs");
    assert!(out.status.success(), "member failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The most calls admitted in any sliding second (timestamps in µs, sorted).
fn worst_second(admitted: &[u128]) -> u64 {
    (0..admitted.len())
        .map(|i| admitted[i..].iter().take_while(|&&u| u < admitted[i] + 1_000_000).count() as u64)
        .max()
        .unwrap_or(0)
}

/// The admitted calls' times by key, from members' `ok <unix µs> <key>` lines.
fn admitted_by_key(texts: &[String], keys: usize) -> Vec<Vec<u128>> {
    let mut by_key = vec![Vec::new(); keys];
    for line in texts.iter().flat_map(|t| t.lines()).filter_map(|l| l.strip_prefix("ok ")) {
        let (at, key) = line.split_once(' ').unwrap();
        by_key[key.strip_prefix('k').unwrap().parse::<usize>().unwrap()].push(at.parse().unwrap());
    }
    by_key.iter_mut().for_each(|times| times.sort_unstable());
    by_key
}

fn store(url: &str) -> RedisStore {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(RedisStore::builder(url).store_timeout(Duration::from_millis(500)).connect()).unwrap()
}

/// Milliseconds to live of a Redis key (raw RESP reply `:<n>`): -2 when it does not exist.
fn pttl(redis: &common::RedisServer, key: &str) -> i64 {
    redis.command(&["PTTL", key]).trim().trim_start_matches(':').parse().unwrap()
}

#[test]
fn three_processes_share_each_keys_quota_within_the_bound_and_an_untouched_key_keeps_its_own() {
    const PROCESSES: u64 = 3;
    const PERMITS: u64 = 20;
    const KEYS: usize = 3;
    const RUN_MS: u64 = 2_000;
    let Some(redis) = common::RedisServer::start() else { return };
    let start_at = now_ms() + 1_500;
    let args = |_| {
        ["keyed-limiter", &redis.url(), LIMITER, &PERMITS.to_string(), &KEYS.to_string()]
            .map(String::from)
            .into_iter()
            .chain([start_at.to_string(), RUN_MS.to_string()])
            .collect::<Vec<_>>()
    };
    let members: Vec<Child> = (0..PROCESSES).map(|p| member(&args(p))).collect();

    // Meanwhile this process calls a key nobody else calls: its quota is whole, the others' use
    // of theirs takes nothing from it.
    let registry = Registry::builder()
        .shared_state(store(&redis.url()))
        .rate_limiter_instance(LIMITER, |r| r.shared(true).permits(PERMITS as u32).period(Duration::from_secs(1)))
        .build()
        .unwrap();
    let api = ResilientTenants::new(Backend, &registry).unwrap();
    while now_ms() < start_at + 1_000 {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(api.call("quiet").is_ok(), "an untouched key is admitted while the fleet spends the others");

    let texts: Vec<String> = members.into_iter().map(output).collect();
    for text in &texts {
        assert!(!text.contains("degraded"), "Redis was up the whole time:\n{text}");
        assert!(text.contains("errors 0"), "no caller saw an error:\n{text}");
    }
    let bound = PERMITS + PROCESSES.min(PERMITS); // processes × lease, the keyed default lease being 1
    let quota = PERMITS * RUN_MS / 1_000;
    for (key, admitted) in admitted_by_key(&texts, KEYS).iter().enumerate() {
        let worst = worst_second(admitted);
        eprintln!("k{key}: admitted {} of {quota}; worst sliding second {worst} (bound {bound})", admitted.len());
        assert!(worst <= bound, "k{key}: {worst} calls in one sliding second, bound {bound}");
        assert!(admitted.len() as u64 * 10 >= quota * 8, "k{key}: only {} of {quota} permits used", admitted.len());
    }
    // Each key's state is its own Redis key, named by the key's text, and it expires.
    for key in ["\"k0\"", "\"k1\"", "\"k2\"", "\"quiet\""] {
        let name = format!("r4c:rate_limiter:{LIMITER}:{key}");
        assert!(pttl(&redis, &name) > 0, "{name} exists and expires");
    }
}

#[test]
fn a_keyed_breaker_opened_for_one_host_opens_it_in_the_others_and_no_other_host() {
    const HOSTS: usize = 4;
    let Some(redis) = common::RedisServer::start() else { return };
    let start_at = now_ms() + 1_500;
    let spawn = |failing: &str, delay: u128| {
        let args = ["keyed-breaker", &redis.url(), BREAKER, failing, &HOSTS.to_string()].map(String::from);
        member(&[&args[..], &[(start_at + delay).to_string(), (2_600 - delay).to_string()]].concat())
    };
    // B and C call every host; A's calls to h0 fail, and its breaker for h0 opens a little later.
    let (b, c) = (spawn("-", 0), spawn("-", 0));
    let a = spawn("h0", 100);

    // One subscription per process for the instance, however many keys it has.
    while now_ms() < start_at + 600 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let channels = redis.command(&["PUBSUB", "CHANNELS", "r4c:circuit_breaker:*"]);
    let channel = format!("r4c:circuit_breaker:{BREAKER}:keys");
    assert!(channels.starts_with("*1\r\n") && channels.contains(&channel), "one channel: {channels:?}");
    let subscribers = redis.command(&["PUBSUB", "NUMSUB", &channel]);
    assert!(subscribers.ends_with(":3\r\n"), "three subscribers, one per process: {subscribers:?}");

    let texts: Vec<String> = [a, b, c].into_iter().map(output).collect();
    let at = |text: &str, what: &str| -> Option<u128> {
        text.lines().find_map(|l| l.strip_prefix(what)?.strip_suffix(" h0")?.parse().ok())
    };
    let opened = at(&texts[0], "opened ").unwrap_or_else(|| panic!("A's breaker for h0 opened:\n{}", texts[0]));
    for (name, text) in ["B", "C"].iter().zip(&texts[1..]) {
        let refused = at(text, "first_refusal ").unwrap_or_else(|| panic!("{name} never refused h0:\n{text}"));
        let propagation = refused.saturating_sub(opened);
        eprintln!("{name}: first refusal of h0 {:.1} ms after A opened it", propagation as f64 / 1000.0);
        assert!(propagation < 2_000_000, "{name} refused h0 {propagation} µs after A opened it");
    }
    for (name, text) in ["A", "B", "C"].iter().zip(&texts) {
        assert!(text.contains("errors 0"), "{name}: no unexpected failure:\n{text}");
        let others = text.lines().filter(|l| l.starts_with("first_refusal ") && !l.ends_with(" h0")).count();
        assert_eq!(others, 0, "{name}: only h0 was ever refused:\n{text}");
    }
    let probes = texts.iter().flat_map(|t| t.lines()).filter(|l| l.starts_with("probe ") && l.ends_with(" h0")).count();
    eprintln!("half-open probes of h0 in the fleet: {probes}");
    assert!((1..=2).contains(&probes), "fleet-wide probes of h0 {probes}, cap 2:\n{texts:?}");
}

#[test]
fn a_keyed_bulkheads_slots_are_counted_per_key_fleet_wide() {
    const TTL_MS: u64 = 600;
    let Some(redis) = common::RedisServer::start() else { return };
    // Another process takes two of a's three slots and one of b's; with leases of one it keeps
    // one spare slot of each key besides (SPEC §13: `processes × lease` may be held ahead).
    let args = ["keyed-hold", &redis.url(), BULKHEAD, "3", &TTL_MS.to_string(), "a:2,b:1"].map(String::from);
    let mut holder = Killed(member(&args));
    let mut line = String::new();
    BufReader::new(holder.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "holding");
    let held = |key: &str| -> i64 {
        let reply = redis.command(&["ZCARD", &format!("r4c:bulkhead:{BULKHEAD}:\"{key}\"")]);
        reply.trim().trim_start_matches(':').parse().unwrap()
    };
    let settled = Instant::now();
    while (held("a"), held("b")) != (3, 2) {
        assert!(settled.elapsed() < Duration::from_secs(5), "the holder's slots: a {}, b {}", held("a"), held("b"));
        std::thread::sleep(Duration::from_millis(10));
    }

    let registry = Registry::builder()
        .shared_state(store(&redis.url()))
        .bulkhead_instance(BULKHEAD, |b| {
            b.shared(true).max_concurrent_calls(3).lease(1).lease_ttl(Duration::from_millis(TTL_MS))
        })
        .build()
        .unwrap();
    let api = ResilientTenants::new(Backend, &registry).unwrap();
    let full = |outcome: Result<(), Failed>| matches!(outcome, Err(Failed::Refused(Rejection::BulkheadFull { .. })));
    assert!(full(api.enter("a", &|| ())), "a's three slots are held elsewhere");
    let inner = Mutex::new(None);
    api.enter("b", &|| *inner.lock().unwrap() = Some(full(api.enter("b", &|| ())))).unwrap();
    assert_eq!(*inner.lock().unwrap(), Some(true), "b: one slot here, two elsewhere, none left");
    let depth = |key: &'static str| {
        let (api, inner) = (&api, &inner);
        api.enter(key, &|| api.enter(key, &|| *inner.lock().unwrap() = Some(api.enter(key, &|| ()).is_ok())).unwrap())
    };
    depth("c").unwrap();
    assert_eq!(*inner.lock().unwrap(), Some(true), "c, untouched elsewhere, has its three slots here");
    assert!(held("a") == 3 && held("c") <= 3, "c's slots are c's own: a {}, c {}", held("a"), held("c"));

    holder.0.kill().unwrap();
    holder.0.wait().unwrap();
    let killed = Instant::now();
    while api.enter("a", &|| ()).is_err() {
        assert!(killed.elapsed() < Duration::from_millis(TTL_MS * 5), "a's slots still held after the kill");
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!("a killed process's slots of key a were free after {:?} (lease_ttl {TTL_MS} ms)", killed.elapsed());
}

#[test]
fn a_key_evicted_at_rest_keeps_its_fleet_state_and_its_redis_key_expires_on_its_own() {
    const PERMITS: u64 = 5;
    let Some(redis) = common::RedisServer::start() else { return };
    let seen: Arc<Mutex<Vec<SharedStateEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let registry = Registry::builder()
        .shared_state(store(&redis.url()))
        .listen(move |e: &SharedStateEvent| sink.lock().unwrap().push(e.clone()))
        .rate_limiter_instance(LIMITER, |r| {
            r.shared(true).permits(PERMITS as u32).period(Duration::from_secs(1)).max_keys(1)
        })
        .build()
        .unwrap();
    let api = ResilientTenants::new(Backend, &registry).unwrap();
    // One key at a time: each call to the other key evicts this one (at rest: its leased permit
    // is spent or lapses), so every call makes the key anew, with a fresh local state.
    let mut admitted = [Vec::new(), Vec::new()];
    let end = Instant::now() + Duration::from_millis(1_200);
    while Instant::now() < end {
        for (i, key) in ["a", "b"].iter().enumerate() {
            if api.call(key).is_ok() {
                admitted[i].push(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros());
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let snapshot = registry.rate_limiter(LIMITER).unwrap().snapshot();
    assert!(snapshot.evicted > 10, "keys were evicted and made again: {}", snapshot.evicted);
    let bound = PERMITS + 1; // one process, leases of one
    for (key, times) in ["a", "b"].iter().zip(&admitted) {
        let worst = worst_second(times);
        eprintln!("{key}: {} admitted, worst sliding second {worst} (bound {bound})", times.len());
        assert!(worst <= bound, "{key}: {worst} in one sliding second: eviction reset the fleet's count");
        assert!(!times.is_empty(), "{key} was admitted");
        let name = format!("r4c:rate_limiter:{LIMITER}:\"{key}\"");
        let ttl = pttl(&redis, &name);
        assert!(ttl > 0 && ttl <= 2_000, "{name}: the fleet state outlives the local key and expires ({ttl} ms)");
    }
    assert!(seen.lock().unwrap().is_empty(), "Redis was up: {:?}", seen.lock().unwrap());
}

#[test]
fn a_keyed_limiter_with_redis_down_decides_each_key_locally_and_never_fails_a_caller() {
    let Some(mut redis) = common::RedisServer::start() else { return };
    let seen: Arc<Mutex<Vec<SharedStateEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let store = runtime.block_on(RedisStore::connect(&redis.url())).unwrap();
    let registry = Registry::builder()
        .shared_state(store)
        .listen(move |e: &SharedStateEvent| sink.lock().unwrap().push(e.clone()))
        .rate_limiter_instance(LIMITER, |r| r.shared(true).permits(1_000).period(Duration::from_secs(1)))
        .build()
        .unwrap();
    let api = ResilientTenants::new(Backend, &registry).unwrap();
    assert!(api.call("a").is_ok());
    redis.kill();
    let down = Instant::now();
    let mut admitted = 0;
    while down.elapsed() < Duration::from_millis(400) {
        for key in ["a", "b"] {
            let t = Instant::now();
            let r = api.call(key);
            eprintln!("{key} took {:?}", t.elapsed());
            match r {
                Ok(()) => admitted += 1,
                Err(Failed::Refused(Rejection::RateLimitExceeded { .. })) => {}
                Err(other) => panic!("Redis down is never a caller's error: {other:?}"),
            }
        }
    }
    assert!(admitted > 10, "the keys' local limiters admit while Redis is down ({admitted})");
    let degraded = seen.lock().unwrap().iter().filter(|e| e.is_degraded()).count();
    assert_eq!(degraded, 1, "one Degraded for the instance, not one per key: {:?}", seen.lock().unwrap());
    redis.restart();
    let back = Instant::now();
    while seen.lock().unwrap().last().is_none_or(SharedStateEvent::is_degraded) {
        let _ = api.call("a");
        assert!(back.elapsed() < Duration::from_secs(5), "Recovered after Redis came back: {:?}", seen.lock().unwrap());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills the child when dropped, so a failing test leaves no process behind.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
