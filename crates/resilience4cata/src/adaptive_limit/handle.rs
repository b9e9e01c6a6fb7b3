//! The adaptive limit's handle: one live instance, found with `Registry::adaptive_limit`.

use super::AdaptiveLimitSnapshot;
use super::policy::AdaptiveLimitPolicy;
use crate::kit::policy_handle;

policy_handle! {
    /// A live adaptive limit instance, found with
    /// [`Registry::adaptive_limit`](crate::Registry::adaptive_limit): its id, and a snapshot of its
    /// configuration, current limit, calls in flight and calls waiting.
    ///
    /// ```
    /// use resilience4cata::{Registry, resilient};
    ///
    /// #[resilient]
    /// pub trait Search {
    ///     #[adaptive_limit(initial_limit = 4)]
    ///     fn query(&self, q: &str) -> Result<usize, std::io::Error>;
    /// }
    ///
    /// struct Backend;
    /// impl Search for Backend {
    ///     fn query(&self, q: &str) -> Result<usize, std::io::Error> {
    ///         Ok(q.len())
    ///     }
    /// }
    ///
    /// let registry = Registry::builder().build()?;
    /// let search = ResilientSearch::new(Backend, &registry)?;
    /// search.query("rust")?;
    /// let limit = registry.adaptive_limit(concat!(module_path!(), "::Search::query")).expect("built by `new`");
    /// let s = limit.snapshot();
    /// assert_eq!((s.limit, s.in_flight), (4, 0)); // 1 in flight × 2 < 4: not in use, no growth
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    AdaptiveLimitHandle for AdaptiveLimitPolicy => AdaptiveLimitSnapshot
}
