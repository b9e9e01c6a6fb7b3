//! A hedge whose first attempt answers at once: no timer, no extra attempt. Ours through
//! `#[hedge]`, beside seatbelt's hedging layer (the only anchor with hedging in this workspace's
//! dependencies; tower-resilience's lives in a crate of its own, not a dependency here).

use std::time::Duration;

use layered::{Execute, Service, Stack};
use resilience4cata::{Registry, resilient};
use seatbelt::hedging::Hedging;
use seatbelt::{RecoveryInfo, ResilienceContext};

use crate::{Fail, consume, exec, opaque, work};

const DELAY: Duration = Duration::from_millis(100);

/// The user-shaped trait: one hedged async method over the shared delegate.
#[resilient]
pub trait Hedged {
    /// Hedged after 100 ms, one extra attempt.
    #[hedge(delay = "100ms")]
    async fn hedged(&self, x: u64) -> Result<u64, Fail>;
}

/// Calls [`work`].
#[derive(Debug)]
pub struct Backend;

impl Hedged for Backend {
    async fn hedged(&self, x: u64) -> Result<u64, Fail> {
        work(x)
    }
}

/// `#[hedge(delay = "100ms")]`, the first attempt ready at once.
pub fn ours_async() -> impl FnMut() {
    let registry = Registry::builder().build().expect("a registry");
    // Leaked: the futures borrow the wrapper, and a case is built a few hundred times per run.
    let api: &'static ResilientHedged<Backend> =
        Box::leak(Box::new(ResilientHedged::new(Backend, &registry).expect("a wrapper")));
    move || consume(exec::poll_now(api.hedged(opaque(1))))
}

/// seatbelt's hedging layer over `Execute` (100 ms delay, one extra attempt), on tick's tokio clock.
pub fn seatbelt_async() -> impl FnMut() {
    let clock = tick::Clock::new_tokio();
    let context: ResilienceContext<u64, Result<u64, Fail>> = ResilienceContext::new(&clock).name("bench");
    let service = (
        Hedging::layer("hedging", &context)
            .clone_input()
            .recovery_with(
                |out: &Result<u64, Fail>, _| {
                    if out.is_err() { RecoveryInfo::retry() } else { RecoveryInfo::never() }
                },
            )
            .hedging_delay(DELAY)
            .max_hedged_attempts(1),
        Execute::new(|x: u64| async move { work(x) }),
    )
        .into_service();
    move || {
        consume(exec::poll_now(service.execute(opaque(1))));
    }
}
