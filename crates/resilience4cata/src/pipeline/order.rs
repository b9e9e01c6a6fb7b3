//! [`Policy`] and a pipeline's non-default order (`.order([…])`, SPEC §6).
//!
//! A pipeline in the default order runs the fixed loop of `execute.rs` (retry outside the guards).
//! One built with `.order(…)` that changes the nesting runs its policies as a chain of [`Step`]s
//! instead: sync calls by recursion over the steps (the attempt behind a `&mut dyn FnMut`, nothing
//! allocated), async calls through one generic `async fn` over the steps, each depth awaiting the next
//! in a `Box` of its concrete type (no `dyn`), so the
//! future stays `Send` exactly when the caller's futures are; that is one allocation per layer
//! entered, the innermost call excepted.

use std::future::Future;

use super::Pipeline;
use super::guards::{Guards, Reserved};
use crate::bulkhead::policy::SlotWatch;
use crate::error::{RegistryError, codes};
use crate::registry::for_each_pipeline_policy;

/// The order's names, from the list (`for_each_pipeline_policy!`): [`Policy`] (the fallback, then
/// every policy of the list), [`Step`] (the retry and the guards), the default order and the
/// mapping from one to the other.
macro_rules! order_parts {
    (retry: { $retry:ident: $retry_policy:ident($retry_builder:ident) as $retry_variant:ident, $($retry_rest:tt)* }
     hedge: { $hedge:ident: $hedge_policy:ident($hedge_builder:ident) as $hedge_variant:ident, $($hedge_rest:tt)* }
     guards: [$({ $module:ident: $policy:ident($builder:ident) as $variant:ident, $($rest:tt)* })*]) => {
        /// A policy kind, for [`PipelineBuilder::order`](super::PipelineBuilder::order): the names
        /// `#[policy_order(…)]` takes, in the default order (outermost first).
        ///
        /// `#[non_exhaustive]`: a policy added to the crate gets its variant here, so a `match` over
        /// `Policy` outside this crate needs a `_` arm; naming the variants, as `.order([…])` does, is
        /// unaffected.
        ///
        /// ```
        /// use resilience4cata::{Pipeline, Policy, Registry};
        ///
        /// let registry = Registry::builder().build()?;
        /// // One timeout bounds the whole retried call instead of each attempt.
        /// let search = Pipeline::builder(&registry, "search")
        ///     .retry()
        ///     .timeout()
        ///     .order([Policy::Timeout, Policy::Retry])
        ///     .build::<u32, std::io::Error>()?;
        /// # let _ = search;
        /// # Ok::<(), resilience4cata::RegistryError>(())
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Policy {
            /// `#[fallback]`: always the outermost layer.
            Fallback,
            #[doc = concat!("`#[", stringify!($retry), "]`.")]
            $retry_variant,
            #[doc = concat!("`#[", stringify!($hedge), "]`.")]
            $hedge_variant,
            $(
                #[doc = concat!("`#[", stringify!($module), "]`.")]
                $variant,
            )*
        }

        /// One layer of a reordered pipeline: the policies that can move (the fallback is always
        /// outermost, applied by `execute` around the chain; a hedge is outermost inside it, each of its
        /// attempts running the steps).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(super) enum Step {
            $retry_variant,
            $($variant,)*
        }

        /// How many steps there are.
        const COUNT: usize = [Step::$retry_variant $(, Step::$variant)*].len();

        /// The default order of the steps (outermost first).
        const DEFAULT: [Step; COUNT] = [Step::$retry_variant $(, Step::$variant)*];

        impl Step {
            fn of(policy: Policy) -> Option<Step> {
                match policy {
                    Policy::$retry_variant => Some(Step::$retry_variant),
                    $(Policy::$variant => Some(Step::$variant),)*
                    Policy::Fallback | Policy::$hedge_variant => None,
                }
            }
        }
    };
}

for_each_pipeline_policy!(order_parts);

/// A reordered pipeline's steps, outermost first: at most one of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Steps {
    steps: [Step; COUNT],
    len: usize,
}

impl Steps {
    fn as_slice(&self) -> &[Step] {
        &self.steps[..self.len]
    }
}

/// Checks `.order(…)` (`R4C-REG-001` for a name twice, or `Fallback` anywhere but first) and
/// returns the steps of the policies present (`has`), when their order differs from the default:
/// the listed ones first, in the listed order, then the others in their default relative order.
/// A listed policy the pipeline does not have is ignored.
pub(super) fn resolve(id: &str, listed: &[Policy], has: impl Fn(Step) -> bool) -> Result<Option<Steps>, RegistryError> {
    for (i, policy) in listed.iter().enumerate() {
        if listed[..i].contains(policy) {
            let message = format!("`Policy::{policy:?}` listed twice in `.order(…)`: each policy at most once");
            return Err(RegistryError::new(codes::INVALID_COMBINATION, Some(id), message));
        }
        if *policy == Policy::Fallback && i != 0 {
            let message = "a fallback is always the outermost layer: list `Policy::Fallback` first or leave it out";
            return Err(RegistryError::new(codes::INVALID_COMBINATION, Some(id), message));
        }
    }
    let listed: Vec<Step> = listed.iter().filter_map(|p| Step::of(*p)).collect();
    let unlisted = DEFAULT.iter().copied().filter(|s| !listed.contains(s));
    let mut steps = Steps { steps: DEFAULT, len: 0 };
    for step in listed.iter().copied().chain(unlisted).filter(|s| has(*s)) {
        steps.steps[steps.len] = step;
        steps.len += 1;
    }
    let default: Vec<Step> = DEFAULT.iter().copied().filter(|s| has(*s)).collect();
    Ok((steps.as_slice() != default.as_slice()).then_some(steps))
}

/// The retry loop of a pipeline: `$attempt` (an expression of type `Result<T, E>`) once per
/// attempt, `$waited` (a `bool`: go again?) for each wait of `$wait`: `execute`'s loop (the fallback,
/// always outermost, is applied around the whole chain by `execute`), written once for the sync
/// chain and every depth of the async one.
macro_rules! retry_loop {
    ($pipeline:expr, $retry:expr, |$call:ident, $wait:ident| $waited:expr, $attempt:expr) => {{
        let retry = $retry;
        let mut $call = retry.start();
        loop {
            let outcome = match $attempt {
                // The generated `Ok(v) => break Ok(v)`: only the value moves, not the whole `Result`.
                Ok(value) if $pipeline.rules.accepts_every_ok() => break Ok(value),
                outcome => outcome,
            };
            let Some(failure) = $pipeline.rules.judge(&outcome) else {
                break outcome;
            };
            let again = match $pipeline.rules.next_wait(retry, &mut $call, failure, &outcome) {
                Some($wait) => $waited,
                None => false,
            };
            if !again {
                break $pipeline.rules.give_back(outcome);
            }
        }
    }};
}

impl<T, E, M> Pipeline<T, E, M> {
    /// The guards of a pipeline that has a step other than the retry (always there: such a
    /// pipeline's `build` required `E: ResilienceError`).
    fn step_guards(&self) -> &Guards<E> {
        self.guards.as_ref().expect("a pipeline with a breaker, limiter, timeout or bulkhead has guards")
    }

    /// A blocking call through `steps`, outermost first.
    pub(super) fn run_steps(&self, steps: &[Step], f: &mut dyn FnMut() -> Result<T, E>) -> Result<T, E> {
        let Some((step, rest)) = steps.split_first() else {
            return f();
        };
        match step {
            Step::Retry => {
                let retry = self.retry.as_ref().expect("a retry step has a retry");
                retry_loop!(self, retry, |call, wait| retry.wait_blocking(&call, wait), self.run_steps(rest, f))
            }
            Step::CircuitBreaker => {
                let guards = self.step_guards();
                let breaker = guards.set.circuit_breaker.as_ref().expect("a breaker step has a breaker");
                let permit = breaker.acquire().map_err(guards.wrap)?;
                let outcome = self.run_steps(rest, f);
                permit.record(guards.classify(&outcome));
                outcome
            }
            Step::RateLimiter => {
                let guards = self.step_guards();
                let limiter = guards.set.rate_limiter.as_ref().expect("a limiter step has a limiter");
                limiter.acquire().map_err(guards.wrap)?;
                self.run_steps(rest, f)
            }
            Step::AdaptiveLimit => {
                let guards = self.step_guards();
                let limit = guards.set.adaptive_limit.as_ref().expect("an adaptive limit step has a limit");
                let permit = limit.acquire().map_err(guards.wrap)?;
                let outcome = self.run_steps(rest, f);
                guards.sample(Some(permit), &outcome);
                outcome
            }
            Step::Bulkhead => {
                let guards = self.step_guards();
                let bulkhead = guards.set.bulkhead.as_ref().expect("a bulkhead step has a bulkhead");
                let slot = bulkhead.acquire().map_err(guards.wrap)?;
                let outcome = self.run_steps(rest, f);
                drop(slot);
                outcome
            }
            // A pipeline with a timeout is async-only (`M = AsyncOnly`): `execute` is not offered.
            Step::Timeout => unreachable!("a pipeline with a timeout has no blocking `execute`"),
        }
    }
}

/// An async call through `steps`, outermost first: one generic `async fn` over the step slice,
/// calling itself for the next depth in a `Box` of its concrete type (no `dyn`), so the future is
/// `Send` exactly when the caller's futures are; one allocation per layer entered, the innermost
/// call excepted. `watch` is the timeout's [`SlotWatch`] on its way to a bulkhead ordered inside it
/// (`None` elsewhere). `reserved` holds what a tower service under backpressure took in `poll_ready`
/// for this attempt: the rate limiter and bulkhead steps use it instead of asking (it is empty
/// everywhere else); what is left when the call ends (a breaker or limit ordered outside refused
/// it) is given back as it drops.
impl<T, E, M> Pipeline<T, E, M> {
    pub(super) async fn run_steps_async<F, Fut>(
        &self,
        steps: &[Step],
        f: &mut F,
        reserved: &mut Reserved,
        watch: Option<&SlotWatch>,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let Some((step, rest)) = steps.split_first() else {
            return f().await;
        };
        let waits_async = self.async_waits;
        // The next depth, boxed: unboxed, each depth's future would hold the next one
        // (twice where it is moved into a timeout), and the chain outgrows a thread's
        // stack. The innermost call is not boxed.
        // `$watch`: the timeout's `SlotWatch` for a bulkhead further in (SPEC §6),
        // passed through the steps between them.
        macro_rules! inner {
            ($watch:expr) => {
                if rest.is_empty() {
                    f().await
                } else {
                    Box::pin(self.run_steps_async(rest, f, reserved, $watch)).await
                }
            };
        }
        match step {
            Step::Retry => {
                let retry = self.retry.as_ref().expect("a retry step has a retry");
                retry_loop!(self, retry, |call, wait| self.wait_async(retry, &call, wait).await, inner!(watch))
            }
            Step::CircuitBreaker => {
                let guards = self.step_guards();
                let breaker = guards.set.circuit_breaker.as_ref().expect("a breaker step has a breaker");
                let permit = breaker.acquire().map_err(guards.wrap)?;
                let outcome = inner!(watch);
                permit.record(guards.classify(&outcome));
                outcome
            }
            Step::RateLimiter => {
                let guards = self.step_guards();
                let limiter = guards.set.rate_limiter.as_ref().expect("a limiter step has a limiter");
                if let Some(permit) = reserved.permit.take() {
                    permit.consume();
                } else {
                    let permit = if waits_async { limiter.acquire_async().await } else { limiter.acquire() };
                    permit.map_err(guards.wrap)?;
                }
                inner!(watch)
            }
            Step::AdaptiveLimit => {
                let guards = self.step_guards();
                let limit = guards.set.adaptive_limit.as_ref().expect("an adaptive limit step has a limit");
                let permit = if waits_async { limit.acquire_async().await } else { limit.acquire() };
                let permit = permit.map_err(guards.wrap)?;
                let outcome = inner!(watch);
                guards.sample(Some(permit), &outcome);
                outcome
            }
            Step::Timeout => {
                let guards = self.step_guards();
                let timeout = guards.set.timeout.as_ref().expect("a timeout step has a timeout");
                // A bulkhead further in: a deadline that comes while the attempt
                // still waits for its slot is the bulkhead's refusal (`SlotWatch`).
                let outcome = match guards.set.bulkhead.as_ref().filter(|_| rest.contains(&Step::Bulkhead)) {
                    Some(bulkhead) => {
                        let watch = SlotWatch::new();
                        timeout.run_watched(async { inner!(Some(&watch)) }, &watch, bulkhead).await
                    }
                    None => timeout.run(async { inner!(watch) }).await,
                };
                match outcome {
                    Ok(outcome) => outcome,
                    Err(rejection) => Err((guards.wrap)(rejection)),
                }
            }
            Step::Bulkhead => {
                let guards = self.step_guards();
                let bulkhead = guards.set.bulkhead.as_ref().expect("a bulkhead step has a bulkhead");
                if let Some(slot) = reserved.slot.take() {
                    let outcome = inner!(watch);
                    drop(slot);
                    return outcome;
                }
                let slot = match (waits_async, watch) {
                    (true, Some(watch)) => bulkhead.acquire_async_watched(watch).await,
                    (true, None) => bulkhead.acquire_async().await,
                    (false, _) => bulkhead.acquire(),
                };
                let slot = slot.map_err(guards.wrap)?;
                let outcome = inner!(watch);
                drop(slot);
                outcome
            }
        }
    }
}

impl Steps {
    /// The steps, outermost first.
    pub(super) fn get(&self) -> &[Step] {
        self.as_slice()
    }

    /// The steps but the retry, in their order: one attempt of the tower layer, which drives the
    /// retry itself (so a policy ordered outside the retry runs once per attempt there).
    pub(super) fn without_retry(&self) -> Steps {
        let mut steps = Steps { steps: DEFAULT, len: 0 };
        for step in self.as_slice().iter().filter(|s| **s != Step::Retry) {
            steps.steps[steps.len] = *step;
            steps.len += 1;
        }
        steps
    }
}
