//! The rate limiter's handle: one live instance, found with `Registry::rate_limiter`.

use super::RateLimiterSnapshot;
use super::policy::RateLimiterPolicy;
use crate::kit::policy_handle;

policy_handle! {
    /// A live rate limiter instance, found with [`Registry::rate_limiter`](crate::Registry::rate_limiter):
    /// its id, and a snapshot of its configuration and the permits available right now.
    ///
    /// ```
    /// use resilience4cata::testing::ManualClock;
    /// use resilience4cata::{Registry, Rejection, ResilienceError, resilient};
    ///
    /// #[resilient]
    /// pub trait Quotes {
    ///     #[rate_limiter(permits = 2, period = "1s")]
    ///     fn quote(&self, sku: &str) -> Result<u32, std::io::Error>;
    /// }
    ///
    /// struct Backend;
    /// impl Quotes for Backend {
    ///     fn quote(&self, _sku: &str) -> Result<u32, std::io::Error> {
    ///         Ok(7)
    ///     }
    /// }
    ///
    /// // A manual clock moves only when told to, so the example cannot refill between calls.
    /// let clock = ManualClock::new();
    /// let registry = Registry::builder().clock(&clock).build()?;
    /// let quotes = ResilientQuotes::new(Backend, &registry)?;
    /// quotes.quote("a")?;
    /// let limiter = registry.rate_limiter(concat!(module_path!(), "::Quotes::quote")).expect("built by `new`");
    /// assert_eq!(limiter.snapshot().available_permits, 1);
    /// quotes.quote("b")?;
    /// let refused = quotes.quote("c").unwrap_err();
    /// assert!(matches!(refused.rejection(), Some(Rejection::RateLimitExceeded { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    RateLimiterHandle for RateLimiterPolicy => RateLimiterSnapshot
}
