//! A shared bulkhead (SPEC §13): `max_concurrent_calls` for the whole fleet, and a killed process
//! frees its slots within `lease_ttl` (plus the renewal period of the survivors' next request).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use resilience4cata::{Pipeline, Registry, Rejection, ResilienceError};
use resilience4cata_redis::RedisStore;

const TTL_MS: u64 = 600;

#[test]
fn a_killed_process_frees_its_fleet_slots_within_lease_ttl() {
    let Some(redis) = common::RedisServer::start() else { return };
    let holder = Command::new(env!("CARGO_BIN_EXE_r4c-redis-fleet-member"))
        .args(["hold", &redis.url(), "fleet::db", "3", "3", &TTL_MS.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut holder = Killed(holder);
    let holder = &mut holder.0;
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "holding", "the other process holds the fleet's 3 slots");

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let store = runtime.block_on(RedisStore::connect(&redis.url())).unwrap();
    let registry = Registry::builder()
        .shared_state(store)
        .bulkhead_instance("fleet::db", |b| {
            b.shared(true).max_concurrent_calls(3).lease(1).lease_ttl(Duration::from_millis(TTL_MS))
        })
        .build()
        .unwrap();
    let bulkhead =
        Pipeline::builder(&registry, "fleet::db").bulkhead_with(|b| b).build::<(), std::io::Error>().unwrap();
    // Held and renewed by the other process: full here, for longer than a lease_ttl.
    let until = Instant::now() + Duration::from_millis(TTL_MS * 2);
    while Instant::now() < until {
        let refused = bulkhead.execute(|| Ok(())).unwrap_err();
        assert!(matches!(refused.rejection(), Some(Rejection::BulkheadFull { .. })), "{refused:?}");
        std::thread::sleep(Duration::from_millis(50));
    }

    holder.kill().unwrap();
    holder.wait().unwrap();
    let killed = Instant::now();
    while bulkhead.execute(|| Ok(())).is_err() {
        assert!(
            killed.elapsed() < Duration::from_millis(TTL_MS * 5),
            "slots still held {:?} after the kill",
            killed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let freed = killed.elapsed();
    eprintln!("a killed process's slots were free after {freed:?} (lease_ttl {TTL_MS} ms)");
    assert!(freed <= Duration::from_millis(TTL_MS * 2), "{freed:?} (generous: the machine is shared)");
}

/// Kills the child when dropped, so a failing test leaves no process behind.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
