//! The demo behind `cargo run --example demo`: a downstream HTTP service on loopback that is
//! healthy, then slow, then failing, then healthy again; a client calling it through a
//! `#[resilient]` trait; and the admin dashboard watching the policies react.
//!
//! The script takes about a minute (four phases of 15 s); [`DemoOptions::time_scale`] shrinks
//! every duration of the script *and* of the policies (timeouts, backoff, the breaker's open
//! wait) by the same factor, so a test sees the same story in seconds.

mod client;
mod downstream;

use std::io;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use resilience4cata::circuit_breaker::{CircuitBreakerEvent, State};
use resilience4cata::{Registry, Rejection};
use resilience4cata_admin::{AdminOptions, AdminServer};
use tokio::task::JoinHandle;

pub use client::{HttpPrices, PRICE_ID, PriceError, Prices, ResilientPrices};
pub use downstream::Downstream;

/// One step of the script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Answers in about 25 ms.
    Healthy,
    /// Answers in 0.2 to 1.1 s: some attempts time out and are retried.
    Slow,
    /// Answers 503 at once: the breaker opens and refuses calls without sending them.
    Failing,
    /// Healthy again: half-open probes succeed and the breaker closes.
    Recovered,
}

impl Phase {
    /// The script, in order.
    pub const ALL: [Phase; 4] = [Phase::Healthy, Phase::Slow, Phase::Failing, Phase::Recovered];

    /// What the console says when the phase starts.
    pub fn describe(self) -> &'static str {
        match self {
            Phase::Healthy => "healthy: answers in ~25 ms, every call succeeds at the first attempt",
            Phase::Slow => "slow: answers take 0.2-1.1 s; attempts past 1 s time out and are retried within the budget",
            Phase::Failing => {
                "failing: every answer is a 503; the breaker opens and refuses calls without sending them"
            }
            Phase::Recovered => {
                "recovered: healthy again; after the open wait, probe calls succeed and the breaker closes"
            }
        }
    }
}

/// How the demo runs.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// Multiplies every duration: 1.0 is the real one-minute script, 0.1 runs it in 6 s.
    pub time_scale: f64,
    /// Where the dashboard listens (port 0: any free port).
    pub admin_addr: String,
    /// Client tasks calling the service in a loop.
    pub callers: usize,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions { time_scale: 1.0, admin_addr: resilience4cata_admin::DEFAULT_ADDR.into(), callers: 4 }
    }
}

/// Where the console narration goes.
pub type Narrator = Arc<dyn Fn(String) + Send + Sync>;

/// How the calls made in the current phase ended (one outcome per call, whatever its retries).
#[derive(Debug, Default)]
struct Tally {
    ok: AtomicU64,
    /// Ended with the service's error (a 503, a broken connection) after the retries.
    failed: AtomicU64,
    /// Ended with the last attempt timed out: failed too.
    failed_timed_out: AtomicU64,
    refused_open: AtomicU64,
    refused_bulkhead: AtomicU64,
}

impl Tally {
    fn record(&self, outcome: &Result<u32, PriceError>) {
        let counter = match outcome {
            Ok(_) => &self.ok,
            Err(PriceError::Rejected(Rejection::CallNotPermitted { .. })) => &self.refused_open,
            Err(PriceError::Rejected(Rejection::BulkheadFull { .. })) => &self.refused_bulkhead,
            Err(PriceError::Rejected(Rejection::CallTimeout { .. })) => &self.failed_timed_out,
            Err(_) => &self.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A one-line summary, and the counts reset for the next phase. Its words are the
    /// dashboard's: a call is "failed" (the retry card's red) or "refused" (a policy said no
    /// without sending it: the orange of the retry and breaker cards); "attempts timed out" is the
    /// timeout card's count, attempts and not calls, most of them retried into a success.
    fn take(&self, attempts_timed_out: u64) -> String {
        let take = |c: &AtomicU64| c.swap(0, Ordering::Relaxed);
        let (ok, failed, failed_timed_out) = (take(&self.ok), take(&self.failed), take(&self.failed_timed_out));
        let (refused_open, refused_bulkhead) = (take(&self.refused_open), take(&self.refused_bulkhead));
        format!(
            "calls: {ok} ok, {} failed ({failed_timed_out} timed out on their last attempt), {} refused \
             ({refused_open} by the open breaker, {refused_bulkhead} by the full bulkhead); \
             attempts timed out: {attempts_timed_out}",
            failed + failed_timed_out,
            refused_open + refused_bulkhead,
        )
    }
}

/// A running demo: the downstream service, the callers and the dashboard. Dropping it stops
/// them all.
#[derive(Debug)]
pub struct Demo {
    registry: Registry,
    admin: AdminServer,
    downstream: Arc<Downstream>,
    phase: Arc<AtomicU8>,
    tally: Arc<Tally>,
    /// The timeout's `timed_out` (attempts, since built) when the last phase ended.
    timed_out_before: AtomicU64,
    callers: Vec<JoinHandle<()>>,
    time_scale: f64,
}

impl Demo {
    /// Starts the service (healthy), the callers and the dashboard; the script starts with
    /// [`Demo::run_script`].
    pub async fn start(options: DemoOptions, narrate: Narrator) -> io::Result<Demo> {
        let scale = options.time_scale;
        let (downstream, service_addr) = Downstream::start(scale).await?;
        let registry = registry(scale, Arc::clone(&narrate)).map_err(io::Error::other)?;
        let prices =
            Arc::new(ResilientPrices::new(HttpPrices::new(service_addr), &registry).map_err(io::Error::other)?);
        let admin = match resilience4cata_admin::serve(&options.admin_addr, registry.clone(), AdminOptions::new()).await
        {
            Ok(admin) => admin,
            // The usual port is taken (another demo?): any free loopback port will do.
            Err(_) => resilience4cata_admin::serve("127.0.0.1:0", registry.clone(), AdminOptions::new()).await?,
        };
        narrate(format!("downstream price service on http://{service_addr}/price/{{sku}}"));
        let tally = Arc::new(Tally::default());
        let callers = (0..options.callers)
            .map(|n| tokio::spawn(call_forever(Arc::clone(&prices), Arc::clone(&tally), n, scale)))
            .collect();
        let phase = Arc::new(AtomicU8::new(Phase::Healthy as u8));
        let timed_out_before = AtomicU64::new(0);
        Ok(Demo { registry, admin, downstream, phase, tally, timed_out_before, callers, time_scale: scale })
    }

    /// The dashboard's URL.
    pub fn dashboard_url(&self) -> String {
        self.admin.url()
    }

    /// The phase the service is in.
    pub fn phase(&self) -> Phase {
        Phase::ALL[usize::from(self.phase.load(Ordering::SeqCst))]
    }

    /// The registry the client's policies live in.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Attempts the timeout cut off since it was built (the dashboard's timeout card).
    fn attempts_timed_out(&self) -> u64 {
        let snapshot = self.registry.snapshot();
        snapshot.timeouts().iter().filter(|t| &*t.instance == PRICE_ID).map(|t| t.timed_out).sum()
    }

    /// Plays the four phases once, narrating each, and returns when the last one ends.
    pub async fn run_script(&self, narrate: &Narrator) {
        for phase in Phase::ALL {
            self.phase.store(phase as u8, Ordering::SeqCst);
            self.downstream.set_phase(phase);
            narrate(format!("== {}", phase.describe()));
            tokio::time::sleep(Duration::from_secs_f64(15.0 * self.time_scale)).await;
            let breaker = self.registry.circuit_breaker(PRICE_ID).map(|b| b.state());
            let timed_out = self.attempts_timed_out();
            let attempts_timed_out = timed_out.saturating_sub(self.timed_out_before.swap(timed_out, Ordering::Relaxed));
            narrate(format!(
                "   {}; breaker {:?}",
                self.tally.take(attempts_timed_out),
                breaker.unwrap_or(State::Closed)
            ));
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.callers.iter().for_each(JoinHandle::abort);
    }
}

/// The registry: system clock, breaker transitions narrated, and (when the time is scaled) every
/// duration of the policies scaled with it, through per-instance overrides that win over the
/// trait's attributes.
fn registry(scale: f64, narrate: Narrator) -> Result<Registry, resilience4cata::RegistryError> {
    let ms = |n: f64| Duration::from_secs_f64(n * scale / 1000.0);
    let built = Arc::new(OnceLock::<Registry>::new());
    let mut builder = Registry::builder().listen({
        let built = Arc::clone(&built);
        move |e: &CircuitBreakerEvent| {
            if let CircuitBreakerEvent::StateTransition { from, to, .. } = e {
                let refused = built
                    .get()
                    .and_then(|r: &Registry| r.circuit_breaker(PRICE_ID))
                    .map(|b| b.snapshot().not_permitted_calls);
                narrate(format!("   breaker: {from:?} -> {to:?} ({} calls refused so far)", refused.unwrap_or(0)));
            }
        }
    });
    if scale != 1.0 {
        builder = builder
            .retry_instance(PRICE_ID, |r| r.delay(ms(100.0)))
            .circuit_breaker_instance(PRICE_ID, |c| c.wait_in_open(ms(5000.0)).slow_call_duration(ms(500.0)))
            .timeout_instance(PRICE_ID, |t| t.duration(ms(1000.0)));
    }
    let registry = builder.build()?;
    let _ = built.set(registry.clone());
    Ok(registry)
}

/// One caller: a call every 100 ms (scaled), forever.
async fn call_forever(prices: Arc<ResilientPrices<HttpPrices>>, tally: Arc<Tally>, caller: usize, scale: f64) {
    let pause = Duration::from_secs_f64(0.1 * scale);
    for n in 0.. {
        let outcome = prices.price(&format!("sku-{caller}-{}", n % 10)).await;
        tally.record(&outcome);
        tokio::time::sleep(pause).await;
    }
}
