//! Criterion groups: full_stack (see `bench::CASES`).

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn full_stack(c: &mut Criterion) {
    common::group(c, "full_stack");
}

criterion_group!(benches, full_stack);
criterion_main!(benches);
