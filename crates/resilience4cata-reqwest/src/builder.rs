//! [`ResilientMiddlewareBuilder`]: which policies every host's pipeline has, how each is
//! configured, and how many hosts get instances of their own.

use resilience4cata::bulkhead::BulkheadConfigBuilder;
use resilience4cata::circuit_breaker::CircuitBreakerConfigBuilder;
use resilience4cata::retry::RetryConfigBuilder;
use resilience4cata::timeout::TimeoutConfigBuilder;
use resilience4cata::{Registry, RegistryError};

use crate::chain::{Recipe, Wanted};
use crate::hosts::Hosts;
use crate::middleware::ResilientMiddleware;

/// How many hosts get instances of their own unless [`max_hosts`](ResilientMiddlewareBuilder::max_hosts)
/// says otherwise.
pub const DEFAULT_MAX_HOSTS: usize = 64;

/// Chooses the policies of a [`ResilientMiddleware`]; [`build`](Self::build) makes it.
///
/// Each policy has three methods that compose, as a [`resilience4cata::PipelineBuilder`]'s do:
/// `.retry()` (the registry's defaults), `.retry_config("name")` (a named configuration of the
/// registry) and `.retry_with(|r| …)` (overrides on top of both). A policy none of them names is
/// not in the pipeline. For each host, the registry resolves them under the instance id
/// `<name>/<host>`, in its usual order: built-in defaults < registry defaults < the named
/// configuration < the `_with` overrides < the instance's own configuration
/// (`[instances."<name>/<host>".circuit_breaker]` in TOML, or `circuit_breaker_instance(id, …)`).
///
/// Two middlewares built with the same name on one registry share their hosts' instances (one
/// breaker per host between them), and must then resolve the same configuration, else the
/// first request to a host fails with `R4C-REG-008` (a middleware error): give each its own name
/// to keep them apart.
///
/// The policies nest as in every pipeline: retry → circuit breaker → timeout → bulkhead → the
/// request. So every attempt passes the breaker and gets its own timeout, an open breaker stops
/// the retries at once, and a bulkhead slot is held while an attempt runs, not during a backoff.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::Registry;
/// use resilience4cata_reqwest::ResilientMiddleware;
///
/// let registry = Registry::builder()
///     .config_toml(r#"
///         [configs.http.retry]
///         max_attempts = 4
///         [instances."catalog/api.example.com".circuit_breaker]
///         minimum_calls = 20
///     "#)
///     .build()?;
/// let middleware = ResilientMiddleware::builder(&registry, "catalog")
///     .retry_config("http")
///     .retry_with(|r| r.max_duration(Duration::from_secs(30)))
///     .circuit_breaker_with(|c| c.window_size(50).minimum_calls(10))
///     .timeout_with(|t| t.duration(Duration::from_secs(5)))
///     .bulkhead_with(|b| b.max_concurrent_calls(32).max_wait(Duration::from_secs(1)))
///     .host("api.example.com")
///     .build()?;
///
/// let snapshot = registry.snapshot();
/// assert_eq!(snapshot.retries()[0].config.max_attempts, 4);
/// assert_eq!(snapshot.circuit_breakers()[0].config.minimum_calls, 20); // the instance's own wins
/// assert_eq!(&*snapshot.bulkheads()[0].instance, "catalog/api.example.com");
/// # drop(middleware);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ResilientMiddlewareBuilder {
    registry: Registry,
    name: String,
    recipe: Recipe,
    max_hosts: usize,
    hosts: Vec<String>,
    every_method: bool,
}

/// The three builder methods of one policy.
macro_rules! policy_methods {
    (
        $slot:ident, $config:ident, $with:ident, $builder:ty, $what:literal, $example:literal,
        change: $change:literal, read: $read:literal, value: $value:literal
    ) => {
        #[doc = concat!("Adds a ", $what, " with the registry's defaults (and each instance's own configuration).")]
        ///
        /// ```
        /// # use resilience4cata::Registry;
        /// # use resilience4cata_reqwest::ResilientMiddleware;
        /// # let registry = Registry::builder().build()?;
        #[doc = concat!("let m = ResilientMiddleware::builder(&registry, \"catalog\").", stringify!($slot), "().host(\"h\").build()?;")]
        #[doc = $example]
        /// # Ok::<(), resilience4cata::RegistryError>(())
        /// ```
        pub fn $slot(mut self) -> Self {
            Wanted::add(&mut self.recipe.$slot);
            self
        }

        #[doc = concat!("Adds a ", $what, " configured by the registry's named configuration `name`.")]
        /// An unknown name fails [`build`](Self::build) with `R4C-REG-004` when a host is listed
        /// with [`host`](Self::host), else the first request's (as a middleware error).
        ///
        /// ```
        /// # use std::time::Duration;
        /// # use resilience4cata::Registry;
        /// # use resilience4cata_reqwest::ResilientMiddleware;
        #[doc = concat!("let registry = Registry::builder().", stringify!($slot), "(\"tuned\", |p| p.", $change, ").build()?;")]
        #[doc = concat!("ResilientMiddleware::builder(&registry, \"catalog\").", stringify!($config), "(\"tuned\").host(\"h\").build()?;")]
        #[doc = concat!("assert_eq!(registry.snapshot().", $read, ", ", $value, ");")]
        /// # Ok::<(), resilience4cata::RegistryError>(())
        /// ```
        pub fn $config(mut self, name: impl Into<String>) -> Self {
            Wanted::add(&mut self.recipe.$slot).config = Some(name.into());
            self
        }

        #[doc = concat!("Adds a ", $what, " with overrides on top of the defaults and the named configuration;")]
        /// calling it twice chains the closures.
        ///
        /// ```
        /// # use std::time::Duration;
        /// # use resilience4cata::Registry;
        /// # use resilience4cata_reqwest::ResilientMiddleware;
        /// let registry = Registry::builder().build()?;
        #[doc = concat!("ResilientMiddleware::builder(&registry, \"catalog\").", stringify!($with), "(|p| p.", $change, ").host(\"h\").build()?;")]
        #[doc = concat!("assert_eq!(registry.snapshot().", $read, ", ", $value, ");")]
        /// # Ok::<(), resilience4cata::RegistryError>(())
        /// ```
        pub fn $with(mut self, f: impl FnOnce($builder) -> $builder) -> Self {
            Wanted::with(&mut self.recipe.$slot, f);
            self
        }
    };
}

impl ResilientMiddleware {
    /// Starts a middleware whose instances are named `<name>/<host>`; see
    /// [`ResilientMiddlewareBuilder`].
    ///
    /// ```
    /// use resilience4cata::Registry;
    /// use resilience4cata_reqwest::ResilientMiddleware;
    ///
    /// let registry = Registry::builder().build()?;
    /// let middleware = ResilientMiddleware::builder(&registry, "catalog").retry().build()?;
    /// # drop(middleware);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn builder(registry: &Registry, name: impl Into<String>) -> ResilientMiddlewareBuilder {
        ResilientMiddlewareBuilder::new(registry, name.into())
    }
}

impl ResilientMiddlewareBuilder {
    fn new(registry: &Registry, name: String) -> Self {
        ResilientMiddlewareBuilder {
            registry: registry.clone(),
            name,
            recipe: Recipe::default(),
            max_hosts: DEFAULT_MAX_HOSTS,
            hosts: Vec::new(),
            every_method: false,
        }
    }

    policy_methods!(
        retry,
        retry_config,
        retry_with,
        RetryConfigBuilder,
        "retry (of requests whose body can be sent again)",
        "assert_eq!(registry.snapshot().retries()[0].config.max_attempts, 3);",
        change: "max_attempts(5)",
        read: "retries()[0].config.max_attempts",
        value: "5"
    );
    policy_methods!(
        circuit_breaker,
        circuit_breaker_config,
        circuit_breaker_with,
        CircuitBreakerConfigBuilder,
        "circuit breaker per host",
        "assert!(registry.circuit_breaker(\"catalog/h\").is_some());",
        change: "minimum_calls(5)",
        read: "circuit_breakers()[0].config.minimum_calls",
        value: "5"
    );
    policy_methods!(
        timeout,
        timeout_config,
        timeout_with,
        TimeoutConfigBuilder,
        "timeout per attempt (until the response's head arrives)",
        "assert_eq!(m.instances(), [\"catalog/h\".into()]);",
        change: "duration(Duration::from_secs(5))",
        read: "timeouts()[0].config.duration",
        value: "Duration::from_secs(5)"
    );
    policy_methods!(
        bulkhead,
        bulkhead_config,
        bulkhead_with,
        BulkheadConfigBuilder,
        "bulkhead per host",
        "assert_eq!(registry.bulkhead(\"catalog/h\").unwrap().snapshot().available, 25);",
        change: "max_concurrent_calls(5)",
        read: "bulkheads()[0].config.max_concurrent_calls",
        value: "5"
    );

    /// How many hosts get instances of their own (default [`DEFAULT_MAX_HOSTS`]). A registry
    /// keeps every instance it made for its whole life, so the hosts a client meets must be
    /// bounded: past this many, requests to any further host share the instances of
    /// `<name>/*` (one breaker, one bulkhead for all of them). A client of a fixed set of
    /// services never gets there; one that follows links to arbitrary hosts does, and
    /// `<name>/*` in the snapshot says so.
    ///
    /// ```
    /// use resilience4cata::Registry;
    /// use resilience4cata_reqwest::ResilientMiddleware;
    ///
    /// let registry = Registry::builder().build()?;
    /// let m = ResilientMiddleware::builder(&registry, "crawler")
    ///     .circuit_breaker()
    ///     .max_hosts(1)
    ///     .host("a.example")
    ///     .host("b.example")
    ///     .host("c.example")
    ///     .build()?;
    /// assert_eq!(m.instances(), ["crawler/*".into(), "crawler/a.example".into()]);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn max_hosts(mut self, max_hosts: usize) -> Self {
        self.max_hosts = max_hosts;
        self
    }

    /// Retries requests of every method, `POST` and `PATCH` included (as reqwest-retry does).
    /// By default only the methods RFC 9110 §9.2.2 calls idempotent are retried — `GET`, `HEAD`,
    /// `OPTIONS`, `TRACE`, `PUT`, `DELETE` — and the others are sent once: a `POST` whose
    /// response was lost (a reset, a timed-out attempt) may have been acted on, and a retry would
    /// act twice. Turn it on when the server deduplicates (an idempotency key) or every failure
    /// you retry is one where the server did nothing; [`NoRetry`](crate::NoRetry) still sends one
    /// request once.
    ///
    /// ```
    /// use resilience4cata::Registry;
    /// use resilience4cata_reqwest::ResilientMiddleware;
    ///
    /// let registry = Registry::builder().build()?;
    /// let m = ResilientMiddleware::builder(&registry, "orders").retry().retry_every_method().build()?;
    /// # drop(m);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn retry_every_method(mut self) -> Self {
        self.every_method = true;
        self
    }

    /// Makes the instances of `host` (`host`, or `host:port` for a port other than the
    /// scheme's default, as in the URL) at build instead of at its first request, so their
    /// configuration is checked by [`build`](Self::build) and they show in snapshots and the
    /// admin from the start. Listed hosts count towards [`max_hosts`](Self::max_hosts).
    ///
    /// ```
    /// use resilience4cata::Registry;
    /// use resilience4cata_reqwest::ResilientMiddleware;
    ///
    /// let registry = Registry::builder().build()?;
    /// let err = ResilientMiddleware::builder(&registry, "catalog")
    ///     .retry_config("missing")
    ///     .host("api.example.com")
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.code(), "R4C-REG-004");
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.hosts.push(host.into());
        self
    }

    /// Makes the middleware, and the instances of the hosts listed with [`host`](Self::host).
    /// Fails as a pipeline's `build` does (`R4C-REG-003`, `R4C-REG-004`, `R4C-REG-008`, …) for a
    /// listed host.
    pub fn build(self) -> Result<ResilientMiddleware, RegistryError> {
        let hosts = Hosts::new(self.registry, self.name, self.recipe, self.max_hosts);
        for host in &self.hosts {
            hosts.get(host)?;
        }
        Ok(ResilientMiddleware::from_hosts(hosts, self.every_method))
    }
}
