//! Conversions the generated fallback call passes each value through, so a fallback method whose
//! types differ from its method's is one coded error (`[R4C-SIG-031]`) on the fallback's own
//! token instead of a bare type mismatch. Each is the identity.

use crate::FallbackContext;

/// A parameter of the protected method handed to the same parameter of its fallback.
#[diagnostic::on_unimplemented(
    message = "[R4C-SIG-031] the fallback method's parameter is `{T}`, but the protected method passes `{Self}`",
    label = "expected the protected method's parameter type here",
    note = "a fallback takes the same parameters as its method, in the same order, plus a last `FallbackContext<E>`"
)]
pub trait FallbackArg<T> {
    fn pass(self) -> T;
}

#[diagnostic::do_not_recommend]
impl<T> FallbackArg<T> for T {
    #[inline(always)]
    fn pass(self) -> T {
        self
    }
}

#[inline(always)]
pub fn fallback_arg<T, A: FallbackArg<T>>(arg: A) -> T {
    arg.pass()
}

/// The context of the protected method's error handed to the fallback's last parameter.
#[diagnostic::on_unimplemented(
    message = "[R4C-SIG-031] the fallback method's last parameter must be `{Self}`, not `{T}`",
    label = "expected `FallbackContext` of the protected method's error type",
    note = "the fallback receives the final error of its method: its last parameter is `FallbackContext<E>` with that method's `E`"
)]
pub trait FallbackContextArg<T> {
    fn pass(self) -> T;
}

#[diagnostic::do_not_recommend]
impl<E> FallbackContextArg<FallbackContext<E>> for FallbackContext<E> {
    #[inline(always)]
    fn pass(self) -> FallbackContext<E> {
        self
    }
}

#[inline(always)]
pub fn fallback_context<T, C: FallbackContextArg<T>>(context: C) -> T {
    context.pass()
}

/// The fallback's result handed back as the protected method's.
#[diagnostic::on_unimplemented(
    message = "[R4C-SIG-031] the fallback method returns `{Self}`, but the protected method returns `{R}`",
    label = "expected the protected method's `Result` type here",
    note = "the fallback's result becomes the call's result: it returns the same type as its method"
)]
pub trait FallbackReturn<R> {
    fn pass(self) -> R;
}

#[diagnostic::do_not_recommend]
impl<R> FallbackReturn<R> for R {
    #[inline(always)]
    fn pass(self) -> R {
        self
    }
}

#[inline(always)]
pub fn fallback_returns<R, A: FallbackReturn<R>>(returned: A) -> R {
    returned.pass()
}
