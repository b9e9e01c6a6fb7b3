//! resilience4cata: fault tolerance for services that call services.
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod clock;
mod error;
mod rejection;

pub use clock::Clock;
pub use error::{RegistryError, codes};
pub use rejection::{Rejection, ResilienceError};

/// Test support: a manual clock and a deterministic registry.
#[cfg(feature = "testing")]
pub mod testing {
    pub use crate::clock::ManualClock;
}
