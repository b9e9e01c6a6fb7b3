//! A breaker opened by failures in process A refuses calls in B and C (SPEC §13): the Open is
//! published (expiring key + pub/sub) and applied within a generous 2 s (the measured time is
//! printed and reported in docs/distributed.md); after `wait_in_open` at most
//! `permitted_calls_in_half_open` probes run in the whole fleet.

mod common;

use std::time::{SystemTime, UNIX_EPOCH};

fn value(text: &str, key: &str) -> Option<u128> {
    text.lines().find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
}

#[test]
fn an_open_in_one_process_refuses_in_the_others_and_probes_are_capped_fleet_wide() {
    let Some(redis) = common::RedisServer::start() else { return };
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() + 1_500;
    let member = |role: &str, delay_ms: u128| {
        common::fleet_member()
            .args(["breaker", &redis.url(), "fleet::down", role])
            .args([(start_at + delay_ms).to_string(), (2_600 - delay_ms).to_string()])
            .spawn()
            .expect("spawn member")
    };
    // B and C start calling first; A's failures open the breaker a little later.
    let (b, c) = (member("succeed", 0), member("succeed", 0));
    let a = member("fail", 100);
    let outputs: Vec<String> = [a, b, c]
        .into_iter()
        .map(|m| {
            let out = m.wait_with_output().unwrap();
            assert!(out.status.success(), "member failed: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        })
        .collect();
    let opened = value(&outputs[0], "opened ").expect("A's breaker opened on its own failures");
    let mut probes = 0;
    for (name, text) in ["A", "B", "C"].iter().zip(&outputs) {
        probes += text.lines().filter(|l| l.starts_with("probe ")).count();
        if *name == "A" {
            continue;
        }
        let refused = value(text, "first_refusal ").unwrap_or_else(|| panic!("{name} never refused:\n{text}"));
        let propagation = refused.saturating_sub(opened);
        eprintln!("{name}: first refusal {:.1} ms after A opened", propagation as f64 / 1000.0);
        assert!(propagation < 2_000_000, "{name} refused {propagation} µs after A opened");
    }
    eprintln!("half-open probes in the fleet: {probes}");
    assert!((1..=2).contains(&probes), "fleet-wide probes {probes}, cap 2:\n{outputs:?}");
}
