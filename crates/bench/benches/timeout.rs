//! Criterion groups: timeout_pass (see `bench::CASES`).

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn timeout_pass(c: &mut Criterion) {
    common::group(c, "timeout_pass");
}

criterion_group!(benches, timeout_pass);
criterion_main!(benches);
