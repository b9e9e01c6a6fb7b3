//! [`Guard`]: the layer a guarding policy (circuit breaker, rate limiter, adaptive limit, timeout,
//! bulkhead) puts around one attempt of a pipeline: acquire, call inward, record, in a blocking
//! and an async form, written once in the policy's own folder (`<policy>/guard.rs`). The pipeline
//! (`pipeline/guards.rs`, `pipeline/order.rs`) nests the guards of its list and knows none of them
//! by name; the generated code of `#[resilient]` does not use this trait (its expansion stays
//! straight-line, per policy).
//!
//! Ground floor: it names no policy. What a guard needs from the attempt's context is a type
//! parameter (`C`), fixed by the pipeline.

use crate::rejection::Rejection;

/// How the caller of a guard turns a refusal into its error type and judges an `Err` (the
/// pipeline's `E::from_rejection`, `E::rejection` and the rules set on it).
pub(crate) trait Judge<E> {
    /// A refusal as `E`.
    fn refuse(&self, rejection: Rejection) -> E;
    /// The refusal inside an `E`, if any (a nested open breaker, a timeout).
    fn rejection<'e>(&self, error: &'e E) -> Option<&'e Rejection>;
    /// `ignore_on`: neither recorded by a breaker nor sampled by an adaptive limit (default: none).
    fn ignored(&self, error: &E) -> bool;
    /// The breaker's `record_on`: a failure (default: every `Err`).
    fn recorded(&self, error: &E) -> bool;
    /// The adaptive limit's `drop_on`: a drop (default: every `Err`).
    fn dropped(&self, error: &E) -> bool;
}

/// What every async attempt carries inward, whatever the pipeline puts beside it.
pub(crate) trait Inward: Copy {
    /// Whether waits (for a permit, a slot) can be awaited; if not, they block the polling thread
    /// (a registry clock that cannot sleep in a future).
    fn waits_async(&self) -> bool;

    /// Whether a guard outside watches this attempt's waits (a timeout over a bulkhead, SPEC §6),
    /// handed inward as it is unless a guard changes it.
    fn watched(&self) -> bool;
}

/// One guarding policy around one attempt. `C` is the async attempt's context on its way inward
/// ([`Inward`], plus what a pair of policies hands each other: the timeout's slot watch for a
/// bulkhead inside it).
///
/// The async form sits beside the impl, in the same file, as an inherent
/// `async fn guard_async(&self, judge, cx: C, reserved: Option<Self::Reserved>, call: impl
/// FnOnce(bool) -> Fut) -> Result<T, E>`: acquire (or use `reserved`), run the future `call` makes
/// (`call` takes whether the waits further in are watched, [`Inward::watched`]), record its
/// outcome; a dropped future records nothing. It is not a trait method because rustc cannot yet
/// prove such a future `Send` through a trait's `impl Future` return (a higher-ranked lifetime
/// error where a tower service boxes it); the pipeline's chains call it by name, from the list.
pub(crate) trait Guard<C> {
    /// What a tower service under backpressure takes for this guard in `poll_ready`, used by the
    /// attempt instead of asking (`Infallible` for a guard that reserves nothing).
    type Reserved;

    /// A blocking attempt: acquire (the thread may wait), run `call`, record its outcome.
    fn run<T, E>(&self, judge: &impl Judge<E>, call: impl FnOnce() -> Result<T, E>) -> Result<T, E>;
}

/// How an `Err` counts for a policy that learns from outcomes (the breaker's `Outcome`, the
/// adaptive limit's `Outcome`): the refusal inside it decides first ([`of_rejection`](Self::of_rejection)),
/// then `ignore_on` ([`IGNORED`](Self::IGNORED)), then the policy's own predicate
/// ([`COUNTED`](Self::COUNTED): a failure, a drop); anything else is a success.
pub(crate) trait ErrorOutcome: Sized {
    /// Not recorded, not sampled.
    const IGNORED: Self;
    /// A failure (breaker), a drop (adaptive limit).
    const COUNTED: Self;
    /// A success.
    const SUCCESS: Self;

    /// What a refusal inside the `Err` makes of it, or `None` to judge it by the patterns.
    fn of_rejection(rejection: &Rejection) -> Option<Self>;

    /// The rule, written once. The pattern checks run only when needed.
    #[inline]
    fn judge(rejection: Option<&Rejection>, ignored: impl FnOnce() -> bool, counted: impl FnOnce() -> bool) -> Self {
        match rejection.and_then(Self::of_rejection) {
            Some(outcome) => outcome,
            None if ignored() => Self::IGNORED,
            None if counted() => Self::COUNTED,
            None => Self::SUCCESS,
        }
    }
}
