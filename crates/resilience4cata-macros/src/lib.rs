//! The macros of [resilience4cata](https://docs.rs/resilience4cata): `#[resilient]` on a trait and
//! `#[derive(ResilienceError)]`. Use them through the `resilience4cata` crate, which re-exports
//! both; the generated code calls its hidden `__private` API.
//!
//! The attribute is a pipeline: `parse` (syntax, keeping every token for diagnostics) → `validate`
//! (values against the policy tables of `policy`, trait/method merge, signatures) → `expand` (the
//! wrapper and one layer per policy). Every compile error carries an `[R4C-…]` code, listed in
//! `docs/errors.md`, and points at the offending token.
//!
//! Imports go one way, floor by floor (`.ci/imports` checks that no module imports back): `diag` and
//! `model` (the data every stage reads) at the ground; `policy` (the table, as data); `order`,
//! `bundle` (resolving `#[bundle(…)]` uses) and `parse`; `validate`; at the top `expand`, `class`
//! (which calls `expand`'s emitters), `define` (`bundle!`) and `derive`.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

extern crate proc_macro;

mod bundle;
mod class;
mod define;
mod derive;
mod diag;
mod expand;
mod model;
mod order;
mod parse;
mod policy;
mod validate;

use proc_macro::TokenStream;

/// Generates `Resilient<Trait><D>`, a wrapper that implements the trait by calling a delegate
/// `D: Trait` through the policies declared on the trait and its methods; or, on an impl block
/// (`#[resilient(policies = field)]`, see [Class style](#class-style)), rewrites its annotated
/// methods to run their own bodies through policies held in a field of the type.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use resilience4cata::{resilient, testing::{self, ManualClock}, Jitter};
///
/// #[derive(Debug, PartialEq)]
/// pub enum InventoryError {
///     Unavailable,
///     NotFound,
/// }
///
/// #[resilient]
/// pub trait InventoryApi {
///     #[retry(max_attempts = 3, delay = "100ms", abort_on = InventoryError::NotFound)]
///     fn stock(&self, sku: &str) -> Result<u32, InventoryError>;
///
///     fn name(&self) -> String; // no policy: forwarded unchanged
/// }
///
/// struct Backend(AtomicU32);
///
/// impl InventoryApi for Backend {
///     fn stock(&self, _sku: &str) -> Result<u32, InventoryError> {
///         match self.0.fetch_add(1, Ordering::SeqCst) {
///             0 | 1 => Err(InventoryError::Unavailable),
///             _ => Ok(7),
///         }
///     }
///     fn name(&self) -> String {
///         "backend".into()
///     }
/// }
///
/// let clock = ManualClock::new();
/// let registry = testing::registry(&clock).retry_defaults(|r| r.jitter(Jitter::None)).build()?;
/// let inventory = ResilientInventoryApi::new(Backend(AtomicU32::new(0)), &registry)?;
/// assert_eq!(inventory.stock("sku-1"), Ok(7)); // third attempt
/// assert_eq!(clock.elapsed(), std::time::Duration::from_millis(300)); // waited 100 ms, then 200 ms
/// assert_eq!(inventory.name(), "backend");
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
///
/// # What it generates
/// The trait itself (policy attributes removed), then, for the trait above:
/// ```text
/// pub struct ResilientInventoryApi<D> { delegate: D, __r4c_retry_stock: RetryPolicy }
/// impl<D> ResilientInventoryApi<D> {
///     pub fn new(delegate: D, registry: &Registry) -> Result<Self, RegistryError>; // builds every instance
///     pub fn delegate(&self) -> &D;
/// }
/// impl<D: Debug> Debug for ResilientInventoryApi<D> { … }
/// impl<D: InventoryApi> InventoryApi for ResilientInventoryApi<D> {
///     fn stock(&self, sku: &str) -> Result<u32, InventoryError> {
///         let retry = &self.__r4c_retry_stock;
///         let mut call = retry.start();
///         loop {
///             match <D as InventoryApi>::stock(&self.delegate, sku) {
///                 Ok(v) => break Ok(v),
///                 Err(e) => {
///                     let failure = if is_open_breaker(&e) || matches!(&e, InventoryError::NotFound) {
///                         Failure::not_retried(e.rejection()) // `Refused` for a policy's refusal
///                     } else {
///                         Failure::Retryable
///                     };
///                     if !retry.retry_after(&mut call, failure) { break Err(e); } // waits, or gives up
///                 }
///             }
///         }
///     }
///     fn name(&self) -> String { <D as InventoryApi>::name(&self.delegate) }
/// }
/// ```
///
/// # Class style
/// On an inherent `impl Type { … }` or a trait impl `impl Trait for Type { … }`,
/// `#[resilient(policies = field)]` generates `<Type>Policies` (`<Type><Trait>Policies` for a trait
/// impl; `pub` unless `vis = pub(crate)` or another visibility narrows it) with one field per policy
/// instance, `new(&Registry)`, `builder(&registry).scope(…).build()` and `ids()`, and rewrites
/// each annotated method in place: its body moves into a private hidden method, and the method
/// runs it through the policies in `self.<field>`, so the type's calls to itself are protected
/// too. Ids are `<module_path>::<Type>::<method>` (`<module_path>::<Type>::<Trait>::<method>`).
/// Attributes on the block apply to every method with a `self` receiver; an `async fn` is emitted as
/// `fn … -> impl Future<Output = R>` (its future's poll always inlined, still `Send` exactly when the
/// body's future is).
/// One class-style block per type, and one per trait impl (a second would generate its struct
/// again); methods that take no policy may live in other blocks of the type.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use resilience4cata::{resilient, testing::{self, ManualClock}, Jitter, Registry, RegistryError};
///
/// pub struct Client {
///     calls: AtomicU32,
///     policies: ClientPolicies,
/// }
///
/// #[resilient(policies = policies)]
/// impl Client {
///     pub fn new(registry: &Registry) -> Result<Self, RegistryError> {
///         Ok(Client { calls: AtomicU32::new(0), policies: ClientPolicies::new(registry)? })
///     }
///
///     #[retry(max_attempts = 3, delay = "100ms")]
///     pub fn get(&self, path: &str) -> Result<usize, String> {
///         match self.calls.fetch_add(1, Ordering::SeqCst) {
///             0 | 1 => Err(format!("{path}: unavailable")),
///             _ => Ok(path.len()),
///         }
///     }
/// }
///
/// let clock = ManualClock::new();
/// let registry = testing::registry(&clock).retry_defaults(|r| r.jitter(Jitter::None)).build()?;
/// let client = Client::new(&registry)?;
/// assert_eq!(client.get("/stock"), Ok(6)); // third attempt
/// assert_eq!(clock.elapsed(), std::time::Duration::from_millis(300));
/// assert_eq!(client.policies.ids().get.retry(), Some(&*format!("{}::Client::get", module_path!())));
/// # Ok::<(), RegistryError>(())
/// ```
///
/// # Instance ids, without spelling them
/// Each generated type comes with `<Generated>Ids` (`ResilientInventoryApiIds`,
/// `ClientPoliciesIds`): one `MethodIds` field per protected method, so a misspelt method does not
/// compile. `wrapper.ids()` gives a built wrapper's; `<Generated>Ids::unscoped()` and
/// `<Generated>Ids::scoped("host-a")` give them before anything is built, for per-instance
/// configuration. `registry.check_unused_config()` then turns configuration that no instance
/// used into `R4C-REG-012`, when you call it.
///
/// ```
/// use resilience4cata::{Registry, Rejection, ResilienceError, resilient};
///
/// #[derive(Debug, ResilienceError)]
/// pub enum StockError {
///     Down,
///     #[rejection]
///     Rejected(Rejection),
/// }
///
/// #[resilient]
/// pub trait StockApi {
///     #[circuit_breaker]
///     fn stock(&self, sku: &str) -> Result<u32, StockError>;
/// }
///
/// struct Host;
/// impl StockApi for Host {
///     fn stock(&self, _sku: &str) -> Result<u32, StockError> { Err(StockError::Down) }
/// }
///
/// // Before the client exists: host A's breaker opens after one failure.
/// let host_a = ResilientStockApiIds::scoped("host-a");
/// let breaker = host_a.stock.circuit_breaker().unwrap(); // `host_a.stok` would not compile
/// assert_eq!(breaker, format!("host-a/{}::StockApi::stock", module_path!()));
/// let registry = Registry::builder()
///     .circuit_breaker_instance(breaker, |c| c.minimum_calls(1).window_size(1))
///     .build()?;
/// let a = ResilientStockApi::builder(Host, &registry).scope("host-a").build()?;
/// registry.check_unused_config()?; // every instance override found its instance
/// assert!(a.stock("sku-1").is_err());
/// assert!(matches!(a.stock("sku-1"), Err(StockError::Rejected(_)))); // open after one failure
/// assert_eq!(a.ids(), host_a);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
///
/// # Keyed instances: one state per tenant, host or client
/// `key = <expr>` on `#[rate_limiter]`, `#[circuit_breaker]`, `#[bulkhead]` or `#[adaptive_limit]`
/// gives each value of the expression its own state of that policy, chosen per call: the same
/// rules, events and figures as an instance of its own. The expression names the method's
/// parameters (`key = tenant`, `key = req.host()`, `key = (region, shard)`); it is evaluated once
/// per call, before every policy but the fallback, and the key is held until the call ends (across
/// a retry's attempts). A borrowed key (`&str`) is looked up without allocating.
/// `max_keys = <u32>` (default 10,000) bounds the states: a new key replaces the least recently
/// used key at rest, and when none is at rest the call is refused with
/// `Rejection::KeysExhausted` without calling the method (through the fallback when there is one,
/// never retried). `key_metrics = true` gives metrics a per-key label.
/// ```
/// use resilience4cata::{resilient, testing::{self, ManualClock}, Rejection};
/// use std::time::Duration;
///
/// #[derive(Debug, PartialEq, resilience4cata::ResilienceError)]
/// pub enum ApiError {
///     #[rejection]
///     Refused(Rejection),
/// }
///
/// #[resilient]
/// pub trait Api {
///     #[rate_limiter(permits = 2, period = "1s", key = tenant, max_keys = 1_000)]
///     fn call(&self, tenant: &str) -> Result<u32, ApiError>;
/// }
///
/// struct Backend;
/// impl Api for Backend {
///     fn call(&self, _tenant: &str) -> Result<u32, ApiError> {
///         Ok(1)
///     }
/// }
///
/// let clock = ManualClock::new();
/// let api = ResilientApi::new(Backend, &testing::registry(&clock).build()?)?;
/// assert_eq!(api.call("acme"), Ok(1));
/// assert_eq!(api.call("acme"), Ok(1));
/// assert!(matches!(api.call("acme"), Err(ApiError::Refused(Rejection::RateLimitExceeded { .. }))));
/// assert_eq!(api.call("globex"), Ok(1)); // another tenant, its own two permits
/// clock.advance(Duration::from_secs(1));
/// assert_eq!(api.call("acme"), Ok(1));
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
/// The generated method looks each key up first, then runs the layers on the key's state:
/// ```text
/// let hold = match self.__r4c_rate_limiter_call.for_key(key_arg!(tenant)) {
///     Ok(hold) => hold,                                      // the key's own RateLimiterPolicy
///     Err(r) => return Err(ApiError::from_rejection(r)),     // KeysExhausted
/// };
/// if let Err(r) = hold.acquire() { return Err(ApiError::from_rejection(r)); }
/// <D as Api>::call(&self.delegate, tenant)
/// ```
/// A key expression over an owned parameter borrows it only for the lookup (`key =
/// name.as_str()`), so the argument still moves into the call (or is cloned per attempt); through
/// a `&mut T` parameter, key by a value (`key = *id`, `key = conn.id()`), not by the `&mut`
/// itself. `key` on a retry, hedge, timeout or fallback is `R4C-ATR-070`; on the trait, an impl
/// block or in a bundle `R4C-ATR-071` (a key names one method's parameters; `max_keys` and
/// `key_metrics` may stay there); `max_keys = 0` is `R4C-ATR-072`; a key whose type cannot be a
/// key (not `Hash + Eq + Debug`, no owned form) is one coded error on the expression.
///
/// # Rules
/// - Policy attributes on the trait apply to every method; a method's own attribute overrides
///   them key by key. Keys and defaults: see `resilience4cata::retry` and
///   `resilience4cata::circuit_breaker`.
/// - Whatever order they are written in, the layers nest retry (outermost) → circuit breaker →
///   method: every retry attempt passes the breaker and is recorded, and an open breaker's refusal
///   stops the retry at once. `#[policy_order(Timeout, Retry)]` on a method or on the trait (the
///   method's list replaces the trait's) nests the listed policies outermost first, the others in
///   their default relative order inside them; a listed policy the method does not use is
///   ignored. The expansion stays straight-line and unboxed for every order (SPEC §6).
/// - `#[fallback(method = name)]` is the outermost layer, on a method only: on the final `Err`
///   (after the retry, refusals included) that `apply_on` accepts and `skip_on` does not, it calls
///   `<Self as Trait>::name(self, args…, FallbackContext<E>)` through the wrapper, so the fallback
///   method's own policies apply. See `resilience4cata::fallback`.
/// - `#[circuit_breaker]` needs `E: ResilienceError` (its refusal travels in the method's error);
///   `record_on` / `ignore_on` take patterns over `E`, `record_on_if` / `ignore_on_if` paths to
///   `fn(&E) -> bool`.
/// - A protected method takes `&self`, has no type or const parameters, and returns `Result<T, E>`
///   (any alias, e.g. `io::Result<T>`), is an `async fn` returning one, or returns
///   `impl Future<Output = Result<T, E>>` (`+ Send` makes the impl require `D: Sync`).
/// - `async fn` is desugared, in the trait and in the wrapper, to
///   `fn … -> impl Future<Output = …> + Send` (as `trait_variant` writes it): a public trait raises no
///   `async_fn_in_trait` warning, generic code can `tokio::spawn` a call through `impl Trait`, and
///   implementations still write `async fn` (their futures must then be `Send`). The wrapper's
///   protected async methods hold `&self` across awaits, so its impl requires `D: Sync`; a default
///   `async fn` body in the trait needs `trait Trait: Sync`. For delegates whose futures are not
///   `Send` (an `Rc` held across an await), write `#[resilient(?Send)]`: futures then promise no
///   `Send` and the wrapper needs no `D: Sync`.
/// - Owned arguments of a retried method are cloned for each attempt (references and `Copy` values
///   cost nothing); without a retry they are moved into the one call.
/// - Instance ids are `<module_path>::<Trait>::<method>` unless the attribute sets `name`;
///   `<Generated>Ids::scoped(…)` names them (see above).
/// - Construction is one out-of-line constructor per protected method, so a crate's release build
///   time grows linearly with its annotated methods (`docs/benchmarks.md`, "Build time").
/// - Every mistake is a compile error with an `[R4C-…]` code on the offending token; see
///   `docs/errors.md`.
#[proc_macro_attribute]
pub fn resilient(args: TokenStream, input: TokenStream) -> TokenStream {
    resilient2(args.into(), input.into()).into()
}

/// Implements `ResilienceError` for an enum with one `#[rejection]` variant holding a `Rejection`
/// (one unnamed field, or one named field). Nothing else is generated: no `Display`, `Error` or
/// `From`.
///
/// ```
/// use resilience4cata::{Rejection, ResilienceError};
///
/// #[derive(Debug, ResilienceError)]
/// enum PriceError {
///     Unavailable,
///     #[rejection]
///     Refused { rejection: Rejection },
/// }
///
/// let e = PriceError::from_rejection(Rejection::CallNotPermitted { instance: "prices".into() });
/// assert!(e.rejection().is_some_and(Rejection::is_call_not_permitted));
/// assert!(PriceError::Unavailable.rejection().is_none());
/// ```
#[proc_macro_derive(ResilienceError, attributes(rejection))]
pub fn derive_resilience_error(input: TokenStream) -> TokenStream {
    derive::derive(input.into()).into()
}

/// Defines named sets of policy attributes, applied with `#[bundle(path)]` on a `#[resilient]`
/// trait or on one of its methods. Re-exported as `resilience4cata::bundle!`.
///
/// ```
/// use resilience4cata::{resilient, testing::{self, ManualClock}};
///
/// pub mod policies {
///     resilience4cata::bundle! {
///         /// Calls that must not be lost.
///         pub critical = #[retry(max_attempts = 5, delay = "100ms", jitter = None)] #[circuit_breaker(window_size = 50)];
///     }
/// }
///
/// #[resilient]
/// pub trait Payments {
///     #[bundle(policies::critical)] // both policies, with the bundle's values
///     #[retry(max_attempts = 2)]           // a direct attribute wins key by key: 2 attempts, delay 100 ms
///     fn charge(&self, cents: u64) -> std::io::Result<u64>;
/// }
///
/// struct Down;
/// impl Payments for Down {
///     fn charge(&self, _cents: u64) -> std::io::Result<u64> {
///         Err(std::io::Error::other("down"))
///     }
/// }
///
/// let clock = ManualClock::new();
/// let registry = testing::registry(&clock).build()?;
/// let payments = ResilientPayments::new(Down, &registry)?;
/// assert!(payments.charge(100).is_err());
/// assert_eq!(clock.elapsed(), std::time::Duration::from_millis(100)); // 2 attempts, one wait of 100 ms
/// let snapshot = registry.snapshot();
/// assert_eq!(snapshot.circuit_breakers()[0].config.window_size, 50);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
///
/// # Rules
/// - One bundle per entry, `/// docs` then `vis name = #[policy(…)] …;`; several entries per
///   invocation. Each entry becomes an item `name` in the macro namespace, with `vis`, importable
///   with `use` and usable by path from other modules and, when `pub`, from other crates.
/// - A bundle holds any policy attribute, at most once each, but `#[policy_order]`
///   (`[R4C-ATR-062]`). Its values are checked here, with the codes a method's attributes get; a
///   faulty attribute is reported once, at the bundle, and left out of it.
/// - Precedence, lowest to highest, key by key: the trait's bundles < the trait's attributes < the
///   method's bundles < the method's attributes; of two bundles in one place, the later wins.
/// - Paths written in a bundle (patterns, `classifier`, `delay_from`, …) resolve where the bundle
///   is used: a bundle shared across modules writes them as `crate::…`.
/// - `#[bundle(…)]` goes below `#[resilient]`. See `docs/bundles.md` for how it works (a
///   `macro_rules!` callback) and the visibility rules.
#[proc_macro]
pub fn bundle(input: TokenStream) -> TokenStream {
    let site = proc_macro::Span::call_site();
    let site = format!("{}:{}:{}", site.file(), site.line(), site.column());
    define::define(input.into(), &site).into()
}

/// parse → validate → expand; on any mistake, the errors beside a stub so nothing cascades.
fn resilient2(args: proc_macro2::TokenStream, input: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    if let Some(callback) = bundle::pending(&args, &input) {
        return callback;
    }
    if let Some(expanded) = class::expand(args.clone(), input.clone()) {
        return expanded;
    }
    let mut errors = diag::Errors::default();
    let parsed = match parse::parse_trait(args, input, &mut errors) {
        Ok(parsed) => parsed,
        Err(unchanged) => return [errors.to_compile_errors(), unchanged].into_iter().collect(),
    };
    let model = validate::validate(parsed, &mut errors);
    if errors.is_empty() {
        expand::expand(&model)
    } else {
        [errors.to_compile_errors(), expand::stub(&model)].into_iter().collect()
    }
}
