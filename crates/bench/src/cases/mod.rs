//! The cases, one module per policy. Each constructor builds its instance (outside the measurement)
//! and returns the closure that makes one protected call with an opaque input and an opaque output.
//!
//! Anchors are configured the way their documentation shows, with what the case needs and no more:
//! no listeners, no metrics, no tracing features.

/// Case constructors that differ only by the call they measure: in `cases! { make; $(fn name() ->
/// Ret = |it| call;)+ }` (each with its doc), every `name` is `pub fn name() -> Ret { let it =
/// make(); move || consume(call) }`.
macro_rules! cases {
    ($make:ident; $($(#[$attr:meta])* fn $name:ident() -> $ret:ty = |$it:ident| $call:expr;)+) => {
        $(
            $(#[$attr])*
            pub fn $name() -> $ret {
                let $it = $make();
                move || consume($call)
            }
        )+
    };
}

pub mod adaptive;
pub mod baseline;
pub mod breaker;
pub mod contended;
pub mod hedge;
pub mod keyed;
pub mod limits;
pub mod ours;
pub mod ours_class;
pub mod ours_fallback;
pub mod ours_guarded;
pub mod ours_ordered;
pub mod retry;
pub mod stack;
pub mod timeout;
pub mod user_shaped;

use resilience4cata::Registry;

/// A case's wrapper and its registry, kept together so the registry (and its coarse-clock ticker)
/// lives as long as the case.
struct Wrapped<T> {
    api: T,
    _registry: Registry,
}

impl<T> Wrapped<T> {
    /// The wrapper `make` builds on a default registry.
    fn new<E: std::fmt::Debug>(make: impl FnOnce(&Registry) -> Result<T, E>) -> Self {
        let registry = Registry::builder().build().expect("the default registry builds");
        let api = make(&registry).expect("every instance resolves");
        Wrapped { api, _registry: registry }
    }
}
