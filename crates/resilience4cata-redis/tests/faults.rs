//! The fleet under fire (SPEC §13, docs/distributed.md "Failure modes"): three OS processes share
//! a rate limiter of 100 permits/s through one `redis-server`, each behind its own fault proxy
//! (`src/bin/soak/proxy.rs`). A fault is applied for a second mid-run, then healed. For each fault:
//! no call waits longer than `store_timeout` (plus a generous margin for a loaded machine), no
//! caller sees an error, the affected processes publish `Degraded` then `Recovered` (in that order,
//! naming the rate limiter), the others publish nothing, the fleet never admits more than
//! `processes × permits + min(processes × lease, permits)` in a sliding second, and once every
//! process is shared again the shared bound `permits + min(processes × lease, permits)` holds.

mod common;
#[path = "../src/bin/soak/proxy.rs"]
mod proxy;

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proxy::{Fault, FaultProxy};

const PERMITS: u64 = 100;
const LEASE: u64 = 10;
const PROCESSES: usize = 3;
/// The run: healthy for a second, the fault for a second, then healthy until the end.
const RUN_MS: u64 = 5_000;
const FAULT_FROM_MS: u64 = 1_000;
const FAULT_MS: u64 = 1_000;
/// `store_timeout` (the store's default) and the margin allowed over it on a loaded machine.
const STORE_TIMEOUT_MS: u64 = 25;
const MARGIN_MS: u64 = 150;

/// The fleet tests run one at a time: three processes calling flat out each take the machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

pub fn unix_us() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros()
}

/// What one member printed.
#[derive(Debug, Default)]
struct Member {
    admitted: Vec<u128>,
    /// `(kind, policy, unix µs)`.
    events: Vec<(String, String, u128)>,
    max_call_us: u64,
    errors: u64,
}

fn parse(text: &str) -> Member {
    let mut m = Member::default();
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["ok", t] => m.admitted.push(t.parse().unwrap()),
            [kind @ ("degraded" | "recovered"), policy, t] => {
                m.events.push((kind.to_string(), policy.to_string(), t.parse().unwrap()))
            }
            ["max_call_us", us] => m.max_call_us = us.parse().unwrap(),
            ["errors", n] => m.errors = n.parse().unwrap(),
            _ => {}
        }
    }
    m
}

/// The most calls admitted in any sliding second among `times` (sorted, µs) whose window starts
/// at or after `from` and ends by `to`.
fn worst_second(times: &[u128], from: u128, to: u128) -> usize {
    times
        .iter()
        .enumerate()
        .filter(|&(_, &t)| t >= from && t + 1_000_000 <= to)
        .map(|(i, &t)| times[i..].iter().take_while(|&&u| u < t + 1_000_000).count())
        .max()
        .unwrap_or(0)
}

/// Runs the fleet with `fault` applied to the proxies of the processes in `hit` from
/// `FAULT_FROM_MS` for `FAULT_MS`, and checks everything the module docs list.
fn fleet_under(fault: Fault, hit: &[usize], instance: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(redis) = common::RedisServer::start_with(&[], true) else { return };
    let upstream: SocketAddr = redis.tcp_url().trim_start_matches("redis://").parse().unwrap();
    let proxies: Vec<FaultProxy> = (0..PROCESSES).map(|_| FaultProxy::start(upstream).unwrap()).collect();
    let start_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() + 1_500;
    let members: Vec<_> = proxies
        .iter()
        .map(|p| {
            common::fleet_member()
                .args([p.url(), instance.into(), PERMITS.to_string(), LEASE.to_string()])
                .args([start_ms.to_string(), RUN_MS.to_string()])
                .spawn()
                .expect("spawn member")
        })
        .collect();
    let start_us = start_ms * 1_000;
    let sleep_until = |us: u128| {
        let now = unix_us();
        if us > now {
            std::thread::sleep(Duration::from_micros((us - now) as u64));
        }
    };
    sleep_until(start_us + u128::from(FAULT_FROM_MS) * 1_000);
    for &i in hit {
        proxies[i].set(fault);
    }
    sleep_until(start_us + u128::from(FAULT_FROM_MS + FAULT_MS) * 1_000);
    for &i in hit {
        proxies[i].set(Fault::Healthy);
    }
    let outputs: Vec<Member> = members
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().expect("member runs");
            assert!(out.status.success(), "member failed: {}", String::from_utf8_lossy(&out.stderr));
            parse(&String::from_utf8(out.stdout).unwrap())
        })
        .collect();

    let end_us = start_us + u128::from(RUN_MS) * 1_000;
    let mut admitted: Vec<u128> = outputs.iter().flat_map(|m| m.admitted.iter().copied()).collect();
    admitted.sort_unstable();
    let worst = worst_second(&admitted, 0, u128::MAX);
    let recovered_at = outputs.iter().flat_map(|m| m.events.iter().map(|e| e.2)).max().unwrap_or(start_us);
    let worst_after = worst_second(&admitted, recovered_at, end_us);
    let slowest = outputs.iter().map(|m| m.max_call_us).max().unwrap();
    let fleet_bound = PROCESSES as u64 * PERMITS + (PROCESSES as u64 * LEASE).min(PERMITS);
    let shared_bound = PERMITS + (PROCESSES as u64 * LEASE).min(PERMITS);
    eprintln!(
        "{}: admitted {} (per process {:?}); worst sliding second {worst} (bound {fleet_bound}), after recovery \
         {worst_after} (bound {shared_bound}); slowest call {slowest} µs; events {:?}; proxy resets {:?}",
        fault.name(),
        admitted.len(),
        outputs.iter().map(|m| m.admitted.len()).collect::<Vec<_>>(),
        outputs.iter().map(|m| &m.events).collect::<Vec<_>>(),
        proxies.iter().map(FaultProxy::resets).collect::<Vec<_>>(),
    );

    for (i, m) in outputs.iter().enumerate() {
        assert_eq!(m.errors, 0, "process {i}: a caller saw an error from the store");
        assert!(
            m.max_call_us <= (STORE_TIMEOUT_MS + MARGIN_MS) * 1_000,
            "process {i}: a call waited {} µs (store_timeout {STORE_TIMEOUT_MS} ms)",
            m.max_call_us
        );
        let kinds: Vec<&str> = m.events.iter().map(|e| e.0.as_str()).collect();
        assert!(
            m.events.iter().all(|e| e.1 == "rate_limiter"),
            "process {i}: events name their policy: {:?}",
            m.events
        );
        if hit.contains(&i) {
            assert!(!kinds.is_empty(), "process {i} was cut off but never degraded");
            // No saved-up burst: in any sliding second that ends while the process is degraded (so
            // it covers the moment it degraded), it admits at most its local quota plus the lease
            // it held: `permits + lease + 1` (a local limiter that starts idle admits `2 × permits
            // − 1`).
            let recovered = m.events.iter().rev().find(|e| e.0 == "recovered").map_or(u128::MAX, |e| e.2);
            let own = worst_second(&m.admitted, 0, recovered);
            assert!(
                own as u64 <= PERMITS + LEASE + 1,
                "process {i} admitted {own} in a sliding second around its outage (bound {})",
                PERMITS + LEASE + 1
            );
            for (n, kind) in kinds.iter().enumerate() {
                let want = if n % 2 == 0 { "degraded" } else { "recovered" };
                assert_eq!(*kind, want, "process {i}: events out of order: {kinds:?}");
            }
            assert_eq!(kinds.last(), Some(&"recovered"), "process {i} never recovered: {kinds:?}");
        } else {
            assert!(kinds.is_empty(), "process {i} was not cut off, yet: {kinds:?}");
        }
        assert!(!m.admitted.is_empty(), "process {i} admitted nothing");
    }
    assert!(worst as u64 <= fleet_bound, "{worst} calls in one sliding second, bound {fleet_bound}");
    assert!(end_us > recovered_at + 1_000_000, "recovered too late to check the shared bound after it");
    assert!(
        worst_after as u64 <= shared_bound,
        "{worst_after} calls in a sliding second after recovery, bound {shared_bound}"
    );
}

#[test]
fn added_latency_beyond_the_store_timeout() {
    fleet_under(Fault::Latency(Duration::from_millis(60)), &[0, 1, 2], "faults::latency");
}

#[test]
fn a_blackhole_that_accepts_and_never_answers() {
    fleet_under(Fault::Blackhole, &[0, 1, 2], "faults::blackhole");
}

#[test]
fn connections_reset_mid_reply() {
    fleet_under(Fault::ResetMidReply, &[0, 1, 2], "faults::reset");
}

#[test]
fn one_process_partitioned_while_the_others_stay_connected() {
    fleet_under(Fault::Partition, &[1], "faults::partition");
}

#[test]
fn redis_unreachable_for_every_process() {
    fleet_under(Fault::Partition, &[0, 1, 2], "faults::all");
}

/// What a breaker member printed: `(line kind, unix µs)` in order.
fn breaker_lines(text: &str) -> Vec<(String, u128)> {
    text.lines()
        .filter_map(|l| {
            let words: Vec<&str> = l.split(' ').collect();
            match words.as_slice() {
                [kind, t] => Some((kind.to_string(), t.parse().ok()?)),
                [kind, policy, t] => Some((format!("{kind} {policy}"), t.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// The shared breaker through an outage of every process (SPEC §13): process A's calls start
/// failing while Redis is unreachable, so its Open is decided locally; when Redis returns it is
/// published (it is still current) and B and C refuse too. Every listener publishes `Degraded`
/// then `Recovered` for the breaker. When A's probes succeed, its Close is published and B and C,
/// which got no probe of the fleet's round, close at once instead of refusing until the round
/// expires.
#[test]
fn breaker_transitions_decided_in_an_outage_reach_the_fleet_when_it_returns() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(redis) = common::RedisServer::start_with(&[], true) else { return };
    let upstream: SocketAddr = redis.tcp_url().trim_start_matches("redis://").parse().unwrap();
    let proxies: Vec<FaultProxy> = (0..PROCESSES).map(|_| FaultProxy::start(upstream).unwrap()).collect();
    let start_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() + 1_500;
    const WAIT_MS: u128 = 4_000;
    let (down_ms, up_ms, run_ms) = (400u128, 1_800u128, 8_000u128);
    let members: Vec<_> = proxies
        .iter()
        .zip(["fail", "succeed", "succeed"])
        .map(|(p, role)| {
            common::fleet_member()
                .args(["breaker", &p.url(), "faults::breaker", role, &start_ms.to_string(), &run_ms.to_string()])
                .args(["700", &WAIT_MS.to_string()])
                .spawn()
                .expect("spawn member")
        })
        .collect();
    let at = |ms: u128| (start_ms + ms) * 1_000;
    let sleep_until = |us: u128| {
        let now = unix_us();
        if us > now {
            std::thread::sleep(Duration::from_micros((us - now) as u64));
        }
    };
    sleep_until(at(down_ms));
    proxies.iter().for_each(|p| p.set(Fault::Partition));
    sleep_until(at(up_ms));
    proxies.iter().for_each(|p| p.set(Fault::Healthy));
    let outputs: Vec<String> = members
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().expect("member runs");
            assert!(out.status.success(), "member failed: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        })
        .collect();
    let lines: Vec<Vec<(String, u128)>> = outputs.iter().map(|o| breaker_lines(o)).collect();
    eprintln!("{lines:?}");
    let elapsed = |t: u128| t.saturating_sub(start_ms * 1_000) / 1_000;
    for (i, l) in lines.iter().enumerate() {
        let seen: Vec<String> = l.iter().map(|(k, t)| format!("{k} @{} ms", elapsed(*t))).collect();
        eprintln!("process {}: {}", ["A", "B", "C"][i], seen.join(", "));
    }
    let first =
        |i: usize, kind: &str, after: u128| lines[i].iter().find(|(k, t)| k == kind && *t >= after).map(|l| l.1);
    let opened = first(0, "to_Open", 0).expect("A opened on its failures");
    assert!(opened > at(down_ms) && opened < at(up_ms), "A opened while Redis was unreachable: {opened}");
    let a_closed = first(0, "to_Closed", opened).expect("A closed after its probes");
    for (i, text) in outputs.iter().enumerate() {
        let kinds: Vec<&str> =
            lines[i].iter().filter(|(k, _)| k.ends_with(" circuit_breaker")).map(|(k, _)| k.as_str()).collect();
        assert!(
            kinds.len() >= 2 && kinds.iter().enumerate().all(|(n, k)| k.starts_with(["degraded", "recovered"][n % 2])),
            "process {i}: Degraded then Recovered for the breaker, in order: {kinds:?}"
        );
        assert!(kinds.last().unwrap().starts_with("recovered"), "process {i} never recovered: {kinds:?}");
        assert!(text.contains("errors 0"), "process {i}: a caller saw an error from the store:\n{text}");
        let slowest: u64 = text.lines().find_map(|l| l.strip_prefix("max_call_us ")).unwrap().parse().unwrap();
        assert!(slowest <= (STORE_TIMEOUT_MS + MARGIN_MS) * 1_000, "process {i}: a call waited {slowest} µs");
        if i == 0 {
            continue;
        }
        let refused = first(i, "first_refusal", 0);
        assert!(
            refused.is_some_and(|t| t >= at(up_ms) && t < opened + WAIT_MS * 1_000),
            "process {i}: A's Open, decided in the outage, reached it when Redis came back (first refusal {refused:?})"
        );
        let closed = first(i, "to_Closed", at(up_ms)).expect("B and C close");
        assert!(
            closed <= a_closed + 1_000_000,
            "process {i} closed {} ms after A: A's Close was not published (the probe round lasts {WAIT_MS} ms)",
            (closed.saturating_sub(a_closed)) / 1_000
        );
    }
}
