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

/// The rest of a bench file whose criterion groups are case groups of `bench::CASES` (the file
/// declares `#[macro_use] mod common;`): one function per group, registering it with [`group`], then
/// `criterion_group!`/`criterion_main!` over them.
#[allow(unused_macros)] // `user_shaped.rs` registers its groups itself.
macro_rules! groups {
    ($($group:ident),+ $(,)?) => {
        $(
            fn $group(c: &mut criterion::Criterion) {
                common::group(c, stringify!($group));
            }
        )+
        criterion::criterion_group!(benches, $($group),+);
        criterion::criterion_main!(benches);
    };
}
