//! The async retry's wait between attempts, holding the failure it may still give up with.

use core::future::Future;
use core::time::Duration;

use crate::retry::policy::{RetryCall, RetryPolicy};

/// Waits `wait` before the next attempt and hands `held` (the failed attempt's error, or its
/// classified `Result`) back only when the retry gives up during the wait (a shut-down registry):
/// `Ok(())` means "go again".
///
/// Why the generated loop awaits this rather than [`RetryPolicy::wait_async`] with the error in a
/// local beside it: the generated future's drop glue then has one thing to drop at this await,
/// this future, instead of the clock's sleep *and* the user's error type inline. That keeps the
/// glue small enough for LLVM to inline at the caller's `.await`, where it sees the future already
/// finished and drops nothing, so a first attempt that succeeds pays neither the call to the drop
/// glue nor the stores its escape forces (docs/benchmarks.md, "Where the async instructions
/// went", has the figures).
///
/// The future's poll is never inlined (the `async` block's `#[inline(never)]`; on an `async fn` the
/// attribute would go to the function that builds the future): the generated method's poll is
/// always inlined into its caller's, and the wait, which a successful first attempt never
/// reaches, stays one call there instead of the clock's sleep inlined at every call site.
#[allow(clippy::manual_async_fn)] // an `async fn` would carry `#[inline(never)]` to its constructor, not its poll
#[inline]
pub fn wait_holding<'a, T: 'a>(
    retry: &'a RetryPolicy,
    call: &'a RetryCall,
    wait: Duration,
    held: T,
) -> impl Future<Output = Result<(), T>> + 'a {
    #[inline(never)]
    async move {
        if retry.wait_async(call, wait).await { Ok(()) } else { Err(held) }
    }
}
