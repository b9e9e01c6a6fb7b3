//! loom model of the retry budget's stripes and grants (run with `RUSTFLAGS="--cfg loom"`, see
//! `docs/reliability.md`).

use std::sync::Arc;
use std::time::Duration;

use loom::thread;

use super::RetryConfig;
use super::budget::RetryBudget;

#[test]
fn loom_granted_retries_never_exceed_allowed() {
    loom::model(|| {
        let config = RetryConfig {
            budget_percent: 50.0,
            budget_min_retries_per_second: 1,
            budget_window: Duration::from_secs(1),
            ..RetryConfig::default()
        };
        let budget = Arc::new(RetryBudget::new(&config, 0));
        // Calls are counted by plain stores on per-thread stripes, approximate on purpose (a lost
        // call only lowers the allowance); the grants are the compare-and-set under test.
        budget.count_call();
        budget.count_call();
        let callers: Vec<_> = (0..3)
            .map(|_| {
                let budget = Arc::clone(&budget);
                thread::spawn(move || u64::from(budget.try_grant(5)))
            })
            .collect();
        let granted: u64 = callers.into_iter().map(|h| h.join().unwrap()).sum();
        let snapshot = budget.snapshot(5);
        assert_eq!(granted, snapshot.retries, "every grant is counted once");
        // 1 retry of reserve (1/s × 1 s) + 50 % of 2 calls = 2. A grant racing another thread's
        // dating of the pending calls may see fewer calls and refuse: stricter, never looser.
        assert_eq!(snapshot.allowed_retries, 2);
        assert!((1..=2).contains(&granted), "{snapshot:?}");
    });
}
