//! loom models of the adaptive limit's sample stripes and their fold (run with
//! `RUSTFLAGS="--cfg loom"`, see `docs/reliability.md`): every sample is folded exactly once, by
//! whichever fold runs after it was recorded, however recording and folding interleave.

use std::sync::Arc;

use loom::thread;

use super::window::{Sample, Stripes, Summary, Totals};
use crate::stripes::release_at_thread_end;
use crate::sync::Mutex;

/// What the folds took so far, behind the fold's lock as in the policy.
struct Folded {
    taken: Box<[Totals]>,
    count: u64,
    rtt_sum: u64,
    drops: u64,
}

struct Model {
    stripes: Stripes,
    folded: Mutex<Folded>,
}

impl Model {
    fn new(stripes: usize) -> Arc<Self> {
        let stripes = Stripes::new(stripes);
        let taken = stripes.taken();
        Arc::new(Model { stripes, folded: Mutex::new(Folded { taken, count: 0, rtt_sum: 0, drops: 0 }) })
    }

    /// A fold as a finishing call runs it: only if it wins the lock.
    fn try_fold(&self) {
        if let Ok(mut folded) = self.folded.try_lock() {
            self.fold_into(&mut folded);
        }
    }

    fn fold_into(&self, folded: &mut Folded) {
        let window: Summary = self.stripes.fold(&mut folded.taken);
        folded.count += window.count;
        folded.rtt_sum += window.rtt_sum;
        folded.drops += window.drops;
    }

    /// The last fold, once every thread is done: everything recorded must be in.
    fn check(&self, count: u64, rtt_sum: u64, drops: u64) {
        let mut folded = self.folded.lock().unwrap();
        self.fold_into(&mut folded);
        assert_eq!((folded.count, folded.rtt_sum, folded.drops), (count, rtt_sum, drops), "lost or counted twice");
    }
}

fn sample(rtt: u64, dropped: bool) -> Sample {
    Sample { rtt, in_flight: 1, dropped }
}

/// Two threads with stripes of their own record while folding; one more fold at the end.
#[test]
fn loom_no_sample_lost_or_counted_twice_across_a_fold() {
    loom::model(|| {
        let model = Model::new(2);
        let first = Arc::clone(&model);
        let a = thread::spawn(move || {
            first.stripes.record(sample(1, false));
            first.stripes.record(sample(2, true));
            first.try_fold();
            release_at_thread_end();
        });
        let second = Arc::clone(&model);
        let b = thread::spawn(move || {
            second.stripes.record(sample(10, false));
            second.try_fold();
            release_at_thread_end();
        });
        a.join().unwrap();
        b.join().unwrap();
        model.check(3, 13, 1);
    });
}

/// More threads than stripes: the one left over records on the shared overflow stripe, with the
/// fold racing both kinds of stripe.
#[test]
fn loom_the_overflow_stripe_loses_nothing_either() {
    loom::model(|| {
        let model = Model::new(1);
        let recorders: Vec<_> = [(1, false), (10, true)]
            .into_iter()
            .map(|(rtt, dropped)| {
                let model = Arc::clone(&model);
                thread::spawn(move || {
                    model.stripes.record(sample(rtt, dropped));
                    release_at_thread_end();
                })
            })
            .collect();
        let folder = Arc::clone(&model);
        let fold = thread::spawn(move || folder.try_fold());
        recorders.into_iter().for_each(|h| h.join().unwrap());
        fold.join().unwrap();
        model.check(2, 11, 1);
    });
}
