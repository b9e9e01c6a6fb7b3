//! Hedge: when an attempt is slow to answer, start another beside it and take the first answer.
//!
//! TODO docs
mod config;
mod events;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod policy;
mod race;
mod snapshot;

pub use config::{HedgeConfig, HedgeConfigBuilder, MAX_HEDGED_ATTEMPTS};
pub use events::HedgeEvent;
pub use snapshot::HedgeSnapshot;
#[cfg(test)]
mod tests;
