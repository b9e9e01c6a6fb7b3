//! The half-open probes: how many were let through, completed, failed and slow, in one atomic word
//! tagged with the half-open state's epoch.
//!
//! Layout (low to high): taken 12 bits, done 12, failed 12, slow 12, epoch tag 16. The word needs no
//! reset when the breaker turns half-open: a word tagged with an older epoch reads as zero, and the
//! first probe re-tags it. Every change is one compare-and-set, so exactly one completion sees the
//! last probe done and decides.

use crate::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use super::window::{FAILED, SLOW, Tally};

const FIELD_BITS: u32 = 12;
const FIELD_MASK: u64 = (1 << FIELD_BITS) - 1;
const TAKEN: u32 = 0;
const DONE: u32 = FIELD_BITS;
const FAILS: u32 = 2 * FIELD_BITS;
const SLOWS: u32 = 3 * FIELD_BITS;
const TAG: u32 = 4 * FIELD_BITS;
const TAG_MASK: u64 = 0xFFFF;

/// What recording a probe's outcome did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Done {
    /// The probes belong to another half-open state: nothing recorded.
    Stale,
    /// Recorded; other probes are still out.
    Counted,
    /// Recorded, and it was the last permitted probe: the tally of all of them.
    Last(Tally),
}

/// The answer to a request for a probe permit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Take {
    /// A permit was taken.
    Granted,
    /// Every permitted probe is taken: refuse.
    Full,
    /// The probes already belong to a later half-open state: the caller's view of the state is old.
    Stale,
}

#[derive(Debug)]
pub(crate) struct Probes {
    word: CachePadded<AtomicU64>,
}

fn field(word: u64, at: u32) -> u64 {
    (word >> at) & FIELD_MASK
}

fn tag(epoch: u64) -> u64 {
    epoch & TAG_MASK
}

/// Whether tag `a` was issued after tag `b` (tags wrap; epochs in flight are close together).
fn later(a: u64, b: u64) -> bool {
    let ahead = a.wrapping_sub(b) & TAG_MASK;
    ahead != 0 && ahead < TAG_MASK / 2
}

impl Probes {
    pub(crate) fn new() -> Self {
        Probes { word: CachePadded::new(AtomicU64::new(0)) }
    }

    /// Takes one of `permitted` probe permits of the half-open state of `epoch`.
    pub(crate) fn try_take(&self, epoch: u64, permitted: u64) -> Take {
        let mine = tag(epoch);
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            let theirs = current >> TAG;
            let base = if theirs == mine {
                current
            } else if later(theirs, mine) {
                return Take::Stale;
            } else {
                mine << TAG
            };
            if field(base, TAKEN) >= permitted {
                return Take::Full;
            }
            match self.word.compare_exchange_weak(current, base + (1 << TAKEN), Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Take::Granted,
                Err(seen) => current = seen,
            }
        }
    }

    /// Returns a permit whose call ended unrecorded (ignored, panicked or dropped).
    pub(crate) fn give_back(&self, epoch: u64) {
        self.update(epoch, |w| (field(w, TAKEN) > field(w, DONE)).then(|| w - (1 << TAKEN)));
    }

    /// Records a probe's outcome; the completion of the last of `permitted` probes gets their tally.
    pub(crate) fn complete(&self, epoch: u64, bits: u8, permitted: u64) -> Done {
        let add = (1 << DONE) + (u64::from(bits & FAILED != 0) << FAILS) + (u64::from(bits & SLOW != 0) << SLOWS);
        match self.update(epoch, |w| (field(w, DONE) < field(w, TAKEN)).then(|| w + add)) {
            None => Done::Stale,
            Some(after) if field(after, DONE) == permitted => Done::Last(tally_of(after)),
            Some(_) => Done::Counted,
        }
    }

    /// The completed probes of the half-open state of `epoch`.
    pub(crate) fn tally(&self, epoch: u64) -> Tally {
        let w = self.word.load(Ordering::Acquire);
        if w >> TAG == tag(epoch) { tally_of(w) } else { Tally::default() }
    }

    /// Applies `change` to the word if it belongs to `epoch`; returns the new word.
    fn update(&self, epoch: u64, change: impl Fn(u64) -> Option<u64>) -> Option<u64> {
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            if current >> TAG != tag(epoch) {
                return None;
            }
            let next = change(current)?;
            match self.word.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(next),
                Err(seen) => current = seen,
            }
        }
    }
}

fn tally_of(w: u64) -> Tally {
    Tally { calls: field(w, DONE), failed: field(w, FAILS), slow: field(w, SLOWS) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_are_limited_and_the_last_completion_decides() {
        let p = Probes::new();
        assert_eq!(p.try_take(5, 2), Take::Granted);
        assert_eq!(p.try_take(5, 2), Take::Granted);
        assert_eq!(p.try_take(5, 2), Take::Full);
        assert_eq!(p.complete(5, FAILED, 2), Done::Counted);
        assert_eq!(p.tally(5), Tally { calls: 1, failed: 1, slow: 0 });
        assert_eq!(p.complete(5, SLOW, 2), Done::Last(Tally { calls: 2, failed: 1, slow: 1 }));
    }

    #[test]
    fn a_given_back_permit_can_be_taken_again() {
        let p = Probes::new();
        assert_eq!(p.try_take(1, 1), Take::Granted);
        assert_eq!(p.try_take(1, 1), Take::Full);
        p.give_back(1);
        assert_eq!(p.try_take(1, 1), Take::Granted);
        assert_eq!(p.complete(1, 0, 1), Done::Last(Tally { calls: 1, failed: 0, slow: 0 }));
        p.give_back(1); // nothing outstanding: no effect
        assert_eq!(p.try_take(1, 1), Take::Full);
    }

    #[test]
    fn a_new_epoch_starts_from_zero_and_old_epochs_cannot_touch_it() {
        let p = Probes::new();
        assert_eq!(p.try_take(3, 1), Take::Granted);
        assert_eq!(p.try_take(7, 1), Take::Granted, "a later half-open state starts afresh");
        assert_eq!(p.try_take(3, 1), Take::Stale);
        assert_eq!(p.complete(3, FAILED, 1), Done::Stale);
        p.give_back(3);
        assert_eq!(p.tally(7), Tally::default());
        assert_eq!(p.try_take(7, 1), Take::Full);
        assert_eq!(p.tally(3), Tally::default());
    }

    #[test]
    fn tags_wrap() {
        assert!(later(0, TAG_MASK));
        assert!(!later(TAG_MASK, 0));
        let p = Probes::new();
        for epoch in [10, 0x7000, 0xE000, TAG_MASK, TAG_MASK + 1] {
            assert_eq!(p.try_take(epoch, 1), Take::Granted, "epoch {epoch:#x}");
        }
        assert_eq!(p.try_take(TAG_MASK, 1), Take::Stale);
    }

    #[test]
    fn concurrent_takes_never_exceed_permitted() {
        let p = std::sync::Arc::new(Probes::new());
        let granted: u64 = (0..4)
            .map(|_| {
                let p = std::sync::Arc::clone(&p);
                std::thread::spawn(move || (0..5_000).filter(|_| p.try_take(9, 10) == Take::Granted).count() as u64)
            })
            .map(|h| h.join().unwrap())
            .sum();
        assert_eq!(granted, 10);
    }
}
