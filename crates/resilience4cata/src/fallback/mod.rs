//! Fallback: answer a failed call another way, once, after every other policy has given up.
//!
//! Use it when a degraded answer beats an error: a cached price, an empty recommendation list, a
//! default quota. It is the outermost layer (SPEC §6), so it sees the call's *final* outcome: the
//! last `Err` after the retry ran out or stopped, and the policies' refusals too (an open breaker,
//! a full bulkhead, a timeout), carried in `E`. An `Ok` never reaches it.
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use resilience4cata::testing::{self, ManualClock};
//! use resilience4cata::{FallbackContext, resilient};
//!
//! #[derive(Clone, Debug, PartialEq)]
//! pub enum PriceError { Unavailable, UnknownSku }
//!
//! #[resilient]
//! pub trait Prices {
//!     #[retry(max_attempts = 3, delay = "0")]
//!     #[fallback(method = cached_price, skip_on = PriceError::UnknownSku)]
//!     fn price(&self, sku: &str) -> Result<u32, PriceError>;
//!
//!     fn cached_price(&self, sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError>;
//! }
//!
//! struct Backend(AtomicU32);
//! impl Prices for Backend {
//!     fn price(&self, sku: &str) -> Result<u32, PriceError> {
//!         self.0.fetch_add(1, Ordering::Relaxed);
//!         if sku == "sku-1" { Err(PriceError::Unavailable) } else { Err(PriceError::UnknownSku) }
//!     }
//!     fn cached_price(&self, _sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError> {
//!         assert_eq!(ctx.attempts(), 3);
//!         Ok(99)
//!     }
//! }
//!
//! let clock = ManualClock::new();
//! let prices = ResilientPrices::new(Backend(AtomicU32::new(0)), &testing::registry(&clock).build()?)?;
//! assert_eq!(prices.price("sku-1"), Ok(99));                      // 3 attempts, then the cache
//! assert_eq!(prices.price("nope"), Err(PriceError::UnknownSku)); // skipped: returned unchanged
//! # Ok::<(), resilience4cata::RegistryError>(())
//! ```
//!
//! # Rules
//! - `method` names a method of the same trait taking the same parameters plus a last
//!   [`FallbackContext<E>`](crate::FallbackContext), with the same return type and the same form
//!   (sync or async). It is called through the wrapper (`<Self as Trait>::method(self, …)`), so a
//!   fallback method with its own attributes is protected by them (in the class style: a method
//!   of the same `impl` block). A method that is not in the trait (or the block) is `R4C-SIG-030`, another signature `R4C-SIG-031`, the method itself (or a chain of
//!   fallbacks leading back to it) `R4C-SIG-032`.
//! - It runs once, when the final `Err` matches `apply_on` / `apply_on_if` (default: every `Err`)
//!   and not `skip_on` / `skip_on_if` (skip wins); its result is the call's result (a fallback that
//!   fails returns its own error). Any other `Err` is returned unchanged.
//! - It works with any `E`; [`FallbackContext::rejection`](crate::FallbackContext::rejection) is
//!   there when `E: ResilienceError`.
//! - Owned non-`Copy` arguments must be `Clone`: the call gets a copy, the fallback the original
//!   (`R4C-SIG-007` otherwise). References and `Copy` values cost nothing.
//! - It has no state, no handle and no configuration: `name`, `config` and `enabled` are unknown
//!   keys (`R4C-ATR-002`). `#[fallback]` on the trait itself is `R4C-ATR-010`: one method cannot
//!   serve every signature.
//! - The programmatic form is [`Pipeline::fallback`](crate::Pipeline::fallback) /
//!   [`Pipeline::fallback_async`](crate::Pipeline::fallback_async), with
//!   [`fallback_apply_on`](crate::Pipeline::fallback_apply_on) /
//!   [`fallback_skip_on`](crate::Pipeline::fallback_skip_on) as `apply_on` / `skip_on`.
//!
//! # Telemetry
//! | event | when | metric (feature `metrics`) |
//! |---|---|---|
//! | [`FallbackEvent::Applied`] `{ instance, attempts }` | the fallback is called | `resilience4cata_fallback_applied_total{instance}` |
//!
//! Published only when someone listens; with no listener, `tracing` or `metrics`, applying a
//! fallback allocates nothing and a successful call does not touch the fallback at all.

mod context;
mod events;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod policy;

pub use context::FallbackContext;
pub use events::FallbackEvent;
