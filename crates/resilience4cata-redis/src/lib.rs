//! Shared state across replicas for [`resilience4cata`], on Redis: one rate limiter quota for a
//! whole fleet of processes (SPEC §13; the model, bounds and failure modes are in
//! `docs/distributed.md`).
//!
//! ```no_run
//! use resilience4cata::Registry;
//! use resilience4cata_redis::RedisStore;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = RedisStore::connect("redis://127.0.0.1:6379").await?;
//! let registry = Registry::builder()
//!     .shared_state(store)
//!     .config_toml(
//!         r#"
//!         [instances."prices".rate_limiter]
//!         permits = 100
//!         shared = true
//!     "#,
//!     )
//!     .build()?;
//! # Ok(()) }
//! ```
//!
//! The store runs its own thread with a single-threaded tokio runtime: every round trip to Redis
//! happens there, so sync and async callers alike are served without a runtime of their own, and
//! a caller's thread never waits on the network except when its lease is empty (then for at most
//! [`store_timeout`](RedisStoreBuilder::store_timeout)). Keys are
//! `<prefix>:<policy>:<instance id>` and all expire; the Lua scripts are files of this crate
//! (`scripts/`), loaded once at connect and run with `EVALSHA`.
//!
//! Keyed instances (one state per tenant, API key or host, `key = …`) are shared *per key*: with
//! `shared = true` each key of a keyed rate limiter, breaker or bulkhead has its own fleet state,
//! under `<prefix>:<policy>:<instance id>:<key text>` ([`RedisStore::key_for`]); a keyed limiter
//! leases one permit at a time unless `lease` says otherwise, so the fleet bound holds per key
//! with small per-key quotas; a process subscribes once per keyed breaker instance, not once per
//! key. The repository's `docs/keyed.md` ("Shared across a fleet") has the details and numbers.
//!
//! ```no_run
//! use resilience4cata::Registry;
//! use resilience4cata_redis::RedisStore;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = RedisStore::connect("redis://127.0.0.1:6379").await?;
//! assert_eq!(store.key_for("rate_limiter", "api", "\"acme\""), "r4c:rate_limiter:api:\"acme\"");
//! let registry = Registry::builder()
//!     .shared_state(store)
//!     // 5 calls/s per tenant for the whole fleet, for the method whose
//!     // `#[rate_limiter(key = tenant)]` has this id.
//!     .rate_limiter_instance("api", |r| r.shared(true).permits(5))
//!     .build()?;
//! # Ok(()) }
//! ```
//!
//! A Redis Cluster is one call away: [`RedisStore::connect_cluster`] (or
//! [`RedisStore::cluster_builder`]) with the URLs of some of its nodes. The instances then spread
//! over the cluster's shards by their hash slot, and each instance's keys carry a hash tag
//! (`<prefix>:{<policy>:<instance id>}`) so a script that touches two of them runs on one node. A
//! keyed instance's tag holds the key text too (`<prefix>:{<policy>:<instance id>:<key text>}`):
//! each key's keys share a slot, and the keys of one instance spread over every shard.
//!
//! ```no_run
//! use resilience4cata_redis::RedisStore;
//!
//! # async fn run() -> Result<(), resilience4cata_redis::ConnectError> {
//! let store = RedisStore::connect_cluster(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379"]).await?;
//! assert!(store.is_cluster());
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

mod bulkhead;
mod circuit_breaker;
mod conn;
mod error;
mod rate_limiter;
mod slot;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use resilience4cata::shared::{BreakerLink, LeasePool, SharedStore, SlotPool};

pub use error::ConnectError;

/// The default [`store_timeout`](RedisStoreBuilder::store_timeout): 25 ms.
pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_millis(25);
/// The default [`key_prefix`](RedisStoreBuilder::key_prefix): `r4c`.
pub const DEFAULT_KEY_PREFIX: &str = "r4c";

/// A [`SharedStore`] on Redis: give it to a registry with
/// [`RegistryBuilder::shared_state`](resilience4cata::RegistryBuilder::shared_state). Cheap to
/// clone; the background thread stops when the last clone is dropped.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// The URL, or the cluster's node URLs, without passwords.
    url: String,
    /// Whether the store is on a Redis Cluster (keys with hash tags).
    cluster: bool,
    prefix: String,
    store_timeout: Duration,
    connection: Arc<conn::Conn>,
    /// This process's id in breaker messages (its own come back on the channel).
    sender: Arc<str>,
    /// The keyed breakers of this process, one group per keyed instance: one subscription each.
    groups: circuit_breaker::Groups,
    runtime: tokio::runtime::Handle,
    /// Dropping it ends the background thread.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.inner.url)
            .field("cluster", &self.inner.cluster)
            .field("prefix", &self.inner.prefix)
            .field("store_timeout", &self.inner.store_timeout)
            .finish_non_exhaustive()
    }
}

/// Options of a [`RedisStore`], then [`connect`](Self::connect).
///
/// ```no_run
/// use std::time::Duration;
/// use resilience4cata_redis::RedisStore;
///
/// # async fn run() -> Result<(), resilience4cata_redis::ConnectError> {
/// let store = RedisStore::builder("unix:///run/redis/redis.sock")
///     .store_timeout(Duration::from_millis(10))
///     .key_prefix("shop")
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct RedisStoreBuilder {
    target: Target,
    prefix: String,
    store_timeout: Duration,
    connect_timeout: Duration,
}

/// Where a store connects: one server, or a cluster by some of its nodes.
#[derive(Clone, Debug)]
enum Target {
    Single(String),
    Cluster(Vec<String>),
}

impl Target {
    /// The URL(s) without passwords, for messages.
    fn redacted(&self) -> String {
        match self {
            Target::Single(url) => redacted(url),
            Target::Cluster(nodes) => nodes.iter().map(|url| redacted(url)).collect::<Vec<_>>().join(", "),
        }
    }
}

/// A client made from a [`Target`], not connected yet.
enum Opened {
    Single(redis::Client),
    Cluster(Box<(redis::cluster::ClusterClient, redis::ConnectionInfo)>),
}

/// Loads every script of this crate (on a cluster: on every master).
async fn load_scripts(connection: &mut impl redis::aio::ConnectionLike) -> redis::RedisResult<()> {
    for script in [
        &*rate_limiter::SCRIPT,
        &*circuit_breaker::OPEN,
        &*circuit_breaker::CLOSE,
        &*circuit_breaker::PROBES,
        &*bulkhead::ACQUIRE,
        &*bulkhead::RENEW,
    ] {
        script.prepare_invoke().load_async(connection).await?;
    }
    Ok(())
}

impl RedisStoreBuilder {
    /// How long a decision waits for Redis before it is taken on local state (default 25 ms).
    pub fn store_timeout(mut self, timeout: Duration) -> Self {
        self.store_timeout = timeout;
        self
    }

    /// The first part of every key (default `r4c`): processes share an instance when they use the
    /// same Redis, prefix and instance id.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long [`connect`](Self::connect) waits for the server to answer (default 2 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Starts the store's thread, connects, checks the server answers as Redis does (`PING`,
    /// `SCRIPT LOAD` of every script) and returns the store. Any runtime can await it.
    ///
    /// On a cluster ([`RedisStore::cluster_builder`]) it reads the cluster's slot map from the
    /// first node that answers, connects to the masters, and `PING`s and loads the scripts on
    /// those that answer. A master that is down does not stop it: the instances of its slots
    /// start degraded (and load the scripts there when it is back).
    pub async fn connect(self) -> Result<RedisStore, ConnectError> {
        let budget = conn::Conn::connect_budget(self.connect_timeout, self.store_timeout);
        let opened = match &self.target {
            Target::Single(url) => Opened::Single(redis::Client::open(url.as_str()).map_err(ConnectError::BadUrl)?),
            Target::Cluster(nodes) => {
                let client = redis::cluster::ClusterClientBuilder::new(nodes.iter().map(String::as_str))
                    .connection_timeout(budget)
                    .response_timeout(budget)
                    // A request the cluster cannot serve (a master down) fails within tens of
                    // milliseconds instead of being retried for seconds behind the caller's back;
                    // the store's tasks retry on their own schedule.
                    .retries(3)
                    .min_retry_wait(10)
                    .max_retry_wait(100)
                    .build()
                    .map_err(ConnectError::BadUrl)?;
                let first = nodes.first().map_or("", String::as_str);
                let template = redis::IntoConnectionInfo::into_connection_info(first).map_err(ConnectError::BadUrl)?;
                Opened::Cluster(Box::new((client, template)))
            }
        };
        let cluster = matches!(opened, Opened::Cluster(..));
        let url = self.target.redacted();
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(ConnectError::Runtime)?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("r4c-redis".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(ConnectError::Runtime)?;
        let timeout = self.connect_timeout;
        let server_url = url.clone();
        let connected = handle.spawn(async move {
            let attempt = async {
                match opened {
                    Opened::Single(client) => {
                        // A plain connection first, so a refusal (a wrong password, a server that
                        // is not Redis) comes back as it is rather than as the manager's retries.
                        let mut probe = client.get_multiplexed_async_connection().await?;
                        let _: String = redis::cmd("PING").query_async(&mut probe).await?;
                        load_scripts(&mut probe).await?;
                        Ok::<_, redis::RedisError>(conn::Conn::new(client, probe, budget))
                    }
                    Opened::Cluster(opened) => {
                        let (client, template) = *opened;
                        let mut connection = client.get_async_connection().await?;
                        let _: String = redis::cmd("PING").query_async(&mut connection).await?;
                        load_scripts(&mut connection).await?;
                        Ok(conn::Conn::cluster(connection, template, budget))
                    }
                }
            };
            match tokio::time::timeout(timeout, attempt).await {
                Ok(Ok(connection)) => Ok(connection),
                Ok(Err(source)) => Err(ConnectError::Server { url: server_url, source }),
                Err(_) => Err(ConnectError::Timeout { url: server_url, after: timeout }),
            }
        });
        let connection = match connected.await {
            Ok(result) => result?,
            Err(join) => return Err(ConnectError::Runtime(std::io::Error::other(join.to_string()))),
        };
        let inner = Inner {
            url,
            prefix: self.prefix,
            store_timeout: self.store_timeout,
            connection: Arc::new(connection),
            cluster,
            sender: Arc::from(format!("{:x}-{:x}", std::process::id(), unique())),
            groups: circuit_breaker::Groups::default(),
            runtime: handle,
            _stop: stop,
        };
        Ok(RedisStore { inner: Arc::new(inner) })
    }
}

impl RedisStore {
    /// Connects with the default options (store timeout 25 ms, key prefix `r4c`); see
    /// [`builder`](Self::builder) for the others. URLs: `redis://[:password@]host:port[/db]`,
    /// `rediss://…` is not built in, `unix:///path/to/redis.sock` or `redis+unix:///path`. A Redis
    /// Cluster: [`connect_cluster`](Self::connect_cluster).
    pub async fn connect(url: &str) -> Result<RedisStore, ConnectError> {
        Self::builder(url).connect().await
    }

    /// The options, then [`RedisStoreBuilder::connect`].
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), resilience4cata_redis::ConnectError> {
    /// let store = resilience4cata_redis::RedisStore::builder("redis://127.0.0.1:6379").key_prefix("shop").connect().await?;
    /// # Ok(()) }
    /// ```
    pub fn builder(url: &str) -> RedisStoreBuilder {
        RedisStoreBuilder {
            target: Target::Single(url.to_owned()),
            prefix: DEFAULT_KEY_PREFIX.to_owned(),
            store_timeout: DEFAULT_STORE_TIMEOUT,
            connect_timeout: Duration::from_secs(2),
        }
    }

    /// Connects to a Redis Cluster with the default options; see
    /// [`cluster_builder`](Self::cluster_builder) for the nodes and the others.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), resilience4cata_redis::ConnectError> {
    /// let nodes = ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"];
    /// let store = resilience4cata_redis::RedisStore::connect_cluster(nodes).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_cluster<I>(nodes: I) -> Result<RedisStore, ConnectError>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        Self::cluster_builder(nodes).connect().await
    }

    /// The options of a store on a Redis Cluster, then [`RedisStoreBuilder::connect`]. `nodes` are
    /// `redis://[[user]:password@]host:port` URLs of some of the cluster's nodes (one that answers
    /// is enough: the others are learnt from it; give a few, in case one is down at start); they
    /// must agree on the credentials and give no database number (a cluster has only database
    /// 0). A unix socket is [`ConnectError::BadUrl`]: a cluster names its nodes by address and port.
    ///
    /// On a cluster an instance's keys are `<prefix>:{<policy>:<instance id>}`: the hash tag
    /// puts every key of one instance in one hash slot, and different instances in different
    /// slots, over every shard. A master that is down degrades the instances whose slots it holds,
    /// and only those; see `docs/distributed.md`.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use resilience4cata_redis::RedisStore;
    ///
    /// # async fn run() -> Result<(), resilience4cata_redis::ConnectError> {
    /// let store = RedisStore::cluster_builder(vec!["redis://:secret@10.0.0.1:6379".to_string()])
    ///     .store_timeout(Duration::from_millis(10))
    ///     .connect()
    ///     .await?;
    /// assert_eq!(store.key("rate_limiter", "prices"), "r4c:{rate_limiter:prices}");
    /// # Ok(()) }
    /// ```
    pub fn cluster_builder<I>(nodes: I) -> RedisStoreBuilder
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        RedisStoreBuilder {
            target: Target::Cluster(nodes.into_iter().map(|n| n.as_ref().to_owned()).collect()),
            ..Self::builder("")
        }
    }

    /// Whether the store is on a Redis Cluster ([`cluster_builder`](Self::cluster_builder)).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), resilience4cata_redis::ConnectError> {
    /// let store = resilience4cata_redis::RedisStore::connect("redis://127.0.0.1").await?;
    /// assert!(!store.is_cluster());
    /// # Ok(()) }
    /// ```
    pub fn is_cluster(&self) -> bool {
        self.inner.cluster
    }

    /// The key of one instance of one policy: `<prefix>:<policy>:<instance id>` on one server,
    /// `<prefix>:{<policy>:<instance id>}` on a cluster (a hash tag: the instance's other keys,
    /// such as a breaker's `…:probes`, add a suffix after it and stay in its slot).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), resilience4cata_redis::ConnectError> {
    /// let store = resilience4cata_redis::RedisStore::connect("redis://127.0.0.1").await?;
    /// assert_eq!(store.key("rate_limiter", "prices"), "r4c:rate_limiter:prices");
    /// # Ok(()) }
    /// ```
    pub fn key(&self, policy: &str, instance: &str) -> String {
        key(&self.inner.prefix, policy, instance, self.inner.cluster)
    }

    /// The key of one key of a keyed instance (SPEC §15; `key` is the key's text, its `Debug`
    /// form, so a `&str` key reads with its quotes): `<prefix>:<policy>:<instance id>:<key>` on one
    /// server, `<prefix>:{<policy>:<instance id>:<key>}` on a cluster. The hash tag holds the key
    /// text, so each key's own keys (a breaker's Open key and its `…:probes`) share one slot, and
    /// the keys of one instance spread over every shard.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), resilience4cata_redis::ConnectError> {
    /// let store = resilience4cata_redis::RedisStore::connect("redis://127.0.0.1").await?;
    /// assert_eq!(store.key_for("rate_limiter", "api", "\"acme\""), "r4c:rate_limiter:api:\"acme\"");
    /// # Ok(()) }
    /// ```
    pub fn key_for(&self, policy: &str, instance: &str, key: &str) -> String {
        keyed(&self.inner.prefix, policy, instance, key, self.inner.cluster)
    }
}

impl SharedStore for RedisStore {
    fn store_timeout(&self) -> Duration {
        self.inner.store_timeout
    }

    fn share_rate_limiter(&self, pool: Arc<LeasePool>) {
        let key = self.key_of("rate_limiter", pool.instance(), pool.key());
        let refill = rate_limiter::refill(pool, Arc::clone(&self.inner.connection), key, self.inner.store_timeout);
        self.inner.runtime.spawn(refill);
    }

    fn share_bulkhead(&self, pool: Arc<SlotPool>) {
        let key = self.key_of("bulkhead", pool.instance(), pool.key());
        let keep = bulkhead::keep(pool, Arc::clone(&self.inner.connection), key, self.inner.store_timeout);
        self.inner.runtime.spawn(keep);
    }

    fn share_circuit_breaker(&self, link: Arc<BreakerLink>) {
        let open = self.key_of("circuit_breaker", link.instance(), link.key());
        // An unkeyed breaker's channel is its Open key; the keys of a keyed instance share one
        // channel, `<instance's key>:keys`, whose messages name the key.
        let channel = match link.key() {
            Some(_) => format!("{}:keys", self.key("circuit_breaker", link.instance())),
            None => open.clone(),
        };
        let keys = circuit_breaker::Keys {
            probes: format!("{open}:probes"),
            open,
            channel,
            key: link.key().map(Arc::from),
            sender: Arc::clone(&self.inner.sender),
        };
        let (timeout, conn) = (self.inner.store_timeout, &self.inner.connection);
        let publish = circuit_breaker::publish(Arc::clone(&link), Arc::clone(conn), keys.clone(), timeout);
        self.inner.runtime.spawn(publish);
        match &keys.key {
            None => {
                let listen = circuit_breaker::listen(link, Arc::clone(conn), keys, timeout);
                self.inner.runtime.spawn(listen);
            }
            Some(key) => {
                let joined = self.inner.groups.join(&keys.channel, Arc::clone(key), &link, keys.open.clone());
                if let Some(group) = joined {
                    let groups = self.inner.groups.clone();
                    let listen = circuit_breaker::listen_group(group, groups, Arc::clone(conn), keys, timeout);
                    self.inner.runtime.spawn(listen);
                }
            }
        }
    }
}

impl RedisStore {
    /// The key of an instance, or of one key of a keyed instance.
    fn key_of(&self, policy: &str, instance: &str, key: Option<&str>) -> String {
        match key {
            Some(text) => self.key_for(policy, instance, text),
            None => self.key(policy, instance),
        }
    }
}

/// `<prefix>:<policy>:<instance>`, or on a cluster `<prefix>:{<policy>:<instance>}`.
fn key(prefix: &str, policy: &str, instance: &str, cluster: bool) -> String {
    if cluster { format!("{prefix}:{{{policy}:{instance}}}") } else { format!("{prefix}:{policy}:{instance}") }
}

/// `<prefix>:<policy>:<instance>:<key>`, or on a cluster `<prefix>:{<policy>:<instance>:<key>}`.
fn keyed(prefix: &str, policy: &str, instance: &str, key: &str, cluster: bool) -> String {
    if cluster {
        format!("{prefix}:{{{policy}:{instance}:{key}}}")
    } else {
        format!("{prefix}:{policy}:{instance}:{key}")
    }
}

/// A number no other store of this process (nor, with the process id, of another) has: the
/// nanoseconds since the epoch at connect, made unique within the process by a counter.
fn unique() -> u128 {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    nanos + u128::from(COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// `url` without its password, for messages.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://***{}", &url[..scheme], &url[at..]),
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn on_a_cluster_an_instance_keys_share_one_slot_and_instances_spread() {
        use crate::slot::of;
        // Ids with braces, an empty one: the breaker's Open key and probe round stay together.
        for id in ["prices", "", "{", "}", "a{b}c", "}{", "{}", "x:{y}"] {
            for prefix in ["r4c", "shop{", "a}b"] {
                let open = super::key(prefix, "circuit_breaker", id, true);
                assert_eq!(of(open.as_bytes()), of(format!("{open}:probes").as_bytes()), "{open}");
            }
        }
        let slots: std::collections::HashSet<u16> =
            (0..100).map(|i| of(super::key("r4c", "rate_limiter", &format!("id-{i}"), true).as_bytes())).collect();
        assert!(slots.len() > 90, "100 instances in {} slots", slots.len());
        assert_eq!(super::key("r4c", "bulkhead", "db", false), "r4c:bulkhead:db", "one server: as before");
    }

    #[test]
    fn on_a_cluster_each_key_of_a_keyed_instance_keeps_its_keys_in_one_slot_and_keys_spread() {
        use crate::slot::of;
        for text in ["\"a.example\"", "7", "(7, \"eu\")", "\"}\"", "\"{x}\"", ""] {
            let open = super::keyed("r4c", "circuit_breaker", "hosts", text, true);
            assert_eq!(of(open.as_bytes()), of(format!("{open}:probes").as_bytes()), "{open}");
        }
        let slots: std::collections::HashSet<u16> = (0..100)
            .map(|i| of(super::keyed("r4c", "rate_limiter", "api", &format!("\"tenant-{i}\""), true).as_bytes()))
            .collect();
        assert!(slots.len() > 90, "100 keys of one instance in {} slots", slots.len());
        assert_eq!(super::keyed("r4c", "bulkhead", "db", "\"t\"", false), "r4c:bulkhead:db:\"t\"");
    }

    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(super::redacted("redis://:hunter2@127.0.0.1:6379"), "redis://***@127.0.0.1:6379");
        assert_eq!(super::redacted("unix:///tmp/r.sock"), "unix:///tmp/r.sock");
    }
}
