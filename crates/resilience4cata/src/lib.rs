#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

#[doc(hidden)]
pub mod __private;
pub mod adaptive_limit;
pub mod bulkhead;
#[cfg(feature = "chaos")]
pub mod chaos;
pub mod circuit_breaker;
pub mod clock;
pub mod durations;
mod error;
pub mod events;
pub mod fallback;
mod fleet;
mod guard;
pub mod hedge;
mod kit;
#[cfg(feature = "metrics")]
mod metric_handles;
#[cfg(all(test, feature = "metrics"))]
mod metrics_counters;
mod pass_or;
pub mod pipeline;
mod policy_list;
pub mod presets;
pub mod rate_limiter;
pub mod readings;
mod registry;
mod rejection;
pub mod retry;
mod scope;
#[cfg(feature = "serde")]
mod serde_millis;
pub mod shared;
mod slot_watch;
#[cfg(test)]
mod stress;
mod stripes;
mod sync;
pub mod timeout;

pub use clock::Clock;
pub use durations::DurationsSnapshot;
pub use error::{RegistryError, codes};
pub use events::{ConfigEvent, Event, listener_panics};
pub use fallback::FallbackContext;
pub use pipeline::{AsyncPipeline, Pipeline, PipelineBuilder, Policy};
#[cfg(all(feature = "serde", feature = "tokio"))]
pub use registry::ConfigWatch;
#[cfg(feature = "serde")]
pub use registry::config_file::{PolicyTables, RegistryConfig};
pub use registry::{ConfigChange, Registry, RegistryBuilder, RegistrySnapshot, UnusedConfig};
pub use rejection::{Rejection, ResilienceError};
/// `#[resilient]` on a trait, and `#[derive(ResilienceError)]` (same name as the trait, like serde's
/// `Serialize`).
pub use resilience4cata_macros::{ResilienceError, bundle, resilient};
pub use retry::{Backoff, Budget, GiveUpReason, Jitter, RetryEvent, RetrySnapshot, Verdict};
pub use scope::{MethodIds, WrapperBuilder};

/// The names most code needs: `use resilience4cata::prelude::*;`.
pub mod prelude {
    pub use crate::{
        AsyncPipeline, Backoff, Budget, FallbackContext, GiveUpReason, Jitter, Pipeline, PipelineBuilder, Registry,
        RegistryBuilder, RegistryError, Rejection, ResilienceError, RetryEvent, RetrySnapshot, Verdict, resilient,
    };
}

/// Test support: a manual clock and a deterministic registry.
#[cfg(feature = "testing")]
pub mod testing {
    pub use crate::clock::manual::ManualClock;

    /// A registry builder on `clock` with a fixed jitter seed, so runs are deterministic: waits
    /// advance the manual clock and return at once, sync and async.
    ///
    /// ```
    /// use resilience4cata::testing::{self, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let registry = testing::registry(&clock).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn registry(clock: &ManualClock) -> crate::RegistryBuilder {
        crate::Registry::builder().clock(clock).jitter_seed(0x05EE_D0F4_CA7A)
    }
}

/// The README's examples, compiled and run as doctests so they cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// The examples of `docs/presets.md`, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/presets.md")]
pub struct PresetsDoctests;

/// The examples of `docs/bundles.md`, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/bundles.md")]
pub struct BundlesDoctests;
