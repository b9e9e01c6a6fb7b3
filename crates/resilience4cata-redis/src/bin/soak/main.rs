//! The soak: three processes, one `redis-server` behind a fault proxy per process that cycles
//! faults, every shared policy in use, for N minutes (docs/reliability.md records a 30-minute run).
//!
//! `cargo run -p resilience4cata-redis --release --bin soak -- --minutes N`
//!
//! Every process (this binary again, as `soak member …`) shares a rate limiter (100 permits/s,
//! leases of 10, called flat out), a circuit breaker (its calls fail for 3 s of every 20, so it
//! opens, probes and closes) and a bulkhead (6 slots fleet-wide, leases of 1, two callers holding a
//! slot 3 ms at a time), and samples its RSS and its registry's counters every second. The proxies
//! cycle through the faults every 10 s: healthy, then for 2 s added latency, a black hole, resets
//! mid-reply, a partition of one process, or of all three.
//!
//! It fails (exit code 1) when:
//! - a process's RSS grows faster than [`MAX_RSS_SLOPE_KIB_PER_MIN`] after the warm-up (a linear fit
//!   of the samples);
//! - a permit or slot leaks: at the end, idle, a bulkhead has a call in flight or fewer than its
//!   slots available, or the fleet's slot set in Redis holds more than the processes' spare leases;
//! - the fleet bound is broken: more than `processes × permits + min(processes × lease, permits)`
//!   calls admitted in a sliding second (docs/distributed.md);
//! - a caller saw an error that was not its own delegate's or a refusal, or a call waited longer
//!   than `store_timeout` plus [`MARGIN`].

mod proxy;

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use proxy::{Fault, FaultProxy};
use resilience4cata::shared::SharedStateEvent;
use resilience4cata::{Pipeline, Registry, ResilienceError};
use resilience4cata_redis::RedisStore;

const PROCESSES: usize = 3;
const PERMITS: u64 = 100;
const LEASE: u64 = 10;
const SLOTS: u32 = 6;
/// The most a process's RSS may grow per minute after the warm-up (a linear fit of its samples).
const MAX_RSS_SLOPE_KIB_PER_MIN: f64 = 512.0;
/// `store_timeout` (the store's default) and the margin a call may wait over it on a loaded machine.
const STORE_TIMEOUT: Duration = Duration::from_millis(25);
const MARGIN: Duration = Duration::from_millis(250);
/// The fault cycle: every `CYCLE`, healthy, then a fault for `FAULT` from `FAULT_AT`.
const CYCLE: Duration = Duration::from_secs(10);
const FAULT_AT: Duration = Duration::from_secs(5);
const FAULT: Duration = Duration::from_secs(2);

fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("member") => member(&args[1..]),
        _ => coordinate(&args),
    };
    if let Err(e) = outcome {
        eprintln!("soak: {e}");
        std::process::exit(1);
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A `redis-server` of the soak's own, on a free loopback port, stopped when dropped.
struct Server {
    child: Child,
    dir: std::path::PathBuf,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_redis() -> Res<Option<Server>> {
    let dir = std::env::temp_dir().join(format!("r4c-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir"])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) if std::env::var("R4C_REQUIRE_EXTERNAL").as_deref() != Ok("1") => {
            println!("SKIPPED: redis-server could not be started ({e}); install it (apt-get install redis-server)");
            return Ok(None);
        }
        Err(e) => return Err(format!("R4C_REQUIRE_EXTERNAL=1 but redis-server could not be started: {e}").into()),
    };
    let server = Server { child, dir, port };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("redis-server did not come up".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Some(server))
}

/// One sample line of a member: `sample <sec> <rss_kib> <bulkhead in flight> <bulkhead available>
/// <breaker state> <errors> <max_call_us>`.
#[derive(Clone, Debug, Default)]
struct Sample {
    sec: f64,
    rss_kib: f64,
}

#[derive(Default)]
struct Report {
    samples: Vec<Sample>,
    admitted: Vec<u64>,
    events: Vec<String>,
    errors: u64,
    max_call_us: u64,
    last: String,
    end: String,
}

fn coordinate(args: &[String]) -> Res<()> {
    let minutes: f64 = match args {
        [flag, n] if flag == "--minutes" => n.parse()?,
        [] => 1.0,
        _ => return Err("usage: soak [--minutes N]".into()),
    };
    let run = Duration::from_secs_f64(minutes * 60.0);
    let Some(server) = start_redis()? else { return Ok(()) };
    let upstream: SocketAddr = ([127, 0, 0, 1], server.port).into();
    let proxies: Vec<FaultProxy> = (0..PROCESSES).map(|_| FaultProxy::start(upstream)).collect::<Result<_, _>>()?;
    let exe = std::env::current_exe()?;
    let started = Instant::now();
    let mut children = Vec::new();
    let reports: Vec<Arc<Mutex<Report>>> = (0..PROCESSES).map(|_| Arc::default()).collect();
    let mut readers = Vec::new();
    for (i, proxy) in proxies.iter().enumerate() {
        let mut child = Command::new(&exe)
            .args(["member", &proxy.url(), &run.as_millis().to_string(), &i.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let out = child.stdout.take().ok_or("no stdout")?;
        let report = Arc::clone(&reports[i]);
        readers.push(std::thread::spawn(move || read_member(out, &report)));
        children.push(child);
    }
    println!(
        "soak: {minutes} min, {PROCESSES} processes, redis on port {}, faults every {CYCLE:?} for {FAULT:?}",
        server.port
    );
    let faults = [
        (Fault::Latency(Duration::from_millis(60)), vec![0, 1, 2]),
        (Fault::Blackhole, vec![0, 1, 2]),
        (Fault::ResetMidReply, vec![0, 1, 2]),
        (Fault::Partition, vec![1]),
        (Fault::Partition, vec![0, 1, 2]),
    ];
    let mut applied = Vec::new();
    let mut cycle = 0;
    while started.elapsed() + CYCLE <= run {
        let base = started + CYCLE * cycle as u32;
        sleep_until(base + FAULT_AT);
        let (fault, hit) = &faults[cycle % faults.len()];
        for &i in hit {
            proxies[i].set(*fault);
        }
        sleep_until(base + FAULT_AT + FAULT);
        for p in &proxies {
            p.set(Fault::Healthy);
        }
        applied.push(format!("{}{}", fault.name(), if hit.len() == 1 { " (one)" } else { "" }));
        cycle += 1;
    }
    for mut child in children {
        let status = child.wait()?;
        if !status.success() {
            return Err(format!("a member failed: {status}").into());
        }
    }
    for r in readers {
        let _ = r.join();
    }
    // The fleet's slot set once every member has ended: each gave its slots back on the way out
    // (or they expire after lease_ttl); nothing may be left held.
    let left = slots_left(server.port)?;
    judge(&reports, &applied, left, minutes)
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// Slots still in the fleet's set, after the members ended and one lease_ttl passed.
fn slots_left(port: u16) -> Res<u64> {
    std::thread::sleep(Duration::from_millis(1_600));
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
    let mut conn = client.get_connection()?;
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as u64;
    let live: u64 = redis::cmd("ZCOUNT").arg("r4c:bulkhead:soak::db").arg(now_ms).arg("+inf").query(&mut conn)?;
    Ok(live)
}

fn read_member(out: std::process::ChildStdout, report: &Mutex<Report>) {
    for line in BufReader::new(out).lines() {
        let Ok(line) = line else { return };
        let mut r = report.lock().unwrap();
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["t", list] => r.admitted.extend(list.split(',').filter_map(|t| t.parse::<u64>().ok())),
            ["sample", sec, rss, ..] => {
                let sample = Sample { sec: sec.parse().unwrap_or(0.0), rss_kib: rss.parse().unwrap_or(0.0) };
                r.samples.push(sample);
                r.last = line.clone();
            }
            ["event", rest @ ..] => r.events.push(rest.join(" ")),
            ["end", ..] => r.end = line.clone(),
            ["errors", n] => r.errors = n.parse().unwrap_or(u64::MAX),
            ["max_call_us", n] => r.max_call_us = n.parse().unwrap_or(u64::MAX),
            _ => {}
        }
    }
}

/// Least-squares slope of RSS (KiB) over time (minutes) for the samples after the warm-up.
fn slope(samples: &[Sample]) -> f64 {
    let warm = (samples.len() / 5).max(15);
    let s = &samples[warm.min(samples.len())..];
    if s.len() < 10 {
        return 0.0;
    }
    let n = s.len() as f64;
    let (mx, my) = (s.iter().map(|p| p.sec / 60.0).sum::<f64>() / n, s.iter().map(|p| p.rss_kib).sum::<f64>() / n);
    let num: f64 = s.iter().map(|p| (p.sec / 60.0 - mx) * (p.rss_kib - my)).sum();
    let den: f64 = s.iter().map(|p| (p.sec / 60.0 - mx).powi(2)).sum();
    if den == 0.0 { 0.0 } else { num / den }
}

fn judge(reports: &[Arc<Mutex<Report>>], applied: &[String], slots_left: u64, minutes: f64) -> Res<()> {
    let mut failures = Vec::new();
    let mut admitted: Vec<u64> = Vec::new();
    println!("faults applied: {} ({})", applied.len(), applied.join(", "));
    for (i, r) in reports.iter().enumerate() {
        let r = r.lock().unwrap();
        admitted.extend(&r.admitted);
        let slope = slope(&r.samples);
        let (first, last) = (r.samples.first().map_or(0.0, |s| s.rss_kib), r.samples.last().map_or(0.0, |s| s.rss_kib));
        let degraded = r.events.iter().filter(|e| e.starts_with("degraded")).count();
        let recovered = r.events.iter().filter(|e| e.starts_with("recovered")).count();
        println!(
            "process {i}: {} samples, RSS {first:.0} → {last:.0} KiB, slope after warm-up {slope:+.1} KiB/min \
             (limit {MAX_RSS_SLOPE_KIB_PER_MIN}); admitted {}; Degraded {degraded}, Recovered {recovered}; errors {}; \
             slowest call {} µs; {}",
            r.samples.len(),
            r.admitted.len(),
            r.errors,
            r.max_call_us,
            r.end
        );
        if slope > MAX_RSS_SLOPE_KIB_PER_MIN {
            failures.push(format!("process {i}: RSS grows {slope:.1} KiB/min"));
        }
        if r.errors > 0 {
            failures.push(format!("process {i}: {} caller errors", r.errors));
        }
        if r.max_call_us > (STORE_TIMEOUT + MARGIN).as_micros() as u64 {
            failures.push(format!("process {i}: a call waited {} µs", r.max_call_us));
        }
        // `end <bulkhead in flight> <available> <max>`: idle at the end, every slot is back.
        let end: Vec<&str> = r.end.split(' ').collect();
        if end.len() != 4 || end[1] != "0" || end[2] != end[3] {
            failures.push(format!("process {i}: a slot leaked or the member did not finish: {:?}", r.end));
        }
        // Events alternate Degraded, Recovered per policy and end Recovered.
        for policy in ["rate_limiter", "circuit_breaker", "bulkhead"] {
            let kinds: Vec<&str> =
                r.events.iter().filter(|e| e.contains(policy)).map(|e| e.split(' ').next().unwrap_or("")).collect();
            let ordered =
                kinds.iter().enumerate().all(|(n, k)| *k == if n % 2 == 0 { "degraded" } else { "recovered" });
            if !ordered || kinds.last() == Some(&"degraded") {
                failures.push(format!("process {i}: {policy} events out of order or not recovered: {kinds:?}"));
            }
        }
        if minutes >= 0.5 && degraded == 0 {
            failures.push(format!("process {i}: never degraded: the faults did not reach it"));
        }
    }
    admitted.sort_unstable();
    let worst = admitted
        .iter()
        .enumerate()
        .map(|(i, &t)| admitted[i..].iter().take_while(|&&u| u < t + 1_000_000).count() as u64)
        .max()
        .unwrap_or(0);
    let bound = PROCESSES as u64 * PERMITS + (PROCESSES as u64 * LEASE).min(PERMITS);
    println!(
        "fleet: admitted {} in {minutes} min; worst sliding second {worst} (bound {bound}); fleet slots left after \
         the end {slots_left}",
        admitted.len()
    );
    if worst > bound {
        failures.push(format!("fleet bound broken: {worst} in a sliding second (bound {bound})"));
    }
    if slots_left > 0 {
        failures.push(format!("{slots_left} fleet slots still held after every process ended"));
    }
    if failures.is_empty() {
        println!("soak: PASS");
        Ok(())
    } else {
        Err(format!("FAIL\n  {}", failures.join("\n  ")).into())
    }
}

/// Runs `f`, keeping the longest time a call took in `slowest` (µs).
fn timed<T, E>(slowest: &AtomicU64, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    let t = Instant::now();
    let outcome = f();
    slowest.fetch_max(t.elapsed().as_micros() as u64, Ordering::Relaxed);
    outcome
}

/// RSS of this process in KiB (`VmRSS` of /proc/self/status; 0 where there is none).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

fn member(args: &[String]) -> Res<()> {
    let [url, run_ms, _index] = args else { return Err("usage: soak member <url> <run_ms> <index>".into()) };
    let run = Duration::from_millis(run_ms.parse()?);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let store = runtime.block_on(RedisStore::builder(url).store_timeout(STORE_TIMEOUT).connect())?;
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let events = Arc::clone(&out);
    let registry = Registry::builder()
        .shared_state(store)
        .listen(move |e: &SharedStateEvent| {
            let kind = if e.is_degraded() { "degraded" } else { "recovered" };
            let _ = writeln!(events.lock().unwrap(), "event {kind} {} {}", e.policy(), unix_us());
        })
        .rate_limiter_instance("soak::prices", |r| r.shared(true).permits(PERMITS as u32).lease(LEASE as u32))
        .circuit_breaker_instance("soak::inventory", |c| {
            c.shared(true)
                .window_size(20)
                .minimum_calls(10)
                .wait_in_open(Duration::from_secs(2))
                .permitted_calls_in_half_open(2)
        })
        .bulkhead_instance("soak::db", |b| {
            b.shared(true).max_concurrent_calls(SLOTS).lease(1).lease_ttl(Duration::from_millis(1_500))
        })
        .build()?;
    let limiter =
        Pipeline::builder(&registry, "soak::prices").rate_limiter_with(|r| r).build::<(), std::io::Error>()?;
    let breaker =
        Pipeline::builder(&registry, "soak::inventory").circuit_breaker_with(|c| c).build::<(), std::io::Error>()?;
    let bulkhead = Pipeline::builder(&registry, "soak::db").bulkhead_with(|b| b).build::<(), std::io::Error>()?;
    let started = Instant::now();
    let end = started + run;
    let errors = AtomicU64::new(0);
    let slowest = AtomicU64::new(0);
    let admitted = Mutex::new(Vec::<u64>::with_capacity(1024));
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        // The limiter, flat out.
        s.spawn(|| {
            while Instant::now() < end {
                match timed(&slowest, || limiter.execute(|| Ok(()))) {
                    Ok(()) => admitted.lock().unwrap().push(unix_us()),
                    Err(e) if e.rejection().is_some() => std::thread::sleep(Duration::from_micros(500)),
                    Err(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        // The breaker: its calls fail for 3 s of every 20.
        s.spawn(|| {
            while Instant::now() < end {
                let failing = started.elapsed().as_secs() % 20 < 3;
                let outcome = timed(&slowest, || {
                    breaker.execute(|| if failing { Err(std::io::Error::other("down")) } else { Ok(()) })
                });
                if let Err(e) = outcome
                    && e.rejection().is_none()
                    && !failing
                {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        // The bulkhead: two callers holding a slot 3 ms at a time.
        for _ in 0..2 {
            s.spawn(|| {
                while Instant::now() < end {
                    let outcome = timed(&slowest, || {
                        bulkhead.execute(|| {
                            std::thread::sleep(Duration::from_millis(3));
                            Ok(())
                        })
                    });
                    if let Err(e) = outcome
                        && e.rejection().is_none()
                    {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
        }
        // Every second: RSS, the registry's counters, the admitted calls.
        s.spawn(|| {
            let mut next = started + Duration::from_secs(1);
            while !done.load(Ordering::Relaxed) && Instant::now() < end + Duration::from_millis(500) {
                sleep_until(next);
                next += Duration::from_secs(1);
                let times = std::mem::take(&mut *admitted.lock().unwrap());
                let b = registry.bulkhead("soak::db").map(|h| h.snapshot());
                let c = registry.circuit_breaker("soak::inventory").map(|h| h.snapshot());
                let r = registry.rate_limiter("soak::prices").map(|h| h.snapshot());
                let mut out = out.lock().unwrap();
                if !times.is_empty() {
                    let list: Vec<String> = times.iter().map(u64::to_string).collect();
                    let _ = writeln!(out, "t {}", list.join(","));
                }
                let _ = writeln!(
                    out,
                    "sample {:.1} {} {} {} {:?} {} {}",
                    started.elapsed().as_secs_f64(),
                    rss_kib(),
                    b.as_ref().map_or(0, |b| b.in_flight),
                    b.as_ref().map_or(0, |b| b.available),
                    c.map(|c| c.state),
                    r.map_or(0, |r| r.available_permits),
                    errors.load(Ordering::Relaxed),
                );
            }
        });
        while Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    done.store(true, Ordering::Relaxed);
    let times = std::mem::take(&mut *admitted.lock().unwrap());
    let b = registry.bulkhead("soak::db").ok_or("no bulkhead")?.snapshot();
    let mut out = out.lock().unwrap();
    if !times.is_empty() {
        let list: Vec<String> = times.iter().map(u64::to_string).collect();
        writeln!(out, "t {}", list.join(","))?;
    }
    writeln!(out, "errors {}", errors.load(Ordering::Relaxed))?;
    writeln!(out, "max_call_us {}", slowest.load(Ordering::Relaxed))?;
    writeln!(out, "end {} {} {}", b.in_flight, b.available, b.config.max_concurrent_calls)?;
    out.flush()?;
    drop(out);
    // Give the store a moment to hand the slots back before the registry (and its thread) go.
    drop((limiter, breaker, bulkhead));
    drop(registry);
    std::thread::sleep(Duration::from_millis(100));
    Ok(())
}
