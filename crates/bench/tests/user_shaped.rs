//! The user-shaped harness: the awaited driver really awaits every call inside its loop, the
//! multi-thread driver really runs two callers, the fail-once rows really fail once, and every
//! policy row has ours beside the anchors it is compared with.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use bench::cases::user_shaped::multi_thread::Caller;
use bench::cases::user_shaped::ours::{Inventory as _, service};
use bench::cases::user_shaped::{AppError, MyError, op};
use bench::{Form, Run};

fn run(iters: u64) -> Run {
    Run { iters, warmup: 16, elapsed: Default::default(), cpu: Default::default(), allocations: 0, overlap: 0.0 }
}

#[test]
fn the_awaited_driver_awaits_warm_up_and_measured_calls() {
    let mut calls = 0u64;
    let mut polled_ready = 0u64;
    let mut r = run(1_000);
    r.drive_awaited(async || {
        calls += 1;
        // A real suspension point: the driver must poll this future again, not just build it.
        tokio::task::yield_now().await;
        polled_ready += 1;
    });
    assert_eq!(calls, 1_016);
    assert_eq!(polled_ready, 1_016);
}

static MT_CALLS: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy)]
struct Counted;

impl Caller for Counted {
    async fn call(self) {
        MT_CALLS.fetch_add(1, Ordering::Relaxed);
        tokio::task::yield_now().await;
    }
}

#[test]
fn the_multi_thread_driver_runs_two_callers_to_the_end() {
    MT_CALLS.store(0, Ordering::Relaxed);
    let mut r = run(500);
    r.drive_multi_thread(Counted);
    assert_eq!(MT_CALLS.load(Ordering::Relaxed), 2 * (500 + 16));
    assert_eq!(r.cpu, r.elapsed, "the multi-thread rows report wall time");
}

#[test]
fn the_fail_once_backend_fails_exactly_once_per_armed_call() {
    let service = service();
    service.fail_next.store(true, Ordering::Relaxed);
    assert_eq!(service.api.flaky(1), Ok(2), "the retry answers with the second attempt");
    assert!(!service.fail_next.load(Ordering::Relaxed), "the first attempt consumed the failure");
    assert_eq!(op(u32::MAX), Err(MyError::Invalid));
    assert_eq!(AppError::from(MyError::Invalid), AppError::Op(MyError::Invalid));
}

#[test]
fn the_async_rows_resolve_through_the_wrapper() {
    let service = service();
    let answer = bench::exec::runtime().block_on(async {
        service.fail_next.store(true, Ordering::Relaxed);
        (service.api.flaky_async(1).await, service.api.stacked_async(2).await, service.api.timed_async(3).await)
    });
    assert_eq!(answer, (Ok(2), Ok(3), Ok(4)));
}

#[test]
fn every_user_group_sets_ours_beside_an_anchor_in_each_form_it_measures() {
    let groups: BTreeSet<&str> = bench::CASES.iter().map(|c| c.group).filter(|g| g.starts_with("user_")).collect();
    let expected = [
        "user_adaptive_limit",
        "user_breaker_closed",
        "user_bulkhead",
        "user_fallback",
        "user_floor",
        "user_hedge",
        "user_multi_thread",
        "user_rate_limiter",
        "user_retry_fail_once",
        "user_retry_success",
        "user_stack",
        "user_timeout",
    ];
    assert_eq!(groups.into_iter().collect::<Vec<_>>(), expected);
    for group in expected.iter().filter(|g| !matches!(**g, "user_floor" | "user_multi_thread")) {
        let cases: Vec<_> = bench::group(group).collect();
        let ours_async = cases.iter().any(|c| c.name == "ours_async" && c.form == Form::Awaited);
        let anchor_async = cases.iter().any(|c| !c.name.starts_with("ours") && c.form == Form::Awaited);
        assert!(ours_async && anchor_async, "{group}: ours and an anchor, awaited");
        assert!(cases.iter().all(|c| c.form != Form::Async), "{group}: user rows are awaited, never polled once");
    }
    let multi: Vec<_> = bench::group("user_multi_thread").collect();
    assert!(multi.iter().all(|c| c.form == Form::MultiThread && c.threads == 2));
    assert_eq!(multi.iter().filter(|c| c.name.starts_with("ours_")).count(), 9, "one row per policy and the stack");
}

#[test]
fn building_a_row_again_does_not_leak_a_ticker_thread() {
    // Criterion builds every row once per sample. A row that leaked its registry would leak the
    // registry's coarse-clock ticker thread with it: thousands of threads over a run.
    let threads = || std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0);
    let ids = [
        "user_rate_limiter/ours_async",
        "user_stack/ours_sync",
        "full_stack/ours_async",
        "adaptive_limit_pass/ours_aimd_async",
    ];
    for id in ids {
        bench::find(id).expect("the row exists").run(10);
    }
    let before = threads();
    for _ in 0..20 {
        for id in ids {
            bench::find(id).expect("the row exists").run(10);
        }
    }
    // Other tests of this binary may start or end threads meanwhile: a leak would add 20 or more.
    assert!(threads() < before + 10, "{before} threads before, {} after", threads());
}
