//! The adaptive concurrency limit, passing (the limit never reached, so it stays where it is),
//! beside tower's fixed `ConcurrencyLimit` and tower-resilience's adaptive limiter (AIMD).

use std::future::{Future, ready};
use std::time::Duration;

use resilience4cata::{Rejection, ResilienceError, resilient};
use tower::Layer;

use crate::{consume, exec, opaque, work};

/// The error of the limited methods: the delegate's failure, or the limit's refusal.
#[derive(Debug, PartialEq, ResilienceError)]
pub enum LimitError {
    /// The delegate failed.
    Fail,
    /// The limit refused the call.
    #[rejection]
    Rejected(Rejection),
}

/// One method per algorithm and form.
#[resilient]
pub trait Limited {
    /// Aimd with the defaults (initial limit 20: one call in flight never makes it grow).
    #[adaptive_limit]
    fn aimd(&self, x: u64) -> Result<u64, LimitError>;

    /// The async form.
    #[adaptive_limit]
    async fn aimd_async(&self, x: u64) -> Result<u64, LimitError>;

    /// Vegas: its calls (far under `min_rtt_threshold`) are timed on the exact clock, not samples.
    #[adaptive_limit(algorithm = Vegas)]
    fn vegas(&self, x: u64) -> Result<u64, LimitError>;

    /// Vegas with every call a sample: recorded on the thread's stripe, a window folded every
    /// 100 ms.
    #[adaptive_limit(algorithm = Vegas, min_rtt_threshold = "0")]
    fn vegas_sampled(&self, x: u64) -> Result<u64, LimitError>;
}

/// The delegate: `work`, its error mapped (it never fails).
#[derive(Debug, Default)]
pub struct Backend;

#[inline(always)]
fn call(x: u64) -> Result<u64, LimitError> {
    work(x).map_err(|_| LimitError::Fail)
}

impl Limited for Backend {
    testkit::same_body! { fn(&self, x: u64) -> Result<u64, LimitError> { call(x) } for aimd vegas vegas_sampled }
    testkit::same_body! { async fn(&self, x: u64) -> Result<u64, LimitError> { call(x) } for aimd_async }
}

/// The wrapper and its registry (whose coarse-clock ticker Aimd reads), kept together.
type Wrapped = super::Wrapped<ResilientLimited<Backend>>;

fn wrapped() -> Wrapped {
    Wrapped::new(|registry| ResilientLimited::new(Backend, registry))
}

fn sync_case<const SHARED: bool, F>(f: F) -> impl Fn() + Sync
where
    F: Fn(&ResilientLimited<Backend>, u64) -> Result<u64, LimitError> + Sync,
{
    let wrapped = wrapped();
    move || consume(f(&wrapped.api, opaque(1)))
}

/// `#[adaptive_limit]` (Aimd), passing.
pub fn aimd_sync() -> impl Fn() + Sync {
    sync_case::<false, _>(|api, x| api.aimd(x))
}

/// [`aimd_sync`], shared with a contender thread.
pub fn aimd_shared() -> impl Fn() + Sync {
    sync_case::<true, _>(|api, x| api.aimd(x))
}

/// `#[adaptive_limit(algorithm = Vegas)]`, passing.
pub fn vegas_sync() -> impl Fn() + Sync {
    sync_case::<false, _>(|api, x| api.vegas(x))
}

/// `#[adaptive_limit(algorithm = Vegas, min_rtt_threshold = "0")]`, passing: every call recorded.
pub fn vegas_sampled_sync() -> impl Fn() + Sync {
    sync_case::<false, _>(|api, x| api.vegas_sampled(x))
}

/// `#[adaptive_limit]` on an async method, passing.
pub fn aimd_async() -> impl FnMut() {
    // One for the process: the futures borrow the wrapper for `'static`, and leaking one per
    // criterion sample would leak a coarse-clock ticker thread with each registry. Opaque, as the
    // leaked box's address was: a visible static address changes the code measured.
    static WRAPPED: std::sync::OnceLock<Wrapped> = std::sync::OnceLock::new();
    let wrapped: &'static Wrapped = std::hint::black_box(WRAPPED.get_or_init(wrapped));
    move || consume(exec::poll_now(polled(&wrapped.api, opaque(1))))
}

fn polled(api: &ResilientLimited<Backend>, x: u64) -> impl Future<Output = Result<u64, LimitError>> + '_ {
    api.aimd_async(x)
}

/// tower-resilience's AIMD as configured beside ours: initial limit 20, never reached.
pub fn tower_resilience_aimd() -> tower_resilience::adaptive::Aimd {
    tower_resilience::adaptive::Aimd::builder()
        .initial_limit(20)
        .min_limit(1)
        .max_limit(200)
        .latency_threshold(Duration::from_secs(5))
        .build()
        .expect("a valid AIMD configuration")
}

/// tower-resilience's adaptive limiter layer with AIMD, initial limit 20, never reached.
pub fn tower_resilience_adaptive() -> impl FnMut() {
    let layer = tower_resilience::adaptive::AdaptiveLimiterLayer::new(tower_resilience_aimd());
    let mut service = layer.layer(tower::service_fn(|x: u64| ready(work(x))));
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}
