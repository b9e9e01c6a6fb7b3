//! Criterion groups: breaker_closed (see `bench::CASES`).

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn breaker_closed(c: &mut Criterion) {
    common::group(c, "breaker_closed");
}

criterion_group!(benches, breaker_closed);
criterion_main!(benches);
