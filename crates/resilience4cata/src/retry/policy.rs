//! The retry instance the generated loop calls: consulted only after a failure.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub use super::state::RetryCall;
use super::state::{RetryState, START_BUDGET, START_CLOCKED};
use super::{GiveUpReason, RetryConfig, RetryConfigBuilder, RetryEvent, RetrySnapshot};
use crate::clock::{Interrupted, nanos};
use crate::error::RegistryError;
use crate::events::{Publisher, publish};
use crate::kit::{Inner, policy_kind};
use crate::rejection::Rejection;

/// What the generated code learnt about a failed attempt before asking the retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// In `retry_on` (or the classifier said `Retry`), not in `abort_on`, not an open breaker.
    Retryable,
    /// Outside `retry_on` or in `abort_on`, and not a policy's refusal.
    NotRetryable,
    /// The classifier said `Verdict::Fail`.
    ClassifierFailed,
    /// A policy's refusal the retry does not retry: an open breaker's, or a local one (rate
    /// limiter, bulkhead, adaptive limit) outside `retry_on` or in `abort_on`.
    Refused,
}

impl Failure {
    /// The failure of an `Err` judged not retryable, from the rejection it carries (if any): a
    /// policy's refusal gives up as `Refused`, anything else as `NotRetryable`. Called by the
    /// generated code and the pipeline only after a failure, never on the success path.
    #[inline]
    pub fn not_retried(rejection: Option<&Rejection>) -> Failure {
        match rejection {
            Some(r) if r.is_call_not_permitted() || r.is_local() => Failure::Refused,
            _ => Failure::NotRetryable,
        }
    }
}

/// The field the generated code keeps for one retried method.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// What `start` and the quick path read (`start_mode`, `quick_below`) is in the state, so a
    /// live update reaches every facade (SPEC §16).
    state: Arc<RetryState>,
}

policy_kind! {
    RetryPolicy {
        builder: RetryConfigBuilder,
        state: RetryState,
        event: RetryEvent,
        snapshot: RetrySnapshot,
        metrics: RetryMetrics,
    }

    fn check(inner: &Inner, id: &str, is_async: bool, _: &RetryConfig) -> Result<(), RegistryError> {
        inner.require_async_clock_if(is_async, id, "this async method waits between attempts")
    }

    fn new_state(inner: &Inner, instance: Arc<str>, config: RetryConfig, events: Publisher<RetryEvent>) -> RetryState {
        RetryState::new(instance, config, Arc::clone(&inner.timer), events, inner.seed)
    }

    fn reconfigure(state: &RetryState, config: RetryConfig) {
        state.reconfigure(config);
    }
}

impl RetryPolicy {
    /// The facade over a (possibly shared) state.
    pub(crate) fn new(state: Arc<RetryState>) -> Self {
        state.hear_shutdown();
        RetryPolicy { state }
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// Begins a call: reads one field unless `max_duration` (one clock read) or a budget (one
    /// striped counter write) is configured.
    #[inline]
    pub fn start(&self) -> RetryCall {
        let mode = self.state.start_mode.load(Ordering::Relaxed);
        if mode != 0 {
            return self.start_counted(mode);
        }
        RetryCall { attempts: 0, started: 0 }
    }

    /// Out of line, to keep the generated method small. The budget-only path is a leaf (no
    /// register saved); a `max_duration` takes the path that reads the clock. Both return the
    /// call by value (two registers): handing them `&mut RetryCall` made every call, counted or
    /// not, build it on the stack and copy it into the generated future (issue 16).
    #[inline(never)]
    fn start_counted(&self, mode: u8) -> RetryCall {
        let state = &*self.state;
        if mode & START_CLOCKED != 0 {
            return self.start_clocked(mode);
        }
        state.budget.count_call();
        RetryCall { attempts: 0, started: 0 }
    }

    #[inline(never)]
    fn start_clocked(&self, mode: u8) -> RetryCall {
        let state = &*self.state;
        if mode & START_BUDGET != 0 {
            state.budget.count_call();
        }
        RetryCall { attempts: 0, started: state.timer.now() }
    }

    /// After a failed attempt: counts it, decides, publishes, waits (blocking the thread on the
    /// registry's clock) and says whether to try again.
    #[inline]
    pub fn retry_after(&self, call: &mut RetryCall, failure: Failure) -> bool {
        self.quick(call, failure) || self.retry_after_slow(call, failure, None)
    }

    /// Past the quick path, sync: [`decide_from`](Self::decide_from), then the wait on the thread.
    #[inline(never)]
    fn retry_after_slow(&self, call: &mut RetryCall, failure: Failure, rejection: Option<&Rejection>) -> bool {
        match self.decide_from(call, failure, rejection) {
            Some(wait) => self.wait_blocking(call, wait),
            None => false,
        }
    }

    /// The zero-wait retry that needs no decision (no listener, no `max_duration`, no budget, not
    /// the last attempt): counts the attempt and says "go again" without building a future. The
    /// generated async loop asks this before [`retry_after_async`](Self::retry_after_async); `false`
    /// changes nothing.
    #[inline]
    pub fn retry_now(&self, call: &mut RetryCall, failure: Failure) -> bool {
        self.quick(call, failure)
    }

    /// [`retry_after`](Self::retry_after) for an `Err` that may carry a rejection (found by the
    /// generated code's probe): a rate limiter's `RateLimitExceeded { retry_after }` makes the wait
    /// at least `retry_after` (SPEC §7.1, "Delay from the failure", built in); any other failure
    /// takes the unchanged path, quick path included.
    #[inline]
    pub fn retry_after_from(&self, call: &mut RetryCall, failure: Failure, rejection: Option<&Rejection>) -> bool {
        self.retry_now_from(call, failure, rejection) || self.retry_after_slow(call, failure, rejection)
    }

    /// [`retry_after`](Self::retry_after) with a `delay_from` hook: `adjust(attempt, computed)`
    /// replaces the computed wait (after jitter), `None` gives up with `NotRetryable`. It runs only
    /// when another attempt is allowed; its wait is not capped by `max_delay` and then meets
    /// `max_duration`, the budget and shutdown like any wait.
    pub fn retry_after_with(
        &self,
        call: &mut RetryCall,
        failure: Failure,
        adjust: impl FnOnce(u32, Duration) -> Option<Duration>,
    ) -> bool {
        match self.decide(call, failure, adjust) {
            Some(wait) => self.wait_blocking(call, wait),
            None => false,
        }
    }

    /// The async loop's zero-wait quick path for an `Err` that may carry a rejection: never taken
    /// for a rate limiter's refusal (its `retry_after` must be waited).
    #[inline]
    pub fn retry_now_from(&self, call: &mut RetryCall, failure: Failure, rejection: Option<&Rejection>) -> bool {
        rate_limited_for(rejection).is_none() && self.quick(call, failure)
    }

    /// The async loop's decision after [`retry_now_from`](Self::retry_now_from) said no: the wait
    /// (at least a rate limiter's `retry_after`), or `None` to give up; then
    /// [`wait_async`](Self::wait_async). Deciding before the await keeps `&E` out of the future.
    pub fn decide_from(
        &self,
        call: &mut RetryCall,
        failure: Failure,
        rejection: Option<&Rejection>,
    ) -> Option<Duration> {
        self.decide(call, failure, wait_from(rejection))
    }

    /// The async loop's decision with a `delay_from` hook (see
    /// [`retry_after_with`](Self::retry_after_with)); then [`wait_async`](Self::wait_async).
    pub fn decide_with(
        &self,
        call: &mut RetryCall,
        failure: Failure,
        adjust: impl FnOnce(u32, Duration) -> Option<Duration>,
    ) -> Option<Duration> {
        self.decide(call, failure, adjust)
    }

    /// The async form of [`retry_after`](Self::retry_after): waits without blocking a thread;
    /// dropping the future cancels the wait and no further attempt starts.
    pub async fn retry_after_async(&self, call: &mut RetryCall, failure: Failure) -> bool {
        if self.quick(call, failure) {
            return true;
        }
        match self.decide_from(call, failure, None) {
            Some(wait) => self.wait_async(call, wait).await,
            None => false,
        }
    }

    /// The resolved configuration as of now (the pipeline's tower adapter reads `max_attempts`).
    #[cfg_attr(not(feature = "tower"), allow(dead_code))] // the pipeline's tower adapter
    pub(crate) fn config(&self) -> Arc<RetryConfig> {
        self.state.config.load_full()
    }

    /// The second half, blocking the thread (a zero wait returns at once): whether to try again.
    pub(crate) fn wait_blocking(&self, call: &RetryCall, wait: Duration) -> bool {
        self.waited(call, self.state.timer.sleep(wait))
    }

    /// The second half, in a future that owns nothing borrowed from the caller's stack: waits
    /// `wait` without blocking a thread and says whether to try again (`false` after shutdown).
    pub async fn wait_async(&self, call: &RetryCall, wait: Duration) -> bool {
        self.waited(call, self.state.timer.sleep_async(wait).await)
    }

    /// The zero-wait retry without a decision to make (see `quick_below`): what `decide` and a
    /// zero `sleep` would conclude — count the attempt, go again — in a few inlined instructions.
    /// Giving up, a shut-down registry (whose shutdown cleared `quick_below`) and everything else
    /// take the full path.
    #[inline]
    fn quick(&self, call: &mut RetryCall, failure: Failure) -> bool {
        let go = failure == Failure::Retryable
            && call.attempts + 1 < self.state.quick_below.load(Ordering::Relaxed)
            && !self.state.events.is_watched();
        call.attempts += u32::from(go);
        #[cfg(feature = "metrics")]
        if go {
            self.state.events.metrics().retrying();
        }
        go
    }

    fn waited(&self, call: &RetryCall, outcome: Result<(), Interrupted>) -> bool {
        match outcome {
            Ok(()) => true,
            Err(Interrupted) => {
                self.state.gave_up(call, GiveUpReason::Interrupted);
                false
            }
        }
    }

    /// The wait before the next attempt, or `None` to give up (the event already published).
    /// `adjust(attempt, computed)` has the last word on the computed wait, once the failure and
    /// `max_attempts` allow another attempt; `None` from it gives up with `NotRetryable`.
    fn decide(
        &self,
        call: &mut RetryCall,
        failure: Failure,
        adjust: impl FnOnce(u32, Duration) -> Option<Duration>,
    ) -> Option<Duration> {
        call.attempts += 1;
        let state = &*self.state;
        // One version for the whole decision (SPEC §16).
        let config = state.config.load();
        if !config.enabled {
            return None;
        }
        let refused = match failure {
            Failure::Retryable if call.attempts >= config.max_attempts => Some(GiveUpReason::MaxAttempts),
            Failure::Retryable => None,
            Failure::NotRetryable => Some(GiveUpReason::NotRetryable),
            Failure::ClassifierFailed => Some(GiveUpReason::ClassifierFailed),
            Failure::Refused => Some(GiveUpReason::Refused),
        };
        if let Some(reason) = refused {
            state.gave_up(call, reason);
            return None;
        }
        let Some(wait) = adjust(call.attempts, state.wait_before_retry(&config, call.attempts)) else {
            state.gave_up(call, GiveUpReason::NotRetryable);
            return None;
        };
        if let Err(reason) = self.within_limits(&config, call, wait) {
            state.gave_up(call, reason);
            return None;
        }
        publish!(state.events, |m| m.retrying(), || RetryEvent::Retrying {
            instance: Arc::clone(&state.instance),
            attempt: call.attempts,
            delay: wait,
        });
        Some(wait)
    }

    /// `max_duration`, then the budget: the only checks that read the clock.
    fn within_limits(&self, config: &RetryConfig, call: &RetryCall, wait: Duration) -> Result<(), GiveUpReason> {
        let state = &*self.state;
        if config.max_duration.is_none() && !config.has_budget() {
            return Ok(());
        }
        let now = state.timer.now();
        if let Some(max) = config.max_duration
            && now.saturating_sub(call.started).saturating_add(nanos(wait)) > nanos(max)
        {
            return Err(GiveUpReason::MaxDuration);
        }
        match config.has_budget() && !state.budget.try_grant(now) {
            true => Err(GiveUpReason::BudgetExhausted),
            false => Ok(()),
        }
    }
}

/// A rate limiter's `retry_after`, when the failure is (or nests) its refusal.
#[inline]
fn rate_limited_for(rejection: Option<&Rejection>) -> Option<Duration> {
    match rejection {
        Some(Rejection::RateLimitExceeded { retry_after, .. }) => Some(*retry_after),
        _ => None,
    }
}

/// The rule for a failure that may carry a rejection, written once for the sync and the async
/// loop: after a rate limiter's refusal, never sooner than it said; after anything else, the
/// computed wait (at least zero).
#[inline]
fn wait_from(rejection: Option<&Rejection>) -> impl FnOnce(u32, Duration) -> Option<Duration> {
    let at_least = rate_limited_for(rejection).unwrap_or(Duration::ZERO);
    move |_, computed| Some(computed.max(at_least))
}

#[cfg(test)]
mod tests {
    //! The policy driven the way generated code drives it, on the manual clock.
    use super::*;
    use crate::clock::ManualClock;
    use crate::registry::{Registered, Registry};
    use crate::retry::Jitter;
    use std::sync::Mutex;

    fn registry(clock: &ManualClock, events: &Arc<Mutex<Vec<RetryEvent>>>) -> Registry {
        let sink = Arc::clone(events);
        Registry::builder()
            .clock(clock)
            .jitter_seed(7)
            .listen(move |e: &RetryEvent| sink.lock().unwrap().push(e.clone()))
            .build()
            .unwrap()
    }

    /// The generated loop, by hand: `call` fails while `fail(n)` says so.
    fn run(policy: &RetryPolicy, mut fail: impl FnMut(u32) -> Option<Failure>) -> (u32, bool) {
        let mut call = policy.start();
        let mut n = 0;
        loop {
            n += 1;
            match fail(n) {
                None => return (call.attempts(), true),
                Some(f) => {
                    if !policy.retry_after(&mut call, f) {
                        return (call.attempts(), false);
                    }
                }
            }
        }
    }

    #[test]
    fn download_timeline_gives_up_on_max_duration() {
        let clock = ManualClock::new();
        let events = Arc::new(Mutex::new(Vec::new()));
        let attrs = RetryConfigBuilder::new()
            .max_attempts(5)
            .delay(Duration::from_millis(500))
            .max_delay(Duration::from_secs(2))
            .max_duration(Duration::from_secs(4))
            .jitter(Jitter::None);
        let policy =
            RetryPolicy::build(&registry(&clock, &events), "m::Files::download", None, None, false, attrs).unwrap();
        let mut times = Vec::new();
        let (attempts, ok) = run(&policy, |_| {
            times.push(clock.elapsed());
            Some(Failure::Retryable)
        });
        assert!(!ok);
        assert_eq!(attempts, 4);
        assert_eq!(times, [0, 500, 1500, 3500].map(Duration::from_millis));
        let last = events.lock().unwrap().last().cloned().unwrap();
        assert_eq!(
            last,
            RetryEvent::GaveUp {
                instance: "m::Files::download".into(),
                attempts: 4,
                reason: GiveUpReason::MaxDuration
            }
        );
    }

    #[test]
    fn budget_seed_figures() {
        let clock = ManualClock::new();
        let events = Arc::new(Mutex::new(Vec::new()));
        let attrs = RetryConfigBuilder::new()
            .max_attempts(3)
            .delay(Duration::from_millis(100))
            .budget_percent(20.0)
            .budget_min_retries_per_second(1);
        let registry = registry(&clock, &events);
        let policy = RetryPolicy::build(&registry, "catalog", None, None, false, attrs).unwrap();
        let mut attempts = 0;
        for _ in 0..100 {
            run(&policy, |_| {
                attempts += 1;
                Some(Failure::Retryable)
            });
        }
        assert_eq!(attempts, 130);
        let exhausted = events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| matches!(e, RetryEvent::GaveUp { reason: GiveUpReason::BudgetExhausted, .. }))
            .count();
        assert_eq!(exhausted, 95);
        let snap = registry.snapshot();
        assert_eq!(snap.retries()[0].budget, Some(crate::Budget { calls: 100, retries: 30, allowed_retries: 30 }));
    }

    /// A policy's refusal the retry does not retry gives up as `Refused`, anything else not
    /// retried as `NotRetryable`; a timeout is the attempt's own failure, not a refusal.
    #[test]
    fn a_refusal_gives_up_as_refused_and_other_failures_as_not_retryable() {
        let id: Arc<str> = Arc::from("x");
        let refusals = [
            Rejection::CallNotPermitted { instance: id.clone() },
            Rejection::BulkheadFull { instance: id.clone() },
            Rejection::RateLimitExceeded { instance: id.clone(), retry_after: Duration::from_millis(5) },
            Rejection::LimitExceeded { instance: id.clone() },
        ];
        for r in &refusals {
            assert_eq!(Failure::not_retried(Some(r)), Failure::Refused, "{r}");
        }
        let timeout = Rejection::CallTimeout { instance: id, timeout: Duration::from_secs(1) };
        assert_eq!(Failure::not_retried(Some(&timeout)), Failure::NotRetryable);
        assert_eq!(Failure::not_retried(None), Failure::NotRetryable);

        let clock = ManualClock::new();
        let events = Arc::new(Mutex::new(Vec::new()));
        let policy = RetryPolicy::build(
            &registry(&clock, &events),
            "m::A::f",
            None,
            None,
            false,
            RetryConfigBuilder::new().max_attempts(3).delay(Duration::from_millis(10)),
        )
        .unwrap();
        // A failure, a retry, then a refusal: two attempts, given up as refused, 10 ms waited.
        assert_eq!(run(&policy, |n| Some(if n == 1 { Failure::Retryable } else { Failure::Refused })), (2, false));
        assert_eq!(run(&policy, |_| Some(Failure::NotRetryable)), (1, false));
        let reasons: Vec<_> = events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                RetryEvent::GaveUp { attempts, reason, .. } => Some((*attempts, *reason)),
                _ => None,
            })
            .collect();
        assert_eq!(reasons, [(2, GiveUpReason::Refused), (1, GiveUpReason::NotRetryable)]);
    }

    #[test]
    fn async_retry_on_a_clock_that_cannot_sleep_async_is_reg_010() {
        let system = Registry::builder().build().unwrap();
        let built = RetryPolicy::build(&system, "m::A::f", None, None, true, RetryConfigBuilder::new());
        if cfg!(feature = "tokio") {
            assert!(built.is_ok());
        } else {
            assert_eq!(built.unwrap_err().code(), "R4C-REG-010");
        }
        let clock = ManualClock::new();
        let manual = Registry::builder().clock(&clock).build().unwrap();
        assert!(RetryPolicy::build(&manual, "m::A::f", None, None, true, RetryConfigBuilder::new()).is_ok());
        assert!(RetryPolicy::build(&system, "m::A::g", None, None, false, RetryConfigBuilder::new()).is_ok());
    }

    /// The quick path (zero delay, no limits, no listener) must decide exactly as the full one:
    /// the same attempt counts, giving up at `max_attempts` and on a refusal, and stopping once
    /// the registry is shut down.
    #[test]
    fn zero_delay_without_listeners_counts_and_stops_like_the_full_path() {
        let clock = ManualClock::new();
        let quiet = Registry::builder().clock(&clock).build().unwrap();
        let attrs = || RetryConfigBuilder::new().max_attempts(4).delay(Duration::ZERO);
        let policy = RetryPolicy::build(&quiet, "m::A::zero", None, None, false, attrs()).unwrap();
        // Neither feature `tracing` (no subscriber installed) nor `metrics` turns the quick path off.
        assert_eq!(policy.state.quick_below.load(Ordering::Relaxed), 4);
        assert_eq!(run(&policy, |_| Some(Failure::Retryable)), (4, false));
        assert_eq!(run(&policy, |n| (n < 3).then_some(Failure::Retryable)), (2, true));
        assert_eq!(run(&policy, |_| Some(Failure::NotRetryable)), (1, false));
        assert_eq!(clock.elapsed(), Duration::ZERO);

        let events = Arc::new(Mutex::new(Vec::new()));
        let heard = RetryPolicy::build(&registry(&clock, &events), "m::A::zero", None, None, false, attrs()).unwrap();
        assert_eq!(heard.state.quick_below.load(Ordering::Relaxed), 0, "a listener must see every Retrying event");
        assert_eq!(run(&heard, |_| Some(Failure::Retryable)), (4, false));
        assert_eq!(events.lock().unwrap().len(), 4);

        quiet.shutdown();
        assert_eq!(run(&policy, |_| Some(Failure::Retryable)), (1, false));
    }

    /// The quick path reads no flag of the timer's: shutdown clears `quick_below` of every retry
    /// of the registry, one built after it included, and a live update after it leaves it cleared.
    #[test]
    fn shutdown_closes_the_quick_path_for_good() {
        let clock = ManualClock::new();
        let registry = Registry::builder().clock(&clock).build().unwrap();
        let attrs = || RetryConfigBuilder::new().max_attempts(4).delay(Duration::ZERO);
        let before = RetryPolicy::build(&registry, "m::A::before", None, None, false, attrs()).unwrap();
        let shared = RetryPolicy::build(&registry, "m::A::before", None, None, false, attrs()).unwrap();
        assert_eq!(before.state.quick_below.load(Ordering::Relaxed), 4);
        registry.shutdown();
        assert_eq!(before.state.quick_below.load(Ordering::Relaxed), 0);
        assert_eq!(run(&shared, |_| Some(Failure::Retryable)), (1, false));
        let after = RetryPolicy::build(&registry, "m::A::after", None, None, false, attrs()).unwrap();
        assert_eq!(after.state.quick_below.load(Ordering::Relaxed), 0);
        assert_eq!(run(&after, |_| Some(Failure::Retryable)), (1, false));
        let mut config = RetryConfig::clone(&before.state.config.load());
        config.max_attempts = 5;
        before.state.reconfigure(config);
        assert_eq!(before.state.quick_below.load(Ordering::Relaxed), 0);
        assert_eq!(run(&before, |_| Some(Failure::Retryable)), (1, false));
        assert_eq!(clock.elapsed(), Duration::ZERO);
    }
}
