//! A pipeline's injection point (feature `chaos`, SPEC §17): innermost, around each call of the
//! closure, under the pipeline's id. Built by `build`; a fault is made by name only where `build`
//! knew `E: ResilienceError` (a pipeline with a refusing policy), otherwise a configured fault is
//! `R4C-REG-003`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::chaos::policy::ChaosPolicy;
use crate::chaos::{ChaosConfigBuilder, Injection};
use crate::error::RegistryError;
use crate::registry::{Registered, Registry};

/// `E::from_variant_name`, and whether it knows a name: captured where `E: ResilienceError`.
pub(crate) type FaultsOf<E> = (fn(&str) -> Option<E>, fn(&str) -> bool);

/// The injection point and how to make `E` from a fault's name.
pub(crate) struct ChaosSite<E> {
    point: ChaosPolicy,
    make: fn(&str) -> Option<E>,
}

impl<E> Clone for ChaosSite<E> {
    fn clone(&self) -> Self {
        ChaosSite { point: self.point.clone(), make: self.make }
    }
}

impl<E> ChaosSite<E> {
    /// The injection point of the pipeline `id`; `make` is `E::from_variant_name` where `build`
    /// knew `E: ResilienceError`.
    pub(crate) fn build(
        registry: &Registry,
        id: &str,
        is_async: bool,
        faults: Option<FaultsOf<E>>,
    ) -> Result<Self, RegistryError> {
        let point = <ChaosPolicy as Registered>::build(registry, id, None, None, is_async, ChaosConfigBuilder::new())?;
        let (make, has) = faults.unwrap_or((none, |_| false));
        Ok(ChaosSite { point: point.for_error_type(std::any::type_name::<E>(), has)?, make })
    }

    /// Whether injection is switched on: one relaxed load (the tower adapter's question).
    #[cfg(feature = "tower")]
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        self.point.is_on()
    }

    /// One blocking attempt through the injection point.
    #[inline(always)]
    pub(crate) fn run<T>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        match self.point.roll() {
            None => f(),
            Some(injection) => self.injected(injection, f),
        }
    }

    #[cold]
    #[inline(never)]
    fn injected<T>(&self, injection: Injection<'_>, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        injection.delay();
        match injection.fault(self.make) {
            Some(fault) => Err(fault),
            None => f(),
        }
    }

    /// One async attempt through the injection point: the closure is not called for a fault.
    #[inline(always)]
    pub(crate) fn run_async<T, Fut>(&self, f: impl FnOnce() -> Fut) -> ChaosAttempt<'_, Fut, E>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        match self.point.roll() {
            None => ChaosAttempt::Pass { fut: f() },
            Some(injection) => {
                let fault = injection.make_fault(self.make);
                let fut = if fault.is_some() { None } else { Some(f()) };
                ChaosAttempt::Injected { delay: injection.delay_boxed(), injection, fault, fut }
            }
        }
    }
}

/// No name makes a fault (an `E` not known to implement `ResilienceError`).
fn none<E>(_: &str) -> Option<E> {
    None
}

pin_project_lite::pin_project! {
    /// An async attempt through the injection point: the closure's future as is, or the injected
    /// delay followed by the fault or the closure's future.
    #[project = ChaosAttemptProj]
    pub(crate) enum ChaosAttempt<'a, Fut, E> {
        Pass { #[pin] fut: Fut },
        Injected {
            delay: Option<Pin<Box<dyn Future<Output = ()> + Send + 'a>>>,
            injection: Injection<'a>,
            fault: Option<E>,
            #[pin]
            fut: Option<Fut>,
        },
    }
}

impl<T, E, Fut: Future<Output = Result<T, E>>> Future for ChaosAttempt<'_, Fut, E> {
    type Output = Result<T, E>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        match self.project() {
            ChaosAttemptProj::Pass { fut } => fut.poll(cx),
            ChaosAttemptProj::Injected { delay, injection, fault, fut } => {
                if let Some(wait) = delay {
                    ready!(wait.as_mut().poll(cx));
                    *delay = None;
                }
                if let Some(fault) = fault.take() {
                    injection.fault_injected();
                    return Poll::Ready(Err(fault));
                }
                match fut.as_pin_mut() {
                    Some(fut) => fut.poll(cx),
                    None => Poll::Pending, // unreachable: no fault means the closure was called
                }
            }
        }
    }
}
