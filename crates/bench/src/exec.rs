//! How the async cases are driven: inside a current-thread tokio runtime, polled by a minimal
//! executor.
//!
//! Every async case completes on its first poll (the policies pass, the delegate is a ready future,
//! zero waits are ready futures), so the fairest driver is the cheapest one: [`poll_now`] polls once
//! with a no-op waker. `Runtime::block_on` would add the same few tens of nanoseconds of scheduler
//! bookkeeping to every case and flatten the ratios between them. The runtime is still *entered*
//! (see [`enter`]) so that what a crate reads from the tokio context — the timer wheel behind
//! `tokio::time::timeout`, `Clock::new_tokio()` — is there, exactly as in an application.

use std::future::Future;
use std::pin::pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use tokio::runtime::{Builder, EnterGuard, Runtime};

/// The process-wide current-thread runtime (timers enabled) every async case runs in.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        Builder::new_current_thread().enable_time().build().expect("a current-thread tokio runtime builds")
    })
}

/// The process-wide multi-thread runtime (timers enabled) of the user-shaped multi-thread rows:
/// [`threads`](crate::threads) workers, two unless `BENCH_THREADS` says more.
pub fn multi_thread_runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        Builder::new_multi_thread()
            .worker_threads(crate::threads())
            .enable_time()
            .build()
            .expect("a multi-thread tokio runtime builds")
    })
}

/// Enters [`runtime`] on the calling thread until the guard is dropped.
pub fn enter() -> EnterGuard<'static> {
    runtime().enter()
}

/// Polls `future` once with a no-op waker and returns its output.
///
/// # Panics
/// If the future is not ready on its first poll: every case is built so that it never waits, and a
/// case that did would measure the executor rather than the policy.
///
/// ```
/// assert_eq!(bench::exec::poll_now(async { 7 }), 7);
/// ```
#[inline]
pub fn poll_now<F: Future>(future: F) -> F::Output {
    let future = pin!(future);
    match future.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a benchmark case waited: every case must complete on its first poll"),
    }
}

/// Makes a tower service ready (it must be ready at once) and calls it, polling the response once.
///
/// # Panics
/// If the service is not ready, fails readiness, or its response future is not ready at once.
#[inline]
pub fn call_tower<S, Req>(service: &mut S, request: Req) -> Result<S::Response, S::Error>
where
    S: tower::Service<Req>,
{
    poll_now(call_tower_future(service, request))
}

/// Makes a tower service ready (it must be ready at once) and returns its response future.
///
/// # Panics
/// If the service is not ready or fails readiness.
#[inline]
pub fn call_tower_future<S, Req>(service: &mut S, request: Req) -> S::Future
where
    S: tower::Service<Req>,
{
    match service.poll_ready(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(Ok(())) => service.call(request),
        Poll::Ready(Err(_)) => panic!("a benchmark service failed readiness"),
        Poll::Pending => panic!("a benchmark service was not ready at once"),
    }
}
