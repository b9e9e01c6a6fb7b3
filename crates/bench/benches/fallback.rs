//! Criterion group: fallback (see `bench::CASES`).

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn fallback(c: &mut Criterion) {
    common::group(c, "fallback");
}

criterion_group!(benches, fallback);
criterion_main!(benches);
