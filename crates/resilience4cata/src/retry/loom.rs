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
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let budget = Arc::clone(&budget);
                thread::spawn(move || {
                    budget.count_call();
                    u64::from(budget.try_grant(5)) + u64::from(budget.try_grant(5))
                })
            })
            .collect();
        let granted: u64 = callers.into_iter().map(|h| h.join().unwrap()).sum();
        let snapshot = budget.snapshot(5);
        assert_eq!(granted, snapshot.retries, "every grant is counted once");
        assert!(snapshot.retries <= snapshot.allowed_retries, "{snapshot:?}");
        // 1 retry of reserve + 50 % of 2 calls, unless a call was lost (stricter).
        assert!(granted <= 2 && granted >= 1, "{granted}");
    });
}
