//! The functions users name in attributes (`delay_from = f`), called through traits the library
//! owns, so that a function of another signature is one coded error on the user's path (the
//! attribute's token) instead of rustc's argument-count error with a help that rewrites the
//! attribute. Each call is the hook's call, inlined: nothing is added to the generated code.

use core::time::Duration;

/// A `delay_from` hook: `fn(&E, attempt: u32, computed: Duration) -> Option<Duration>`.
///
/// `M` picks the impl. There are two, so that rustc weighs both against the hook and, when
/// neither fits, reports this trait as unimplemented (with the message below) rather than the
/// failed `Fn` bound inside the one impl (E0593 / E0631, which `do_not_recommend` does not cover).
#[diagnostic::on_unimplemented(
    message = "[R4C-SIG-040] `delay_from` must name a function `fn(&{E}, u32, Duration) -> Option<Duration>`, not `{Self}`",
    label = "expected `fn(&{E}, attempt: u32, computed: Duration) -> Option<Duration>`",
    note = "the hook gets the failed attempt's error, that attempt's number (from 1) and the wait the retry computed, and returns the wait before the next attempt, or `None` to give up"
)]
pub trait DelayFrom<E, M> {
    fn delay_from(&self, error: &E, attempt: u32, computed: Duration) -> Option<Duration>;
}

/// The marker of the one real impl: a function of the hook's signature.
#[derive(Debug)]
pub enum HookFn {}

/// The marker of the impl nothing satisfies (see [`DelayFrom`]).
#[derive(Debug)]
pub enum NoHook {}

mod sealed {
    /// Implemented by nothing.
    pub trait Never {}
}

#[diagnostic::do_not_recommend]
impl<E, F: Fn(&E, u32, Duration) -> Option<Duration>> DelayFrom<E, HookFn> for F {
    #[inline(always)]
    fn delay_from(&self, error: &E, attempt: u32, computed: Duration) -> Option<Duration> {
        self(error, attempt, computed)
    }
}

#[diagnostic::do_not_recommend]
impl<E, F: sealed::Never> DelayFrom<E, NoHook> for F {
    fn delay_from(&self, _: &E, _: u32, _: Duration) -> Option<Duration> {
        None
    }
}

/// `hook(error, attempt, computed)`, for the hook the attribute names. The error comes first, so
/// `E` is the method's error type before the hook is looked at.
#[inline(always)]
pub fn delay_from<E, M, F: DelayFrom<E, M>>(error: &E, hook: F, attempt: u32, computed: Duration) -> Option<Duration> {
    hook.delay_from(error, attempt, computed)
}
