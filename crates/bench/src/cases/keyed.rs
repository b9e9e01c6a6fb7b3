//! Keyed rate limiters (SPEC §15): an existing key's pass path, ours through `#[resilient]`'s
//! `key = …` beside governor's keyed limiter (`RateLimiter::keyed`, on `DashMap`), with the same
//! quota (10⁹ calls per second: never reached) and the same key values.
//!
//! Each row's key exists before the measurement (made by the constructor), so the rows measure the
//! lookup of a key the table already has, the policy's pass path and the call. A `&str` key is a
//! borrowed `&str` for ours (looked up through `Borrow`) and a `&String` for governor, whose
//! `check_key` takes `&K`: the caller of governor keeps an owned key at hand, which is governor's
//! best case. The two-thread rows run the same calls on a second thread for the whole measured
//! loop, on the caller's key (`_2t`) or on a key of its own (`_2t_apart`, the contender's closure
//! is the second of the pair its constructor returns).
//!
//! [`ours_bytes_per_key`] and [`governor_bytes_per_key`] are the memory side: net bytes of `N` new
//! keys, divided by `N`.

use std::num::NonZeroU32;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use resilience4cata::resilient;

use super::ours_guarded::GuardError;
use crate::{alloc, consume, opaque, work};

/// The quota of every keyed row, ours and governor's: calls per second, never reached.
pub const PER_SECOND: u32 = 1_000_000_000;

/// The key of the caller thread, and of the contender in the `_2t` rows.
const TENANT: &str = "tenant-00042";
/// The contender's own key in the `_2t_apart` rows.
const OTHER_TENANT: &str = "tenant-31337";
const ID: u64 = 42;
const OTHER_ID: u64 = 31_337;

/// Keyed rate limiters as a user writes them: one state per tenant name or per numeric id.
#[resilient]
pub trait Tenants {
    /// A limiter per tenant name.
    #[rate_limiter(permits = 1000000000, period = "1s", key = tenant, max_keys = 1000000)]
    fn by_name(&self, tenant: &str, x: u64) -> Result<u64, GuardError>;

    /// A limiter per numeric id.
    #[rate_limiter(permits = 1000000000, period = "1s", key = id, max_keys = 1000000)]
    fn by_id(&self, id: u64, x: u64) -> Result<u64, GuardError>;
}

/// The delegate of [`Tenants`]: `work`, its error mapped (it never fails).
#[derive(Debug, Default)]
pub struct Backend;

impl Tenants for Backend {
    fn by_name(&self, _tenant: &str, x: u64) -> Result<u64, GuardError> {
        work(x).map_err(|_| GuardError::Fail)
    }

    fn by_id(&self, _id: u64, x: u64) -> Result<u64, GuardError> {
        work(x).map_err(|_| GuardError::Fail)
    }
}

type Keyed = super::Wrapped<ResilientTenants<Backend>>;

fn ours(keys: &[&str], ids: &[u64]) -> Keyed {
    let keyed = Keyed::new(|registry| ResilientTenants::new(Backend, registry));
    for key in keys {
        keyed.api.by_name(key, 0).expect("a new key passes");
    }
    for id in ids {
        keyed.api.by_id(*id, 0).expect("a new key passes");
    }
    keyed
}

fn quota() -> Quota {
    Quota::per_second(NonZeroU32::new(PER_SECOND).expect("non-zero"))
}

fn governor<K: Clone + std::hash::Hash + Eq>(keys: &[K]) -> DefaultKeyedRateLimiter<K> {
    let limiter = RateLimiter::keyed(quota());
    for key in keys {
        limiter.check_key(key).expect("a new key passes");
    }
    limiter
}

/// Ours, `key = tenant` with `tenant: &str`, an existing key.
pub fn ours_str_sync() -> impl Fn() + Sync {
    let keyed = ours(&[TENANT], &[]);
    move || consume(keyed.api.by_name(opaque(TENANT), opaque(1)))
}

/// Ours, `key = id` with `id: u64`, an existing key.
pub fn ours_u64_sync() -> impl Fn() + Sync {
    let keyed = ours(&[], &[ID]);
    move || consume(keyed.api.by_id(opaque(ID), opaque(1)))
}

/// governor's keyed limiter on a `String` key, `check_key(&String)` then the call.
pub fn governor_str_sync() -> impl Fn() + Sync {
    let tenant = String::from(TENANT);
    let limiter = governor(std::slice::from_ref(&tenant));
    move || {
        if limiter.check_key(opaque(&tenant)).is_ok() {
            consume(work(opaque(1)));
        }
    }
}

/// governor's keyed limiter on a `u64` key.
pub fn governor_u64_sync() -> impl Fn() + Sync {
    let limiter = governor(&[ID]);
    move || {
        if limiter.check_key(&opaque(ID)).is_ok() {
            consume(work(opaque(1)));
        }
    }
}

/// [`ours_str_sync`], a contender thread on the same key.
pub fn ours_str_shared() -> impl Fn() + Sync {
    let keyed = ours(&[TENANT], &[]);
    move || consume(keyed.api.by_name(opaque(TENANT), opaque(1)))
}

/// [`governor_str_sync`], a contender thread on the same key.
pub fn governor_str_shared() -> impl Fn() + Sync {
    let tenant = String::from(TENANT);
    let limiter = governor(std::slice::from_ref(&tenant));
    move || {
        if limiter.check_key(opaque(&tenant)).is_ok() {
            consume(work(opaque(1)));
        }
    }
}

/// [`ours_str_sync`] (the caller), and a contender thread on a key of its own.
pub fn ours_str_apart() -> (impl Fn() + Sync, impl Fn() + Sync) {
    let keyed = std::sync::Arc::new(ours(&[TENANT, OTHER_TENANT], &[]));
    let other = std::sync::Arc::clone(&keyed);
    (
        move || consume(keyed.api.by_name(opaque(TENANT), opaque(1))),
        move || consume(other.api.by_name(opaque(OTHER_TENANT), opaque(1))),
    )
}

/// [`governor_str_sync`] (the caller), and a contender thread on a key of its own.
pub fn governor_str_apart() -> (impl Fn() + Sync, impl Fn() + Sync) {
    let (tenant, other_tenant) = (String::from(TENANT), String::from(OTHER_TENANT));
    let limiter = std::sync::Arc::new(governor(&[tenant.clone(), other_tenant.clone()]));
    let other = std::sync::Arc::clone(&limiter);
    (
        move || {
            if limiter.check_key(opaque(&tenant)).is_ok() {
                consume(work(opaque(1)));
            }
        },
        move || {
            if other.check_key(opaque(&other_tenant)).is_ok() {
                consume(work(opaque(1)));
            }
        },
    )
}

/// [`ours_u64_sync`], a contender thread on the same key.
pub fn ours_u64_shared() -> impl Fn() + Sync {
    let keyed = ours(&[], &[ID]);
    move || consume(keyed.api.by_id(opaque(ID), opaque(1)))
}

/// [`governor_u64_sync`], a contender thread on the same key.
pub fn governor_u64_shared() -> impl Fn() + Sync {
    let limiter = governor(&[ID]);
    move || {
        if limiter.check_key(&opaque(ID)).is_ok() {
            consume(work(opaque(1)));
        }
    }
}

/// [`ours_u64_sync`] (the caller), and a contender thread on a key of its own.
pub fn ours_u64_apart() -> (impl Fn() + Sync, impl Fn() + Sync) {
    let keyed = std::sync::Arc::new(ours(&[], &[ID, OTHER_ID]));
    let other = std::sync::Arc::clone(&keyed);
    (
        move || consume(keyed.api.by_id(opaque(ID), opaque(1))),
        move || consume(other.api.by_id(opaque(OTHER_ID), opaque(1))),
    )
}

/// [`governor_u64_sync`] (the caller), and a contender thread on a key of its own.
pub fn governor_u64_apart() -> (impl Fn() + Sync, impl Fn() + Sync) {
    let limiter = std::sync::Arc::new(governor(&[ID, OTHER_ID]));
    let other = std::sync::Arc::clone(&limiter);
    (
        move || {
            if limiter.check_key(&opaque(ID)).is_ok() {
                consume(work(opaque(1)));
            }
        },
        move || {
            if other.check_key(&opaque(OTHER_ID)).is_ok() {
                consume(work(opaque(1)));
            }
        },
    )
}

/// Memory per key: net bytes allocated (and not freed) on the calling thread while `keys` new
/// `u64` keys (and then as many `String` keys) are made, each divided by `keys`. The limiter
/// itself is built before counting starts, so its fixed cost is left out; the table's growth (its
/// rehashes' final size) is in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BytesPerKey {
    /// `u64` keys.
    pub u64_key: f64,
    /// `String` keys of 12 bytes (`tenant-00042`'s shape).
    pub str_key: f64,
}

/// [`BytesPerKey`] of ours (`#[rate_limiter(key = …)]`) for `keys` new keys of each kind.
///
/// ```
/// let ours = bench::cases::keyed::ours_bytes_per_key(1_000);
/// assert!(ours.u64_key > 8.0 && ours.str_key > ours.u64_key);
/// ```
pub fn ours_bytes_per_key(keys: u64) -> BytesPerKey {
    let keyed = ours(&[], &[]);
    let u64_key = per_key(keys, |i| {
        let _ = keyed.api.by_id(i, 0);
    });
    let str_key = per_key(keys, |i| {
        let _ = keyed.api.by_name(&format!("tenant-{i:05}"), 0);
    });
    BytesPerKey { u64_key, str_key }
}

/// [`BytesPerKey`] of governor's keyed limiter for `keys` new keys of each kind.
///
/// ```
/// let governor = bench::cases::keyed::governor_bytes_per_key(1_000);
/// assert!(governor.u64_key > 8.0 && governor.str_key > governor.u64_key);
/// ```
pub fn governor_bytes_per_key(keys: u64) -> BytesPerKey {
    let by_id: DefaultKeyedRateLimiter<u64> = governor(&[]);
    let by_name: DefaultKeyedRateLimiter<String> = governor(&[]);
    let u64_key = per_key(keys, |i| {
        let _ = by_id.check_key(&i);
    });
    let str_key = per_key(keys, |i| {
        let _ = by_name.check_key(&format!("tenant-{i:05}"));
    });
    BytesPerKey { u64_key, str_key }
}

/// Net bytes of `keys` calls of `new_key(i)` (each with a new key), per key. The keys' `String`
/// arguments are freed by the callee or kept as the key: only what stays counts.
fn per_key(keys: u64, mut new_key: impl FnMut(u64)) -> f64 {
    let before = alloc::net_bytes();
    for i in 0..keys {
        new_key(i);
    }
    (alloc::net_bytes() - before) as f64 / keys as f64
}
