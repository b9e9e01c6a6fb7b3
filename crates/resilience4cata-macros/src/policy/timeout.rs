//! `#[timeout(…)]`: its keys are the fields of `resilience4cata::timeout::TimeoutConfig`. No `name`
//! (the id is always the derived one, so `name` is an unknown key), and async methods only.

use super::{CONFIG, ENABLED, key, policy_spec};
use crate::diag::{ATR_TIMEOUT_DURATION, SIG_TIMEOUT_SYNC};
use crate::model::{KeySpec, Method, PolicySpec, Problem, Role, Settings, ValueKind};

/// The timeout attribute.
pub(crate) static TIMEOUT: PolicySpec = policy_spec!(timeout, Timeout, check: check, rejects: true);

static KEYS: &[KeySpec] =
    &[key("duration", ValueKind::Duration { nonzero: Some(ATR_TIMEOUT_DURATION) }, Role::Builder), ENABLED, CONFIG];

/// A blocking call cannot be cancelled, so a timeout on a sync method could only report lateness.
fn check(settings: &Settings, method: &Method) -> Vec<Problem> {
    if method.is_async() {
        return Vec::new();
    }
    let name = &method.item.sig.ident;
    vec![Problem::on_attribute(
        settings,
        SIG_TIMEOUT_SYNC,
        format!(
            "`#[timeout]` needs an async method, and `{name}` is sync: a blocking call cannot be cancelled, so \
             its attempt could not be stopped at the deadline; make it `async fn` (or return `impl Future`), or \
             remove `#[timeout]` and bound the blocking call itself (e.g. a socket read timeout)"
        ),
    )]
}
