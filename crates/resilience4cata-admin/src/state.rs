//! What every route shares: the registry, the options, the admin's own counts and recorder.

use resilience4cata::Registry;

use crate::AdminOptions;
use crate::counters::{Counts, SharedCounts};
use crate::metrics::Exporter;

/// The state behind one admin router.
#[derive(Debug)]
pub(crate) struct AdminState {
    pub(crate) registry: Registry,
    pub(crate) options: AdminOptions,
    pub(crate) exporter: Exporter,
    pub(crate) counts: SharedCounts,
}

impl AdminState {
    pub(crate) fn new(registry: Registry, options: AdminOptions) -> Self {
        AdminState { registry, options, exporter: Exporter::new(), counts: SharedCounts::default() }
    }

    /// The counts so far.
    pub(crate) fn counts(&self) -> Counts {
        self.counts.get()
    }
}
