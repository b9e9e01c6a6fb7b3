//! [`Preset`]: what [`PipelineBuilder::preset`](super::PipelineBuilder::preset) takes. The presets
//! themselves (their values, their reasons) live in `crate::presets`, above the pipeline, which
//! only knows the shape of one: for each policy the values to layer under the caller's overrides,
//! and the order.

use super::order::Policy;
use crate::bulkhead::BulkheadConfigBuilder;
use crate::circuit_breaker::CircuitBreakerConfigBuilder;
use crate::hedge::HedgeConfigBuilder;
use crate::retry::RetryConfigBuilder;
use crate::timeout::TimeoutConfigBuilder;

/// A stack of policies shipped by the crate, with its values and its order, for
/// [`PipelineBuilder::preset`](super::PipelineBuilder::preset): [`StandardHttp`](crate::presets::StandardHttp)
/// and [`HedgedHttp`](crate::presets::HedgedHttp). Sealed: the crate's presets are the ones whose
/// values are documented and tested against their `#[bundle(…)]` twins.
///
/// ```
/// use resilience4cata::{Pipeline, Registry, pipeline::Preset, presets};
///
/// fn client(registry: &Registry, id: &str, preset: impl Preset) -> Result<resilience4cata::AsyncPipeline<u32, std::io::Error>, resilience4cata::RegistryError> {
///     Pipeline::builder(registry, id).preset(preset).build()
/// }
/// let registry = Registry::builder().build()?;
/// client(&registry, "search", presets::HedgedHttp)?;
/// client(&registry, "orders", presets::StandardHttp)?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub trait Preset: sealed::PresetParts {}

pub(crate) mod sealed {
    /// The parts of a preset, out of the public interface.
    pub trait PresetParts {
        /// The preset's values per policy, and its order.
        fn layers(&self) -> super::PresetLayers;
    }
}

/// One preset's policies: the values of each (a policy the preset does not have is `None`) and
/// the order they nest in, outermost first. `pub` in a private module: it appears in the sealed
/// trait's method, and no one outside the crate can name it.
#[derive(Debug, Default)]
pub struct PresetLayers {
    pub(crate) retry: Option<RetryConfigBuilder>,
    pub(crate) hedge: Option<HedgeConfigBuilder>,
    pub(crate) circuit_breaker: Option<CircuitBreakerConfigBuilder>,
    pub(crate) bulkhead: Option<BulkheadConfigBuilder>,
    pub(crate) timeout: Option<TimeoutConfigBuilder>,
    pub(crate) order: Vec<Policy>,
}
