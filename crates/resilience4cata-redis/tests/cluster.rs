//! The store on a Redis Cluster of three masters on loopback (SPEC §13, issue 24): shared
//! instances spread over the shards by their hash slot, each with the single-server bound; a
//! breaker's Open (two keys in one slot, by the hash tag) reaches another store; a bulkhead's
//! fleet cap holds; a master killed degrades the instances whose slots it holds, and only those,
//! and restarted, exactly those recover.
//!
//! The limiters' fleet is three OS processes (`r4c-redis-fleet-member` given the cluster's node
//! URLs), as in `tests/fleet.rs`; the breaker's and the bulkhead's are two stores in one process
//! (each store has its own thread, connections and sender id: to Redis, two processes).
//!
//! The tests run one at a time (each starts its own cluster) and give the stores a 100 ms
//! `store_timeout`: on a loaded two-core machine a round trip now and then takes longer than the
//! default 25 ms, and these tests tell a degraded instance from a shared one.

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::RedisCluster;
use resilience4cata::shared::{SharedPolicy, SharedStateEvent};
use resilience4cata::{Pipeline, Registry, Rejection, ResilienceError};
use resilience4cata_redis::{ConnectError, RedisStore};

/// The shared-state events one registry published.
type Seen = Arc<Mutex<Vec<SharedStateEvent>>>;

/// One test at a time: three clusters' worth of servers and stores at once make a two-core
/// machine miss timeouts.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn store(cluster: &RedisCluster) -> RedisStore {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let connect = RedisStore::cluster_builder(cluster.urls()).store_timeout(Duration::from_millis(100)).connect();
    let store = runtime.block_on(connect).expect("the store connects");
    assert!(store.is_cluster());
    assert_eq!(store.key("circuit_breaker", "prices"), "r4c:{circuit_breaker:prices}");
    store
}

fn ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("cluster::quota-{i}")).collect()
}

/// The most calls admitted in any sliding second (timestamps in µs, sorted).
fn worst_second(admitted: &[u128]) -> usize {
    (0..admitted.len())
        .map(|i| admitted[i..].iter().take_while(|&&u| u < admitted[i] + 1_000_000).count())
        .max()
        .unwrap_or(0)
}

#[test]
fn sixty_limiters_spread_over_three_masters_each_within_the_fleet_bound() {
    const PROCESSES: usize = 3;
    const INSTANCES: usize = 60;
    const PERMITS: usize = 20;
    const LEASE: usize = 4;
    const RUN_MS: u128 = 2_000;
    let _turn = one_at_a_time();
    let Some(cluster) = RedisCluster::start() else { return };
    // Three OS processes, each sharing the limiters cluster::quota-0 … -59 and calling every one
    // once a millisecond.
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() + 1_500;
    let args = [cluster.urls().join(","), format!("cluster::quota*{INSTANCES}"), PERMITS.to_string()];
    let args = [&args[..], &[LEASE.to_string(), start_at.to_string(), RUN_MS.to_string()]].concat();
    let mut admitted = vec![Vec::<u128>::new(); INSTANCES];
    for text in run_members(PROCESSES, &args) {
        for line in text.lines().filter_map(|l| l.strip_prefix("ok ")) {
            let (at, i) = line.split_once(' ').unwrap();
            admitted[i.parse::<usize>().unwrap()].push(at.parse().unwrap());
        }
    }

    let per_node: Vec<usize> =
        (0..3).map(|node| cluster.keys(node, "r4c:{rate_limiter:cluster::quota-*}").len()).collect();
    eprintln!("limiter keys per master: {per_node:?}");
    assert!(per_node.iter().all(|&n| n > 0), "every master holds some instances: {per_node:?}");
    assert_eq!(per_node.iter().sum::<usize>(), INSTANCES, "one key per instance");

    let bound = PERMITS + (PROCESSES * LEASE).min(PERMITS);
    let quota = PERMITS * RUN_MS as usize / 1_000;
    let (mut worst, mut least) = (0, usize::MAX);
    for (i, all) in admitted.iter_mut().enumerate() {
        all.sort_unstable();
        let w = worst_second(all);
        assert!(w <= bound, "cluster::quota-{i}: {w} calls in one sliding second, bound {bound}");
        assert!(all.len() * 2 >= quota, "cluster::quota-{i}: only {} of {quota} permits used", all.len());
        (worst, least) = (worst.max(w), least.min(all.len()));
    }
    eprintln!(
        "worst sliding second over {INSTANCES} instances: {worst} (bound {bound}); least admitted {least} of {quota}"
    );
}

#[test]
fn a_keyed_limiters_keys_spread_over_three_masters_each_within_the_per_key_bound() {
    const PROCESSES: usize = 3;
    const KEYS: usize = 6;
    const PERMITS: usize = 20;
    const RUN_MS: u128 = 2_000;
    const ID: &str = "fleet::keyed_limiter";
    let _turn = one_at_a_time();
    let Some(cluster) = RedisCluster::start() else { return };
    // Three OS processes, each sharing the keyed limiter and calling its keys k0 … k5 once a
    // millisecond; the hash tag holds the key text, so the keys spread over the masters.
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() + 1_500;
    let args = ["keyed-limiter".into(), cluster.urls().join(","), ID.into(), PERMITS.to_string()];
    let args = [&args[..], &[KEYS.to_string(), start_at.to_string(), RUN_MS.to_string()]].concat();
    let mut admitted = vec![Vec::<u128>::new(); KEYS];
    for text in run_members(PROCESSES, &args) {
        for line in text.lines().filter_map(|l| l.strip_prefix("ok ")) {
            let (at, key) = line.split_once(' ').unwrap();
            admitted[key.strip_prefix('k').unwrap().parse::<usize>().unwrap()].push(at.parse().unwrap());
        }
    }

    let per_node: Vec<Vec<String>> =
        (0..3).map(|node| cluster.keys(node, &format!("r4c:{{rate_limiter:{ID}:*"))).collect();
    eprintln!("keys of the keyed limiter per master: {per_node:?}");
    assert!(per_node.iter().all(|keys| keys.len() == 2), "two of the six keys on each master: {per_node:?}");
    for (node, keys) in per_node.iter().enumerate() {
        for key in keys {
            assert_eq!(cluster.node_of_key(key), node, "{key} is where its slot is");
        }
    }

    let bound = PERMITS + PROCESSES.min(PERMITS); // leases of one per key
    let quota = PERMITS * RUN_MS as usize / 1_000;
    for (key, all) in admitted.iter_mut().enumerate() {
        all.sort_unstable();
        let worst = worst_second(all);
        eprintln!("k{key}: admitted {} of {quota}; worst sliding second {worst} (bound {bound})", all.len());
        assert!(worst <= bound, "k{key}: {worst} calls in one sliding second, bound {bound}");
        assert!(all.len() * 10 >= quota * 8, "k{key}: only {} of {quota} permits used", all.len());
    }
}

#[derive(Debug, resilience4cata::ResilienceError)]
enum HostDown {
    Down,
    #[rejection]
    Refused(Rejection),
}

/// A keyed breaker: one per host, chosen per call.
#[resilience4cata::resilient]
trait Hosts {
    #[circuit_breaker(name = "cluster::hosts", key = host, window_size = 5, minimum_calls = 5, wait_in_open = "5s")]
    fn get(&self, host: &str, fail: bool) -> Result<(), HostDown>;
}

struct HostsBackend;

impl Hosts for HostsBackend {
    fn get(&self, _host: &str, fail: bool) -> Result<(), HostDown> {
        if fail { Err(HostDown::Down) } else { Ok(()) }
    }
}

#[test]
fn a_keyed_breaker_opens_each_host_on_every_master_through_one_channel() {
    let _turn = one_at_a_time();
    let Some(cluster) = RedisCluster::start() else { return };
    // Hosts whose keys fall on masters 0, 1 and 2, and one more that nobody fails.
    let mut hosts: Vec<Option<String>> = vec![None; 3];
    for i in 0.. {
        let host = format!("host-{i}");
        let node = cluster.node_of_key(&format!("r4c:{{circuit_breaker:cluster::hosts:{host:?}}}"));
        hosts[node].get_or_insert(host);
        if hosts.iter().all(Option::is_some) {
            break;
        }
    }
    let hosts: Vec<String> = hosts.into_iter().map(Option::unwrap).collect();
    let registry = |cluster: &RedisCluster| {
        Registry::builder()
            .shared_state(store(cluster))
            .circuit_breaker_instance("cluster::hosts", |c| c.shared(true))
            .build()
            .unwrap()
    };
    let (a, b) = (registry(&cluster), registry(&cluster));
    let (api_a, api_b) =
        (ResilientHosts::new(HostsBackend, &a).unwrap(), ResilientHosts::new(HostsBackend, &b).unwrap());
    // B has every host (and the bystander) before A opens any: one subscription for all of them.
    for host in hosts.iter().map(String::as_str).chain(["bystander"]) {
        api_b.get(host, false).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    for (node, host) in hosts.iter().enumerate() {
        for _ in 0..5 {
            let _ = api_a.get(host, true);
        }
        assert!(matches!(api_a.get(host, false), Err(HostDown::Refused(_))), "{host}: A opened on its failures");
        let since = Instant::now();
        while !matches!(api_b.get(host, false), Err(HostDown::Refused(Rejection::CallNotPermitted { .. }))) {
            assert!(since.elapsed() < Duration::from_secs(2), "{host} (master {node}): B never refused");
            std::thread::sleep(Duration::from_millis(5));
        }
        eprintln!("{host} (master {node}): B refused {:?} after A opened", since.elapsed());
        let open_key = format!("r4c:{{circuit_breaker:cluster::hosts:{host:?}}}");
        let holders: Vec<usize> = (0..3).filter(|&n| cluster.keys(n, &open_key).contains(&open_key)).collect();
        assert_eq!(holders, [node], "{open_key} is on its slot's master only");
    }
    assert!(api_b.get("bystander", false).is_ok(), "a host nobody failed stays closed");
}

/// Ids `<name>-<n>` of `policy` whose keys fall on masters 0, 1 and 2, in that order.
fn one_per_master(cluster: &RedisCluster, policy: &str, name: &str) -> Vec<String> {
    let mut found: Vec<Option<String>> = vec![None; 3];
    for i in 0.. {
        let id = format!("{name}-{i}");
        let node = cluster.node_of_key(&format!("r4c:{{{policy}:{id}}}"));
        found[node].get_or_insert(id);
        if found.iter().all(Option::is_some) {
            break;
        }
    }
    found.into_iter().map(Option::unwrap).collect()
}

#[test]
fn an_open_on_one_store_refuses_on_another_on_every_master() {
    use resilience4cata::circuit_breaker::State;
    let _turn = one_at_a_time();
    let Some(cluster) = RedisCluster::start() else { return };
    let ids = one_per_master(&cluster, "circuit_breaker", "cluster::down");
    let registry = |cluster: &RedisCluster| {
        let mut builder = Registry::builder().shared_state(store(cluster));
        for id in &ids {
            builder = builder.circuit_breaker_instance(id.as_str(), |c| {
                c.shared(true).window_size(5).minimum_calls(5).wait_in_open(Duration::from_secs(5))
            });
        }
        builder.build().unwrap()
    };
    let (a, b) = (registry(&cluster), registry(&cluster));
    let breaker = |r: &Registry, id: &str| {
        Pipeline::builder(r, id).circuit_breaker_with(|c| c).build::<(), std::io::Error>().unwrap()
    };
    // B is subscribed (each listener at the master of its breaker's slot) before A opens.
    let b_breakers: Vec<_> = ids.iter().map(|id| breaker(&b, id)).collect();
    for limiter in &b_breakers {
        limiter.execute(|| Ok(())).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    for (node, id) in ids.iter().enumerate() {
        let opened = breaker(&a, id);
        for _ in 0..5 {
            let _ = opened.execute(|| Err(std::io::Error::other("down")));
        }
        assert_eq!(a.circuit_breaker(id).unwrap().snapshot().state, State::Open, "{id}: A opened on its failures");
        let since = Instant::now();
        loop {
            match b_breakers[node].execute(|| Ok(())) {
                Err(e) if matches!(e.rejection(), Some(Rejection::CallNotPermitted { .. })) => break,
                _ => assert!(since.elapsed() < Duration::from_secs(2), "{id}: B never refused"),
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        eprintln!("{id} (master {node}): B refused {:?} after A opened", since.elapsed());
        // The Open key is on the master of the breaker's slot, and only there.
        let open_key = format!("r4c:{{circuit_breaker:{id}}}");
        let holders: Vec<usize> = (0..3).filter(|&n| cluster.keys(n, &open_key).contains(&open_key)).collect();
        assert_eq!(holders, [node], "{open_key}");
    }
}

#[test]
fn a_bulkhead_keeps_its_fleet_cap_on_a_cluster() {
    let _turn = one_at_a_time();
    let Some(cluster) = RedisCluster::start() else { return };
    let bulkhead = |cluster: &RedisCluster| {
        let registry = Registry::builder()
            .shared_state(store(cluster))
            .bulkhead_instance("cluster::db", |b| {
                b.shared(true).max_concurrent_calls(3).lease(1).lease_ttl(Duration::from_secs(2))
            })
            .build()
            .unwrap();
        let pipeline =
            Pipeline::builder(&registry, "cluster::db").bulkhead_with(|b| b).build::<(), std::io::Error>().unwrap();
        (registry, pipeline)
    };
    let (_a, holder) = bulkhead(&cluster);
    let entered = Barrier::new(4);
    let release = Barrier::new(4);
    let (_b, other) = std::thread::scope(|s| {
        for _ in 0..3 {
            // A shared bulkhead's first calls wait for the fleet's leases: try until one gets in.
            s.spawn(|| {
                while let Err(e) = holder.execute(|| {
                    entered.wait();
                    release.wait();
                    Ok(())
                }) {
                    assert!(matches!(e.rejection(), Some(Rejection::BulkheadFull { .. })), "{e:?}");
                    std::thread::sleep(Duration::from_millis(10));
                }
            });
        }
        entered.wait();
        // The fleet's three slots are held by the first store: full for a second one.
        let (_b, other) = bulkhead(&cluster);
        for _ in 0..10 {
            let refused = other.execute(|| Ok(())).unwrap_err();
            assert!(matches!(refused.rejection(), Some(Rejection::BulkheadFull { .. })), "{refused:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        let key = "r4c:{bulkhead:cluster::db}";
        let node = cluster.node_of_key(key);
        assert_eq!(cluster.command(node, &["ZCARD", key]).int(), 3, "three leases in the fleet's set");
        release.wait();
        (_b, other)
    });
    // Returned: the other store gets a slot once the holder gave them back to the fleet.
    let since = Instant::now();
    while other.execute(|| Ok(())).is_err() {
        assert!(since.elapsed() < Duration::from_secs(3), "the slots were never returned");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_master_killed_degrades_only_the_instances_whose_slots_it_holds() {
    const KILLED: usize = 1;
    let _turn = one_at_a_time();
    let Some(mut cluster) = RedisCluster::start() else { return };
    // 30 limiters, and a breaker and a bulkhead on each master.
    let limiter_ids = ids(30);
    let breaker_ids = one_per_master(&cluster, "circuit_breaker", "cluster::host");
    let bulkhead_ids = one_per_master(&cluster, "bulkhead", "cluster::pool");
    let seen: Seen = Arc::default();
    let sink = Arc::clone(&seen);
    let mut builder = Registry::builder()
        .shared_state(store(&cluster))
        .listen(move |e: &SharedStateEvent| sink.lock().unwrap().push(e.clone()));
    for id in &limiter_ids {
        builder = builder.rate_limiter_instance(id.as_str(), |r| r.shared(true).permits(200).lease(5));
    }
    for id in &breaker_ids {
        builder = builder.circuit_breaker_instance(id.as_str(), |c| c.shared(true));
    }
    for id in &bulkhead_ids {
        builder = builder.bulkhead_instance(id.as_str(), |b| {
            b.shared(true).max_concurrent_calls(4).lease(2).lease_ttl(Duration::from_millis(600))
        });
    }
    let registry = builder.build().unwrap();
    let mut pipelines: Vec<Pipeline<(), std::io::Error>> = Vec::new();
    for id in &limiter_ids {
        pipelines.push(Pipeline::builder(&registry, id.as_str()).rate_limiter_with(|r| r).build().unwrap());
    }
    for id in &breaker_ids {
        pipelines.push(Pipeline::builder(&registry, id.as_str()).circuit_breaker_with(|c| c).build().unwrap());
    }
    for id in &bulkhead_ids {
        pipelines.push(Pipeline::builder(&registry, id.as_str()).bulkhead_with(|b| b).build().unwrap());
    }
    let mut on_killed: BTreeSet<(String, &str)> = limiter_ids
        .iter()
        .filter(|id| cluster.node_of_key(&format!("r4c:{{rate_limiter:{id}}}")) == KILLED)
        .map(|id| (format!("{:?}", SharedPolicy::RateLimiter), id.as_str()))
        .collect();
    assert!(!on_killed.is_empty() && on_killed.len() < limiter_ids.len(), "{on_killed:?}");
    let limiters_on_killed = on_killed.len();
    on_killed.insert((format!("{:?}", SharedPolicy::CircuitBreaker), &breaker_ids[KILLED]));
    on_killed.insert((format!("{:?}", SharedPolicy::Bulkhead), &bulkhead_ids[KILLED]));

    // Every instance called every 2 ms for `d`: the calls admitted and the slowest decision.
    let run = |d: Duration| {
        let (mut passed, mut slowest) = (0, Duration::ZERO);
        let end = Instant::now() + d;
        while Instant::now() < end {
            for pipeline in &pipelines {
                let started = Instant::now();
                match pipeline.execute(|| Ok(())) {
                    Ok(()) => passed += 1,
                    Err(e) => assert!(e.rejection().is_some(), "Redis trouble reached a caller: {e:?}"),
                }
                slowest = slowest.max(started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        (passed, slowest)
    };
    assert!(run(Duration::from_millis(300)).0 > 0);
    assert!(seen.lock().unwrap().is_empty(), "{:?}", seen.lock().unwrap());

    cluster.kill(KILLED);
    let (passed, slowest) = run(Duration::from_millis(1_500));
    eprintln!("master {KILLED} down: {passed} calls admitted, slowest decision {slowest:?}");
    assert!(slowest < Duration::from_millis(500), "a call waited {slowest:?} with a master down");
    let all_ids: Vec<&String> = limiter_ids.iter().chain(&breaker_ids).chain(&bulkhead_ids).collect();
    let degraded: BTreeSet<(String, &str)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|e| match e {
            SharedStateEvent::Degraded { instance, policy } => {
                (format!("{policy:?}"), all_ids.iter().find(|id| id.as_str() == &**instance).unwrap().as_str())
            }
            other => panic!("only Degraded events: {other:?}"),
        })
        .collect();
    assert_eq!(degraded, on_killed, "exactly the instances of the killed master degraded");
    // The other limiters are still shared: their keys, written since the kill (an older one would
    // have expired: the limiter's key lives a second past its TAT), are on the live masters.
    let live: usize =
        (0..3).filter(|&n| n != KILLED).map(|n| cluster.keys(n, "r4c:{rate_limiter:cluster::quota-*}").len()).sum();
    assert_eq!(
        live,
        limiter_ids.len() - limiters_on_killed,
        "every limiter of a live master took leases after the kill"
    );

    // A store connects to a cluster with a master down: the instances of that master's slots start
    // degraded, the others shared.
    let late = connect_cluster(&cluster.urls()).expect("a master down does not stop a store connecting");
    let late_seen: Seen = Arc::default();
    let sink = Arc::clone(&late_seen);
    let mut builder =
        Registry::builder().shared_state(late).listen(move |e: &SharedStateEvent| sink.lock().unwrap().push(e.clone()));
    for id in &limiter_ids {
        builder = builder.rate_limiter_instance(id.as_str(), |r| r.shared(true).permits(200).lease(5));
    }
    let late_registry = builder.build().unwrap();
    for _ in 0..20 {
        for id in &limiter_ids {
            let limiter = Pipeline::builder(&late_registry, id.as_str())
                .rate_limiter_with(|r| r)
                .build::<(), std::io::Error>()
                .unwrap();
            let _ = limiter.execute(|| Ok(()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let late_degraded: BTreeSet<&str> = late_seen
        .lock()
        .unwrap()
        .iter()
        .map(|e| {
            assert!(e.is_degraded(), "{e:?}");
            limiter_ids.iter().find(|id| id.as_str() == e.instance()).unwrap().as_str()
        })
        .collect();
    let limiters_of_killed: BTreeSet<&str> =
        on_killed.iter().filter(|(policy, _)| policy == "RateLimiter").map(|(_, id)| *id).collect();
    assert_eq!(late_degraded, limiters_of_killed, "a store connected with a master down");
    drop(late_registry);

    // The master back (empty, on its slots): exactly its instances recover.
    cluster.restart(KILLED);
    let back = Instant::now();
    let mut slowest_back = Duration::ZERO;
    let recovered = loop {
        slowest_back = slowest_back.max(run(Duration::from_millis(50)).1);
        let recovered: BTreeSet<(String, &str)> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|e| !e.is_degraded())
            .map(|e| {
                (format!("{:?}", e.policy()), all_ids.iter().find(|id| id.as_str() == e.instance()).unwrap().as_str())
            })
            .collect();
        if recovered == on_killed || back.elapsed() > Duration::from_secs(10) {
            break recovered;
        }
    };
    eprintln!(
        "master {KILLED} back: its instances recovered within {:?}, slowest decision {slowest_back:?}",
        back.elapsed()
    );
    assert_eq!(recovered, on_killed, "the killed master's instances recovered within 10 s, and only they");
    assert_eq!(seen.lock().unwrap().len(), 2 * on_killed.len(), "one Degraded and one Recovered each");
    assert!(slowest_back < Duration::from_millis(500), "a call waited {slowest_back:?}");
}

fn connect_cluster(nodes: &[String]) -> Result<RedisStore, ConnectError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(RedisStore::cluster_builder(nodes).connect_timeout(Duration::from_millis(500)).connect())
}

#[test]
fn what_is_not_a_cluster_is_an_error_at_connect() {
    let bad_url = |nodes: &[&str]| match connect_cluster(&nodes.iter().map(|n| n.to_string()).collect::<Vec<_>>()) {
        Err(ConnectError::BadUrl(e)) => e.to_string(),
        other => panic!("{nodes:?}: {other:?}"),
    };
    assert!(bad_url(&[]).contains("empty"), "no node");
    bad_url(&["unix:///run/redis.sock"]);
    bad_url(&["http://127.0.0.1:80"]);
    let mixed = bad_url(&["redis://:one@127.0.0.1:7000", "redis://:two@127.0.0.1:7001"]);
    assert!(!mixed.contains("one") && !mixed.contains("two"), "no password in messages: {mixed}");

    let started = Instant::now();
    let nobody = format!("redis://:secret@127.0.0.1:{}", common::free_port());
    let err = connect_cluster(&[nobody]).unwrap_err();
    assert!(matches!(err, ConnectError::Server { .. } | ConnectError::Timeout { .. }), "{err:?}");
    assert!(err.to_string().contains("127.0.0.1") && !err.to_string().contains("secret"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // A server that is not in cluster mode.
    let Some(single) = common::RedisServer::start_with(&[], true) else { return };
    let err = connect_cluster(&[single.tcp_url()]).unwrap_err();
    assert!(matches!(err, ConnectError::Server { .. }), "{err:?}");
    eprintln!("a single server given as a cluster: {err}");
}

/// Runs `processes` fleet members with `args` at once (a 100 ms store timeout: a loaded machine
/// can stall a round trip past the 25 ms default) and returns each one's output, after checking
/// that it succeeded, never degraded and showed no caller an error.
fn run_members(processes: usize, args: &[String]) -> Vec<String> {
    let members: Vec<_> = (0..processes)
        .map(|_| common::fleet_member().args(args).env("R4C_STORE_TIMEOUT_MS", "100").spawn().expect("spawn member"))
        .collect();
    members
        .into_iter()
        .map(|member| {
            let out = member.wait_with_output().expect("member runs");
            assert!(out.status.success(), "member failed: {}", String::from_utf8_lossy(&out.stderr));
            let text = String::from_utf8(out.stdout).unwrap();
            assert!(!text.contains("degraded"), "the cluster was up the whole time:\n{text}");
            assert!(text.contains("errors 0"), "no caller saw an error:\n{text}");
            text
        })
        .collect()
}
