//! The closed state's window of recent outcomes: the last `window_size` calls (count) or the calls of
//! the last `window_size` seconds (time), kept lock-free.
//!
//! An outcome is a bit set: [`FAILED`], [`SLOW`], both, or neither (a fast success).
//!
//! **Count window.** A ring of one-byte slots, a `head` counting the outcomes placed since the window
//! was cleared, and one packed word of (failures, slow calls) in the ring. A fast success only adds
//! one to this thread's stripe of a striped counter (a plain load and store on a line no other
//! thread writes: no read-modify-write). A failure or slow call first places the successes counted
//! since the last placement (one `fetch_add` of their number on the head; their slots are only
//! written when the ring holds failures), then takes the next index and writes its slot. A slot is
//! swapped, and the packed word adjusted, only when the new outcome differs from the one it
//! replaces. Reading the window places pending successes first, so it holds `min(head,
//! window_size)` calls in the order they were recorded (exactly, for one thread; under concurrency,
//! successes recorded while a failure is being placed may land on either side of it).
//!
//! **Time window.** One bucket per second, `window_size` of them, each counter tagged with the
//! second it counts: the first outcome of a new second re-tags the bucket with a compare-and-set,
//! later ones `fetch_add`. Reading sums the buckets whose tag lies within the last `window_size`
//! seconds, so expired seconds drop out without anyone clearing them.
//!
//! Both are exact when used by one thread. Under concurrency the packed counters may, for the
//! nanoseconds between a slot's swap and the counter update, be off by the outcomes being recorded
//! at that instant; decoding clamps them into range, so a transient can never show more failures
//! than calls.

use crate::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use super::{CircuitBreakerConfig, WindowType};
use crate::stripes::StripedCounter;
use crate::sync::Live;

/// The outcome bit of a failed call.
pub(crate) const FAILED: u8 = 1;
/// The outcome bit of a slow call (a slow failure carries both bits).
pub(crate) const SLOW: u8 = 2;

const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// What a window (or the half-open probes) held at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) calls: u64,
    pub(crate) failed: u64,
    pub(crate) slow: u64,
}

/// The window of the configured type.
///
/// The fast successes' striped counter is the window's own, outside the shape, so the breaker's
/// fast success path reaches it without testing which window is configured (the state word
/// already says the fast path applies, see `state.rs`) and without loading the shape. The shape
/// (count or time, its size) sits in a [`Live`] cell the out-of-line paths load: a live update
/// replaces it ([`reshape`](Self::reshape), SPEC §16), a count window keeping its most recent
/// outcomes that fit.
#[derive(Debug)]
pub(crate) struct Window {
    /// Fast successes recorded into a count window (striped, no read-modify-write).
    successes: StripedCounter,
    shape: Live<Shape>,
}

/// A window's shape: the count ring or the time buckets.
#[derive(Debug)]
enum Shape {
    Count(CountWindow),
    Time(TimeWindow),
}

impl Shape {
    fn new(config: &CircuitBreakerConfig, successes: &StripedCounter) -> Self {
        match config.window_type {
            WindowType::Count => Shape::Count(CountWindow::new(config.window_size, successes.sum())),
            WindowType::Time => Shape::Time(TimeWindow::new(config.window_size)),
        }
    }
}

impl Window {
    pub(crate) fn new(config: &CircuitBreakerConfig) -> Self {
        let successes = StripedCounter::new();
        let shape = Live::new(Shape::new(config, &successes));
        Window { successes, shape }
    }

    /// A live update of `window_type` or `window_size` (SPEC §16): a count window of a new size
    /// keeps its most recent outcomes that fit; any other change starts an empty window of the new
    /// shape (a time window's seconds are not the count window's calls). Outcomes recorded into
    /// the old shape while it is copied may be lost; the state is untouched.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn reshape(&self, config: &CircuitBreakerConfig) {
        let old = self.shape.load();
        let next = match (&*old, config.window_type) {
            (Shape::Count(count), WindowType::Count) => {
                Shape::Count(count.resized(config.window_size, &self.successes))
            }
            _ => Shape::new(config, &self.successes),
        };
        self.shape.store(next);
    }

    /// Records a fast success into the count window, and nothing else: the caller knows the window
    /// is a count window and that no failure waits for `minimum_calls` (the state word says both).
    #[inline(always)]
    pub(crate) fn add_plain_success(&self) {
        self.successes.add_one();
    }

    /// Records one outcome at `now` (coarse nanoseconds; unused by a count window) and says whether
    /// the window should be judged now: after a failure or slow call, while failures wait for
    /// `minimum_calls`, or (time window) when a second starts.
    #[inline]
    pub(crate) fn record(&self, bits: u8, now: u64) -> bool {
        match &*self.shape.load() {
            Shape::Count(w) => w.record(&self.successes, bits),
            Shape::Time(w) => w.record(bits, now),
        }
    }

    /// The calls, failures and slow calls in the window as of `now`.
    pub(crate) fn tally(&self, now: u64) -> Tally {
        match &*self.shape.load() {
            Shape::Count(w) => w.tally(&self.successes),
            Shape::Time(w) => w.tally(now),
        }
    }

    /// Empties the window. Only called while no call can record into it (the breaker is changing
    /// state).
    pub(crate) fn clear(&self) {
        match &*self.shape.load() {
            Shape::Count(w) => w.clear(&self.successes),
            Shape::Time(w) => w.clear(),
        }
    }

    /// Tells the window what its last judgement saw: while failures or slow calls wait for
    /// `min_calls` (`minimum_calls`, as of the judgement), every record judges it. Returns whether
    /// they wait.
    pub(crate) fn note_judged(&self, tally: &Tally, min_calls: u64) -> bool {
        match &*self.shape.load() {
            Shape::Count(w) => note_pending(&w.pending, tally, min_calls),
            Shape::Time(w) => note_pending(&w.pending, tally, min_calls),
        }
    }
}

/// `a % d` without a division: Lemire's direct remainder with a 64-bit magic number, exact for
/// every `a < 2^44` when `d < 2^20` (callers keep their numerators in that range).
#[derive(Clone, Copy, Debug)]
struct FastMod {
    magic: u64,
    d: u64,
}

impl FastMod {
    fn new(d: u32) -> Self {
        let d = u64::from(d.max(1));
        FastMod { magic: (u64::MAX / d).wrapping_add(1), d }
    }

    #[inline]
    fn rem(self, a: u64) -> u64 {
        let low = self.magic.wrapping_mul(a);
        ((u128::from(low) * u128::from(self.d)) >> 64) as u64
    }
}

/// Numerators of [`FastMod`] stay below `2^44`: when the head reaches this index, the call that
/// took it moves the head back by a multiple of the window, which keeps every slot where it was.
const WRAP_AT: u64 = 1 << 43;

/// Biased halves of the packed (failures, slow) word, so a transiently negative half never
/// borrows from the other.
const BIAS: u64 = 1 << 31;
const PACKED_ZERO: u64 = BIAS | (BIAS << 32);

#[derive(Debug)]
pub(crate) struct CountWindow {
    head: CachePadded<AtomicU64>,
    counts: CachePadded<AtomicU64>,
    slots: Box<[AtomicU8]>,
    size: u64,
    modulo: FastMod,
    /// How many of the window's fast successes (`Window::successes`) are already placed into the
    /// ring.
    placed: CachePadded<AtomicU64>,
    /// Failures are waiting for `minimum_calls`: judge after every record until they are enough.
    pending: AtomicBool,
}

impl CountWindow {
    /// An empty ring of `size` slots; the fast successes counted so far (`placed`) are not in it.
    fn new(size: u32, placed: u64) -> Self {
        CountWindow {
            head: CachePadded::new(AtomicU64::new(0)),
            counts: CachePadded::new(AtomicU64::new(PACKED_ZERO)),
            slots: (0..size).map(|_| AtomicU8::new(0)).collect(),
            size: u64::from(size),
            modulo: FastMod::new(size),
            placed: CachePadded::new(AtomicU64::new(placed)),
            pending: AtomicBool::new(false),
        }
    }

    /// A ring of `size` slots holding this one's most recent outcomes that fit, in order (its
    /// pending fast successes placed first).
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    fn resized(&self, size: u32, successes: &StripedCounter) -> CountWindow {
        self.place_successes(successes);
        let next = CountWindow::new(size, self.placed.load(Ordering::SeqCst));
        let head = self.head.load(Ordering::SeqCst);
        let kept = head.min(self.size).min(next.size);
        for index in head - kept..head {
            let bits = self.slots[self.modulo.rem(index) as usize].load(Ordering::SeqCst);
            let at = next.advance(1);
            next.put(at, bits);
        }
        next
    }

    /// Records a fast success; says whether the window should be judged (failures wait for
    /// `minimum_calls`).
    #[inline]
    pub(crate) fn add_success(&self, successes: &StripedCounter) -> bool {
        successes.add_one();
        self.pending.load(Ordering::Relaxed)
    }

    #[inline]
    fn record(&self, successes: &StripedCounter, bits: u8) -> bool {
        if bits == 0 {
            return self.add_success(successes);
        }
        self.place_successes(successes);
        let index = self.advance(1);
        self.put(index, bits);
        true
    }

    /// Places the fast successes recorded since the last placement at the head of the ring, in one
    /// step: they all came before the outcome (or the reading) that places them.
    fn place_successes(&self, successes: &StripedCounter) {
        let total = successes.sum();
        let before = self.placed.fetch_max(total, Ordering::AcqRel);
        if total <= before {
            return;
        }
        let n = total - before;
        let start = self.advance(n);
        if self.counts.load(Ordering::SeqCst) == PACKED_ZERO {
            return; // the ring holds successes only: nothing to overwrite
        }
        for index in start + n.saturating_sub(self.size)..start + n {
            self.put(index, 0);
        }
    }

    /// Takes `n` consecutive indices; the call whose range reaches [`WRAP_AT`] moves the head back
    /// by a multiple of the window, which keeps every slot where it was.
    fn advance(&self, n: u64) -> u64 {
        let start = self.head.fetch_add(n, Ordering::SeqCst);
        if start < WRAP_AT && start + n >= WRAP_AT {
            self.head.fetch_sub(WRAP_AT / self.size * self.size, Ordering::SeqCst);
        }
        start
    }

    fn put(&self, index: u64, bits: u8) {
        let slot = &self.slots[self.modulo.rem(index) as usize];
        // Reading first keeps the slot's line shared when the outcome repeats: a read that finds
        // `bits` is a swap that changes nothing.
        if slot.load(Ordering::Relaxed) != bits {
            let old = slot.swap(bits, Ordering::AcqRel);
            if old != bits {
                self.counts.fetch_add(delta(old, bits), Ordering::SeqCst);
            }
        }
    }

    fn tally(&self, successes: &StripedCounter) -> Tally {
        self.place_successes(successes);
        let calls = self.head.load(Ordering::SeqCst).min(self.size);
        let counts = self.counts.load(Ordering::SeqCst);
        let half = |v: u64| (v & 0xFFFF_FFFF).saturating_sub(BIAS).min(calls);
        Tally { calls, failed: half(counts), slow: half(counts >> 32) }
    }

    fn clear(&self, successes: &StripedCounter) {
        for slot in self.slots.iter() {
            slot.store(0, Ordering::Relaxed);
        }
        self.counts.store(PACKED_ZERO, Ordering::SeqCst);
        self.head.store(0, Ordering::SeqCst);
        self.placed.store(successes.sum(), Ordering::SeqCst);
        self.pending.store(false, Ordering::Relaxed);
    }
}

/// Failures or slow calls short of `minimum_calls` make every later record judge the window, so
/// the success that reaches the minimum can open the breaker. Returns whether they wait.
fn note_pending(pending: &AtomicBool, tally: &Tally, min_calls: u64) -> bool {
    let waiting = tally.calls < min_calls && (tally.failed > 0 || tally.slow > 0);
    if pending.load(Ordering::Relaxed) != waiting {
        pending.store(waiting, Ordering::Relaxed);
    }
    waiting
}

/// The change of the packed (failures, slow) word when a slot goes from `old` to `new`.
fn delta(old: u8, new: u8) -> u64 {
    let part = |bit: u8| i64::from(new & bit != 0) - i64::from(old & bit != 0);
    (part(FAILED) + (part(SLOW) << 32)) as u64
}

/// One second of a time window: three counters, each tagged with its second (plus one, so that
/// zero means "never used").
#[derive(Debug, Default)]
struct Bucket {
    calls: AtomicU64,
    failed: AtomicU64,
    slow: AtomicU64,
}

const TAG_SHIFT: u32 = 32;
const COUNT_MASK: u64 = (1 << TAG_SHIFT) - 1;

#[derive(Debug)]
pub(crate) struct TimeWindow {
    buckets: Box<[Bucket]>,
    size: u64,
    modulo: FastMod,
    /// Failures are waiting for `minimum_calls`: judge after every record until they are enough.
    pending: AtomicBool,
}

impl TimeWindow {
    fn new(size: u32) -> Self {
        TimeWindow {
            buckets: (0..size).map(|_| Bucket::default()).collect(),
            size: u64::from(size),
            modulo: FastMod::new(size),
            pending: AtomicBool::new(false),
        }
    }

    #[inline]
    fn record(&self, bits: u8, now: u64) -> bool {
        let second = now / NANOS_PER_SECOND;
        let bucket = &self.buckets[self.modulo.rem(second) as usize];
        let tag = tag_of_second(second);
        let started_second = bump(&bucket.calls, tag);
        if bits & FAILED != 0 {
            bump(&bucket.failed, tag);
        }
        if bits & SLOW != 0 {
            bump(&bucket.slow, tag);
        }
        // A new second may have dropped old calls out of the window: judge once per second.
        bits != 0 || started_second || self.pending.load(Ordering::Relaxed)
    }

    fn tally(&self, now: u64) -> Tally {
        let newest = tag_of_second(now / NANOS_PER_SECOND);
        let live = |word: &AtomicU64| {
            let v = word.load(Ordering::SeqCst);
            let tag = v >> TAG_SHIFT;
            // A tag ahead of `newest` comes from a thread whose reading is a little later: count it.
            if tag != 0 && tag + self.size > newest { v & COUNT_MASK } else { 0 }
        };
        self.buckets.iter().fold(Tally::default(), |t, b| Tally {
            calls: t.calls + live(&b.calls),
            failed: t.failed + live(&b.failed),
            slow: t.slow + live(&b.slow),
        })
    }

    fn clear(&self) {
        for b in self.buckets.iter() {
            for word in [&b.calls, &b.failed, &b.slow] {
                word.store(0, Ordering::SeqCst);
            }
        }
        self.pending.store(false, Ordering::Relaxed);
    }
}

fn tag_of_second(second: u64) -> u64 {
    (second + 1) & COUNT_MASK
}

/// Adds one to a tagged counter; returns whether this call started the counter's second.
#[inline]
fn bump(word: &AtomicU64, tag: u64) -> bool {
    let mut current = word.load(Ordering::Acquire);
    loop {
        if current >> TAG_SHIFT >= tag {
            // Same second (or a reading a little ahead of ours): count here.
            word.fetch_add(1, Ordering::SeqCst);
            return false;
        }
        match word.compare_exchange_weak(current, (tag << TAG_SHIFT) | 1, Ordering::SeqCst, Ordering::Acquire) {
            Ok(_) => return true,
            Err(seen) => current = seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A count window with its own success counter and `minimum_calls`, as the breaker holds it.
    struct Count {
        ring: CountWindow,
        successes: StripedCounter,
        min: u64,
    }

    impl Count {
        fn record(&self, bits: u8) -> bool {
            self.ring.record(&self.successes, bits)
        }

        fn tally(&self) -> Tally {
            self.ring.tally(&self.successes)
        }

        fn note_judged(&self, t: &Tally) -> bool {
            note_pending(&self.ring.pending, t, self.min)
        }

        fn clear(&self) {
            self.ring.clear(&self.successes)
        }
    }

    fn count(size: u32, min: u64) -> Count {
        Count { ring: CountWindow::new(size, 0), successes: StripedCounter::new(), min }
    }

    fn tally(calls: u64, failed: u64, slow: u64) -> Tally {
        Tally { calls, failed, slow }
    }

    #[test]
    fn fast_mod_matches_the_remainder() {
        let mut rng = fastrand::Rng::with_seed(7);
        for d in [1u32, 2, 3, 7, 10, 100, 999, 65_536, 999_999, 1_000_000] {
            let m = FastMod::new(d);
            for a in [0, 1, u64::from(d) - 1, u64::from(d), WRAP_AT - 1, WRAP_AT, WRAP_AT + 12_345, (1 << 44) - 1] {
                assert_eq!(m.rem(a), a % u64::from(d), "{a} % {d}");
            }
            for _ in 0..10_000 {
                let a = rng.u64(..1 << 44);
                assert_eq!(m.rem(a), a % u64::from(d), "{a} % {d}");
            }
        }
    }

    /// Tallies like the state machine does after a judging record.
    fn judged(w: &Count) -> Tally {
        let t = w.tally();
        w.note_judged(&t);
        t
    }

    #[test]
    fn count_window_slides_over_the_last_calls() {
        let w = count(4, 4);
        assert!(w.record(FAILED));
        assert!(w.record(FAILED | SLOW));
        assert_eq!(judged(&w), tally(2, 2, 1));
        assert!(w.record(0), "failures wait for minimum_calls: judge the success too");
        assert_eq!(judged(&w), tally(3, 2, 1));
        assert!(w.record(0), "the fourth call reaches minimum_calls");
        assert_eq!(judged(&w), tally(4, 2, 1));
        assert!(!w.record(0), "enough calls: successes no longer judge");
        assert_eq!(w.tally(), tally(4, 1, 1), "that success replaced the first failure");
        w.record(0);
        assert_eq!(w.tally(), tally(4, 0, 0));
        w.record(SLOW);
        assert_eq!(w.tally(), tally(4, 0, 1));
    }

    #[test]
    fn successes_are_placed_in_order_before_the_failure_that_follows_them() {
        let w = count(3, 1);
        w.record(0);
        w.record(0);
        w.record(FAILED); // ring: S S F
        assert_eq!(w.tally(), tally(3, 1, 0));
        for _ in 0..2 {
            w.record(0);
        }
        assert_eq!(w.tally(), tally(3, 1, 0), "F is still the newest of three");
        w.record(0);
        assert_eq!(w.tally(), tally(3, 0, 0));
        for _ in 0..1_000 {
            w.record(0);
        }
        w.record(SLOW);
        assert_eq!(w.tally(), tally(3, 0, 1), "a long run of successes is placed without a scan");
    }

    #[test]
    fn count_window_clear_empties_it() {
        let w = count(3, 3);
        for _ in 0..5 {
            w.record(FAILED);
        }
        assert_eq!(w.tally(), tally(3, 3, 0));
        w.record(0); // counted before the clear: not in the new window
        w.clear();
        assert_eq!(w.tally(), Tally::default());
        w.record(0);
        assert_eq!(w.tally(), tally(1, 0, 0));
    }

    #[test]
    fn count_window_wraps_its_head_without_moving_slots() {
        let w = count(3, 3);
        w.ring.head.store(WRAP_AT - 1, Ordering::SeqCst);
        w.record(FAILED); // index WRAP_AT - 1
        w.record(0);
        w.record(FAILED); // places the success at WRAP_AT, which wraps
        w.record(0);
        w.record(0);
        w.record(FAILED);
        assert!(w.ring.head.load(Ordering::SeqCst) < WRAP_AT);
        assert_eq!(w.tally(), tally(3, 1, 0), "S S F: the ring order is intact");
        w.record(0);
        w.record(0);
        assert_eq!(w.tally(), tally(3, 1, 0), "F S S");
        w.record(0);
        assert_eq!(w.tally(), tally(3, 0, 0));
    }

    #[test]
    fn a_resized_count_window_keeps_its_most_recent_outcomes_that_fit() {
        let w = count(5, 1);
        for bits in [FAILED, 0, SLOW, 0, FAILED] {
            w.record(bits);
        }
        w.record(0); // a pending fast success: placed before the copy
        assert_eq!(w.tally(), tally(5, 1, 1), "F S S S F S, five kept: S SLOW S F S");
        let smaller = w.ring.resized(3, &w.successes);
        assert_eq!(smaller.tally(&w.successes), tally(3, 1, 0), "the newest three: S F S");
        let larger = w.ring.resized(8, &w.successes);
        assert_eq!(larger.tally(&w.successes), tally(5, 1, 1), "all five fit");
        w.successes.add_one(); // after the copy: counted by the new ring only
        assert_eq!(smaller.tally(&w.successes), tally(3, 1, 0), "S F S + S: F S S");
        smaller.record(&w.successes, 0);
        assert_eq!(smaller.tally(&w.successes), tally(3, 0, 0), "S S S");
    }

    #[test]
    fn delta_packs_both_halves() {
        let c = AtomicU64::new(PACKED_ZERO);
        c.fetch_add(delta(0, FAILED | SLOW), Ordering::SeqCst);
        c.fetch_add(delta(FAILED | SLOW, SLOW), Ordering::SeqCst);
        c.fetch_add(delta(SLOW, 0), Ordering::SeqCst);
        assert_eq!(c.load(Ordering::SeqCst), PACKED_ZERO);
        // A decrement applied before its increment does not borrow across halves.
        c.fetch_add(delta(FAILED, 0), Ordering::SeqCst);
        assert_eq!(c.load(Ordering::SeqCst) >> 32, BIAS);
    }

    const S: u64 = NANOS_PER_SECOND;

    #[test]
    fn time_window_expires_whole_seconds() {
        let w = TimeWindow::new(3);
        assert!(w.record(0, 0), "the first call of a second judges");
        assert!(!w.record(0, S / 2));
        assert!(w.record(FAILED, S));
        assert!(w.record(SLOW, 2 * S + 1));
        assert_eq!(w.tally(2 * S + 5), tally(4, 1, 1));
        // At 3 s the calls of second 0 leave the window; at 5 s everything has.
        assert_eq!(w.tally(3 * S), tally(2, 1, 1));
        assert_eq!(w.tally(4 * S), tally(1, 0, 1));
        assert_eq!(w.tally(5 * S), Tally::default());
    }

    #[test]
    fn time_window_reuses_buckets_of_expired_seconds() {
        let w = TimeWindow::new(2);
        w.record(FAILED, 0);
        w.record(FAILED, 0);
        w.record(0, 2 * S); // same bucket as second 0, which it re-tags
        assert_eq!(w.tally(2 * S), tally(1, 0, 0));
        w.record(FAILED, 3 * S);
        assert_eq!(w.tally(3 * S), tally(2, 1, 0));
    }

    #[test]
    fn time_window_judges_every_call_while_failures_wait_for_minimum_calls() {
        let w = TimeWindow::new(10);
        w.record(FAILED, 0);
        let t = w.tally(0);
        note_pending(&w.pending, &t, 3);
        assert!(w.record(0, 1), "pending failures: judge the success too");
        assert!(w.record(0, 2));
        note_pending(&w.pending, &w.tally(2), 3);
        assert!(!w.record(0, 3), "enough calls: successes no longer judge");
        w.clear();
        assert_eq!(w.tally(3), Tally::default());
    }

    #[test]
    fn concurrent_count_window_counts_add_up() {
        let w = std::sync::Arc::new(count(64, 64));
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let w = std::sync::Arc::clone(&w);
                std::thread::spawn(move || {
                    for i in 0..20_000u32 {
                        let bits = match (i + t) % 5 {
                            0 => FAILED,
                            1 => SLOW,
                            2 => FAILED | SLOW,
                            _ => 0,
                        };
                        w.record(bits);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // Quiescent: the packed counters equal what the slots hold.
        let t = w.tally();
        let slots: Vec<u8> = w.ring.slots.iter().map(|s| s.load(Ordering::SeqCst)).collect();
        let failed = slots.iter().filter(|&&b| b & FAILED != 0).count() as u64;
        let slow = slots.iter().filter(|&&b| b & SLOW != 0).count() as u64;
        assert_eq!(t, tally(64, failed, slow));
        assert_eq!(w.ring.head.load(Ordering::SeqCst), 80_000, "every success was placed");
    }
}
