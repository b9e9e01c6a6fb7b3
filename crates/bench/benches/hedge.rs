//! Criterion groups: hedge_first_answers (see `bench::CASES`).

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn hedge_first_answers(c: &mut Criterion) {
    common::group(c, "hedge_first_answers");
}

criterion_group!(benches, hedge_first_answers);
criterion_main!(benches);
