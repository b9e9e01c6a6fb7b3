//! The bulkhead as a pipeline's [`Guard`]: a slot held while the call runs (or the one a tower
//! service reserved in `poll_ready`), and [`AttemptCx`], the context a pipeline's async attempt
//! carries inward, which hands a timeout's [`SlotWatch`] to the bulkhead inside it (SPEC §6).

use std::future::Future;

use super::policy::{BulkheadPolicy, OwnedBulkheadPermit, SlotWatch};
use crate::guard::{Guard, Inward, Judge};

/// One async attempt of a pipeline on its way inward: whether waits are awaited, and the
/// timeout/bulkhead pair. The pipeline makes a fresh `watch` for every attempt (and every retry
/// of one), so a timeout is entered at most once per watch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AttemptCx<'a> {
    /// Whether waits can be awaited (see [`Inward`]).
    pub(crate) waits_async: bool,
    /// This attempt's watch over its wait for a slot, for a timeout and the bulkhead inside it.
    pub(crate) watch: &'a SlotWatch,
    /// The bulkhead ordered inside the timeout, if any: a timeout runs its attempt watched then.
    pub(crate) inside_timeout: Option<&'a BulkheadPolicy>,
    /// Set by the timeout for what it runs: a timeout outside has taken `watch`, so the bulkhead
    /// marks it while it waits.
    pub(crate) watched: bool,
}

impl Inward for AttemptCx<'_> {
    #[inline(always)]
    fn waits_async(&self) -> bool {
        self.waits_async
    }

    #[inline(always)]
    fn watched(&self) -> bool {
        self.watched
    }
}

impl Guard<AttemptCx<'_>> for BulkheadPolicy {
    type Reserved = OwnedBulkheadPermit;

    /// The thread may wait up to the bulkhead's `max_wait`; the slot is held while `call` runs.
    #[inline]
    fn run<T, E>(&self, judge: &impl Judge<E>, call: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let slot = self.acquire().map_err(|rejection| judge.refuse(rejection))?;
        let outcome = call();
        drop(slot);
        outcome
    }
}

impl BulkheadPolicy {
    /// [`Guard::run`]'s async twin (see [`Guard`] for why it is not a trait method).
    // Not an `async fn`: its future holds the captured arguments once, where an `async fn` kept
    // them apart from its locals, and a pipeline nested in another's attempt grew by that.
    #[allow(clippy::manual_async_fn)]
    #[inline]
    pub(crate) fn guard_async<T, E, Fut>(
        &self,
        judge: &impl Judge<E>,
        cx: AttemptCx<'_>,
        reserved: Option<OwnedBulkheadPermit>,
        call: impl FnOnce(bool) -> Fut,
    ) -> impl Future<Output = Result<T, E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        async move {
            if let Some(slot) = reserved {
                let outcome = call(cx.watched()).await;
                drop(slot);
                return outcome;
            }
            let slot = match (cx.waits_async, cx.watched) {
                (true, true) => self.acquire_async_watched(cx.watch).await,
                (true, false) => self.acquire_async().await,
                (false, _) => self.acquire(),
            };
            let slot = slot.map_err(|rejection| judge.refuse(rejection))?;
            let outcome = call(cx.watched()).await;
            drop(slot);
            outcome
        }
    }
}
