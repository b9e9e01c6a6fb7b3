//! Criterion groups: rate_limiter_pass, bulkhead_pass, adaptive_limit_pass (see `bench::CASES`).

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn rate_limiter_pass(c: &mut Criterion) {
    common::group(c, "rate_limiter_pass");
}

fn bulkhead_pass(c: &mut Criterion) {
    common::group(c, "bulkhead_pass");
}

fn adaptive_limit_pass(c: &mut Criterion) {
    common::group(c, "adaptive_limit_pass");
}

criterion_group!(benches, rate_limiter_pass, bulkhead_pass, adaptive_limit_pass);
criterion_main!(benches);
