//! Type-level helpers of the generated code, each with a coded diagnostic for the user's mistake.

use crate::{Rejection, ResilienceError};

/// Recognises `Result<T, E>` through its type, not its spelling, so aliases such as `io::Result<T>`
/// work.
#[diagnostic::on_unimplemented(
    message = "[R4C-SIG-002] a method with a resilience policy must return `Result<T, E>`, not `{Self}`",
    label = "not a `Result`",
    note = "policies decide on `Err`: return `Result<T, E>` (or a future of it), or remove the policy attribute"
)]
pub trait ResultLike: Sized {
    type Ok;
    type Err;

    /// Generated as `<Ret as ResultLike>::into_result(call)` around each attempt, so a wrong return
    /// type is reported once, on the return type.
    fn into_result(self) -> Result<Self::Ok, Self::Err>;

    /// Turns the loop's `Result` back into the declared return type (the identity).
    fn from_result(result: Result<Self::Ok, Self::Err>) -> Self;
}

impl<T, E> ResultLike for Result<T, E> {
    type Ok = T;
    type Err = E;

    #[inline(always)]
    fn into_result(self) -> Self {
        self
    }

    #[inline(always)]
    fn from_result(result: Self) -> Self {
        result
    }
}

/// Generated for methods whose policies can refuse calls: reports a missing impl with its code.
#[inline(always)]
pub fn require_resilience_error<E: ResilienceError>() {}

/// An argument handed to every attempt of a retried method: references and `Copy` values cost
/// nothing, other owned values are cloned per attempt.
#[diagnostic::on_unimplemented(
    message = "[R4C-SIG-007] `{Self}` is passed by value to a method with a retry or a fallback, so it must be `Clone` (each attempt, and the fallback, gets a copy)",
    label = "this argument is moved into every attempt",
    note = "take it by reference (`&T`, recommended: it costs nothing) or implement `Clone`"
)]
pub trait AttemptArg {
    fn for_attempt(&self) -> Self;
}

// `do_not_recommend` makes rustc report the unmet `AttemptArg` (with its code) rather than `Clone`.
#[diagnostic::do_not_recommend]
impl<T: Clone> AttemptArg for T {
    #[inline(always)]
    fn for_attempt(&self) -> Self {
        self.clone()
    }
}

#[inline(always)]
pub fn attempt_arg<T: AttemptArg>(value: &T) -> T {
    value.for_attempt()
}

/// Autoref specialisation: `(&Probe(&e)).is_call_not_permitted()` finds an open breaker's refusal
/// whenever the concrete `E` implements `ResilienceError`, and is `false` otherwise, so retry-only
/// methods accept any error type. It sees only concrete types: for a generic or associated `E`, the
/// fallback applies unless `E: ResilienceError` is required there.
#[derive(Debug)]
pub struct Probe<'a, E>(pub &'a E);

pub trait ProbeRejection {
    fn is_call_not_permitted(&self) -> bool;
    fn rejection(&self) -> Option<&Rejection>;
}

impl<E: ResilienceError> ProbeRejection for Probe<'_, E> {
    #[inline(always)]
    fn is_call_not_permitted(&self) -> bool {
        matches!(self.0.rejection(), Some(r) if r.is_call_not_permitted())
    }

    #[inline(always)]
    fn rejection(&self) -> Option<&Rejection> {
        self.0.rejection()
    }
}

pub trait ProbeFallback {
    fn is_call_not_permitted(&self) -> bool;
    fn rejection(&self) -> Option<&Rejection>;
}

impl<E> ProbeFallback for &Probe<'_, E> {
    #[inline(always)]
    fn is_call_not_permitted(&self) -> bool {
        false
    }

    #[inline(always)]
    fn rejection(&self) -> Option<&Rejection> {
        None
    }
}

/// The field of a `#[derive(ResilienceError)]` variant: generated as `<FieldTy as IsRejection>`
/// so a field of another type is reported once, with its code, on the field's type.
#[diagnostic::on_unimplemented(
    message = "[R4C-DRV-006] the `#[rejection]` field must be a `resilience4cata::Rejection`, not `{Self}`",
    label = "not a `Rejection`",
    note = "policies put their `Rejection` into this field and read it back: declare it as `Rejection`"
)]
pub trait IsRejection {
    fn wrap(rejection: Rejection) -> Self;
    fn unwrap(&self) -> &Rejection;
}

impl IsRejection for Rejection {
    #[inline(always)]
    fn wrap(rejection: Rejection) -> Self {
        rejection
    }

    #[inline(always)]
    fn unwrap(&self) -> &Rejection {
        self
    }
}

/// Autoref specialisation for the rejecting layers: `(&Reject::<E>::new()).reject(rejection)`
/// is `E::from_rejection(rejection)` when `E: ResilienceError`. Otherwise it resolves to a fallback
/// that is never reached, because `require_resilience_error::<E>()` in the same body already fails
/// to compile: the user sees that one coded error, `[R4C-SIG-010]`, not a cascade.
pub struct Reject<E>(::core::marker::PhantomData<fn() -> E>);

impl<E> Reject<E> {
    #[inline(always)]
    pub fn new() -> Self {
        Reject(::core::marker::PhantomData)
    }
}

impl<E> Default for Reject<E> {
    fn default() -> Self {
        Reject::new()
    }
}

impl<E> ::core::fmt::Debug for Reject<E> {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        f.write_str("Reject")
    }
}

pub trait RejectInto<E> {
    fn reject(&self, rejection: Rejection) -> E;
}

impl<E: ResilienceError> RejectInto<E> for Reject<E> {
    #[inline(always)]
    fn reject(&self, rejection: Rejection) -> E {
        E::from_rejection(rejection)
    }
}

pub trait RejectFallback<E> {
    fn reject(&self, rejection: Rejection) -> E;
}

impl<E> RejectFallback<E> for &Reject<E> {
    fn reject(&self, _: Rejection) -> E {
        unreachable!("a rejecting policy on an error type without `ResilienceError` does not compile ([R4C-SIG-010])")
    }
}
