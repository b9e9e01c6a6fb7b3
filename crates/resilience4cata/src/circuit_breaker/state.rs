//! The lock-free state machine of one breaker instance.
//!
//! The state and its epoch share one `AtomicU64` (`epoch << 6 | flags | state`); every transition is
//! a compare-and-set that bumps the epoch, so exactly one thread wins it and publishes the event. A
//! call's [`Ticket`] carries the word it was admitted under: its outcome is recorded only while
//! that word's epoch and state are still current, so nothing from an earlier state leaks into a
//! later one.
//!
//! - Closed: an admitted call costs one load of the word; its outcome goes into the window, which
//!   is judged only when it could have crossed a threshold (see `window.rs`).
//! - The fast path: three flag bits make the common case one test and one compare. `NOT_FAST` is
//!   fixed for the instance (slow-call tracking, a time window, `enabled = false` or builder
//!   listeners: every word carries it or none does); `PENDING` is set on a closed word while
//!   failures wait for `minimum_calls` (a judgement sets or clears it with a compare-and-set that
//!   keeps the epoch; every transition drops it); `MARK` is set on tickets admitted off the fast
//!   path and never on the live word. `acquire` admits on the fast path when the word has no state
//!   code and neither flag (one masked test); `record` then takes the fast path exactly when the
//!   ticket's word still equals the live word, which implies: closed, a count window, no judgement
//!   due, no listener, same epoch. Everything else (a changed flag included) goes out of line and
//!   compares epoch and state only, so a ticket admitted before `PENDING` was set is still recorded.
//!   A breaker turned off by configuration admits every call unrecorded from the out-of-line path
//!   (its state word and the handle's controls work as before; they just never reach its calls).
//! - Open: the time it opened is kept beside the word, written (`fetch_max`, so it only moves
//!   forward) before the compare-and-set that publishes `Open`; the first call at or after
//!   `opened_at + wait_in_open` moves it to half-open. Refusals read the exact clock.
//! - Half-open: the probes' own tagged word (`half_open.rs`); the completion of the last probe
//!   closes or reopens.
//! - Entering Closed empties the window: the winner moves the word to an internal *changing* state
//!   (which refuses calls), clears, then publishes Closed. Manual controls wait for a change in
//!   progress to finish; automatic transitions never wait.
//!
//! The epoch check and the write into the window are two steps: an outcome can only slip into a
//! newer closed window if the breaker completes a whole transition into a fresh closed state in the
//! nanoseconds between them.

use crate::sync::Live;
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::half_open::{Done, Probes, Take};
use super::shared::{BreakerLink, RemoteOpen};
use super::window::{FAILED, SLOW, Tally, Window};
use super::{CircuitBreakerConfig, CircuitBreakerEvent, CircuitBreakerSnapshot, State, WindowType};
use crate::clock::{Timer, nanos};
use crate::events::{Publisher, publish};
use crate::rejection::Rejection;

/// How the breaker records one call's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// Counts as a success (an `Ok`, or an `Err` outside `record_on`).
    Success,
    /// Counts as a failure.
    Failure,
    /// Not recorded at all (`ignore_on`, or a local rejection of an inner policy); a half-open
    /// probe gives its permit back.
    Ignored,
}

impl Outcome {
    /// What a rejection carried by an `Err` decides before any pattern is consulted: local
    /// refusals (rate limiter, bulkhead, adaptive limit) are not recorded, a timeout and a nested
    /// breaker's refusal are failures (the dependency is slow or down); `None` for anything else.
    #[inline]
    pub fn of_rejection(rejection: Option<&Rejection>) -> Option<Outcome> {
        match rejection? {
            Rejection::RateLimitExceeded { .. }
            | Rejection::BulkheadFull { .. }
            | Rejection::LimitExceeded { .. }
            | Rejection::KeysExhausted { .. } => Some(Outcome::Ignored),
            Rejection::CallTimeout { .. } | Rejection::CallNotPermitted { .. } => Some(Outcome::Failure),
        }
    }

    /// Classifies an `Err`: its rejection first (see [`of_rejection`](Self::of_rejection)), then
    /// `ignore_on` (not recorded), then `record_on` (a failure); anything else counts as a success.
    /// The pattern checks run only when needed.
    #[inline]
    pub fn of_error(
        rejection: Option<&Rejection>,
        ignored: impl FnOnce() -> bool,
        recorded: impl FnOnce() -> bool,
    ) -> Outcome {
        <Outcome as crate::guard::ErrorOutcome>::judge(rejection, ignored, recorded)
    }
}

const CLOSED: u64 = 0;
const OPEN: u64 = 1;
const HALF_OPEN: u64 = 2;
const FORCED_OPEN: u64 = 3;
const DISABLED: u64 = 4;
/// Internal: a transition into Closed is clearing the window.
const CHANGING: u64 = 5;
const CODE_MASK: u64 = 0b111;
/// Flag of a closed word: failures or slow calls wait for `minimum_calls`, so every success must
/// judge the window (set and cleared by judgements, within one epoch; see `mark_pending`).
const PENDING: u64 = 1 << 3;
/// Flag fixed for the instance's life (every word carries it or none does): a closed call cannot
/// take the fast path, because slow-call tracking is on, the window counts time, the breaker is
/// turned off by configuration (`enabled = false`), or listeners were registered on the builder
/// (they hear every outcome: the out-of-line path publishes it).
const NOT_FAST: u64 = 1 << 4;
/// Flag of a ticket, never of the live word: the ticket was admitted off the fast path, so its
/// word never equals the live word and its outcome never takes the fast recording path.
const MARK: u64 = 1 << 5;
const EPOCH_SHIFT: u32 = 6;
/// A word with none of these bits is closed, has no failure waiting, and records successes on the
/// fast path: `acquire` tests them all at once, and a ticket issued there carries such a word.
const FAST_MASK: u64 = CODE_MASK | PENDING | NOT_FAST;

fn code(word: u64) -> u64 {
    word & CODE_MASK
}

fn epoch(word: u64) -> u64 {
    word >> EPOCH_SHIFT
}

/// The word of state `to` one epoch after `word` (keeps `NOT_FAST`, drops `PENDING`).
fn next(word: u64, to: u64) -> u64 {
    ((epoch(word) + 1) << EPOCH_SHIFT) | (word & NOT_FAST) | to
}

/// Whether `word` (live) is the state a ticket's word was admitted under: same epoch and state,
/// whatever the `PENDING` and `MARK` flags.
fn same_state(word: u64, ticket: u64) -> bool {
    // `NOT_FAST` too: a live update may flip it (keeping the epoch), and a ticket admitted before
    // is still of this state.
    (word ^ ticket) & !(PENDING | MARK | NOT_FAST) == 0
}

/// `slow_nanos` of a breaker without slow-call tracking.
const NO_SLOW: u64 = u64::MAX;

fn state_of(code: u64) -> State {
    match code {
        CLOSED => State::Closed,
        OPEN => State::Open,
        HALF_OPEN => State::HalfOpen,
        FORCED_OPEN => State::ForcedOpen,
        _ => State::Disabled,
    }
}

/// What an admitted call carries to its outcome: the state word it was admitted under (with `MARK`
/// unless it was admitted on the fast path) and, with slow-call tracking, the coarse time it
/// started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    word: u64,
    started: u64,
}

impl Ticket {
    /// The ticket of a breaker turned off by configuration: records nothing, releases nothing.
    pub(crate) const UNGUARDED: Ticket = Ticket { word: DISABLED | MARK, started: 0 };
}

/// The state word and the time of the last opening: read together, written rarely.
#[derive(Debug)]
struct Word {
    word: AtomicU64,
    opened_at: AtomicU64,
}

/// One breaker instance: shared by every method and pipeline with its id.
#[derive(Debug)]
pub(crate) struct CircuitBreakerState {
    word: CachePadded<Word>,
    window: Window,
    probes: Probes,
    not_permitted: CachePadded<AtomicU64>,
    pub(crate) instance: Arc<str>,
    /// The resolved configuration as of the last update: a judgement loads it once (its
    /// thresholds); what single decisions read is in the atomics below, each one whole value
    /// (SPEC §16, `reconfigure`).
    pub(crate) config: Live<CircuitBreakerConfig>,
    timer: Arc<Timer>,
    events: Publisher<CircuitBreakerEvent>,
    /// `enabled`, read off the fast path.
    enabled: AtomicBool,
    /// `slow_call_duration` in nanoseconds, [`NO_SLOW`] without slow-call tracking.
    slow_nanos: AtomicU64,
    /// Whether recording reads the coarse clock (slow-call tracking or a time window).
    reads_clock: AtomicBool,
    wait_nanos: AtomicU64,
    min_calls: AtomicU64,
    permitted: AtomicU64,
    /// `shared = true`: Opens go to the fleet, the fleet's come in, probes are capped fleet-wide.
    pub(crate) shared: Option<Arc<BreakerLink>>,
    /// When an Open applied from the fleet ends (0: the Open, if any, is this process's own).
    remote_until: AtomicU64,
}

impl CircuitBreakerState {
    pub(crate) fn new(
        instance: Arc<str>,
        config: CircuitBreakerConfig,
        timer: Arc<Timer>,
        events: Publisher<CircuitBreakerEvent>,
    ) -> Self {
        let reads_clock = reads_clock(&config);
        if reads_clock {
            timer.keep_coarse_fresh();
        }
        let first = if not_fast(&config, &events) { CLOSED | NOT_FAST } else { CLOSED };
        CircuitBreakerState {
            word: CachePadded::new(Word { word: AtomicU64::new(first), opened_at: AtomicU64::new(0) }),
            window: Window::new(&config),
            probes: Probes::new(),
            not_permitted: CachePadded::new(AtomicU64::new(0)),
            enabled: AtomicBool::new(config.enabled),
            slow_nanos: AtomicU64::new(config.slow_call_duration.map_or(NO_SLOW, nanos)),
            reads_clock: AtomicBool::new(reads_clock),
            wait_nanos: AtomicU64::new(nanos(config.wait_in_open)),
            min_calls: AtomicU64::new(u64::from(config.effective_minimum_calls())),
            permitted: AtomicU64::new(u64::from(config.permitted_calls_in_half_open)),
            instance,
            config: Live::new(config),
            timer,
            events,
            shared: None,
            remote_until: AtomicU64::new(0),
        }
    }

    /// A live update (SPEC §16): the state, its epoch and the window stay (a new `window_size`
    /// keeps the most recent outcomes that fit; a new `window_type` starts an empty window of the
    /// new type); a call admitted before is recorded; each threshold and duration applies from the
    /// next decision that reads it; `NOT_FAST` follows the new values on the live word.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn reconfigure(&self, config: CircuitBreakerConfig) {
        let old = self.config.load_full();
        if old.window_type != config.window_type || old.window_size != config.window_size {
            self.window.reshape(&config);
        }
        let reads_clock = reads_clock(&config);
        if reads_clock {
            self.timer.keep_coarse_fresh();
        }
        self.slow_nanos.store(config.slow_call_duration.map_or(NO_SLOW, nanos), Ordering::Relaxed);
        self.reads_clock.store(reads_clock, Ordering::Relaxed);
        self.wait_nanos.store(nanos(config.wait_in_open), Ordering::Relaxed);
        self.min_calls.store(u64::from(config.effective_minimum_calls()), Ordering::Relaxed);
        self.permitted.store(u64::from(config.permitted_calls_in_half_open), Ordering::Relaxed);
        self.enabled.store(config.enabled, Ordering::Relaxed);
        let flag = if not_fast(&config, &self.events) { NOT_FAST } else { 0 };
        self.config.store(config);
        // Last, once every value it stands for is stored: the fast path opens (or closes) here.
        loop {
            let word = self.settled();
            if word & NOT_FAST == flag {
                break;
            }
            let to = (word & !NOT_FAST) | flag;
            if self.word.word.compare_exchange(word, to, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                break;
            }
        }
    }

    /// Shares the breaker through `link` (`shared = true`).
    pub(crate) fn with_link(mut self, link: Arc<BreakerLink>) -> Self {
        self.shared = Some(link);
        self
    }

    fn load(&self) -> u64 {
        self.word.word.load(Ordering::Acquire)
    }

    /// Whether the live word carries `PENDING` (for the models).
    #[cfg(all(test, loom))]
    pub(crate) fn pending(&self) -> bool {
        self.load() & PENDING != 0
    }

    /// The current state (a transition into Closed in progress reads as Closed once it finishes).
    pub(crate) fn state(&self) -> State {
        state_of(code(self.settled()))
    }

    /// The word once no transition into Closed is in progress.
    fn settled(&self) -> u64 {
        loop {
            let word = self.load();
            if code(word) != CHANGING {
                return word;
            }
            std::thread::yield_now();
        }
    }

    /// Admits a call or refuses it. Closed on the fast path: one load and one test (a closed
    /// breaker off the fast path adds an out-of-line call, and a coarse clock load with slow-call
    /// tracking).
    #[inline]
    pub(crate) fn acquire(&self) -> Result<Ticket, Rejection> {
        let word = self.load();
        if word & FAST_MASK == 0 {
            return Ok(Ticket { word, started: 0 });
        }
        self.acquire_otherwise(word)
    }

    /// A ticket admitted off the fast path (marked: its outcome is recorded out of line).
    #[inline]
    fn ticket(&self, word: u64) -> Ticket {
        let started = if self.slow_nanos.load(Ordering::Relaxed) != NO_SLOW { self.timer.coarse_now() } else { 0 };
        Ticket { word: word | MARK, started }
    }

    #[cold]
    #[inline(never)]
    fn acquire_otherwise(&self, mut word: u64) -> Result<Ticket, Rejection> {
        if !self.enabled.load(Ordering::Relaxed) {
            return Ok(Ticket::UNGUARDED); // turned off by configuration: a plain call
        }
        loop {
            match code(word) {
                CLOSED | DISABLED => return Ok(self.ticket(word)),
                HALF_OPEN => match self.probes.try_take(epoch(word), self.permitted.load(Ordering::Relaxed)) {
                    Take::Granted if self.shared.as_ref().is_some_and(|link| !link.take_probe()) => {
                        self.probes.give_back(epoch(word)); // the fleet's probes are taken
                        return Err(self.refuse());
                    }
                    Take::Granted => return Ok(self.ticket(word)),
                    Take::Full => return Err(self.refuse()),
                    Take::Stale => {}
                },
                OPEN if self.wait_is_over() => {
                    if self.swap_state(word, HALF_OPEN)
                        && let Some(link) = &self.shared
                    {
                        link.half_opened();
                    }
                }
                _ => return Err(self.refuse()), // open and waiting, forced open, changing
            }
            word = self.load();
        }
    }

    /// Reads the exact clock: a refusal is never decided on a stale reading.
    fn wait_is_over(&self) -> bool {
        let remote_until = self.remote_until.load(Ordering::Acquire);
        if remote_until != 0 {
            return self.timer.now() >= remote_until;
        }
        let opened_at = self.word.opened_at.load(Ordering::Acquire);
        self.timer.now() >= opened_at.saturating_add(self.wait_nanos.load(Ordering::Relaxed))
    }

    #[cold]
    fn refuse(&self) -> Rejection {
        self.not_permitted.fetch_add(1, Ordering::Relaxed);
        self.events.refused();
        publish!(self.events, |m| m.not_permitted(), || CircuitBreakerEvent::CallNotPermitted {
            instance: Arc::clone(&self.instance),
            key: self.events.key()
        });
        Rejection::CallNotPermitted { instance: Arc::clone(&self.instance) }
    }

    /// Records the outcome of the call admitted with `ticket`. The common case, a success of a call
    /// admitted on the fast path (closed, a count window without slow-call tracking, no failure
    /// waiting for `minimum_calls`) while that word is still current, is one load and compare and
    /// one increment of this thread's success stripe, inlined into the caller; everything else is
    /// out of line. A ticket's word equals the live word only if it was admitted on the fast path
    /// (others carry `MARK`) and nothing changed since, not even `PENDING`: so the compare alone
    /// says the fast path applies, and that no judgement is due.
    #[inline]
    pub(crate) fn record(&self, ticket: Ticket, outcome: Outcome) {
        if outcome == Outcome::Success && ticket.word == self.load() {
            self.window.add_plain_success();
            #[cfg(feature = "metrics")]
            self.events.metrics().recorded(false, false);
            // No builder listener (else `NOT_FAST`): only a subscription or tracing may want it.
            if self.events.is_watched() {
                self.publish_recorded(0);
            }
            return;
        }
        self.record_otherwise(ticket, outcome);
    }

    #[inline(never)]
    fn record_otherwise(&self, ticket: Ticket, outcome: Outcome) {
        match code(ticket.word) {
            CLOSED => self.record_closed(ticket, outcome),
            HALF_OPEN => self.record_half_open(ticket, outcome),
            _ => {} // disabled: records nothing
        }
    }

    /// A call admitted with `ticket` ended without an outcome (panic, dropped future): a
    /// half-open probe gives its permit back; nothing is recorded.
    #[inline]
    pub(crate) fn release(&self, ticket: Ticket) {
        if code(ticket.word) == HALF_OPEN {
            self.probes.give_back(epoch(ticket.word));
        }
    }

    #[inline]
    fn record_closed(&self, ticket: Ticket, outcome: Outcome) {
        let now = if self.reads_clock.load(Ordering::Relaxed) { self.timer.coarse_now() } else { 0 };
        let Some(bits) = self.bits(ticket, outcome, now) else {
            return self.ignored();
        };
        if !same_state(self.load(), ticket.word) {
            return; // admitted under an earlier state
        }
        let judge = self.window.record(bits, now);
        self.recorded(bits);
        if judge {
            self.judge_closed(ticket.word, now);
        }
    }

    fn record_half_open(&self, ticket: Ticket, outcome: Outcome) {
        let now = if self.reads_clock.load(Ordering::Relaxed) { self.timer.coarse_now() } else { 0 };
        let Some(bits) = self.bits(ticket, outcome, now) else {
            self.probes.give_back(epoch(ticket.word));
            return self.ignored();
        };
        let word = ticket.word & !MARK;
        if self.load() != word {
            return;
        }
        let permitted = self.permitted.load(Ordering::Relaxed);
        let permitted = self.shared.as_ref().map_or(permitted, |link| link.probe_quota(permitted));
        match self.probes.complete(epoch(ticket.word), bits, permitted) {
            Done::Stale => {}
            Done::Counted => self.recorded(bits),
            Done::Last(tally) => {
                self.recorded(bits);
                if self.exceeds(&tally) {
                    self.open(word);
                } else if self.close(word, false)
                    && let Some(link) = &self.shared
                {
                    link.closed();
                }
            }
        }
    }

    /// The outcome bits, `None` when the outcome is not recorded.
    #[inline]
    fn bits(&self, ticket: Ticket, outcome: Outcome, now: u64) -> Option<u8> {
        let slow = match self.slow_nanos.load(Ordering::Relaxed) {
            NO_SLOW => 0,
            limit if now.saturating_sub(ticket.started) >= limit => SLOW,
            _ => 0,
        };
        match outcome {
            Outcome::Success => Some(slow),
            Outcome::Failure => Some(FAILED | slow),
            Outcome::Ignored => None,
        }
    }

    #[inline(always)]
    fn recorded(&self, bits: u8) {
        #[cfg(feature = "metrics")]
        self.events.metrics().recorded(bits & FAILED != 0, bits & SLOW != 0);
        if self.events.is_active() {
            self.publish_recorded(bits);
        }
    }

    #[cold]
    #[inline(never)]
    fn publish_recorded(&self, bits: u8) {
        let (instance, slow) = (Arc::clone(&self.instance), bits & SLOW != 0);
        self.events.emit(|| {
            if bits & FAILED != 0 {
                CircuitBreakerEvent::Failure { instance, key: self.events.key(), slow }
            } else {
                CircuitBreakerEvent::Success { instance, key: self.events.key(), slow }
            }
        });
    }

    fn ignored(&self) {
        publish!(self.events, |m| m.ignored(), || CircuitBreakerEvent::Ignored {
            instance: Arc::clone(&self.instance),
            key: self.events.key()
        });
    }

    /// Judges the closed window of the ticket's word `admitted`: opens if a rate reaches its
    /// threshold, and mirrors into the word whether failures wait for `minimum_calls`.
    #[cold]
    #[inline(never)]
    fn judge_closed(&self, admitted: u64, now: u64) {
        let tally = self.window.tally(now);
        let min_calls = self.min_calls.load(Ordering::Relaxed);
        let waiting = self.window.note_judged(&tally, min_calls);
        if tally.calls >= min_calls && self.exceeds(&tally) {
            // The word may differ from the ticket's by `PENDING` alone: open from the live one.
            let mut word = self.load();
            while same_state(word, admitted) && !self.open(word) {
                word = self.load();
            }
        } else {
            self.mark_pending(admitted, waiting);
        }
    }

    /// Sets (or clears) `PENDING` on the live word while it is still the closed state of the
    /// ticket's word `admitted`, so that successes take the out-of-line path (which judges) while
    /// failures wait for `minimum_calls`. A word with `NOT_FAST` never takes the fast path: the flag
    /// would change nothing there, and is left alone. Setting it changes the word but not its
    /// epoch: tickets admitted before are still recorded (out of line, by `same_state`).
    fn mark_pending(&self, admitted: u64, waiting: bool) {
        let mut word = self.load();
        while same_state(word, admitted) && word & NOT_FAST == 0 && (word & PENDING != 0) != waiting {
            let to = word ^ PENDING;
            match self.word.word.compare_exchange(word, to, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(seen) => word = seen,
            }
        }
    }

    /// Whether the failure rate or the slow-call rate reaches its threshold.
    fn exceeds(&self, t: &Tally) -> bool {
        let calls = t.calls as f64;
        let reaches = |n: u64, threshold: f64| n as f64 * 100.0 >= threshold * calls;
        let config = self.config.load();
        t.calls > 0
            && (reaches(t.failed, config.failure_rate_threshold) || reaches(t.slow, config.slow_call_rate_threshold))
    }

    /// Opens from exactly `from`; false if another thread moved first.
    fn open(&self, from: u64) -> bool {
        let now = self.timer.now();
        self.word.opened_at.fetch_max(now, Ordering::AcqRel);
        self.remote_until.store(0, Ordering::Release);
        let moved = self.swap_state(from, OPEN);
        if moved && let Some(link) = &self.shared {
            link.opened(now);
        }
        moved
    }

    /// Moves from exactly `from` to `to` (no preparation needed); false if another thread moved first.
    fn swap_state(&self, from: u64, to: u64) -> bool {
        let moved = self.word.word.compare_exchange(from, next(from, to), Ordering::AcqRel, Ordering::Acquire).is_ok();
        if moved {
            self.transitioned(code(from), to);
        }
        moved
    }

    /// Moves from exactly `from` to a fresh Closed state, emptying the window on the way.
    fn close(&self, from: u64, reset: bool) -> bool {
        let changing = next(from, CHANGING);
        if self.word.word.compare_exchange(from, changing, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return false;
        }
        self.window.clear();
        if reset {
            self.not_permitted.store(0, Ordering::Relaxed);
        }
        self.word.word.store((changing & !CODE_MASK) | CLOSED, Ordering::Release);
        self.transitioned(code(from), CLOSED);
        true
    }

    fn transitioned(&self, from: u64, to: u64) {
        if from != to {
            publish!(self.events, |m| m.transition(state_of(to)), || CircuitBreakerEvent::StateTransition {
                instance: Arc::clone(&self.instance),
                key: self.events.key(),
                from: state_of(from),
                to: state_of(to),
            });
        }
    }

    /// Refuses every call until `reset()`.
    pub(crate) fn force_open(&self) {
        self.manual(FORCED_OPEN);
    }

    /// Lets every call through unrecorded until `reset()`.
    pub(crate) fn disable(&self) {
        self.manual(DISABLED);
    }

    /// Closed, empty window, counters zero.
    pub(crate) fn reset(&self) {
        self.manual(CLOSED);
        self.events
            .emit(|| CircuitBreakerEvent::Reset { instance: Arc::clone(&self.instance), key: self.events.key() });
    }

    fn manual(&self, to: u64) {
        loop {
            let word = self.settled();
            let done = match to {
                CLOSED => self.close(word, true),
                _ if code(word) == to => true,
                _ => self.swap_state(word, to),
            };
            if done {
                return;
            }
        }
    }

    /// Closed with no failure or slow call in its window: forgetting it (a keyed instance's key,
    /// SPEC §15) loses nothing a later decision would read.
    pub(crate) fn at_rest(&self) -> bool {
        let word = self.settled();
        if code(word) != CLOSED {
            return false;
        }
        let tally = self.window.tally(self.timer.now());
        tally.failed == 0 && tally.slow == 0
    }

    pub(crate) fn snapshot(&self) -> CircuitBreakerSnapshot {
        let word = self.settled();
        let tally = match code(word) {
            CLOSED => self.window.tally(self.timer.now()),
            HALF_OPEN => self.probes.tally(epoch(word)),
            _ => Tally::default(),
        };
        let judged = code(word) == CLOSED && tally.calls >= self.min_calls.load(Ordering::Relaxed);
        let rate = |n: u64| judged.then(|| (n as f64 * 100.0 / tally.calls as f64) as f32);
        CircuitBreakerSnapshot {
            instance: Arc::clone(&self.instance),
            config: CircuitBreakerConfig::clone(&self.config.load()),
            state: state_of(code(word)),
            buffered_calls: tally.calls,
            failed_calls: tally.failed,
            slow_calls: tally.slow,
            not_permitted_calls: self.not_permitted.load(Ordering::Relaxed),
            failure_rate: rate(tally.failed),
            slow_call_rate: rate(tally.slow),
            keys: 0,
            evicted: 0,
            keys_exhausted: 0,
        }
    }
}

impl RemoteOpen for CircuitBreakerState {
    fn is_half_open(&self) -> bool {
        code(self.load()) == HALF_OPEN
    }

    fn open_left(&self) -> Option<Duration> {
        if code(self.settled()) != OPEN || self.remote_until.load(Ordering::Acquire) != 0 {
            return None; // not open, or open by the fleet's decision
        }
        let until = self.word.opened_at.load(Ordering::Acquire).saturating_add(self.wait_nanos.load(Ordering::Relaxed));
        let left = until.saturating_sub(self.timer.now());
        (left > 0).then(|| Duration::from_nanos(left))
    }

    fn close_remotely(&self) {
        loop {
            let word = self.settled();
            if !matches!(code(word), OPEN | HALF_OPEN) {
                return; // closed already, forced open or disabled
            }
            if self.close(word, false) {
                self.remote_until.store(0, Ordering::Release);
                return;
            }
        }
    }

    fn open_remotely(&self, remaining: Duration) {
        let now = self.timer.now();
        loop {
            let word = self.settled();
            if !matches!(code(word), CLOSED | HALF_OPEN) {
                return; // already open, forced open or disabled
            }
            self.word.opened_at.fetch_max(now, Ordering::AcqRel);
            self.remote_until.store(now.saturating_add(nanos(remaining)).max(1), Ordering::Release);
            if self.swap_state(word, OPEN) {
                return;
            }
        }
    }
}

/// Whether recording reads the coarse clock: slow-call tracking or a time window.
fn reads_clock(config: &CircuitBreakerConfig) -> bool {
    config.slow_call_duration.is_some() || config.window_type == WindowType::Time
}

/// Whether closed words carry `NOT_FAST`: a count window without slow-call tracking, turned on,
/// without builder listeners needs no clock, no outcome bits and (unless a subscription or
/// tracing wants it) no event for a success, so its closed words leave `NOT_FAST` clear.
fn not_fast(config: &CircuitBreakerConfig, events: &Publisher<CircuitBreakerEvent>) -> bool {
    reads_clock(config) || !config.enabled || events.has_listeners()
}
