//! Chaos: inject faults and delays into calls, from configuration only, to test in staging that
//! the other policies hold (feature `chaos`, SPEC §17).
//!
//! With the feature, every method that has at least one policy, and every pipeline, has an
//! injection point innermost: inside the bulkhead, around the delegate. So every other policy sees
//! an injected fault or delay exactly as a real one: a retry retries the fault, a breaker counts
//! it, a timeout cuts a delay that is too long. Injection is configured only through
//! configuration, never by attributes, so code carries no chaos: the registry's builders
//! (`chaos_defaults(|c| …)`, `chaos_instance(id, |c| …)`), files (`[defaults.chaos]`,
//! `[instances."<method id>".chaos]`) and live updates. The injection point's id is the method's
//! derived id (scoped like any id), or the pipeline's.
//!
//! # Defaults
//! `enabled = false`, `fault_rate = 0`, no `fault`, `latency_rate = 0`, `latency = "0"`, `seed`
//! unset (the registry's seed mixed with the id: fixed under `testing::registry`).
//!
//! Keys: `fault_rate` and `latency_rate` are shares of calls between 0 and 1; `fault` names a unit
//! variant of the method's error type (`"Unavailable"`), which `#[derive(ResilienceError)]` makes
//! constructible by name ([`ResilienceError::from_variant_name`](crate::ResilienceError::from_variant_name)).
//! A name that is not a unit variant of an instance's error type, or any name for an error type
//! that has none by name (`std::io::Error`, a type without the derive, a retry-only pipeline's `E`
//! that is not known to implement `ResilienceError`), is `R4C-REG-003` naming the instance and
//! quoting the name, from the wrapper's `new` (or the pipeline's `build`), whether or not `enabled`
//! is set. A `fault_rate` above 0 without a `fault` is `R4C-REG-003` too. An injected fault does
//! not call the delegate; an injected delay starts the delegate `latency` late, on the registry's
//! clock (instant and exact on a `testing::ManualClock`).
//!
//! Each call draws from the instance's sequence: draw `n` depends only on the seed and `n`, so the
//! same seed gives the same sequence of faults and delays, in any registry.
//!
//! # Telemetry
//! [`ChaosEvent::FaultInjected`] and [`ChaosEvent::LatencyInjected`] (published when the delay
//! starts, even if a timeout cuts it short); counted in [`ChaosSnapshot`]
//! (`registry.snapshot().chaos()`) and, with `metrics`, as `resilience4cata_chaos_faults_total` and
//! `resilience4cata_chaos_latencies_total`.
//!
//! # Cost
//! Injection off: one relaxed load and one branch per call. Without the feature no injection code
//! exists: the generated code is token for token what it is without chaos.
//!
//! ```
//! use std::time::Duration;
//! use resilience4cata::testing::{self, ManualClock};
//! use resilience4cata::{Rejection, ResilienceError, resilient};
//!
//! #[derive(Debug, PartialEq, ResilienceError)]
//! pub enum StockError {
//!     Unavailable,
//!     #[rejection]
//!     Rejected(Rejection),
//! }
//!
//! #[resilient]
//! pub trait Inventory {
//!     #[retry(max_attempts = 3, delay = "100ms")]
//!     fn stock(&self, sku: &str) -> Result<u32, StockError>;
//! }
//!
//! struct Backend;
//! impl Inventory for Backend {
//!     fn stock(&self, _sku: &str) -> Result<u32, StockError> {
//!         Ok(7)
//!     }
//! }
//!
//! let clock = ManualClock::new();
//! let registry = testing::registry(&clock)
//!     .chaos_instance(concat!(module_path!(), "::Inventory::stock"), |c| {
//!         c.enabled(true).fault_rate(1.0).fault("Unavailable")
//!     })
//!     .build()?;
//! let inventory = ResilientInventory::new(Backend, &registry)?;
//! assert_eq!(inventory.stock("apple"), Err(StockError::Unavailable)); // every attempt faulted
//! assert_eq!(registry.snapshot().chaos()[0].faults, 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod config;
mod events;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod policy;
mod snapshot;
mod state;

pub use config::{ChaosConfig, ChaosConfigBuilder};
pub use events::ChaosEvent;
pub use policy::{ChaosPolicy, InjectAsync, Injection};
pub use snapshot::ChaosSnapshot;
