//! Diagnostics: every compile error the macros emit carries one of these codes and points at the
//! offending token. `docs/errors.md` has a section per code.

use proc_macro2::TokenStream;
use quote::ToTokens;

/// Attribute values and keys.
pub(crate) const ATR_DURATION: &str = "R4C-ATR-001";
pub(crate) const ATR_UNKNOWN_KEY: &str = "R4C-ATR-002";
pub(crate) const ATR_MAX_ATTEMPTS: &str = "R4C-ATR-003";
pub(crate) const ATR_MULTIPLIER: &str = "R4C-ATR-004";
pub(crate) const ATR_VALUE_KIND: &str = "R4C-ATR-005";
pub(crate) const ATR_ENABLED: &str = "R4C-ATR-006";
pub(crate) const ATR_BUDGET: &str = "R4C-ATR-007";
pub(crate) const ATR_DUPLICATE: &str = "R4C-ATR-008";
pub(crate) const ATR_SYNTAX: &str = "R4C-ATR-009";
pub(crate) const ATR_PLACEMENT: &str = "R4C-ATR-010";
pub(crate) const ATR_RESILIENT_ARGS: &str = "R4C-ATR-011";
/// Rate limiter, bulkhead and timeout values (`R4C-ATR-03x`; the circuit breaker has `-02x`).
pub(crate) const ATR_PERMITS: &str = "R4C-ATR-030";
pub(crate) const ATR_PERIOD: &str = "R4C-ATR-031";
pub(crate) const ATR_MAX_CONCURRENT_CALLS: &str = "R4C-ATR-032";
pub(crate) const ATR_TIMEOUT_DURATION: &str = "R4C-ATR-033";
/// Adaptive limit values (`R4C-ATR-05x`): the limits' order, and the algorithms' parameters.
pub(crate) const ATR_LIMIT_ORDER: &str = "R4C-ATR-050";
pub(crate) const ATR_LIMIT_PARAMETER: &str = "R4C-ATR-051";
/// Circuit breaker values (`R4C-ATR-02x`).
pub(crate) const ATR_CB_COUNT: &str = "R4C-ATR-020";
pub(crate) const ATR_CB_RATE: &str = "R4C-ATR-021";
pub(crate) const ATR_CB_SLOW_ZERO: &str = "R4C-ATR-022";
/// Hedge (`R4C-ATR-04x`).
pub(crate) const ATR_RETRY_WITH_HEDGE: &str = "R4C-ATR-040";
pub(crate) const ATR_HEDGED_ATTEMPTS: &str = "R4C-ATR-041";
/// Class style (`#[resilient(policies = field)]` on an impl block, `R4C-CLS-00x`): `policies`
/// missing, an unknown or repeated argument, a malformed value, an impl block it cannot rewrite
/// (`-005`, a `policies` field of another type, comes from the runtime's
/// `#[diagnostic::on_unimplemented]`).
pub(crate) const CLS_POLICIES_MISSING: &str = "R4C-CLS-001";
pub(crate) const CLS_ARGUMENT: &str = "R4C-CLS-002";
pub(crate) const CLS_VALUE: &str = "R4C-CLS-003";
pub(crate) const CLS_IMPL_SHAPE: &str = "R4C-CLS-004";
/// Bundles (`bundle!` and `#[bundle(…)]`): `#[policy_order]` in a bundle, an attribute that is
/// not a policy, a malformed `#[bundle(…)]`, a malformed `bundle!` entry.
pub(crate) const ATR_BUNDLE_ORDER: &str = "R4C-ATR-062";
pub(crate) const ATR_BUNDLE_NOT_POLICY: &str = "R4C-ATR-080";
pub(crate) const ATR_BUNDLE_USE: &str = "R4C-ATR-081";
pub(crate) const ATR_BUNDLE_SYNTAX: &str = "R4C-ATR-082";
/// Keyed instances (`R4C-ATR-07x`, SPEC §15): `key` on a policy without per-key state, `key`
/// where it names no method's parameters (trait or impl level, a bundle), `max_keys` below 1. A
/// key whose type cannot be a key is the runtime's `#[diagnostic::on_unimplemented]` code.
pub(crate) const ATR_KEY_NOT_KEYABLE: &str = "R4C-ATR-070";
pub(crate) const ATR_KEY_PLACEMENT: &str = "R4C-ATR-071";
pub(crate) const ATR_MAX_KEYS: &str = "R4C-ATR-072";
/// Classifier combinations (`R4C-CLF-…`, their own family: the class style has `R4C-CLS-…`).
pub(crate) const CLF_WITH_PATTERNS: &str = "R4C-CLF-001";
pub(crate) const CLF_EXHAUSTED_WITHOUT_CLASSIFIER: &str = "R4C-CLF-002";
/// Signatures and trait shapes (`R4C-SIG-002`, `-007`, `-010` and `-040` come from the runtime's
/// `#[diagnostic::on_unimplemented]`; the macro reports `-002` itself for a method without a
/// return type).
pub(crate) const SIG_RECEIVER: &str = "R4C-SIG-001";
pub(crate) const SIG_NOT_RESULT: &str = "R4C-SIG-002";
pub(crate) const SIG_GENERIC_METHOD: &str = "R4C-SIG-003";
pub(crate) const SIG_SUPERTRAIT: &str = "R4C-SIG-004";
pub(crate) const SIG_ASYNC_FORM: &str = "R4C-SIG-005";
pub(crate) const SIG_FUTURE_OUTPUT: &str = "R4C-SIG-006";
pub(crate) const SIG_TRAIT_SHAPE: &str = "R4C-SIG-008";
pub(crate) const SIG_NOT_FORWARDABLE: &str = "R4C-SIG-009";
/// `#[timeout]` on a sync method (`R4C-SIG-02x`: the limits' signature rules).
pub(crate) const SIG_TIMEOUT_SYNC: &str = "R4C-SIG-020";
/// `#[fallback(method = …)]`: the method is not in the trait, has another signature, or is the
/// protected method itself (`R4C-SIG-03x`).
pub(crate) const SIG_FALLBACK_NOT_FOUND: &str = "R4C-SIG-030";
pub(crate) const SIG_FALLBACK_SIGNATURE: &str = "R4C-SIG-031";
pub(crate) const SIG_FALLBACK_ITSELF: &str = "R4C-SIG-032";
/// `#[hedge]` on a sync method.
pub(crate) const SIG_HEDGE_SYNC: &str = "R4C-SIG-021";
/// `#[derive(ResilienceError)]`.
pub(crate) const DRV_NOT_ENUM: &str = "R4C-DRV-001";
pub(crate) const DRV_MISSING: &str = "R4C-DRV-002";
pub(crate) const DRV_DUPLICATE: &str = "R4C-DRV-003";
pub(crate) const DRV_SHAPE: &str = "R4C-DRV-004";
pub(crate) const DRV_ATTR_ARGS: &str = "R4C-DRV-005";

/// A `syn::Error` on `node` whose message starts with `[code]`.
pub(crate) fn error(node: impl ToTokens, code: &str, message: impl std::fmt::Display) -> syn::Error {
    syn::Error::new_spanned(node, format!("[{code}] {message}"))
}

/// Errors gathered across the whole input, so one run reports every independent mistake once.
#[derive(Default)]
pub(crate) struct Errors {
    errors: Vec<syn::Error>,
}

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    pub(crate) fn add(&mut self, node: impl ToTokens, code: &str, message: impl std::fmt::Display) {
        self.push(error(node, code, message));
    }

    pub(crate) fn len(&self) -> usize {
        self.errors.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// `compile_error!` invocations, one per error.
    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.errors.iter().map(syn::Error::to_compile_error).collect()
    }

    #[cfg(test)]
    pub(crate) fn messages(&self) -> Vec<String> {
        self.errors.iter().map(ToString::to_string).collect()
    }
}
