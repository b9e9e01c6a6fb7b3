//! The demo behind `cargo run --example demo`: a downstream HTTP service on loopback serving two
//! tenants, whose shard for tenant-a is healthy, then slow, then failing, then healthy again
//! while tenant-b's stays healthy; a client per tenant calling it through one `#[resilient]`
//! trait, each built in its own scope (SPEC §5) so each tenant has its own retry budget, breaker,
//! adaptive limit and bulkhead; and the admin dashboard watching the policies react.
//!
//! The script takes about 75 s (five phases of 15 s; the last switches chaos on for tenant-a from
//! configuration, and off again at its end); [`DemoOptions::time_scale`] shrinks
//! every duration of the script *and* of the policies (timeouts, backoff, the breaker's open
//! wait, the adaptive limit's latency bound) by the same factor, so a test sees the same story in
//! seconds. [`Demo::run_script`] returns a [`Story`] whose [`checks`](Story::checks) say whether
//! the story happened: tenant-a's limit came down and its breaker opened, the fallback answered
//! from the cache, both recovered, and tenant-b was never refused.

mod client;
mod downstream;
mod setup;
mod story;

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use resilience4cata::Registry;
use resilience4cata::circuit_breaker::State;
use resilience4cata_admin::{AdminOptions, AdminServer};
use tokio::task::JoinHandle;

pub use client::{HttpPrices, PRICE_ID, PriceError, Prices, Quote, ResilientPrices, price_id};
pub use downstream::Downstream;
pub use story::{Check, Counts, PhaseReport, Story, TenantReport};

use setup::Tenant;

/// The two tenants, each with its own client and its own instances (`<tenant>/` + [`PRICE_ID`]).
pub const TENANTS: [&str; 2] = ["tenant-a", "tenant-b"];

/// The tenant whose shard of the service follows the script; the other stays healthy.
pub const TROUBLED: &str = TENANTS[0];

/// One step of the script (of tenant-a's shard; tenant-b's stays healthy throughout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Answers in about 25 ms.
    Healthy,
    /// Answers in 0.2 to 1.1 s: some attempts time out and are retried; the adaptive limit
    /// comes down.
    Slow,
    /// Answers 503 at once: the breaker opens and refuses calls without sending them; the
    /// fallback answers them from the cache.
    Failing,
    /// Healthy again: half-open probes succeed, the breaker closes and the limit rises.
    Recovered,
    /// Healthy, but chaos is switched on for tenant-a from configuration (`update_toml`, feature
    /// `chaos`): a quarter of its attempts fail with an injected `Unavailable` without reaching the
    /// service; its retries absorb most of them, its breaker counts them (and may open: the
    /// fallback then answers from the cache); switched off again when the phase ends.
    Chaos,
}

impl Phase {
    /// The script, in order.
    pub const ALL: [Phase; 5] = [Phase::Healthy, Phase::Slow, Phase::Failing, Phase::Recovered, Phase::Chaos];

    /// What the console says when the phase starts.
    pub fn describe(self) -> &'static str {
        match self {
            Phase::Healthy => "healthy: both tenants' answers come in ~25 ms, every call succeeds at the first attempt",
            Phase::Slow => {
                "slow: tenant-a's answers take 0.2-1.1 s; attempts past 1 s time out and are retried within the \
                 budget, and its adaptive limit comes down; tenant-b is not touched"
            }
            Phase::Failing => {
                "failing: tenant-a's answers are 503s; its breaker opens and refuses calls without sending them, \
                 and the fallback answers them with cached prices; tenant-b's breaker stays closed"
            }
            Phase::Recovered => {
                "recovered: tenant-a's shard is healthy again; after the open wait, probe calls succeed, the \
                 breaker closes and the adaptive limit rises"
            }
            Phase::Chaos => {
                "chaos: switched on for tenant-a from configuration (fault_rate 0.25, fault \"Unavailable\"): \
                 injected faults never reach the service; its retries absorb most, its breaker counts them and \
                 may open, and the fallback answers from the cache"
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
    /// Client tasks calling the service in a loop, per tenant.
    pub callers: usize,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions { time_scale: 1.0, admin_addr: resilience4cata_admin::DEFAULT_ADDR.into(), callers: 4 }
    }
}

/// Where the console narration goes.
pub type Narrator = Arc<dyn Fn(String) + Send + Sync>;

/// A running demo: the downstream service, the callers of both tenants and the dashboard.
/// Dropping it stops them all.
#[derive(Debug)]
pub struct Demo {
    registry: Registry,
    admin: AdminServer,
    downstream: Arc<Downstream>,
    phase: Arc<AtomicU8>,
    tenants: Vec<Arc<Tenant>>,
    callers: Vec<JoinHandle<()>>,
    time_scale: f64,
}

impl Demo {
    /// Starts the service (healthy), the callers and the dashboard; the script starts with
    /// [`Demo::run_script`].
    pub async fn start(options: DemoOptions, narrate: Narrator) -> io::Result<Demo> {
        let scale = options.time_scale;
        let (downstream, service_addr) = Downstream::start(scale).await?;
        let phase = Arc::new(AtomicU8::new(Phase::Healthy as u8));
        let tenants: Vec<Arc<Tenant>> = TENANTS.iter().map(|name| Arc::new(Tenant::new(name))).collect();
        let registry = setup::registry(scale, &tenants, Arc::clone(&narrate)).map_err(io::Error::other)?;
        let mut callers = Vec::new();
        for tenant in &tenants {
            let prices = ResilientPrices::builder(HttpPrices::new(service_addr, tenant.name), &registry)
                .scope(tenant.name)
                .build()
                .map_err(io::Error::other)?;
            let prices = Arc::new(prices);
            callers.extend(
                (0..options.callers)
                    .map(|n| tokio::spawn(call_forever(Arc::clone(&prices), Arc::clone(tenant), n, scale))),
            );
        }
        let admin = match resilience4cata_admin::serve(&options.admin_addr, registry.clone(), AdminOptions::new()).await
        {
            Ok(admin) => admin,
            // The usual port is taken (another demo?): any free loopback port will do.
            Err(_) => resilience4cata_admin::serve("127.0.0.1:0", registry.clone(), AdminOptions::new()).await?,
        };
        narrate(format!("downstream price service on http://{service_addr}/{{tenant}}/price/{{sku}}"));
        narrate(format!("two tenants, each its own instances: {}", TENANTS.map(price_id).join(", ")));
        Ok(Demo { registry, admin, downstream, phase, tenants, callers, time_scale: scale })
    }

    /// The dashboard's URL.
    pub fn dashboard_url(&self) -> String {
        self.admin.url()
    }

    /// The phase the service is in.
    pub fn phase(&self) -> Phase {
        Phase::ALL[usize::from(self.phase.load(Ordering::SeqCst))]
    }

    /// The registry the clients' policies live in.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Plays the four phases once, narrating each, and returns what happened.
    pub async fn run_script(&self, narrate: &Narrator) -> Story {
        let mut story = Story::default();
        for tenant in &self.tenants {
            tenant.restart(&self.registry);
        }
        for phase in Phase::ALL {
            self.phase.store(phase as u8, Ordering::SeqCst);
            self.downstream.set_phase(phase);
            narrate(format!("== {}", phase.describe()));
            if phase == Phase::Chaos {
                self.chaos(true, narrate);
            }
            tokio::time::sleep(Duration::from_secs_f64(15.0 * self.time_scale)).await;
            let tenants: Vec<TenantReport> = self.tenants.iter().map(|t| t.report(&self.registry)).collect();
            if phase == Phase::Chaos {
                self.chaos(false, narrate);
            }
            for (tenant, report) in TENANTS.iter().zip(&tenants) {
                narrate(format!("   {tenant}: {}", report.describe()));
            }
            story.phases.push(PhaseReport { phase, tenants });
        }
        story
    }
}

impl Demo {
    /// Switches chaos on or off for tenant-a's instances, from configuration, as an operator's
    /// `PUT /config` or a watched file would.
    fn chaos(&self, on: bool, narrate: &Narrator) {
        let toml = format!(
            "[instances.{:?}.chaos]\nenabled = {on}\nfault_rate = 0.25\nfault = \"Unavailable\"\n",
            price_id(TROUBLED)
        );
        match self.registry.update_toml(&toml) {
            Ok(change) => narrate(format!(
                "   chaos {}: {} instance(s) changed",
                if on { "on" } else { "off" },
                change.changed.len()
            )),
            Err(e) => narrate(format!("   chaos could not be switched: {e}")),
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.callers.iter().for_each(JoinHandle::abort);
    }
}

/// One caller of one tenant: a call every 100 ms (scaled), forever.
async fn call_forever(prices: Arc<ResilientPrices<HttpPrices>>, tenant: Arc<Tenant>, caller: usize, scale: f64) {
    let pause = Duration::from_secs_f64(0.1 * scale);
    for n in 0.. {
        let outcome = prices.price(&format!("sku-{caller}-{}", n % 10)).await;
        tenant.tally.record(&outcome);
        tokio::time::sleep(pause).await;
    }
}

/// The breaker's state, `Closed` when it is not built yet.
fn breaker_state(registry: &Registry, id: &str) -> State {
    registry.circuit_breaker(id).map_or(State::Closed, |b| b.state())
}
