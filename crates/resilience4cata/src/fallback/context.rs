//! [`FallbackContext`]: what a fallback learns about the failure it replaces.

use std::sync::Arc;

use crate::rejection::{Rejection, ResilienceError};

/// The final failure of a call, handed to its fallback as the last argument.
///
/// It owns the error (so the fallback may return it, or wrap it), says how many attempts were
/// started (the retry's count, a refused attempt included; 1 without a retry) and names the
/// protected method's instance (its derived id, or a pipeline's id). It is `Send + Sync` when `E`
/// is, and `Clone` when `E` is, so a fallback method may carry its own `#[retry]`.
///
/// [`new`](FallbackContext::new) is public so a fallback method can be unit-tested on its own:
///
/// ```
/// use resilience4cata::FallbackContext;
///
/// #[derive(Clone, Debug, PartialEq)]
/// enum PriceError { Unavailable }
///
/// fn cached_price(_sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError> {
///     if ctx.attempts() >= 3 { Ok(99) } else { Err(ctx.into_error()) }
/// }
///
/// let ctx = FallbackContext::new(PriceError::Unavailable, 3, "shop::Prices::price");
/// assert_eq!(ctx.instance(), "shop::Prices::price");
/// assert_eq!(ctx.error(), &PriceError::Unavailable);
/// assert_eq!(cached_price("sku-1", ctx), Ok(99));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FallbackContext<E> {
    error: E,
    attempts: u32,
    instance: Arc<str>,
}

impl<E> FallbackContext<E> {
    /// A context for `error` after `attempts` attempts of the instance `instance`.
    ///
    /// ```
    /// use resilience4cata::FallbackContext;
    ///
    /// let ctx = FallbackContext::new(std::io::Error::other("down"), 1, "files");
    /// assert_eq!(ctx.attempts(), 1);
    /// ```
    pub fn new(error: E, attempts: u32, instance: impl Into<Arc<str>>) -> Self {
        FallbackContext { error, attempts, instance: instance.into() }
    }

    /// The call's final error: the last attempt's, or a policy's refusal carried in `E`.
    ///
    /// ```
    /// # use resilience4cata::FallbackContext;
    /// let ctx = FallbackContext::new("timeout", 2, "m::Api::get");
    /// assert_eq!(*ctx.error(), "timeout");
    /// ```
    pub fn error(&self) -> &E {
        &self.error
    }

    /// The error, by value, for a fallback that returns it or wraps it.
    ///
    /// ```
    /// # use resilience4cata::FallbackContext;
    /// let ctx = FallbackContext::new(String::from("down"), 1, "m::Api::get");
    /// let e: String = ctx.into_error();
    /// assert_eq!(e, "down");
    /// ```
    pub fn into_error(self) -> E {
        self.error
    }

    /// Attempts started before giving up, the first included: `max_attempts` after a retry ran
    /// out, fewer when it stopped early (an open breaker's refusal counts as an attempt), 1 for a
    /// method without a retry.
    ///
    /// ```
    /// # use resilience4cata::FallbackContext;
    /// assert_eq!(FallbackContext::new((), 3, "m::Api::get").attempts(), 3);
    /// ```
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The protected method's instance id (`<module_path>::<Trait>::<method>`, scoped when the
    /// wrapper is), or the pipeline's id.
    ///
    /// ```
    /// # use resilience4cata::FallbackContext;
    /// assert_eq!(FallbackContext::new((), 1, "shop::Prices::price").instance(), "shop::Prices::price");
    /// ```
    pub fn instance(&self) -> &str {
        &self.instance
    }
}

impl<E: ResilienceError> FallbackContext<E> {
    /// The policy refusal carried in the error, if the call was refused rather than failed (an
    /// open breaker, a full bulkhead, a timeout…).
    ///
    /// ```
    /// use resilience4cata::{FallbackContext, Rejection, ResilienceError};
    ///
    /// let refused = std::io::Error::from_rejection(Rejection::CallNotPermitted { instance: "prices".into() });
    /// let ctx = FallbackContext::new(refused, 1, "shop::Prices::price");
    /// assert!(ctx.rejection().is_some_and(Rejection::is_call_not_permitted));
    /// ```
    pub fn rejection(&self) -> Option<&Rejection> {
        self.error.rejection()
    }
}
