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
