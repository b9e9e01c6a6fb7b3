//! The observable state of a retry instance.

use std::sync::Arc;

use crate::readings::{Reading, Series};

use super::RetryConfig;

/// One retry instance as `registry.snapshot().retries()` lists it.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RetrySnapshot {
    /// The instance id.
    pub instance: Arc<str>,
    /// The resolved configuration.
    pub config: RetryConfig,
    /// The retry budget's current window, `None` without a budget.
    pub budget: Option<Budget>,
}

/// The current window of a retry budget.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Budget {
    /// Calls started in the window.
    pub calls: u64,
    /// Retries granted in the window.
    pub retries: u64,
    /// Retries the window allows: `floor(reserve × window seconds + percent % × calls)`.
    pub allowed_retries: u64,
}

const ALLOWED: Series = Series::gauge("retry_budget_allowed_retries", "retries the budget's current window allows");
const RETRIES: Series = Series::gauge("retry_budget_retries", "retries granted in the budget's current window");

/// The budget's window, only with a budget: a retry without one has nothing to measure.
impl crate::readings::Readings for RetrySnapshot {
    const SERIES: &'static [Series] = &[ALLOWED, RETRIES];

    fn instance(&self) -> &str {
        &self.instance
    }

    fn read(&self, out: &mut dyn FnMut(Reading)) {
        let Some(budget) = self.budget else { return };
        out(Reading::new(&ALLOWED, budget.allowed_retries as f64));
        out(Reading::new(&RETRIES, budget.retries as f64));
    }
}
