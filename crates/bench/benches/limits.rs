//! Criterion groups: rate_limiter_pass, bulkhead_pass (see `bench::CASES`).

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn rate_limiter_pass(c: &mut Criterion) {
    common::group(c, "rate_limiter_pass");
}

fn bulkhead_pass(c: &mut Criterion) {
    common::group(c, "bulkhead_pass");
}

criterion_group!(benches, rate_limiter_pass, bulkhead_pass);
criterion_main!(benches);
