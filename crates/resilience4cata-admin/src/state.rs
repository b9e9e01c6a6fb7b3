//! What every route shares: the registry, the options, the admin's own counts and recorder.

use resilience4cata::{Registry, RegistrySnapshot};

use crate::counters::{Counts, SharedCounts};
use crate::exporter::Exporter;
use crate::options::AdminOptions;

/// The state behind one admin router.
#[derive(Debug)]
pub(crate) struct AdminState {
    pub(crate) registry: Registry,
    pub(crate) options: AdminOptions,
    pub(crate) exporter: Exporter,
    pub(crate) counts: SharedCounts,
    /// Dropped with the state: stops the counting task.
    pub(crate) stop_counting: std::sync::OnceLock<tokio::sync::oneshot::Sender<()>>,
}

impl AdminState {
    pub(crate) fn new(registry: Registry, options: AdminOptions) -> Self {
        AdminState {
            registry,
            options,
            exporter: Exporter::new(),
            counts: SharedCounts::default(),
            stop_counting: Default::default(),
        }
    }

    /// The counts so far, every registered instance of `snapshot` included (at 0 until counted).
    pub(crate) fn counts(&self, snapshot: &RegistrySnapshot) -> Counts {
        self.counts.get().with_registered(snapshot)
    }
}
