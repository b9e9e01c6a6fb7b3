//! Benchmarks of resilience4cata beside the crates a user would pick instead.
//!
//! Every case lives once, in [`cases`], as a constructor returning the closure that makes one call.
//! The [`CASES`] table names them (`group/name`, the same names criterion prints) and drives them
//! through [`Run`], so the criterion benches (`benches/*.rs`), the instruction-count runner
//! (`src/bin/cases.rs` under callgrind) and the allocation report all measure the same code.
//!
//! See `docs/benchmarks.md` for the results and the commands.
#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

pub mod cases;
pub mod contended;
pub mod exec;
pub mod report;

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cpu_time::ThreadTime;

/// The counting allocator every bench binary, the `cases` runner and the tests of this crate
/// allocate through (the workspace's one, from `testkit`).
pub use testkit::alloc;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

/// The error every delegate returns when it fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fail;

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the delegate failed")
    }
}

impl std::error::Error for Fail {}

/// The protected operation: an opaque call that succeeds. `#[inline(never)]` so that every case,
/// ours and the anchors', pays for one real call and the baseline is a real call too.
///
/// ```
/// assert_eq!(bench::work(1), Ok(2));
/// ```
#[inline(never)]
pub fn work(x: u64) -> Result<u64, Fail> {
    Ok(x.wrapping_add(1))
}

/// The flaky operation: fails when `fail_next` is set (and clears it), else behaves like [`work`].
///
/// ```
/// use std::cell::Cell;
/// let fail_next = Cell::new(true);
/// assert_eq!(bench::flaky(1, &fail_next), Err(bench::Fail));
/// assert_eq!(bench::flaky(1, &fail_next), Ok(2));
/// ```
#[inline(never)]
pub fn flaky(x: u64, fail_next: &std::cell::Cell<bool>) -> Result<u64, Fail> {
    if fail_next.replace(false) { Err(Fail) } else { Ok(x.wrapping_add(1)) }
}

/// Whether a case is a blocking call or a future.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A plain function call.
    Sync,
    /// A future, polled once by [`exec::poll_now`] inside the tokio runtime.
    Async,
    /// A future `.await`ed in a loop inside one `block_on` of the current-thread runtime, as a
    /// service awaits it (the user-shaped rows, [`Run::drive_awaited`]).
    Awaited,
    /// A future awaited by one task per worker at once on a multi-thread runtime of [`threads`]
    /// workers, two by default ([`Run::drive_multi_thread`]); time only.
    MultiThread,
}

/// One benchmark case: a named way to make one protected call.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// Criterion group, e.g. `retry_success`.
    pub group: &'static str,
    /// Name within the group, e.g. `backon_sync`.
    pub name: &'static str,
    /// Sync or async.
    pub form: Form,
    /// 1, or 2 when contender threads hammer the same instance while the caller is measured: then
    /// [`threads`] threads in all (2 unless `BENCH_THREADS` says more).
    pub threads: u8,
    /// Builds the case and drives it through `run`.
    pub body: fn(&mut Run),
}

impl Case {
    /// `group/name`, the id used by criterion, the runner and the docs.
    pub fn id(&self) -> String {
        format!("{}/{}", self.group, self.name)
    }

    /// Builds the case, warms it up, then makes `iters` calls on the calling thread.
    pub fn run(&self, iters: u64) -> Run {
        let mut run =
            Run { iters, warmup: 16, elapsed: Duration::ZERO, cpu: Duration::ZERO, allocations: 0, overlap: 0.0 };
        // Entered before the case is built: some anchors read the tokio context when constructed.
        let _runtime = exec::enter();
        (self.body)(&mut run);
        run
    }

    /// Allocations per call on the calling thread, measured over `iters` calls.
    pub fn allocations_per_call(&self, iters: u64) -> f64 {
        self.run(iters).allocations as f64 / iters as f64
    }
}

/// One measurement: how many calls, how long they took and how much they allocated.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// Calls to measure.
    pub iters: u64,
    /// Unmeasured calls made first (lazy initialisation, caches).
    pub warmup: u64,
    /// Wall time taken by the measured calls (the calling thread's loop only).
    pub elapsed: Duration,
    /// CPU time the calling thread spent in the measured calls: the wall time less the time it
    /// was descheduled. What criterion reports (see [`Run::measured`]).
    pub cpu: Duration,
    /// Allocations made by the calling thread during the measured calls.
    pub allocations: u64,
    /// The share of the measured thread's warm-up and loop (wall time) that the contender
    /// threads spent running, their CPU time over it: near 1 when they ran alongside throughout (a
    /// figure to trust), far below when the machine's other load kept them off a core (the row
    /// then measured little contention). 0 in a single-thread row.
    pub overlap: f64,
}

impl Run {
    /// The time criterion is given: the calling thread's CPU time, or its wall time when the
    /// environment variable `BENCH_CLOCK=wall` is set.
    ///
    /// CPU time by default because the benchmarks run on a 2-core machine shared with other builds:
    /// wall time would count every moment the measuring thread was descheduled, and in the
    /// two-thread rows (two busy threads on two cores) that dominates the figure. Cache-line
    /// contention still shows: a stalled thread is running.
    pub fn measured(&self) -> Duration {
        static WALL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if *WALL.get_or_init(|| std::env::var("BENCH_CLOCK").is_ok_and(|v| v == "wall")) {
            self.elapsed
        } else {
            self.cpu
        }
    }

    /// Warms `call` up, then makes the measured calls.
    #[inline(never)]
    pub fn drive<F: FnMut()>(&mut self, mut call: F) {
        // Through the same function as the measured calls: `call` then has one call site, which
        // the compiler inlines as it would in an application's single caller.
        measured_loop(self.warmup, &mut call);
        let allocated = alloc::allocations();
        let (wall, cpu) = (Instant::now(), ThreadTime::now());
        measured_loop(self.iters, &mut call);
        self.cpu = cpu.elapsed();
        self.elapsed = wall.elapsed();
        self.allocations = alloc::allocations() - allocated;
    }

    /// Like [`drive`](Self::drive), while contender threads make the same calls on the same
    /// instance for the whole measured loop: [`threads`]` − 1` of them (one by default). Only the
    /// calling thread's loop is timed.
    pub fn drive_contended<F: Fn() + Sync>(&mut self, call: F) {
        self.drive_contended_each(|| &call);
    }

    /// Like [`drive_contended`](Self::drive_contended), the contenders making their own calls
    /// (`contender`: the same instance on another key, in the keyed rows).
    pub fn drive_contended_apart<F: Fn() + Sync, G: Fn() + Sync>(&mut self, call: F, contender: G) {
        self.drive_contended_split(|| &call, || &contender);
    }

    /// [`drive_contended`](Self::drive_contended) for a shared instance whose callers cannot be
    /// shared (a tower service polled through `&mut self`): every thread, the measured one
    /// included, calls `make` once for its own caller (a clone of the service, sharing its state).
    pub fn drive_contended_each<M, F>(&mut self, make: M)
    where
        M: Fn() -> F + Sync,
        F: FnMut(),
    {
        self.drive_contended_split(&make, &make);
    }

    /// The measured thread's caller from `measured`, each contender's from `contender`.
    fn drive_contended_split<M, F, C, G>(&mut self, measured: M, contender: C)
    where
        M: Fn() -> F,
        F: FnMut(),
        C: Fn() -> G + Sync,
        G: FnMut(),
    {
        let contenders = threads() - 1;
        let stop = AtomicBool::new(false);
        let started = Barrier::new(contenders + 1);
        let busy = AtomicU64::new(0);
        let span = std::thread::scope(|scope| {
            for _ in 0..contenders {
                scope.spawn(|| {
                    let _runtime = exec::enter();
                    let mut call = contender();
                    started.wait();
                    let cpu = ThreadTime::now();
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..64 {
                            call();
                        }
                    }
                    busy.fetch_add(cpu.elapsed().as_nanos() as u64, Ordering::Relaxed);
                });
            }
            let call = measured();
            started.wait();
            let span = Instant::now();
            self.drive(call);
            stop.store(true, Ordering::Relaxed);
            span.elapsed()
        });
        self.overlap = busy.into_inner() as f64 / (contenders as f64 * span.as_nanos().max(1) as f64);
    }
}

impl Run {
    /// Warms `call` up, then awaits it `iters` times in a loop inside one `block_on` of the
    /// current-thread runtime ([`exec::runtime`]): the shape of a service's handler awaiting a
    /// protected call. The runtime's fixed cost of entering `block_on` is paid once per loop.
    pub fn drive_awaited<F: AsyncFnMut()>(&mut self, mut call: F) {
        let runtime = exec::runtime();
        measured_loop_awaited(runtime, self.warmup, &mut call);
        let allocated = alloc::allocations();
        let (wall, cpu) = (Instant::now(), ThreadTime::now());
        measured_loop_awaited(runtime, self.iters, &mut call);
        self.cpu = cpu.elapsed();
        self.elapsed = wall.elapsed();
        self.allocations = alloc::allocations() - allocated;
    }

    /// Warms `caller` up, then spawns one task per worker ([`threads`], two by default) on the
    /// multi-thread runtime ([`exec::multi_thread_runtime`]), each awaiting `iters` calls, and waits
    /// for all. The time is the wall time until all finished (per call: divided by `iters`, what each caller saw),
    /// in [`cpu`](Self::cpu) too since the calling thread only waits; allocations are not counted
    /// (they happen on the workers).
    pub fn drive_multi_thread<C: cases::user_shaped::multi_thread::Caller>(&mut self, caller: C) {
        let runtime = exec::multi_thread_runtime();
        let all = |iters: u64| {
            runtime.block_on(async move {
                let callers: Vec<_> = (0..threads()).map(|_| tokio::spawn(caller_loop(caller, iters))).collect();
                for caller in callers {
                    caller.await.expect("every caller finishes");
                }
            })
        };
        all(self.warmup);
        let wall = Instant::now();
        all(self.iters);
        self.elapsed = wall.elapsed();
        self.cpu = self.elapsed;
    }
}

/// How many threads call one instance at once in the contended rows (`Case::threads` above 1):
/// the environment variable `BENCH_THREADS`, 2 when unset or below 2. Set it to the core count on a
/// bigger machine (`docs/benchmarks.md`, "Contended rows").
///
/// ```
/// assert!(bench::threads() >= 2);
/// ```
pub fn threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::env::var("BENCH_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(2).max(2))
}

/// The awaited calls inside one `block_on`, in a function of their own so that callgrind's
/// `--toggle-collect=*measured_loop*` counts the loop, the futures it awaits and the runtime's work
/// around them (the `block_on` entry is a fixed cost the two-count difference cancels).
#[inline(never)]
fn measured_loop_awaited<F: AsyncFnMut()>(runtime: &tokio::runtime::Runtime, iters: u64, call: &mut F) {
    runtime.block_on(awaited_calls(iters, call));
}

/// The loop of [`measured_loop_awaited`], as a future. Not named `measured_loop…`: callgrind
/// *toggles* collection on each entry to a matching function, so a matching future polled inside
/// the measured function would switch the count off for the whole loop.
async fn awaited_calls<F: AsyncFnMut()>(iters: u64, call: &mut F) {
    for _ in 0..iters {
        call().await;
    }
}

/// One caller of a multi-thread row: `iters` awaited calls.
async fn caller_loop<C: cases::user_shaped::multi_thread::Caller>(caller: C, iters: u64) {
    for _ in 0..iters {
        caller.call().await;
    }
}

/// The measured calls, in a function of their own so that callgrind can count only them
/// (`--toggle-collect=*measured_loop*`): setup that varies from run to run (a clock calibration, a
/// runtime's start) stays out of the count.
#[inline(never)]
fn measured_loop<F: FnMut()>(iters: u64, call: &mut F) {
    for _ in 0..iters {
        call();
    }
}

/// An input the optimiser cannot see through.
#[inline(always)]
pub fn opaque<T>(value: T) -> T {
    black_box(value)
}

/// Hides a case's result from the optimiser (so the call is not removed) and drops it.
///
/// Only `result.ok()` goes through `black_box`: `black_box` stores its argument to memory, and a
/// large error type (ours carries a `Rejection`) would otherwise pay for storing the whole `Result`
/// on every call although the `Ok` path never builds the error.
#[inline(always)]
pub fn consume<T, E>(result: Result<T, E>) {
    drop(black_box(result.ok()));
}

macro_rules! case {
    ($group:literal, $name:literal, $form:ident, $ctor:path) => {
        Case { group: $group, name: $name, form: Form::$form, threads: 1, body: |run| run.drive($ctor()) }
    };
    ($group:literal, $name:literal, $form:ident, $ctor:path, contended) => {
        Case { group: $group, name: $name, form: Form::$form, threads: 2, body: |run| run.drive_contended($ctor()) }
    };
    ($group:literal, $name:literal, $form:ident, $ctor:path, apart) => {
        Case {
            group: $group,
            name: $name,
            form: Form::$form,
            threads: 2,
            body: |run| {
                let (call, contender) = $ctor();
                run.drive_contended_apart(call, contender)
            },
        }
    };
    ($group:literal, $name:literal, $form:ident, $ctor:path, each) => {
        Case {
            group: $group,
            name: $name,
            form: Form::$form,
            threads: 2,
            body: |run| run.drive_contended_each($ctor()),
        }
    };
    ($group:literal, $name:literal, Sync, $ctor:path, user) => {
        Case { group: $group, name: $name, form: Form::Sync, threads: 1, body: |run| run.drive($ctor()) }
    };
    ($group:literal, $name:literal, Awaited, $ctor:path, user) => {
        Case { group: $group, name: $name, form: Form::Awaited, threads: 1, body: |run| run.drive_awaited($ctor()) }
    };
    ($group:literal, $name:literal, MultiThread, $ctor:path, user) => {
        Case {
            group: $group,
            name: $name,
            form: Form::MultiThread,
            threads: 2,
            body: |run| run.drive_multi_thread($ctor()),
        }
    };
}

/// Every case, grouped as criterion groups them.
pub static CASES: &[Case] = &[
    // The baseline: the delegate called directly.
    case!("baseline", "direct", Sync, cases::baseline::direct),
    case!("baseline", "direct_async", Async, cases::baseline::direct_async),
    // Retry whose first attempt succeeds.
    case!("retry_success", "direct", Sync, cases::baseline::direct),
    case!("retry_success", "ours_sync", Sync, cases::ours::success_sync),
    case!("retry_success", "ours_async", Async, cases::ours::success_async),
    case!("retry_success", "ours_class_sync", Sync, cases::ours_class::success_sync),
    case!("retry_success", "ours_class_async", Async, cases::ours_class::success_async),
    case!("retry_success", "backon_sync", Sync, cases::retry::backon_sync),
    case!("retry_success", "backon_async", Async, cases::retry::backon_async),
    case!("retry_success", "tower_retry_async", Async, cases::retry::tower_retry_async),
    case!("retry_success", "seatbelt_async", Async, cases::retry::seatbelt_async),
    case!("retry_success", "tower_resilience_async", Async, cases::retry::tower_resilience_async),
    // Retry whose first attempt fails and second succeeds, with a zero wait.
    case!("retry_fail_once", "ours_sync", Sync, cases::ours::fail_once_sync),
    case!("retry_fail_once", "ours_class_sync", Sync, cases::ours_class::fail_once_sync),
    case!("retry_fail_once", "ours_manual_clock_sync", Sync, cases::ours::fail_once_manual_sync),
    case!("retry_fail_once", "ours_async", Async, cases::ours::fail_once_async),
    case!("retry_fail_once", "backon_sync", Sync, cases::retry::backon_sync_fail_once),
    case!("retry_fail_once", "backon_async", Async, cases::retry::backon_async_fail_once),
    case!("retry_fail_once", "tower_retry_async", Async, cases::retry::tower_retry_async_fail_once),
    case!("retry_fail_once", "seatbelt_async", Async, cases::retry::seatbelt_async_fail_once),
    // Retry budget accounting on a successful call.
    case!("budget_success", "direct", Sync, cases::baseline::direct),
    case!("budget_success", "ours_sync", Sync, cases::ours::budget_sync),
    case!("budget_success", "ours_sync_2t", Sync, cases::ours::budget_shared, contended),
    case!("budget_success", "tower_tps_budget_sync", Sync, cases::retry::tower_tps_budget),
    case!("budget_success", "tower_tps_budget_sync_2t", Sync, cases::retry::tower_tps_budget_shared, contended),
    // Circuit breaker, closed, successful call.
    case!("breaker_closed", "ours_sync", Sync, cases::ours_guarded::breaker_sync),
    case!("breaker_closed", "ours_class_sync", Sync, cases::ours_class::breaker_sync),
    case!("breaker_closed", "ours_async", Async, cases::ours_guarded::breaker_async),
    case!("breaker_closed", "ours_sync_2t", Sync, cases::ours_guarded::breaker_shared, contended),
    case!("breaker_closed", "recloser_sync", Sync, cases::breaker::recloser_sync),
    case!("breaker_closed", "recloser_async", Async, cases::breaker::recloser_async),
    case!("breaker_closed", "failsafe_sync", Sync, cases::breaker::failsafe_sync),
    case!("breaker_closed", "seatbelt_async", Async, cases::breaker::seatbelt_async),
    case!("breaker_closed", "tower_resilience_async", Async, cases::breaker::tower_resilience_async),
    case!("breaker_closed", "recloser_sync_2t", Sync, cases::breaker::recloser_shared, contended),
    case!("breaker_closed", "failsafe_sync_2t", Sync, cases::breaker::failsafe_shared, contended),
    // Rate limiter with permits to spare.
    case!("rate_limiter_pass", "ours_sync", Sync, cases::ours_guarded::rate_limiter_sync),
    case!("rate_limiter_pass", "ours_sync_2t", Sync, cases::ours_guarded::rate_limiter_shared, contended),
    case!("rate_limiter_pass", "governor_sync", Sync, cases::limits::governor_sync),
    case!("rate_limiter_pass", "tower_rate_limit_async", Async, cases::limits::tower_rate_limit),
    case!("rate_limiter_pass", "tower_resilience_async", Async, cases::limits::tower_resilience_rate_limiter),
    case!("rate_limiter_pass", "governor_sync_2t", Sync, cases::limits::governor_shared, contended),
    // A keyed rate limiter (SPEC §15), an existing key, permits to spare: ours (`key = …`) beside
    // governor's keyed limiter (`RateLimiter::keyed`, on `DashMap`), same quota.
    case!("keyed_rate_limiter_pass", "ours_str_sync", Sync, cases::keyed::ours_str_sync),
    case!("keyed_rate_limiter_pass", "ours_u64_sync", Sync, cases::keyed::ours_u64_sync),
    case!("keyed_rate_limiter_pass", "governor_str_sync", Sync, cases::keyed::governor_str_sync),
    case!("keyed_rate_limiter_pass", "governor_u64_sync", Sync, cases::keyed::governor_u64_sync),
    case!("keyed_rate_limiter_pass", "ours_str_sync_2t", Sync, cases::keyed::ours_str_shared, contended),
    case!("keyed_rate_limiter_pass", "governor_str_sync_2t", Sync, cases::keyed::governor_str_shared, contended),
    case!("keyed_rate_limiter_pass", "ours_str_sync_2t_apart", Sync, cases::keyed::ours_str_apart, apart),
    case!("keyed_rate_limiter_pass", "governor_str_sync_2t_apart", Sync, cases::keyed::governor_str_apart, apart),
    case!("keyed_rate_limiter_pass", "ours_u64_sync_2t", Sync, cases::keyed::ours_u64_shared, contended),
    case!("keyed_rate_limiter_pass", "governor_u64_sync_2t", Sync, cases::keyed::governor_u64_shared, contended),
    case!("keyed_rate_limiter_pass", "ours_u64_sync_2t_apart", Sync, cases::keyed::ours_u64_apart, apart),
    case!("keyed_rate_limiter_pass", "governor_u64_sync_2t_apart", Sync, cases::keyed::governor_u64_apart, apart),
    // Bulkhead with room to spare.
    case!("bulkhead_pass", "ours_sync", Sync, cases::ours_guarded::bulkhead_sync),
    case!("bulkhead_pass", "ours_async", Async, cases::ours_guarded::bulkhead_async),
    case!("bulkhead_pass", "ours_sync_2t", Sync, cases::ours_guarded::bulkhead_shared, contended),
    case!("bulkhead_pass", "tokio_semaphore_sync", Sync, cases::limits::tokio_semaphore_sync),
    case!("bulkhead_pass", "tower_concurrency_limit_async", Async, cases::limits::tower_concurrency_limit),
    case!("bulkhead_pass", "tower_resilience_async", Async, cases::limits::tower_resilience_bulkhead),
    case!("bulkhead_pass", "tokio_semaphore_sync_2t", Sync, cases::limits::tokio_semaphore_shared, contended),
    // Adaptive concurrency limit, passing (the limit is never reached and stays put).
    case!("adaptive_limit_pass", "ours_aimd_sync", Sync, cases::adaptive::aimd_sync),
    case!("adaptive_limit_pass", "ours_aimd_async", Async, cases::adaptive::aimd_async),
    case!("adaptive_limit_pass", "ours_vegas_sync", Sync, cases::adaptive::vegas_sync),
    case!("adaptive_limit_pass", "ours_vegas_sampled_sync", Sync, cases::adaptive::vegas_sampled_sync),
    case!("adaptive_limit_pass", "ours_aimd_sync_2t", Sync, cases::adaptive::aimd_shared, contended),
    case!("adaptive_limit_pass", "tower_concurrency_limit_async", Async, cases::limits::tower_concurrency_limit),
    case!("adaptive_limit_pass", "tower_resilience_adaptive_async", Async, cases::adaptive::tower_resilience_adaptive),
    // Timeout that does not fire.
    case!("timeout_pass", "direct_async", Async, cases::baseline::direct_async),
    case!("timeout_pass", "ours_async", Async, cases::ours_guarded::timeout_async),
    case!("timeout_pass", "tokio_timeout_async", Async, cases::timeout::tokio_timeout),
    case!("timeout_pass", "tower_timeout_async", Async, cases::timeout::tower_timeout),
    case!("timeout_pass", "tower_resilience_async", Async, cases::timeout::tower_resilience_time_limiter),
    // Fallback around a retry: a success never consults it; a call that falls back after 3 attempts.
    case!("fallback", "direct", Sync, cases::baseline::direct),
    case!("fallback", "ours_retry_only_sync", Sync, cases::ours_fallback::retry_only_sync),
    case!("fallback", "ours_success_sync", Sync, cases::ours_fallback::success_sync),
    case!("fallback", "ours_retry_only_async", Async, cases::ours_fallback::retry_only_async),
    case!("fallback", "ours_success_async", Async, cases::ours_fallback::success_async),
    case!("fallback", "ours_fallen_back_sync", Sync, cases::ours_fallback::fallen_back_sync),
    // Hedge whose first attempt answers at once.
    case!("hedge_first_answers", "direct_async", Async, cases::baseline::direct_async),
    case!("hedge_first_answers", "ours_async", Async, cases::hedge::ours_async),
    case!("hedge_first_answers", "seatbelt_async", Async, cases::hedge::seatbelt_async),
    // Retry + breaker + rate limiter + bulkhead, all passing.
    case!("full_stack", "ours_sync", Sync, cases::ours_guarded::full_sync),
    case!("full_stack", "ours_async", Async, cases::ours_guarded::full_async),
    // The same four layers reversed by `#[policy_order]`: a non-default order costs no more.
    case!("full_stack", "ours_reordered_sync", Sync, cases::ours_ordered::full_sync),
    case!("full_stack", "ours_reordered_async", Async, cases::ours_ordered::full_async),
    case!("full_stack", "ours_no_breaker_sync", Sync, cases::ours_guarded::stack_sync),
    case!("full_stack", "ours_no_breaker_async", Async, cases::ours_guarded::stack_async),
    case!("full_stack", "tower_resilience_no_breaker_async", Async, cases::stack::tower_resilience_no_breaker_async),
    case!("full_stack", "tower_resilience_async", Async, cases::stack::tower_resilience_async),
    // ---- The contended rows (`cases::contended`, issue 28): `bench::threads()` threads call one
    // instance; each policy beside its anchors and beside the floor, one shared read-modify-write.
    case!("contended", "floor_call", Sync, cases::contended::floor_call, contended),
    case!("contended", "floor_fetch_add", Sync, cases::contended::floor_fetch_add, contended),
    case!("contended", "floor_load_cas", Sync, cases::contended::floor_load_cas, contended),
    case!("contended", "floor_cas_first", Sync, cases::contended::floor_cas_first, contended),
    case!("contended", "floor_add_sub", Sync, cases::contended::floor_add_sub, contended),
    case!("contended", "floor_stamped_add", Sync, cases::contended::floor_stamped_add, contended),
    case!("contended", "floor_two_lines", Sync, cases::contended::floor_two_lines::<32>, contended),
    // The same floor at other distances between its two words, `APART` blocks of 128 bytes
    // (`docs/benchmarks.md`, "Against the done-when": every distance measured alike).
    case!("contended_apart", "floor_two_lines_2", Sync, cases::contended::floor_two_lines::<2>, contended),
    case!("contended_apart", "floor_two_lines_4", Sync, cases::contended::floor_two_lines::<4>, contended),
    case!("contended_apart", "floor_two_lines_8", Sync, cases::contended::floor_two_lines::<8>, contended),
    case!("contended_apart", "floor_two_lines_16", Sync, cases::contended::floor_two_lines::<16>, contended),
    case!("contended_apart", "floor_two_lines_32", Sync, cases::contended::floor_two_lines::<32>, contended),
    case!("contended_apart", "floor_two_lines_64", Sync, cases::contended::floor_two_lines::<64>, contended),
    // Each policy of ours on one thread, nobody beside it: the floor of a policy that writes no
    // shared word, and the uncontended cost `c` of the model in `docs/benchmarks.md`, in the same run.
    case!("contended", "retry_alone", Sync, cases::ours_guarded::retry_sync),
    case!("contended", "budget_alone", Sync, cases::ours::budget_sync),
    case!("contended", "breaker_alone", Sync, cases::ours_guarded::breaker_sync),
    case!("contended", "rate_limiter_alone", Sync, cases::ours_guarded::rate_limiter_sync),
    case!("contended", "bulkhead_alone", Sync, cases::ours_guarded::bulkhead_sync),
    case!("contended", "timeout_alone", Async, cases::ours_guarded::timeout_async),
    case!("contended", "stack_alone", Sync, cases::ours_guarded::full_sync),
    case!("contended", "retry_ours", Sync, cases::ours_guarded::retry_shared, contended),
    case!("contended", "retry_backon", Sync, cases::contended::retry_backon, each),
    case!("contended", "budget_ours", Sync, cases::ours::budget_shared, contended),
    case!("contended", "budget_tower_tps", Sync, cases::retry::tower_tps_budget_shared, contended),
    case!("contended", "breaker_ours", Sync, cases::ours_guarded::breaker_shared, contended),
    case!("contended", "breaker_recloser", Sync, cases::breaker::recloser_shared, contended),
    case!("contended", "breaker_failsafe", Sync, cases::breaker::failsafe_shared, contended),
    case!("contended", "rate_limiter_ours", Sync, cases::ours_guarded::rate_limiter_shared, contended),
    case!("contended", "rate_limiter_governor", Sync, cases::limits::governor_shared, contended),
    case!("contended", "rate_limiter_tower_resilience", Async, cases::contended::tower_resilience_rate_limiter, each),
    case!("contended", "bulkhead_ours", Sync, cases::ours_guarded::bulkhead_shared, contended),
    case!("contended", "bulkhead_tokio_semaphore", Sync, cases::limits::tokio_semaphore_shared, contended),
    case!("contended", "bulkhead_tower_concurrency_limit", Async, cases::contended::tower_concurrency_limit, each),
    case!("contended", "adaptive_ours", Sync, cases::adaptive::aimd_shared, contended),
    case!("contended", "adaptive_tower_resilience", Async, cases::contended::tower_resilience_adaptive, each),
    case!("contended", "timeout_ours", Async, cases::ours_guarded::timeout_shared, contended),
    case!("contended", "timeout_tokio", Async, cases::contended::tokio_timeout, contended),
    case!("contended", "timeout_seatbelt", Async, cases::contended::seatbelt_timeout, contended),
    case!("contended", "stack_ours", Sync, cases::ours_guarded::full_shared, contended),
    case!("contended", "stack_no_breaker_ours", Sync, cases::ours_guarded::stack_shared, contended),
    case!(
        "contended",
        "limiter_then_bulkhead_ours",
        Sync,
        cases::ours_guarded::limiter_then_bulkhead_shared,
        contended
    ),
    // ---- The user-shaped rows (`cases::user_shaped`): a `#[resilient]` trait over an
    // `#[inline(never)]` operation returning `Result<u32, MyError>`, results used, async calls
    // awaited in a loop inside one `block_on`. Groups `user_*`; `docs/benchmarks.md` quotes them first.
    case!("user_floor", "direct_sync", Sync, us::anchors::direct_sync, user),
    case!("user_floor", "direct_async", Awaited, us::anchors::direct_async, user),
    case!("user_retry_success", "ours_sync", Sync, us::ours::retry_sync, user),
    case!("user_retry_success", "ours_async", Awaited, us::ours::retry_async, user),
    case!("user_retry_success", "backon_sync", Sync, us::anchors::backon_sync, user),
    case!("user_retry_success", "backon_async", Awaited, us::anchors::backon_async, user),
    case!("user_retry_success", "tower_retry_async", Awaited, us::anchors::tower_retry_async, user),
    case!("user_retry_success", "seatbelt_async", Awaited, us::anchors::seatbelt_retry_async, user),
    case!("user_retry_success", "tower_resilience_async", Awaited, us::anchors::tower_resilience_retry_async, user),
    case!("user_retry_fail_once", "ours_sync", Sync, us::ours::sync_fail_once, user),
    case!("user_retry_fail_once", "ours_async", Awaited, us::ours::awaited_fail_once, user),
    case!("user_retry_fail_once", "backon_sync", Sync, us::anchors::backon_sync_fail_once, user),
    case!("user_retry_fail_once", "backon_async", Awaited, us::anchors::backon_async_fail_once, user),
    case!("user_retry_fail_once", "tower_retry_async", Awaited, us::anchors::tower_retry_async_fail_once, user),
    case!("user_retry_fail_once", "seatbelt_async", Awaited, us::anchors::seatbelt_retry_async_fail_once, user),
    case!(
        "user_retry_fail_once",
        "tower_resilience_async",
        Awaited,
        us::anchors::tower_resilience_retry_async_fail_once,
        user
    ),
    case!("user_breaker_closed", "ours_sync", Sync, us::ours::breaker_sync, user),
    case!("user_breaker_closed", "ours_async", Awaited, us::ours::breaker_async, user),
    case!("user_breaker_closed", "recloser_sync", Sync, us::anchors::recloser_sync, user),
    case!("user_breaker_closed", "recloser_async", Awaited, us::anchors::recloser_async, user),
    case!("user_breaker_closed", "failsafe_sync", Sync, us::anchors::failsafe_sync, user),
    case!("user_breaker_closed", "seatbelt_async", Awaited, us::anchors::seatbelt_breaker_async, user),
    case!("user_breaker_closed", "tower_resilience_async", Awaited, us::anchors::tower_resilience_breaker_async, user),
    case!("user_rate_limiter", "ours_sync", Sync, us::ours::rate_limiter_sync, user),
    case!("user_rate_limiter", "ours_async", Awaited, us::ours::rate_limiter_async, user),
    case!("user_rate_limiter", "governor_sync", Sync, us::anchors::governor_sync, user),
    case!("user_rate_limiter", "governor_async", Awaited, us::anchors::governor_async, user),
    case!(
        "user_rate_limiter",
        "tower_resilience_async",
        Awaited,
        us::anchors::tower_resilience_rate_limiter_async,
        user
    ),
    case!("user_bulkhead", "ours_sync", Sync, us::ours::bulkhead_sync, user),
    case!("user_bulkhead", "ours_async", Awaited, us::ours::bulkhead_async, user),
    case!("user_bulkhead", "tokio_semaphore_sync", Sync, us::anchors::tokio_semaphore_sync, user),
    case!("user_bulkhead", "tokio_semaphore_async", Awaited, us::anchors::tokio_semaphore_async, user),
    case!("user_bulkhead", "tower_resilience_async", Awaited, us::anchors::tower_resilience_bulkhead_async, user),
    case!("user_timeout", "ours_async", Awaited, us::ours::timeout_async, user),
    case!("user_timeout", "tokio_timeout_async", Awaited, us::anchors::tokio_timeout_async, user),
    case!("user_timeout", "seatbelt_async", Awaited, us::anchors::seatbelt_timeout_async, user),
    case!("user_timeout", "tower_resilience_async", Awaited, us::anchors::tower_resilience_timeout_async, user),
    case!("user_adaptive_limit", "ours_sync", Sync, us::ours::adaptive_sync, user),
    case!("user_adaptive_limit", "ours_async", Awaited, us::ours::adaptive_async, user),
    case!("user_adaptive_limit", "tower_resilience_async", Awaited, us::anchors::tower_resilience_adaptive_async, user),
    case!("user_hedge", "ours_async", Awaited, us::ours::hedge_async, user),
    case!("user_hedge", "seatbelt_async", Awaited, us::anchors::seatbelt_hedge_async, user),
    case!("user_fallback", "ours_sync", Sync, us::ours::fallback_sync, user),
    case!("user_fallback", "ours_async", Awaited, us::ours::fallback_async, user),
    case!("user_fallback", "seatbelt_async", Awaited, us::anchors::seatbelt_fallback_async, user),
    case!("user_stack", "ours_sync", Sync, us::ours::stack_sync, user),
    case!("user_stack", "ours_async", Awaited, us::ours::stack_async, user),
    case!("user_stack", "tower_resilience_async", Awaited, us::anchors::tower_resilience_stack_async, user),
    // The same policies awaited by two concurrent callers on a two-worker multi-thread runtime.
    case!("user_multi_thread", "direct", MultiThread, us::multi_thread::direct, user),
    case!("user_multi_thread", "ours_retry", MultiThread, us::multi_thread::retry, user),
    case!("user_multi_thread", "ours_breaker", MultiThread, us::multi_thread::breaker, user),
    case!("user_multi_thread", "ours_rate_limiter", MultiThread, us::multi_thread::rate_limiter, user),
    case!("user_multi_thread", "ours_bulkhead", MultiThread, us::multi_thread::bulkhead, user),
    case!("user_multi_thread", "ours_timeout", MultiThread, us::multi_thread::timeout, user),
    case!("user_multi_thread", "ours_adaptive_limit", MultiThread, us::multi_thread::adaptive, user),
    case!("user_multi_thread", "ours_hedge", MultiThread, us::multi_thread::hedge, user),
    case!("user_multi_thread", "ours_fallback", MultiThread, us::multi_thread::fallback, user),
    case!("user_multi_thread", "ours_stack", MultiThread, us::multi_thread::stack, user),
];

use cases::user_shaped as us;

/// The cases of one criterion group, in table order.
pub fn group(name: &str) -> impl Iterator<Item = &'static Case> + '_ {
    CASES.iter().filter(move |case| case.group == name)
}

/// Finds a case by `group/name`.
pub fn find(id: &str) -> Option<&'static Case> {
    CASES.iter().find(|case| case.id() == id)
}
