//! The user-shaped rows: what a service sees, rather than a closure polled once.
//!
//! Everything here is written the way a new user writes it:
//!
//! - the protected operation is [`op`], an `#[inline(never)]` function returning
//!   `Result<u32, MyError>` with [`MyError`] a small `Copy` enum;
//! - the methods of policies that refuse a call return [`AppError`], which derives
//!   `ResilienceError` and holds the operation's error or a `Rejection`; retry, hedge and fallback
//!   return `MyError` itself;
//! - every result is used (its value or a marker for the error goes through [`observe`]), not
//!   reduced to `result.ok()`;
//! - sync calls run in a plain loop; async calls are `.await`ed `N` times inside **one**
//!   `block_on` of a current-thread tokio runtime (see [`crate::Run::drive_awaited`]), so the
//!   runtime's own work (the coop budget, the context's thread-locals) is paid as in a service;
//! - the anchors call the same operation, configured the same way, in the same binary.
//!
//! [`ours`] holds the `#[resilient]` trait, [`anchors`] the other crates, [`multi_thread`] the rows
//! on a two-worker multi-thread runtime.

pub mod anchors;
pub mod multi_thread;
pub mod ours;

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};

use resilience4cata::{Rejection, ResilienceError};

/// The operation's own error: small and `Copy`, as most domain errors are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MyError {
    /// The backend did not answer.
    Unavailable,
    /// The backend refused the input.
    Invalid,
}

impl std::fmt::Display for MyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MyError::Unavailable => "the backend did not answer",
            MyError::Invalid => "the backend refused the input",
        })
    }
}

impl std::error::Error for MyError {}

/// The error of the methods whose policy can refuse a call: the operation's error, or the refusal.
#[derive(Debug, PartialEq, ResilienceError)]
pub enum AppError {
    /// The operation failed.
    Op(MyError),
    /// A policy refused the call.
    #[rejection]
    Rejected(Rejection),
}

impl From<MyError> for AppError {
    fn from(error: MyError) -> Self {
        AppError::Op(error)
    }
}

/// The protected operation: an opaque call that succeeds. `#[inline(never)]` so that every row,
/// ours and the anchors', pays for one real call.
///
/// ```
/// assert_eq!(bench::cases::user_shaped::op(1), Ok(2));
/// ```
#[inline(never)]
pub fn op(x: u32) -> Result<u32, MyError> {
    if x == u32::MAX { Err(MyError::Invalid) } else { Ok(x + 1) }
}

/// The flaky operation: fails with [`MyError::Unavailable`] when `fail_next` is set (clearing it),
/// else behaves like [`op`]. The flag is an atomic (relaxed load and store, plain moves on x86) so
/// that the same backend serves the `Send` futures of every crate.
///
/// ```
/// use std::sync::atomic::AtomicBool;
/// use bench::cases::user_shaped::{MyError, op_flaky};
/// let fail_next = AtomicBool::new(true);
/// assert_eq!(op_flaky(1, &fail_next), Err(MyError::Unavailable));
/// assert_eq!(op_flaky(1, &fail_next), Ok(2));
/// ```
#[inline(never)]
pub fn op_flaky(x: u32, fail_next: &AtomicBool) -> Result<u32, MyError> {
    if fail_next.load(Ordering::Relaxed) {
        fail_next.store(false, Ordering::Relaxed);
        Err(MyError::Unavailable)
    } else {
        op(x)
    }
}

/// The async operation as a user's backend writes it: an `async fn` around [`op`].
pub async fn op_async(x: u32) -> Result<u32, MyError> {
    op(x)
}

/// Uses a result the way a caller does — its value, or a marker when it failed — and hides that
/// from the optimiser, so the call and the branch on its outcome both stay.
#[inline(always)]
pub fn observe<E>(result: Result<u32, E>) {
    black_box(result.unwrap_or(u32::MAX));
}

/// An input the optimiser cannot see through.
#[inline(always)]
pub fn input() -> u32 {
    black_box(1)
}
