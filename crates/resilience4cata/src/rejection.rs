//! The policies' own refusals, and the trait that lets them travel inside a caller's error type.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A call refused by a policy: the method was not run (or, for a timeout, its attempt was dropped).
///
/// Each variant names the policy instance that refused, so a caller can tell which dependency or
/// limit is involved.
///
/// ```
/// use resilience4cata::Rejection;
///
/// let r = Rejection::CallNotPermitted { instance: "prices".into() };
/// assert_eq!(r.instance(), "prices");
/// assert!(r.is_call_not_permitted());
/// assert_eq!(r.to_string(), "circuit breaker `prices` is open: call not permitted");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rejection {
    /// The circuit breaker is open (or half-open with every probe taken, or forced open).
    CallNotPermitted {
        /// The breaker's instance id.
        instance: Arc<str>,
    },
    /// The rate limiter had no permit within its `max_wait`.
    RateLimitExceeded {
        /// The rate limiter's instance id.
        instance: Arc<str>,
        /// How long until the next permit frees up.
        retry_after: Duration,
    },
    /// The attempt did not finish within the timeout's `duration` and was dropped.
    CallTimeout {
        /// The timeout's instance id (always the derived id: a timeout has no name).
        instance: Arc<str>,
        /// The timeout that expired.
        timeout: Duration,
    },
    /// The bulkhead had no free slot within its `max_wait`.
    BulkheadFull {
        /// The bulkhead's instance id.
        instance: Arc<str>,
    },
    /// The adaptive concurrency limit was reached.
    LimitExceeded {
        /// The adaptive limit's instance id.
        instance: Arc<str>,
    },
    /// A keyed instance (SPEC §15) met a new key with `max_keys` keys in use and none of them at
    /// rest (nothing in flight or waiting, every limit fully replenished): it fails closed rather
    /// than forget a key whose limit still binds.
    ///
    /// ```
    /// use resilience4cata::Rejection;
    ///
    /// let r = Rejection::KeysExhausted { instance: "per-tenant".into() };
    /// assert!(r.is_local());
    /// assert_eq!(r.to_string(), "keyed instance `per-tenant` has `max_keys` keys in use, none at rest");
    /// ```
    KeysExhausted {
        /// The keyed instance's id.
        instance: Arc<str>,
    },
}

impl Rejection {
    /// The id of the policy instance that refused the call.
    pub fn instance(&self) -> &str {
        match self {
            Rejection::CallNotPermitted { instance }
            | Rejection::RateLimitExceeded { instance, .. }
            | Rejection::CallTimeout { instance, .. }
            | Rejection::BulkheadFull { instance }
            | Rejection::LimitExceeded { instance }
            | Rejection::KeysExhausted { instance } => instance,
        }
    }

    /// Whether this is an open circuit breaker's refusal, which a retry never retries.
    pub fn is_call_not_permitted(&self) -> bool {
        matches!(self, Rejection::CallNotPermitted { .. })
    }

    /// Whether this refusal is a local decision (rate limiter, bulkhead, adaptive limit) that says
    /// nothing about the dependency's health; a circuit breaker does not record these.
    pub fn is_local(&self) -> bool {
        matches!(
            self,
            Rejection::RateLimitExceeded { .. }
                | Rejection::BulkheadFull { .. }
                | Rejection::LimitExceeded { .. }
                | Rejection::KeysExhausted { .. }
        )
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::CallNotPermitted { instance } => {
                write!(f, "circuit breaker `{instance}` is open: call not permitted")
            }
            Rejection::RateLimitExceeded { instance, retry_after } => {
                write!(f, "rate limiter `{instance}` has no permit (next in {retry_after:?})")
            }
            Rejection::CallTimeout { instance, timeout } => write!(f, "`{instance}` timed out after {timeout:?}"),
            Rejection::BulkheadFull { instance } => write!(f, "bulkhead `{instance}` is full"),
            Rejection::LimitExceeded { instance } => write!(f, "adaptive limit `{instance}` reached"),
            Rejection::KeysExhausted { instance } => {
                write!(f, "keyed instance `{instance}` has `max_keys` keys in use, none at rest")
            }
        }
    }
}

impl std::error::Error for Rejection {}

/// An error type that can carry a [`Rejection`], so policies that refuse calls can return their
/// refusal through the method's own `Result<T, E>` and find it again further out.
///
/// Methods whose only policies are retry or fallback accept any error type; a method with a policy
/// that can refuse (circuit breaker, rate limiter, adaptive limit, timeout, bulkhead, hedge) needs
/// `E: ResilienceError`. Derive it for an enum with one variant marked `#[rejection]`:
///
/// ```
/// use resilience4cata::{Rejection, ResilienceError};
///
/// #[derive(Debug, ResilienceError)]
/// enum InventoryError {
///     Unavailable,
///     #[rejection]
///     Rejected(Rejection),
/// }
///
/// let e = InventoryError::from_rejection(Rejection::BulkheadFull { instance: "stock".into() });
/// assert!(matches!(e.rejection(), Some(Rejection::BulkheadFull { .. })));
/// assert!(InventoryError::Unavailable.rejection().is_none());
/// ```
///
/// Provided for `std::io::Error`, `Box<dyn Error + Send + Sync>` and, with the `anyhow` feature,
/// `anyhow::Error`.
#[diagnostic::on_unimplemented(
    message = "[R4C-SIG-010] `{Self}` does not implement `ResilienceError`, which this method's policies need to return their rejections",
    label = "this error type cannot carry a `Rejection`",
    note = "add a variant holding a `resilience4cata::Rejection`, mark it `#[rejection]` and `#[derive(ResilienceError)]`; or use `std::io::Error`, `Box<dyn Error + Send + Sync>` or `anyhow::Error` (feature `anyhow`)"
)]
pub trait ResilienceError {
    /// Wraps a policy's refusal into this error type.
    fn from_rejection(rejection: Rejection) -> Self;

    /// The refusal this error carries, if it is one.
    fn rejection(&self) -> Option<&Rejection>;

    /// The unit variant named `name`, if the type has one: how chaos (feature `chaos`) makes the
    /// configured `fault`. `#[derive(ResilienceError)]` implements it for every unit variant; the
    /// default (and the provided impls) know no name, so such a type cannot be injected as a fault.
    ///
    /// ```
    /// use resilience4cata::{Rejection, ResilienceError};
    ///
    /// #[derive(Debug, PartialEq, ResilienceError)]
    /// enum StockError {
    ///     Unavailable,
    ///     Io(u16),
    ///     #[rejection]
    ///     Rejected(Rejection),
    /// }
    ///
    /// assert_eq!(StockError::from_variant_name("Unavailable"), Some(StockError::Unavailable));
    /// assert_eq!(StockError::from_variant_name("Io"), None); // not a unit variant
    /// assert!(std::io::Error::from_variant_name("Unavailable").is_none());
    /// ```
    fn from_variant_name(name: &str) -> Option<Self>
    where
        Self: Sized,
    {
        let _ = name;
        None
    }
}

impl ResilienceError for std::io::Error {
    fn from_rejection(rejection: Rejection) -> Self {
        let kind = match rejection {
            Rejection::CallTimeout { .. } => std::io::ErrorKind::TimedOut,
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, rejection)
    }

    fn rejection(&self) -> Option<&Rejection> {
        self.get_ref()?.downcast_ref::<Rejection>()
    }
}

impl ResilienceError for Box<dyn std::error::Error + Send + Sync> {
    fn from_rejection(rejection: Rejection) -> Self {
        Box::new(rejection)
    }

    fn rejection(&self) -> Option<&Rejection> {
        self.downcast_ref::<Rejection>()
    }
}

#[cfg(feature = "anyhow")]
impl ResilienceError for anyhow::Error {
    fn from_rejection(rejection: Rejection) -> Self {
        anyhow::Error::new(rejection)
    }

    fn rejection(&self) -> Option<&Rejection> {
        self.downcast_ref::<Rejection>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cnp() -> Rejection {
        Rejection::CallNotPermitted { instance: "x".into() }
    }

    #[test]
    fn io_error_round_trip() {
        let e = std::io::Error::from_rejection(cnp());
        assert_eq!(e.rejection(), Some(&cnp()));
        assert!(std::io::Error::other("boom").rejection().is_none());
        let t =
            std::io::Error::from_rejection(Rejection::CallTimeout { instance: "x".into(), timeout: Duration::ZERO });
        assert_eq!(t.kind(), std::io::ErrorKind::TimedOut);
    }

    #[test]
    fn boxed_error_round_trip() {
        let e: Box<dyn std::error::Error + Send + Sync> = ResilienceError::from_rejection(cnp());
        assert_eq!(e.rejection(), Some(&cnp()));
    }

    #[test]
    #[cfg(feature = "anyhow")]
    fn anyhow_round_trip() {
        let e = anyhow::Error::from_rejection(cnp());
        assert_eq!(e.rejection(), Some(&cnp()));
    }

    #[test]
    fn local_rejections() {
        assert!(Rejection::BulkheadFull { instance: "b".into() }.is_local());
        assert!(!cnp().is_local());
    }
}
