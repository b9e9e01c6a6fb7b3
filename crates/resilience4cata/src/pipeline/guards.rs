//! The policies inside the retry, around each attempt, in the generated code's order (docs/architecture.md,
//! "The path of one call"): the guards of the list (`for_each_pipeline_policy!`: circuit breaker →
//! rate limiter → adaptive limit → timeout → bulkhead) → the caller's call. Each guard is its
//! policy's [`Guard`] (`<policy>/guard.rs`: acquire, turn a refusal into `E` with
//! `E::from_rejection`, call inward, record), so the chain is written once here, nested from the
//! list, for a blocking and for an async attempt.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::rules::{FindRejection, Predicate};
use crate::Rejection;
use crate::bulkhead::policy::SlotWatch;
#[cfg(feature = "tower")]
use crate::circuit_breaker::policy::Outcome;
use crate::guard::{Guard, Judge};
use crate::registry::for_each_pipeline_policy;
use crate::slot_watch::{AttemptCx, WaitRefusal};

/// What a guard reserves for a tower service's next attempt ([`Guard::Reserved`]).
type ReservedFor<G> = <G as Guard<AttemptCx<'static>>>::Reserved;

/// One guard around a blocking attempt, if the pipeline has it.
#[inline(always)]
fn layer<G: Guard<AttemptCx<'static>>, T, E>(
    guard: Option<&G>,
    judge: &Guards<E>,
    inner: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    match guard {
        Some(guard) => guard.run(judge, inner),
        None => inner(),
    }
}

/// The blocking chain: each guard of the list around the next, the attempt innermost.
macro_rules! nest {
    ($guards:ident, $attempt:ident;) => {
        $attempt()
    };
    ($guards:ident, $attempt:ident; $first:ident $($rest:ident)*) => {
        layer($guards.set.$first.as_ref(), $guards, || nest!($guards, $attempt; $($rest)*))
    };
}

/// The async chain: each guard of the list (its `guard_async`) around the next, with its
/// reservation, the attempt innermost; unboxed, one future nested in the next, and no layer of
/// its own for a guard the pipeline does not have ([`Layer::Skip`]).
macro_rules! nest_async {
    ($guards:ident, $cx:expr, $attempt:ident;) => {{
        let _ = $cx;
        $attempt()
    }};
    ($guards:ident, $cx:expr, $attempt:ident; $first:ident $($rest:ident)*) => {{
        let cx = $cx;
        let inner = move |watched| nest_async!($guards, AttemptCx { watched, ..cx }, $attempt; $($rest)*);
        match $guards.set.$first.as_ref() {
            Some(guard) => Layer::Guard { future: guard.guard_async($guards, cx, $first, inner) },
            None => Layer::Skip { future: inner(cx.watched) },
        }
    }};
}

pin_project! {
    /// One level of the async chain: the guard's future around the rest, or the rest alone.
    #[project = LayerProj]
    enum Layer<G, S> {
        Guard { #[pin] future: G },
        Skip { #[pin] future: S },
    }
}

impl<O, G: Future<Output = O>, S: Future<Output = O>> Future for Layer<G, S> {
    type Output = O;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<O> {
        match self.project() {
            LayerProj::Guard { future } => future.poll(cx),
            LayerProj::Skip { future } => future.poll(cx),
        }
    }
}

/// The guards of the list, each present or not, in nesting order, their reservations, and the
/// two chains.
macro_rules! guard_set {
    (retry: $retry:tt hedge: $hedge:tt guards: [$({ $module:ident: $policy:ident($builder:ident) as $variant:ident, $($rest:tt)* })*]) => {
        $(use crate::$module::policy::$policy;)*

        /// The guarding policies a pipeline has, one slot per guard of the list.
        #[derive(Clone, Default)]
        pub(super) struct GuardSet {
            $(pub(super) $module: Option<$policy>,)*
        }

        impl GuardSet {
            /// Whether any guard is present.
            pub(super) fn any(&self) -> bool {
                false $(|| self.$module.is_some())*
            }

            /// How many guards are present.
            #[cfg(feature = "tower")]
            pub(super) fn count(&self) -> usize {
                0 $(+ usize::from(self.$module.is_some()))*
            }
        }

        impl fmt::Debug for GuardSet {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct("GuardSet")
                    $(.field(stringify!($module), &self.$module.as_ref().map($policy::instance)))*
                    .finish()
            }
        }

        /// What a tower service under backpressure took in `poll_ready` for its next call's first
        /// attempt (a rate limiter permit, a bulkhead slot: [`Guard::Reserved`]); empty everywhere
        /// else. What the attempt does not use (the breaker refused it) is given back as it drops.
        #[derive(Debug, Default)]
        pub(super) struct Reserved {
            $(pub(super) $module: Option<ReservedFor<$policy>>,)*
        }

        impl<E> Guards<E> {
            /// One blocking attempt through every guard the pipeline has (the thread may wait for a
            /// permit or a slot). A timeout is never here: it makes a pipeline async-only.
            #[inline]
            pub(super) fn run<T>(&self, attempt: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
                let guards = self;
                nest!(guards, attempt; $($module)*)
            }

            /// One async attempt through every guard the pipeline has (a dropped future records
            /// nothing, as in generated code). Waits block no thread, unless the registry's clock
            /// cannot wait in a future (`waits_async` false, see `Pipeline::execute_async`), in
            /// which case they block as in [`run`](Self::run). A permit or slot in `reserved` is
            /// used instead of asking the limiter or the bulkhead.
            pub(super) async fn run_async<T, Fut>(
                &self,
                attempt: impl FnOnce() -> Fut,
                waits_async: bool,
                reserved: Reserved,
            ) -> Result<T, E>
            where
                Fut: Future<Output = Result<T, E>>,
            {
                let watch = SlotWatch::new();
                // The default order: a bulkhead is always inside the timeout.
                let cx = AttemptCx { waits_async, watch: &watch, inside_timeout: self.set.bulkhead.as_ref().map(|b| b as &(dyn WaitRefusal + Sync)), watched: false };
                let Reserved { $($module),* } = reserved;
                let guards = self;
                nest_async!(guards, cx, attempt; $($module)*).await
            }
        }
    };
}

for_each_pipeline_policy!(guard_set);

/// The inner policies of a pipeline that has at least one, and how to put their refusals into `E`
/// (captured by `build`, where `E: ResilienceError` is required).
pub(super) struct Guards<E> {
    pub(super) set: GuardSet,
    pub(super) wrap: fn(Rejection) -> E,
    pub(super) find: FindRejection<E>,
    /// The breaker's `record_on` (default: every `Err`) and `ignore_on` (default: none).
    pub(super) record_on: Option<Predicate<E>>,
    pub(super) ignore_on: Option<Predicate<E>>,
    /// The adaptive limit's `drop_on` (default: every `Err`); `ignore_on` serves it too.
    pub(super) drop_on: Option<Predicate<E>>,
}

impl<E> Clone for Guards<E> {
    fn clone(&self) -> Self {
        Guards {
            set: self.set.clone(),
            wrap: self.wrap,
            find: self.find,
            record_on: self.record_on.clone(),
            ignore_on: self.ignore_on.clone(),
            drop_on: self.drop_on.clone(),
        }
    }
}

impl<E> fmt::Debug for Guards<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guards")
            .field("set", &self.set)
            .field("record_on", &self.record_on.is_some())
            .field("ignore_on", &self.ignore_on.is_some())
            .field("drop_on", &self.drop_on.is_some())
            .finish()
    }
}

/// The rules set on the pipeline, as every guard reads them.
impl<E> Judge<E> for Guards<E> {
    #[inline]
    fn refuse(&self, rejection: Rejection) -> E {
        (self.wrap)(rejection)
    }

    #[inline]
    fn rejection<'e>(&self, error: &'e E) -> Option<&'e Rejection> {
        (self.find)(error)
    }

    #[inline]
    fn ignored(&self, error: &E) -> bool {
        self.ignore_on.as_ref().is_some_and(|ignored| ignored(error))
    }

    #[inline]
    fn recorded(&self, error: &E) -> bool {
        self.record_on.as_ref().is_none_or(|recorded| recorded(error))
    }

    #[inline]
    fn dropped(&self, error: &E) -> bool {
        self.drop_on.as_ref().is_none_or(|dropped| dropped(error))
    }
}

impl<E> Guards<E> {
    /// The guards `build` resolved, with the error type's ways in and out.
    pub(super) fn new(set: GuardSet, wrap: fn(Rejection) -> E, find: FindRejection<E>) -> Self {
        Guards { set, wrap, find, record_on: None, ignore_on: None, drop_on: None }
    }

    /// The breaker, when it is the only inner policy: the tower adapter then runs each attempt
    /// unboxed, with an owned permit, as [`run_async`](Self::run_async) would.
    #[cfg(feature = "tower")]
    pub(super) fn only_breaker(&self) -> Option<&CircuitBreakerPolicy> {
        self.set.circuit_breaker.as_ref().filter(|_| self.set.count() == 1)
    }

    /// A refusal as `E`.
    #[cfg(feature = "tower")]
    pub(super) fn refuse(&self, rejection: Rejection) -> E {
        (self.wrap)(rejection)
    }

    /// The breaker's classification of an outcome (`circuit_breaker/guard.rs`), for the tower
    /// adapter's owned permit.
    #[cfg(feature = "tower")]
    pub(super) fn classify<T>(&self, outcome: &Result<T, E>) -> Outcome {
        crate::circuit_breaker::guard::classify(self, outcome)
    }
}
