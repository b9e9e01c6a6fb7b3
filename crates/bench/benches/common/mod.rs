//! Shared by every bench file: one criterion group per case group of `bench::CASES`, ours beside
//! the anchors, each sample built afresh and timed over the calling thread's loop only (its CPU time unless
//! `BENCH_CLOCK=wall`: see `bench::Run::measured`).

use criterion::Criterion;

/// Registers criterion group `group` with every case of that group.
pub fn group(c: &mut Criterion, group: &str) {
    let mut criterion_group = c.benchmark_group(group);
    for case in bench::group(group) {
        criterion_group.bench_function(case.name, |b| b.iter_custom(|iters| case.run(iters).measured()));
    }
    criterion_group.finish();
}
