//! [`Policy`] (declared with the list, `policy_list.rs`) and a pipeline's non-default order (`.order([…])`, SPEC §6).
//!
//! A pipeline in the default order runs the fixed loop of `execute.rs` (retry outside the guards).
//! One built with `.order(…)` that changes the nesting is resolved here into [`Steps`], which
//! `reordered.rs` runs as a chain.

use crate::error::{RegistryError, codes};
pub use crate::policy_list::Policy;
use crate::registry::for_each_pipeline_policy;

/// The order's names, from the list (`for_each_pipeline_policy!`): [`Policy`] (the fallback, then
/// every policy of the list), [`Step`] (the retry and the guards), the default order and the
/// mapping from one to the other.
macro_rules! order_parts {
    (retry: { $retry:ident: $retry_policy:ident($retry_builder:ident) as $retry_variant:ident, $($retry_rest:tt)* }
     hedge: { $hedge:ident: $hedge_policy:ident($hedge_builder:ident) as $hedge_variant:ident, $($hedge_rest:tt)* }
     guards: [$({ $module:ident: $policy:ident($builder:ident) as $variant:ident, $($rest:tt)* })*]) => {
        /// One layer of a reordered pipeline: the policies that can move (the fallback is always
        /// outermost, applied by `execute` around the chain; a hedge is outermost inside it, each of its
        /// attempts running the steps).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(super) enum Step {
            $retry_variant,
            $($variant,)*
        }

        /// How many steps there are.
        const COUNT: usize = [Step::$retry_variant $(, Step::$variant)*].len();

        /// The default order of the steps (outermost first).
        const DEFAULT: [Step; COUNT] = [Step::$retry_variant $(, Step::$variant)*];

        impl Step {
            fn of(policy: Policy) -> Option<Step> {
                match policy {
                    Policy::$retry_variant => Some(Step::$retry_variant),
                    $(Policy::$variant => Some(Step::$variant),)*
                    Policy::Fallback | Policy::$hedge_variant => None,
                    // Chaos is always innermost, whatever the order.
                    #[cfg(feature = "chaos")]
                    Policy::Chaos => None,
                }
            }
        }
    };
}

for_each_pipeline_policy!(order_parts);

/// A reordered pipeline's steps, outermost first: at most one of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Steps {
    steps: [Step; COUNT],
    len: usize,
}

impl Steps {
    fn as_slice(&self) -> &[Step] {
        &self.steps[..self.len]
    }
}

/// Checks `.order(…)` (`R4C-REG-001` for a name twice, or `Fallback` anywhere but first) and
/// returns the steps of the policies present (`has`), when their order differs from the default:
/// the listed ones first, in the listed order, then the others in their default relative order.
/// A listed policy the pipeline does not have is ignored.
pub(super) fn resolve(id: &str, listed: &[Policy], has: impl Fn(Step) -> bool) -> Result<Option<Steps>, RegistryError> {
    for (i, policy) in listed.iter().enumerate() {
        if listed[..i].contains(policy) {
            let message = format!("`Policy::{policy:?}` listed twice in `.order(…)`: each policy at most once");
            return Err(RegistryError::new(codes::INVALID_COMBINATION, Some(id), message));
        }
        if *policy == Policy::Fallback && i != 0 {
            let message = "a fallback is always the outermost layer: list `Policy::Fallback` first or leave it out";
            return Err(RegistryError::new(codes::INVALID_COMBINATION, Some(id), message));
        }
    }
    let listed: Vec<Step> = listed.iter().filter_map(|p| Step::of(*p)).collect();
    let unlisted = DEFAULT.iter().copied().filter(|s| !listed.contains(s));
    let mut steps = Steps { steps: DEFAULT, len: 0 };
    for step in listed.iter().copied().chain(unlisted).filter(|s| has(*s)) {
        steps.steps[steps.len] = step;
        steps.len += 1;
    }
    let default: Vec<Step> = DEFAULT.iter().copied().filter(|s| has(*s)).collect();
    Ok((steps.as_slice() != default.as_slice()).then_some(steps))
}

impl Steps {
    /// The steps, outermost first.
    pub(super) fn get(&self) -> &[Step] {
        self.as_slice()
    }

    /// The steps but the retry, in their order: one attempt of the tower layer, which drives the
    /// retry itself (so a policy ordered outside the retry runs once per attempt there).
    pub(super) fn without_retry(&self) -> Steps {
        let mut steps = Steps { steps: DEFAULT, len: 0 };
        for step in self.as_slice().iter().filter(|s| **s != Step::Retry) {
            steps.steps[steps.len] = *step;
            steps.len += 1;
        }
        steps
    }
}
