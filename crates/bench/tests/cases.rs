//! The harness itself: every case runs without waiting, names are unique, the counting allocator
//! counts what the calling thread allocates and nothing else.

use std::collections::HashSet;

#[test]
fn every_case_completes_without_waiting() {
    for case in bench::CASES {
        let run = case.run(50);
        assert_eq!(run.iters, 50, "{}", case.id());
    }
}

#[test]
fn case_ids_are_unique_and_found_by_id() {
    let mut seen = HashSet::new();
    for case in bench::CASES {
        assert!(seen.insert(case.id()), "duplicate case {}", case.id());
        assert!(std::ptr::eq(bench::find(&case.id()).expect("found"), case));
    }
    assert!(bench::find("no/such").is_none());
}

#[test]
fn the_baseline_allocates_nothing_and_a_box_counts_once() {
    let direct = bench::find("baseline/direct").expect("baseline exists");
    assert_eq!(direct.run(1_000).allocations, 0);

    let before = bench::alloc::allocations();
    let boxed = std::hint::black_box(Box::new(7u64));
    assert_eq!(bench::alloc::allocations() - before, 1);
    drop(boxed);
}

#[test]
fn allocations_on_another_thread_are_not_counted() {
    let before = bench::alloc::allocations();
    std::thread::scope(|s| {
        s.spawn(|| std::hint::black_box(vec![0u8; 64]));
    });
    let spawned = bench::alloc::allocations() - before;
    // Spawning a thread allocates on this thread (its handle, its name); the vector does not count.
    let before = bench::alloc::allocations();
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..100 {
                std::hint::black_box(vec![0u8; 64]);
            }
        });
    });
    assert_eq!(bench::alloc::allocations() - before, spawned);
}

#[test]
fn a_known_allocating_anchor_is_counted() {
    // tower-resilience boxes its response futures: at least one allocation per call.
    let case = bench::find("retry_success/tower_resilience_async").expect("anchor exists");
    assert!(case.allocations_per_call(100) >= 1.0);
}

#[test]
fn our_cases_allocate_nothing_per_call() {
    // Multi-thread rows make their calls on the runtime's workers: the calling thread only
    // spawns (which allocates) and waits.
    let ours: Vec<_> = bench::CASES
        .iter()
        .filter(|case| case.name.starts_with("ours") && case.form != bench::Form::MultiThread)
        .collect();
    assert!(!ours.is_empty());
    for case in ours {
        assert_eq!(case.run(1_000).allocations, 0, "{} allocated", case.id());
    }
}

#[test]
fn the_keyed_rows_set_ours_beside_governor_in_every_shape() {
    let names: Vec<&str> = bench::group("keyed_rate_limiter_pass").map(|case| case.name).collect();
    for key in ["str", "u64"] {
        for shape in ["sync", "sync_2t", "sync_2t_apart"] {
            for anchor in ["ours", "governor"] {
                let name = format!("{anchor}_{key}_{shape}");
                assert!(names.contains(&name.as_str()), "{name} missing from {names:?}");
            }
        }
    }
    for case in bench::group("keyed_rate_limiter_pass") {
        assert_eq!(case.threads, if case.name.contains("_2t") { 2 } else { 1 }, "{}", case.id());
    }
}

#[test]
fn the_apart_driver_runs_the_contender_on_its_own_calls() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let (caller, contender) = (AtomicU64::new(0), AtomicU64::new(0));
    let mut run = bench::Run {
        iters: 1_000,
        warmup: 16,
        elapsed: Default::default(),
        cpu: Default::default(),
        allocations: 0,
        overlap: 0.0,
    };
    run.drive_contended_apart(
        || {
            caller.fetch_add(1, Ordering::Relaxed);
        },
        || {
            contender.fetch_add(1, Ordering::Relaxed);
        },
    );
    assert_eq!(caller.load(Ordering::Relaxed), 1_016, "the measured thread makes only its own calls");
    // The contender may stop before its first batch of 64 when the measured loop is quick: only
    // its calls are in its counter.
    assert_eq!(contender.load(Ordering::Relaxed) % 64, 0);
}

#[test]
fn a_new_key_is_counted_in_bytes_per_key_and_an_existing_one_is_not() {
    let (ours, governor) =
        (bench::cases::keyed::ours_bytes_per_key(2_000), bench::cases::keyed::governor_bytes_per_key(2_000));
    // A `u64` key keeps at least the key and a state word in either table; a `String` key its
    // 12 bytes more.
    for figures in [ours, governor] {
        assert!(figures.u64_key >= 16.0, "{figures:?}");
        assert!(figures.str_key >= figures.u64_key + 12.0 - 1.0, "{figures:?}");
    }
    // An existing key's call keeps nothing.
    let case = bench::find("keyed_rate_limiter_pass/ours_str_sync").expect("the row exists");
    assert_eq!(case.run(1_000).allocations, 0);
}
