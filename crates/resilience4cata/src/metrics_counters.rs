//! What the `metrics` unit tests read back: the counters a `DebuggingRecorder` saw, one place for
//! every policy's metrics test.

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

use crate::clock::ManualClock;
use crate::registry::Registry;

/// Runs `build` with a fresh `DebuggingRecorder` as this thread's recorder, so the handles it
/// registers count into that recorder from then on; returns what `build` returned and the
/// recorder's snapshotter.
pub(crate) fn recording<T>(build: impl FnOnce() -> T) -> (T, Snapshotter) {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    (metrics::with_local_recorder(&recorder, build), snapshotter)
}

/// [`recording`] around building a policy on a fresh registry over `clock`.
pub(crate) fn recording_on<T>(clock: &ManualClock, build: impl FnOnce(&Registry) -> T) -> (T, Snapshotter) {
    recording(|| build(&Registry::builder().clock(clock).build().unwrap()))
}

/// Every counter above zero: its name, its labels as `key=value`, its value.
pub(crate) struct Counters(Vec<(String, Vec<String>, u64)>);

impl Counters {
    /// The counters recorded so far.
    pub(crate) fn of(snapshotter: &Snapshotter) -> Counters {
        Counters(
            snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .filter_map(|(key, _, _, value)| match value {
                    DebugValue::Counter(n) if n > 0 => {
                        let labels = key.key().labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
                        Some((key.key().name().to_owned(), labels, n))
                    }
                    _ => None,
                })
                .collect(),
        )
    }

    /// The value of the counter `name` that carries every label of `labels` (`"key=value"`).
    pub(crate) fn get(&self, name: &str, labels: &[&str]) -> Option<u64> {
        self.0.iter().find(|(n, have, _)| n == name && labels.iter().all(|l| have.iter().any(|h| h == l))).map(|c| c.2)
    }
}
