//! `#[policy_order(…)]` (SPEC §6): a method's or the trait's list changes the nesting, outermost
//! first, on the manual clock. The default order's consequences are in `policy_order.rs`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::testing::ManualClock;
use resilience4cata::{FallbackContext, Registry, Rejection, resilient};

mod order_fixture;

use order_fixture::ApiError;

const SECOND: Duration = Duration::from_secs(1);

/// A delegate attempt that takes 1 s of manual time: a call that never answers, bounded by a
/// timeout of 1 s, so the manual clock moves exactly as a 1 s call would move it.
#[resilient]
pub trait Slow {
    #[timeout(duration = "1s")]
    async fn one_second(&self) -> Result<(), ApiError>;
}

struct Never;

impl Slow for Never {
    async fn one_second(&self) -> Result<(), ApiError> {
        std::future::pending().await
    }
}

#[resilient]
#[policy_order(Timeout, Retry)] // the trait's order: one timeout bounds the whole retried call …
pub trait Api {
    #[retry(max_attempts = 3, delay = "0")]
    #[timeout(duration = "2500ms")]
    async fn whole(&self) -> Result<(), ApiError>;

    // The fallback stays outermost: it sees the whole call's timeout, after three attempts.
    #[retry(max_attempts = 3, delay = "0")]
    #[timeout(duration = "2500ms")]
    #[fallback(method = rescue)]
    async fn rescued(&self) -> Result<(), ApiError>;

    async fn rescue(&self, ctx: FallbackContext<ApiError>) -> Result<(), ApiError>;

    // … unless a method's own list replaces it: here the default order, spelled out.
    #[policy_order(Retry, Timeout)]
    #[retry(max_attempts = 3, delay = "0")]
    #[timeout(duration = "2500ms")]
    async fn each(&self) -> Result<(), ApiError>;

    // No list of its own and no timeout: the trait's `Timeout` is ignored, retry as usual.
    #[retry(max_attempts = 2, delay = "0")]
    async fn unlisted(&self) -> Result<(), ApiError>;

    // The bulkhead outside the retry: the slot is held across the backoff.
    #[policy_order(Bulkhead, Retry)]
    #[retry(max_attempts = 2, delay = "1s")]
    #[bulkhead(max_concurrent_calls = 1)]
    fn held(&self) -> Result<(), ApiError>;

    // The default order: the slot is given back before the backoff.
    #[policy_order()]
    #[retry(max_attempts = 2, delay = "1s")]
    #[bulkhead(max_concurrent_calls = 1)]
    fn released(&self) -> Result<(), ApiError>;

    // Listed only partly: the unlisted breaker keeps its default place relative to the retry
    // (inside it), both inside the listed bulkhead.
    #[policy_order(Bulkhead)]
    #[retry(max_attempts = 2, delay = "1s")]
    #[circuit_breaker(window_size = 10, minimum_calls = 10)]
    #[bulkhead(max_concurrent_calls = 1)]
    fn partly(&self) -> Result<(), ApiError>;

    // The adaptive limit outside the retry: one slot across the backoff, one sample per call.
    #[policy_order(AdaptiveLimit, Retry)]
    #[retry(max_attempts = 2, delay = "1s")]
    #[adaptive_limit(initial_limit = 10)]
    fn limited_once(&self) -> Result<(), ApiError>;

    // The trait's order (Timeout, Retry): the adaptive limit keeps its default place inside the
    // retry, a slot and a sample per attempt.
    #[retry(max_attempts = 2, delay = "1s")]
    #[adaptive_limit(initial_limit = 10)]
    fn limited_each(&self) -> Result<(), ApiError>;

    // A hedge takes the retry's place and moves as the retry does: here one timeout bounds every
    // hedged attempt together (the trait's `Timeout` first).
    #[hedge(delay = "1s", max_hedged_attempts = 2)]
    #[timeout(duration = "2500ms")]
    async fn hedged_whole(&self, query: String) -> Result<(), ApiError>;

    // The default place: each hedged attempt under its own timeout.
    #[policy_order(Hedge)]
    #[hedge(delay = "1s", max_hedged_attempts = 2)]
    #[timeout(duration = "2500ms")]
    async fn hedged_each(&self, query: String) -> Result<(), ApiError>;
}

struct Backend {
    attempts: AtomicU32,
    slow: ResilientSlow<Never>,
}

impl Backend {
    async fn one_second_failure(&self) -> Result<(), ApiError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let timed_out = self.slow.one_second().await;
        assert!(matches!(timed_out, Err(ApiError::Rejected(Rejection::CallTimeout { .. }))));
        Err(ApiError::Down)
    }

    async fn never_answering(&self) -> Result<(), ApiError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        std::future::pending().await
    }

    fn failure(&self) -> Result<(), ApiError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        Err(ApiError::Down)
    }
}

impl Api for Backend {
    async fn whole(&self) -> Result<(), ApiError> {
        self.one_second_failure().await
    }
    async fn each(&self) -> Result<(), ApiError> {
        self.one_second_failure().await
    }
    async fn rescued(&self) -> Result<(), ApiError> {
        self.one_second_failure().await
    }
    async fn rescue(&self, ctx: FallbackContext<ApiError>) -> Result<(), ApiError> {
        assert!(matches!(ctx.rejection(), Some(Rejection::CallTimeout { .. })), "{ctx:?}");
        assert_eq!(ctx.attempts(), 3, "the retry inside the timeout reports its attempts");
        Ok(())
    }
    async fn unlisted(&self) -> Result<(), ApiError> {
        self.one_second_failure().await
    }
    fn held(&self) -> Result<(), ApiError> {
        self.failure()
    }
    fn released(&self) -> Result<(), ApiError> {
        self.failure()
    }
    fn partly(&self) -> Result<(), ApiError> {
        self.failure()
    }
    fn limited_once(&self) -> Result<(), ApiError> {
        self.failure()
    }
    fn limited_each(&self) -> Result<(), ApiError> {
        self.failure()
    }
    async fn hedged_whole(&self, _query: String) -> Result<(), ApiError> {
        self.never_answering().await
    }
    async fn hedged_each(&self, _query: String) -> Result<(), ApiError> {
        self.never_answering().await
    }
}

fn id(method: &str) -> String {
    format!("policy_order_custom::Api::{method}")
}

/// The wrapper, the clock, and, for each `Retrying` event (published as the backoff starts), the
/// bulkhead's `(in_flight, available)` of the retried method at that moment.
struct Setup {
    clock: ManualClock,
    registry: Registry,
    api: ResilientApi<Backend>,
    during_backoff: order_fixture::DuringBackoff,
}

fn setup() -> Setup {
    let (clock, registry, during_backoff) = order_fixture::watching_backoffs();
    let slow = ResilientSlow::new(Never, &registry).unwrap();
    let api = ResilientApi::new(Backend { attempts: AtomicU32::new(0), slow }, &registry).unwrap();
    Setup { clock, registry, api, during_backoff }
}

fn timed_out(registry: &Registry, method: &str) -> u64 {
    registry.snapshot().timeouts().iter().find(|t| *t.instance == id(method)).unwrap().timed_out
}

#[tokio::test]
async fn timeout_outside_retry_bounds_the_whole_call_at_2_5_s_after_three_started_attempts() {
    let s = setup();
    let outcome = s.api.whole().await;
    match outcome {
        Err(ApiError::Rejected(Rejection::CallTimeout { instance, timeout })) => {
            assert_eq!(*instance, id("whole"));
            assert_eq!(timeout, Duration::from_millis(2500));
        }
        other => panic!("expected one CallTimeout, got {other:?}"),
    }
    assert_eq!(s.clock.elapsed(), Duration::from_millis(2500));
    assert_eq!(s.api.delegate().attempts.load(Ordering::SeqCst), 3, "three attempts started");
    assert_eq!(timed_out(&s.registry, "whole"), 1, "one timeout for the whole call");
}

#[tokio::test]
async fn the_methods_own_list_replaces_the_traits_and_the_default_gives_three_full_attempts() {
    let s = setup();
    assert_eq!(s.api.each().await, Err(ApiError::Down), "the last attempt's own failure");
    assert_eq!(s.clock.elapsed(), 3 * SECOND, "three full attempts of 1 s each");
    assert_eq!(s.api.delegate().attempts.load(Ordering::SeqCst), 3);
    assert_eq!(timed_out(&s.registry, "each"), 0, "2.5 s per attempt: none timed out");
}

#[tokio::test]
async fn a_listed_policy_the_method_does_not_use_is_ignored() {
    let s = setup();
    assert_eq!(s.api.unlisted().await, Err(ApiError::Down));
    assert_eq!(s.clock.elapsed(), 2 * SECOND);
    assert_eq!(s.api.delegate().attempts.load(Ordering::SeqCst), 2);
}

#[test]
fn bulkhead_outside_retry_holds_the_slot_across_the_backoff() {
    let s = setup();
    assert_eq!(s.api.held(), Err(ApiError::Down));
    assert_eq!(s.clock.elapsed(), SECOND, "one backoff of 1 s");
    assert_eq!(*s.during_backoff.lock().unwrap(), [(1, 0)], "in flight, no slot free, while waiting");
    let after = s.registry.bulkhead(&id("held")).unwrap().snapshot();
    assert_eq!((after.in_flight, after.available), (0, 1), "given back when the call ends");
}

#[test]
fn the_default_order_gives_the_slot_back_before_the_backoff() {
    let s = setup();
    assert_eq!(s.api.released(), Err(ApiError::Down));
    assert_eq!(s.clock.elapsed(), SECOND);
    assert_eq!(*s.during_backoff.lock().unwrap(), [(0, 1)], "nothing in flight while waiting");
}

#[test]
fn unlisted_policies_keep_their_relative_order_inside_the_listed_ones() {
    let s = setup();
    assert_eq!(s.api.partly(), Err(ApiError::Down));
    assert_eq!(*s.during_backoff.lock().unwrap(), [(1, 0)], "the bulkhead is outermost");
    let breaker = s.registry.circuit_breaker(&id("partly")).unwrap().snapshot();
    assert_eq!(breaker.failed_calls, 2, "the breaker is still inside the retry: every attempt recorded");
}

#[tokio::test]
async fn the_fallback_stays_outermost_around_a_reordered_call() {
    let s = setup();
    assert_eq!(s.api.rescued().await, Ok(()), "the fallback answered");
    assert_eq!(s.clock.elapsed(), Duration::from_millis(2500));
    assert_eq!(s.api.delegate().attempts.load(Ordering::SeqCst), 3);
}

fn limit_after(registry: &Registry, method: &str) -> (u32, u32) {
    let s = registry.adaptive_limit(&id(method)).unwrap().snapshot();
    (s.in_flight, s.limit)
}

#[test]
fn adaptive_limit_outside_retry_holds_its_slot_across_the_backoff_and_samples_the_call_once() {
    let s = setup();
    assert_eq!(s.api.limited_once(), Err(ApiError::Down));
    assert_eq!(s.clock.elapsed(), SECOND, "one backoff of 1 s");
    assert_eq!(s.api.delegate().attempts.load(Ordering::SeqCst), 2);
    assert_eq!(*s.during_backoff.lock().unwrap(), [(1, 10)], "in flight, not yet sampled, while waiting");
    assert_eq!(limit_after(&s.registry, "limited_once"), (0, 9), "one dropped sample: 10 × 0.9");
}

#[test]
fn adaptive_limit_in_its_default_place_samples_every_attempt() {
    let s = setup();
    assert_eq!(s.api.limited_each(), Err(ApiError::Down));
    assert_eq!(*s.during_backoff.lock().unwrap(), [(0, 9)], "the first attempt sampled before the wait");
    assert_eq!(limit_after(&s.registry, "limited_each"), (0, 8), "two dropped samples: ⌊9 × 0.9⌋");
}

/// Three hedged attempts (at 0, 1 s and 2 s) that never answer, under a 2.5 s timeout: the
/// manual time when the call ends with a `CallTimeout`, and how many timeouts fired.
async fn hedged_timeline<F: std::future::Future<Output = Result<(), ApiError>>>(
    s: &Setup,
    method: &str,
    call: F,
) -> (Duration, u64) {
    let outcome = call.await;
    assert!(matches!(outcome, Err(ApiError::Rejected(Rejection::CallTimeout { .. }))), "{outcome:?}");
    assert_eq!(s.api.delegate().attempts.load(Ordering::SeqCst), 3, "started at 0, 1 s and 2 s");
    (s.clock.elapsed(), timed_out(&s.registry, method))
}

#[tokio::test]
async fn timeout_outside_hedge_bounds_every_attempt_together() {
    let s = setup();
    let ended = hedged_timeline(&s, "hedged_whole", s.api.hedged_whole("q".to_owned())).await;
    assert_eq!(ended, (Duration::from_millis(2500), 1), "one deadline for the hedged call");
}

#[tokio::test]
async fn the_hedge_in_its_default_place_times_each_attempt_out_on_its_own() {
    let s = setup();
    let ended = hedged_timeline(&s, "hedged_each", s.api.hedged_each("q".to_owned())).await;
    assert_eq!(ended, (Duration::from_millis(4500), 3), "one timeout per attempt, the last started at 2 s");
}
