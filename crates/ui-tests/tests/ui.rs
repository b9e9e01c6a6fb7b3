//! Compile-time diagnostics of `#[resilient]` and `#[derive(ResilienceError)]`: one case per
//! mistake in `tests/ui/`, each producing exactly one error whose first line carries its code; and
//! `tests/ui/pass/` for every supported form, which must compile.
//!
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test -p ui-tests --all-features --test ui`,
//! then read it.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
