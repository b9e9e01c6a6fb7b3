//! What the generated code's injection point needs (feature `chaos`): its construction under the
//! method's scoped derived id, and the autoref probe that makes the configured fault by name in
//! the method's error type, which may or may not implement `ResilienceError`.

use std::marker::PhantomData;

use crate::ResilienceError;
use crate::chaos::{ChaosConfigBuilder, ChaosPolicy};
use crate::error::RegistryError;
use crate::registry::{Registered, Registry};

/// Autoref specialisation over the method's error type `E`: `(&Faults::<E>::new()).maker()` is
/// `E::from_variant_name` when `E: ResilienceError`, else a maker that knows no name.
pub struct Faults<E>(PhantomData<fn() -> E>);

impl<E> Faults<E> {
    #[inline(always)]
    pub const fn new() -> Self {
        Faults(PhantomData)
    }
}

impl<E> Default for Faults<E> {
    fn default() -> Self {
        Faults::new()
    }
}

impl<E> ::core::fmt::Debug for Faults<E> {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        f.write_str("Faults")
    }
}

/// `E: ResilienceError`: its unit variants by name.
pub trait FaultsByName<E> {
    fn maker(&self) -> fn(&str) -> Option<E>;
    fn has(&self) -> fn(&str) -> bool;
}

impl<E: ResilienceError> FaultsByName<E> for Faults<E> {
    #[inline(always)]
    fn maker(&self) -> fn(&str) -> Option<E> {
        E::from_variant_name
    }

    fn has(&self) -> fn(&str) -> bool {
        |name| E::from_variant_name(name).is_some()
    }
}

/// Any other `E`: no name makes a fault.
pub trait NoFaultsByName<E> {
    fn maker(&self) -> fn(&str) -> Option<E>;
    fn has(&self) -> fn(&str) -> bool;
}

impl<E> NoFaultsByName<E> for &Faults<E> {
    #[inline(always)]
    fn maker(&self) -> fn(&str) -> Option<E> {
        |_| None
    }

    fn has(&self) -> fn(&str) -> bool {
        |_| false
    }
}

/// Builds (or finds) the injection point `id` (a method's scoped derived id) for a method whose
/// error type `E` has the unit variants `has` knows: `R4C-REG-003` if the configured fault is not
/// one of them, `R4C-REG-010` for an async method that may be delayed on a clock that cannot wait
/// in a future.
pub fn chaos_point<E>(
    registry: &Registry,
    id: &str,
    is_async: bool,
    has: fn(&str) -> bool,
) -> Result<ChaosPolicy, RegistryError> {
    <ChaosPolicy as Registered>::build(registry, id, None, None, is_async, ChaosConfigBuilder::new())?
        .for_error_type(::core::any::type_name::<E>(), has)
}

/// [`chaos_point`] for a method whose error type names an associated type of its trait
/// (`Self::Error`), unknown where the wrapper is built: the fault's name is not checked there, and
/// a name the type lacks injects nothing (never a panic).
pub fn chaos_point_unchecked(registry: &Registry, id: &str, is_async: bool) -> Result<ChaosPolicy, RegistryError> {
    <ChaosPolicy as Registered>::build(registry, id, None, None, is_async, ChaosConfigBuilder::new())
}
