//! The bulkhead's handle: one live instance, found with `Registry::bulkhead`.

use super::BulkheadSnapshot;
use super::policy::BulkheadPolicy;
use crate::kit::policy_handle;

policy_handle! {
    /// A live bulkhead instance, found with [`Registry::bulkhead`](crate::Registry::bulkhead): its
    /// id, and a snapshot of its configuration, the slots in flight and free, and the callers waiting.
    ///
    /// ```
    /// use resilience4cata::{Registry, resilient};
    ///
    /// #[resilient]
    /// pub trait Reports {
    ///     #[bulkhead(max_concurrent_calls = 4)]
    ///     fn render(&self, id: u64) -> Result<String, std::io::Error>;
    /// }
    ///
    /// struct Backend;
    /// impl Reports for Backend {
    ///     fn render(&self, id: u64) -> Result<String, std::io::Error> {
    ///         Ok(format!("report {id}"))
    ///     }
    /// }
    ///
    /// let registry = Registry::builder().build()?;
    /// let reports = ResilientReports::new(Backend, &registry)?;
    /// reports.render(1)?;
    /// let bulkhead = registry.bulkhead(concat!(module_path!(), "::Reports::render")).expect("built by `new`");
    /// let s = bulkhead.snapshot();
    /// assert_eq!((s.in_flight, s.available, s.waiting), (0, 4, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    BulkheadHandle for BulkheadPolicy => BulkheadSnapshot
}
