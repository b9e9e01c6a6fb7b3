//! The keyed modes of the fleet member (SPEC §15): one keyed instance per policy, shared, its keys
//! chosen per call through `#[resilient]`'s `key = …`.
//!
//! `keyed-limiter <url> <instance> <permits> <keys> <start_at_unix_ms> <run_ms>`: a keyed shared
//! rate limiter (`permits` per second per key, the keyed default lease of 1); calls keys `k0` …
//! `k<keys - 1>` once each per pass, a pass every millisecond; prints `ok <unix µs> <key>` per
//! admitted call, the shared-state events, `refused <count>`, `errors <count>`.
//!
//! `keyed-breaker <url> <instance> <failing host|-> <hosts> <start_at_unix_ms> <run_ms>`: a keyed
//! shared breaker (window 5, wait_in_open 1.5 s, 2 half-open probes) over hosts `h0` …
//! `h<hosts - 1>`, each called every millisecond; the failing host's calls fail until its breaker
//! opens here (`opened <unix µs> <host>`), then succeed. Prints `first_refusal <unix µs> <host>`
//! per host refused without having opened here, `probe <unix µs> <host>` per call that the
//! half-open breaker of that host let through, `errors <count>`.
//!
//! `keyed-hold <url> <instance> <max> <lease_ttl_ms> <key>:<slots>,…`: a keyed shared bulkhead
//! (`max` slots per key fleet-wide, leases of 1); takes `<slots>` slots of each key, prints
//! `holding` and holds them until killed.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use resilience4cata::circuit_breaker::{CircuitBreakerEvent, State};
use resilience4cata::shared::SharedStateEvent;
use resilience4cata::{Registry, Rejection, ResilienceError, resilient};

use super::{connect, event_line, unix_us};

/// The error of the keyed methods: the backend's own failure, or a policy's refusal.
#[derive(Debug, ResilienceError)]
pub enum Failed {
    /// The backend failed (the failing host of `keyed-breaker`).
    Down,
    /// A policy refused the call.
    #[rejection]
    Refused(Rejection),
}

/// The keyed methods, each on its own keyed instance (`name` is the instance id, configured
/// `shared = true` by the registry).
#[resilient]
pub trait Tenants {
    #[rate_limiter(name = "fleet::keyed_limiter", key = tenant)]
    fn call(&self, tenant: &str) -> Result<(), Failed>;

    #[circuit_breaker(name = "fleet::keyed_breaker", key = host)]
    fn fetch(&self, host: &str, fail: bool) -> Result<(), Failed>;

    #[bulkhead(name = "fleet::keyed_bulkhead", key = tenant)]
    fn hold(&self, tenant: &str) -> Result<(), Failed>;
}

/// The backend: `fetch` fails when told to, `hold` parks its thread for good.
pub struct Backend;

impl Tenants for Backend {
    fn call(&self, _tenant: &str) -> Result<(), Failed> {
        Ok(())
    }

    fn fetch(&self, _host: &str, fail: bool) -> Result<(), Failed> {
        if fail { Err(Failed::Down) } else { Ok(()) }
    }

    fn hold(&self, _tenant: &str) -> Result<(), Failed> {
        loop {
            std::thread::park();
        }
    }
}

type Lines = Arc<Mutex<Vec<String>>>;

/// A registry on the store at `url` whose shared-state events go to `lines`.
fn registry(
    url: &str,
    lines: &Lines,
    configure: impl FnOnce(resilience4cata::RegistryBuilder) -> resilience4cata::RegistryBuilder,
) -> Result<Registry, Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let store = runtime.block_on(connect(url))?;
    let events = Arc::clone(lines);
    let builder = Registry::builder()
        .shared_state(store)
        .listen(move |e: &SharedStateEvent| events.lock().unwrap().push(event_line(e)));
    Ok(configure(builder).build()?)
}

fn wait_until(start_at: u128) {
    while unix_us() < start_at * 1000 {
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn print(lines: &Lines, tail: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let mut out = std::io::stdout().lock();
    for line in lines.lock().unwrap().iter().chain(tail) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

pub fn limiter(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let [url, instance, permits, keys, start_at, run_ms] = args else {
        return Err("usage: keyed-limiter <url> <instance> <permits> <keys> <start_at_unix_ms> <run_ms>".into());
    };
    let (permits, keys, start_at, run): (u32, usize, u128, u64) =
        (permits.parse()?, keys.parse()?, start_at.parse()?, run_ms.parse()?);
    let lines = Lines::default();
    let registry = registry(url, &lines, |b| {
        b.rate_limiter_instance(instance.as_str(), |r| r.shared(true).permits(permits).period(Duration::from_secs(1)))
    })?;
    let api = ResilientTenants::builder(Backend, &registry).build()?;
    let names: Vec<String> = (0..keys).map(|i| format!("k{i}")).collect();
    wait_until(start_at);
    let end = Instant::now() + Duration::from_millis(run);
    let (mut refused, mut errors) = (0u64, 0u64);
    let mut admitted = Vec::new();
    while Instant::now() < end {
        for name in &names {
            match api.call(name) {
                Ok(()) => admitted.push(format!("ok {} {name}", unix_us())),
                Err(Failed::Refused(_)) => refused += 1,
                Err(Failed::Down) => errors += 1,
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    print(&lines, &[admitted.join("\n"), format!("refused {refused}"), format!("errors {errors}")])
}

pub fn breaker(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let [url, instance, failing, hosts, start_at, run_ms] = args else {
        return Err("usage: keyed-breaker <url> <instance> <failing host|-> <hosts> <start_at_unix_ms> <run_ms>".into());
    };
    let (hosts, start_at, run): (usize, u128, u64) = (hosts.parse()?, start_at.parse()?, run_ms.parse()?);
    let lines = Lines::default();
    let transitions = Arc::clone(&lines);
    let registry = registry(url, &lines, |b| {
        b.listen(move |e: &CircuitBreakerEvent| {
            if let CircuitBreakerEvent::StateTransition { to, key: Some(key), .. } = e {
                transitions.lock().unwrap().push(format!("to_{to:?} {} {key}", unix_us()));
            }
        })
        .circuit_breaker_instance(instance.as_str(), |c| {
            c.shared(true)
                .window_size(5)
                .minimum_calls(5)
                .wait_in_open(Duration::from_millis(1_500))
                .permitted_calls_in_half_open(2)
        })
    })?;
    let api = ResilientTenants::builder(Backend, &registry).build()?;
    let handle = registry.circuit_breaker(instance).ok_or("no breaker")?;
    let names: Vec<String> = (0..hosts).map(|i| format!("h{i}")).collect();
    let mut failing: Vec<bool> = names.iter().map(|h| h == failing).collect();
    let mut refused_once = vec![false; hosts];
    wait_until(start_at);
    let end = Instant::now() + Duration::from_millis(run);
    let mut errors = 0u64;
    while Instant::now() < end {
        for (i, host) in names.iter().enumerate() {
            let text = format!("{host:?}");
            let half_open = handle.key(&text).is_some_and(|k| k.snapshot().state == State::HalfOpen);
            let outcome = api.fetch(host, failing[i]);
            if half_open && !matches!(outcome, Err(Failed::Refused(_))) {
                lines.lock().unwrap().push(format!("probe {} {host}", unix_us()));
            }
            match outcome {
                Ok(()) => {}
                Err(Failed::Down) if failing[i] => {}
                Err(Failed::Down) => errors += 1,
                Err(Failed::Refused(_)) if failing[i] => {
                    failing[i] = false;
                    lines.lock().unwrap().push(format!("opened {} {host}", unix_us()));
                }
                Err(Failed::Refused(_)) => {
                    if !std::mem::replace(&mut refused_once[i], true) {
                        lines.lock().unwrap().push(format!("first_refusal {} {host}", unix_us()));
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    print(&lines, &[format!("errors {errors}")])
}

pub fn hold(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let [url, instance, max, ttl_ms, holds] = args else {
        return Err("usage: keyed-hold <url> <instance> <max> <lease_ttl_ms> <key>:<slots>,…".into());
    };
    let (max, ttl): (u32, u64) = (max.parse()?, ttl_ms.parse()?);
    let mut wanted = Vec::new();
    for hold in holds.split(',') {
        let (key, slots) = hold.split_once(':').ok_or("<key>:<slots>")?;
        wanted.extend(std::iter::repeat_n(key.to_owned(), slots.parse()?));
    }
    let lines = Lines::default();
    let registry = registry(url, &lines, |b| {
        b.bulkhead_instance(instance.as_str(), |c| {
            c.shared(true).max_concurrent_calls(max).lease(1).lease_ttl(Duration::from_millis(ttl))
        })
    })?;
    let api = ResilientTenants::builder(Backend, &registry).build()?;
    let handle = registry.bulkhead(instance).ok_or("no bulkhead")?;
    std::thread::scope(|s| {
        for key in &wanted {
            let api = &api;
            // Retries until its slot comes (the first lease is on its way), then holds it for good:
            // `hold` never returns once in.
            s.spawn(move || {
                while let Err(Failed::Refused(_)) = api.hold(key) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
        }
        while handle.snapshot().in_flight < wanted.len() as u32 {
            std::thread::sleep(Duration::from_millis(5));
        }
        println!("holding");
        let _ = std::io::stdout().flush();
        loop {
            std::thread::park();
        }
    })
}
