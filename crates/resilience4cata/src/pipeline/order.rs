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
use crate::guard::Guard;
use crate::registry::for_each_pipeline_policy;
use crate::slot_watch::{AttemptCx, WaitRefusal};

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

    /// The context an async call through `steps` starts with: the bulkhead is watched by a
    /// timeout ordered outside it (SPEC §6), the one pair of steps that hand each other something.
    pub(super) fn start_cx<'a>(&'a self, steps: &[Step], watch: &'a SlotWatch) -> AttemptCx<'a> {
        let timeout = steps.iter().position(|s| *s == Step::Timeout);
        let bulkhead = steps.iter().position(|s| *s == Step::Bulkhead);
        let inside = matches!((timeout, bulkhead), (Some(t), Some(b)) if t < b);
        let inside_timeout = self
            .guards
            .as_ref()
            .and_then(|g| g.set.bulkhead.as_ref())
            .filter(|_| inside)
            .map(|b| b as &(dyn WaitRefusal + Sync));
        AttemptCx { waits_async: self.async_waits, watch, inside_timeout, watched: false }
    }
}

/// The step chains, from the list: the retry's loop, then one arm per guard, its [`Guard`] around
/// the rest of the steps.
macro_rules! step_chains {
    (retry: { $retry:ident: $retry_policy:ident($retry_builder:ident) as $retry_variant:ident, $($retry_rest:tt)* }
     hedge: $hedge:tt
     guards: [$({ $module:ident: $policy:ident($builder:ident) as $variant:ident, $($rest:tt)* })*]) => {
        impl<T, E, M> Pipeline<T, E, M> {
            /// A blocking call through `steps`, outermost first: recursion over the steps, the
            /// attempt behind a `&mut dyn FnMut`, nothing allocated.
            pub(super) fn run_steps(&self, steps: &[Step], f: &mut dyn FnMut() -> Result<T, E>) -> Result<T, E> {
                let Some((step, rest)) = steps.split_first() else {
                    return f();
                };
                match step {
                    Step::$retry_variant => {
                        let retry = self.retry.as_ref().expect("a retry step has a retry");
                        retry_loop!(self, retry, |call, wait| retry.wait_blocking(&call, wait), self.run_steps(rest, f))
                    }
                    $(Step::$variant => {
                        let guards = self.step_guards();
                        let guard = guards.set.$module.as_ref().expect("a step has its policy");
                        Guard::<AttemptCx<'_>>::run(guard, guards, || self.run_steps(rest, f))
                    })*
                }
            }

            /// An async call through `steps`, outermost first: one generic `async fn` over the
            /// step slice, calling itself for the next depth in a `Box` of its concrete type (no
            /// `dyn`), so the future is `Send` exactly when the caller's futures are; one
            /// allocation per layer entered, the innermost call excepted. `cx` carries the
            /// timeout's watch to a bulkhead ordered inside it. `reserved` holds what a tower
            /// service under backpressure took in `poll_ready` for this attempt: each guard uses
            /// its own instead of asking (it is empty everywhere else); what is left when the call
            /// ends (a breaker or limit ordered outside refused it) is given back as it drops.
            pub(super) async fn run_steps_async<F, Fut>(
                &self,
                steps: &[Step],
                f: &mut F,
                reserved: &mut Reserved,
                cx: AttemptCx<'_>,
            ) -> Result<T, E>
            where
                F: FnMut() -> Fut,
                Fut: Future<Output = Result<T, E>>,
            {
                let Some((step, rest)) = steps.split_first() else {
                    return f().await;
                };
                // The next depth, boxed: unboxed, each depth's future would hold the next one
                // (twice where it is moved into a timeout), and the chain outgrows a thread's
                // stack. The innermost call is not boxed.
                macro_rules! inner {
                    ($cx:expr) => {
                        if rest.is_empty() { f().await } else { Box::pin(self.run_steps_async(rest, f, reserved, $cx)).await }
                    };
                }
                match step {
                    Step::$retry_variant => {
                        let retry = self.retry.as_ref().expect("a retry step has a retry");
                        retry_loop!(self, retry, |call, wait| self.wait_async(retry, &call, wait).await, {
                            // Each attempt its own watch, unless a timeout outside the retry took it.
                            let watch = SlotWatch::new();
                            inner!(if cx.watched { cx } else { AttemptCx { watch: &watch, ..cx } })
                        })
                    }
                    $(Step::$variant => {
                        let guards = self.step_guards();
                        let guard = guards.set.$module.as_ref().expect("a step has its policy");
                        let mine = reserved.$module.take();
                        guard.guard_async(guards, cx, mine, |watched| async move { inner!(AttemptCx { watched, ..cx }) }).await
                    })*
                }
            }
        }
    };
}

for_each_pipeline_policy!(step_chains);

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
