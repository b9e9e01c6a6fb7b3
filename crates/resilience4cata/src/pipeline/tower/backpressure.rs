//! Backpressure through `poll_ready` (opt-in, [`PipelineLayer::backpressure`](super::PipelineLayer::backpressure)):
//! a service reserves its next call's rate limiter permit and bulkhead slot while being driven
//! ready, and hands them to that call's first attempt.

use std::task::{Context, Poll, ready};

use crate::bulkhead::policy::SlotWait;
use crate::pipeline::guards::{Guards, Reserved};
use crate::rate_limiter::policy::PermitWait;

/// One service's reservation: what it holds for its next call, and what it waits for. A clone of
/// the service starts with a fresh, empty one (tower: a clone is not ready).
#[derive(Debug, Default)]
pub(super) struct Backpressure {
    reserved: Reserved,
    permit_wait: Option<PermitWait>,
    slot_wait: Option<SlotWait>,
}

impl Backpressure {
    /// Ready once the pipeline's rate limiter permit and bulkhead slot are held, in the pipeline's
    /// order (the permit first, as an attempt takes them). A refusal (only after
    /// `Registry::shutdown`) is the service's error; a pipeline without either policy is ready at
    /// once. A registry clock that cannot wait in a future (the system clock without the `tokio`
    /// feature) cannot time a permit's wait here: the permit is then left to the attempt, as
    /// without backpressure, and only the slot is reserved.
    pub(super) fn poll_reserve<E>(
        &mut self,
        guards: &Guards<E>,
        waits_async: bool,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), E>> {
        if let Some(limiter) = guards.set.rate_limiter.as_ref().filter(|_| waits_async)
            && self.reserved.rate_limiter.is_none()
        {
            match ready!(limiter.poll_reserve(&mut self.permit_wait, cx)) {
                Ok(permit) => self.reserved.rate_limiter = Some(permit),
                Err(rejection) => return Poll::Ready(Err(guards.refuse(rejection))),
            }
        }
        if let Some(bulkhead) = &guards.set.bulkhead
            && self.reserved.bulkhead.is_none()
        {
            match ready!(bulkhead.poll_reserve(&mut self.slot_wait, cx)) {
                Ok(slot) => self.reserved.bulkhead = Some(slot),
                Err(rejection) => return Poll::Ready(Err(guards.refuse(rejection))),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// What the next call's first attempt uses (empty if `poll_ready` was not driven to ready).
    pub(super) fn take(&mut self) -> Reserved {
        std::mem::take(&mut self.reserved)
    }
}
