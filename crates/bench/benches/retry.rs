//! Criterion groups: baseline, retry_success, retry_fail_once, budget_success (see `bench::CASES`).

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn baseline(c: &mut Criterion) {
    common::group(c, "baseline");
}

fn retry_success(c: &mut Criterion) {
    common::group(c, "retry_success");
}

fn retry_fail_once(c: &mut Criterion) {
    common::group(c, "retry_fail_once");
}

fn budget_success(c: &mut Criterion) {
    common::group(c, "budget_success");
}

criterion_group!(benches, baseline, retry_success, retry_fail_once, budget_success);
criterion_main!(benches);
