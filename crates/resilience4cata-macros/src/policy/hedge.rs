//! `#[hedge(…)]`: keys of SPEC §7.7. Async methods only, and never beside a retry (both decide
//! when to start another attempt).

use super::{CONFIG, ENABLED, NAME, key, policy_spec};
use crate::diag::{ATR_HEDGED_ATTEMPTS, ATR_RETRY_WITH_HEDGE, SIG_HEDGE_SYNC};
use crate::model::{KeySpec, Method, PolicySpec, Problem, Role, Settings, ValueKind};

/// The hedge attribute.
pub(crate) static HEDGE: PolicySpec = policy_spec!(hedge, Hedge, check: check, rejects: false);

static KEYS: &[KeySpec] = &[
    key("delay", ValueKind::Duration { nonzero: None }, Role::Builder),
    key("max_hedged_attempts", ValueKind::Count { min: 1, max: 8, code: ATR_HEDGED_ATTEMPTS }, Role::Builder),
    ENABLED,
    NAME,
    CONFIG,
];

fn check(settings: &Settings, method: &Method) -> Vec<Problem> {
    let name = &method.item.sig.ident;
    let mut problems = Vec::new();
    if !method.is_async() {
        problems.push(Problem::on_attribute(
            settings,
            SIG_HEDGE_SYNC,
            format!(
                "`#[hedge]` needs an async method, and `{name}` is sync: hedged attempts run side by side inside \
                 one future, and a blocking call holds its thread until it returns; make it `async fn` (or return \
                 `impl Future`), or use `#[retry]`"
            ),
        ));
    }
    let shared = method.args.iter().find(|a| matches!(&a.ty, syn::Type::Reference(r) if r.mutability.is_some()));
    if let (Some(arg), true) = (shared, method.is_async()) {
        problems.push(Problem::on_attribute(
            settings,
            SIG_HEDGE_SYNC,
            format!(
                "`#[hedge]` cannot race `{name}`: its argument `{}` is a `&mut` reference, and hedged attempts run \
                 side by side, so each would need it at once; take `&` (with interior mutability if the attempts \
                 must write), or an owned `Clone` value, or use `#[retry]`",
                arg.ident
            ),
        ));
    }
    if method.layers.iter().any(|p| p.spec.name == "retry") {
        problems.push(Problem::on_attribute(
            settings,
            ATR_RETRY_WITH_HEDGE,
            format!(
                "`{name}` has both `#[retry]` and `#[hedge]` (after trait-level attributes are merged): both decide \
                 when another attempt starts; keep one (a hedge already starts the next attempt at once when one \
                 fails)"
            ),
        ));
    }
    problems
}
