//! Criterion groups of the user-shaped rows (`bench::cases::user_shaped`): every `user_*` group of
//! `bench::CASES`, ours beside the anchors, and the multi-thread rows (`user_multi_thread`).
//!
//! ```text
//! cargo bench -p bench --bench user_shaped -- --warm-up-time 1 --measurement-time 2
//! cargo bench -p bench --bench user_shaped -- user_breaker_closed   # one group
//! ```

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn user_shaped(c: &mut Criterion) {
    let mut groups: Vec<&str> = bench::CASES.iter().map(|case| case.group).filter(|g| g.starts_with("user_")).collect();
    groups.dedup();
    for group in groups {
        common::group(c, group);
    }
}

criterion_group!(benches, user_shaped);
criterion_main!(benches);
