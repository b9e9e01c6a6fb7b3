//! How a pipeline built with a non-default `.order([…])` runs its [`Step`]s (SPEC §6): sync calls by
//! recursion over the steps (the attempt behind a `&mut dyn FnMut`, nothing allocated), async calls
//! through one generic `async fn` over the steps, each depth awaiting the next in a `Box` of its
//! concrete type (no `dyn`), so the future stays `Send` exactly when the caller's futures are; that
//! is one allocation per layer entered, the innermost call excepted. The order itself (`Policy`,
//! `Step`, `Steps`, the default) is `order.rs`.

use std::future::Future;

use super::Pipeline;
use super::guards::{Guards, Reserved};
use super::order::Step;
use crate::bulkhead::policy::SlotWatch;
use crate::guard::Guard;
use crate::registry::for_each_pipeline_policy;
use crate::slot_watch::{AttemptCx, WaitRefusal};

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
