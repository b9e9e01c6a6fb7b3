//! The future the async acquisitions of the bulkhead, the rate limiter and the adaptive limit
//! return: their pass path runs when the acquisition is *called*, before any future exists, and
//! only the slow path (a wait, a shared instance, a disabled one, a refusal) runs in a future.
//!
//! Why (issue 16): an `async fn acquire_async` puts the pass path inside a state machine sized for
//! the wait, whose poll is too large to inline into the generated method; the generated future
//! then paid a call to that poll (registers saved and restored, a jump on its state), the result
//! moved out through memory, and an out-of-line drop of the finished future, on every call. A
//! [`PassOr::Passed`] is the pass path's value and a discriminant, polled and dropped inline.
//!
//! The permit is held as it is (not in an `Option`), and the first poll hands it out by replacing
//! the whole future with [`PassOr::Taken`] (`project_replace`): the common path writes the
//! variant, tests it and writes `Taken`, where an `Option` taken in place also wrote, reloaded
//! and tested the option's tag. The figures are in `docs/benchmarks.md` (the async rate
//! limiter, bulkhead, adaptive limit and stack rows).

// The projection type `pin_project!` generates has undocumented fields.
#![allow(missing_docs)]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::rejection::Rejection;

pin_project! {
    /// The async acquisition of a policy: already passed (ready on the first poll), or its slow
    /// path still to run.
    #[project = PassOrProj]
    #[project_replace = PassOrReplaced]
    #[derive(Debug)]
    #[must_use = "futures do nothing unless polled; a passed acquisition holds its permit until dropped"]
    pub enum PassOr<T, F> {
        /// The pass path took the permit when the acquisition was called.
        Passed { permit: T },
        /// The slow path, run by polling.
        Slow { #[pin] future: F },
        /// The passed permit was handed out by the first poll.
        Taken,
    }
}

impl<T, F: Future<Output = Result<T, Rejection>>> Future for PassOr<T, F> {
    type Output = Result<T, Rejection>;

    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.as_mut().project() {
            PassOrProj::Passed { .. } => {}
            PassOrProj::Slow { future } => return poll_slow(future, cx),
            PassOrProj::Taken => panic!("polled after completion"),
        }
        match self.project_replace(PassOr::Taken) {
            PassOrReplaced::Passed { permit } => Poll::Ready(Ok(permit)),
            _ => unreachable!("a passed acquisition"),
        }
    }
}

/// The slow path's poll, out of line: inlined, it would make [`PassOr`]'s poll too large to inline
/// into the generated method.
#[cold]
#[inline(never)]
fn poll_slow<F: Future>(future: Pin<&mut F>, cx: &mut Context<'_>) -> Poll<F::Output> {
    future.poll(cx)
}
