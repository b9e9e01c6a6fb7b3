//! The mark an attempt under a timeout carries to the bulkhead inside it (SPEC §6), on the ground
//! floor because two policies read it: the bulkhead sets it while the attempt waits for a slot, the
//! timeout reads it when its deadline comes, and asks the bulkhead for its refusal
//! ([`WaitRefusal`]) instead of timing the attempt out.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::guard::Inward;
use crate::rejection::Rejection;

/// What an attempt under a timeout tells that timeout about its bulkhead slot (SPEC §6): whether
/// the attempt still waits for it.
///
/// The timeout sits outside the bulkhead in the default order, so the time an attempt spends
/// queueing for a slot runs on the timeout's clock. Queueing is a local matter, not the
/// dependency's slowness: when the timeout fires while the attempt still waits, the attempt ends
/// as [`Rejection::BulkheadFull`] (the bulkhead's refusal, which a circuit breaker does not record
/// and an adaptive limit does not sample), not as `CallTimeout`. The generated code (and the
/// pipeline) keep one `SlotWatch` beside the attempt, hand it to
/// `BulkheadPolicy::acquire_async_watched` and to the timeout's `run_pinned_watched`.
///
/// Cost: the pass path of the acquisition never touches it; only the wait for a slot sets it
/// (before the wait) and clears it (once the wait ends), and the timeout reads it only when it
/// fires.
#[derive(Debug, Default)]
pub struct SlotWatch {
    waiting: AtomicBool,
}

impl SlotWatch {
    /// A watch for one attempt: not waiting.
    #[inline(always)]
    pub const fn new() -> Self {
        SlotWatch { waiting: AtomicBool::new(false) }
    }

    /// Whether the attempt was waiting for its slot (read by the timeout when it fires; the
    /// attempt and the timeout run in one task, so `Relaxed` orders all they need).
    #[inline]
    pub(crate) fn is_waiting(&self) -> bool {
        self.waiting.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn set(&self, waiting: bool) {
        self.waiting.store(waiting, Ordering::Relaxed);
    }
}

/// The policy whose wait a [`SlotWatch`] marks (the bulkhead): its refusal of an attempt whose
/// timeout came while it still waited. The timeout names only this, never the bulkhead.
pub trait WaitRefusal {
    /// The refusal (`Rejection::BulkheadFull`): counted and published by the refusing policy.
    fn refuse_waiting(&self) -> Rejection;
}

/// One async attempt of a pipeline on its way inward: whether waits are awaited, and the
/// timeout/bulkhead pair. The pipeline makes a fresh `watch` for every attempt (and every retry
/// of one), so a timeout is entered at most once per watch.
#[derive(Clone, Copy)]
pub(crate) struct AttemptCx<'a> {
    /// Whether waits can be awaited (see [`Inward`]).
    pub(crate) waits_async: bool,
    /// This attempt's watch over its wait for a slot, for a timeout and the bulkhead inside it.
    pub(crate) watch: &'a SlotWatch,
    /// The bulkhead ordered inside the timeout, if any: a timeout runs its attempt watched then,
    /// and asks it for its refusal only when the deadline comes during the wait (so the dynamic
    /// call is off the pass path).
    pub(crate) inside_timeout: Option<&'a (dyn WaitRefusal + Sync)>,
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
