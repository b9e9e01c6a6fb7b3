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
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

mod bulkhead;
mod circuit_breaker;
mod conn;
mod error;
mod rate_limiter;

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
    url: String,
    prefix: String,
    store_timeout: Duration,
    connection: Arc<conn::Conn>,
    /// This process's id in breaker messages (its own come back on the channel).
    sender: Arc<str>,
    /// For the pub/sub connections of shared breakers.
    client: redis::Client,
    runtime: tokio::runtime::Handle,
    /// Dropping it ends the background thread.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.inner.url)
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
    url: String,
    prefix: String,
    store_timeout: Duration,
    connect_timeout: Duration,
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
    pub async fn connect(self) -> Result<RedisStore, ConnectError> {
        let client = redis::Client::open(self.url.as_str()).map_err(ConnectError::BadUrl)?;
        let pubsub_client = client.clone();
        let url = redacted(&self.url);
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
        let budget = conn::Conn::connect_budget(self.connect_timeout, self.store_timeout);
        let timeout = self.connect_timeout;
        let server_url = url.clone();
        let connected = handle.spawn(async move {
            let attempt = async {
                // A plain connection first, so a refusal (a wrong password, a server that is not
                // Redis) comes back as it is rather than as the manager's retries.
                let mut probe = client.get_multiplexed_async_connection().await?;
                let _: String = redis::cmd("PING").query_async(&mut probe).await?;
                for script in [
                    &*rate_limiter::SCRIPT,
                    &*circuit_breaker::OPEN,
                    &*circuit_breaker::CLOSE,
                    &*circuit_breaker::PROBES,
                    &*bulkhead::ACQUIRE,
                    &*bulkhead::RENEW,
                ] {
                    script.prepare_invoke().load_async(&mut probe).await?;
                }
                Ok::<_, redis::RedisError>(conn::Conn::new(client, probe, budget))
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
            sender: Arc::from(format!("{:x}-{:x}", std::process::id(), unique())),
            client: pubsub_client,
            runtime: handle,
            _stop: stop,
        };
        Ok(RedisStore { inner: Arc::new(inner) })
    }
}

impl RedisStore {
    /// Connects with the default options (store timeout 25 ms, key prefix `r4c`); see
    /// [`builder`](Self::builder) for the others. URLs: `redis://[:password@]host:port[/db]`,
    /// `rediss://…` is not built in, `unix:///path/to/redis.sock` or `redis+unix:///path`.
    pub async fn connect(url: &str) -> Result<RedisStore, ConnectError> {
        Self::builder(url).connect().await
    }

    /// The options, then [`RedisStoreBuilder::connect`].
    pub fn builder(url: &str) -> RedisStoreBuilder {
        RedisStoreBuilder {
            url: url.to_owned(),
            prefix: DEFAULT_KEY_PREFIX.to_owned(),
            store_timeout: DEFAULT_STORE_TIMEOUT,
            connect_timeout: Duration::from_secs(2),
        }
    }

    /// The key of one instance of one policy: `<prefix>:<policy>:<instance id>`.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), resilience4cata_redis::ConnectError> {
    /// let store = resilience4cata_redis::RedisStore::connect("redis://127.0.0.1").await?;
    /// assert_eq!(store.key("rate_limiter", "prices"), "r4c:rate_limiter:prices");
    /// # Ok(()) }
    /// ```
    pub fn key(&self, policy: &str, instance: &str) -> String {
        format!("{}:{policy}:{instance}", self.inner.prefix)
    }
}

impl SharedStore for RedisStore {
    fn store_timeout(&self) -> Duration {
        self.inner.store_timeout
    }

    fn share_rate_limiter(&self, pool: Arc<LeasePool>) {
        let key = self.key("rate_limiter", pool.instance());
        let refill = rate_limiter::refill(pool, Arc::clone(&self.inner.connection), key, self.inner.store_timeout);
        self.inner.runtime.spawn(refill);
    }

    fn share_bulkhead(&self, pool: Arc<SlotPool>) {
        let key = self.key("bulkhead", pool.instance());
        let keep = bulkhead::keep(pool, Arc::clone(&self.inner.connection), key, self.inner.store_timeout);
        self.inner.runtime.spawn(keep);
    }

    fn share_circuit_breaker(&self, link: Arc<BreakerLink>) {
        let open = self.key("circuit_breaker", link.instance());
        let keys =
            circuit_breaker::Keys { probes: format!("{open}:probes"), open, sender: Arc::clone(&self.inner.sender) };
        let timeout = self.inner.store_timeout;
        let conn = &self.inner.connection;
        let publish = circuit_breaker::publish(Arc::clone(&link), Arc::clone(conn), keys.clone(), timeout);
        self.inner.runtime.spawn(publish);
        let listen = circuit_breaker::listen(link, self.inner.client.clone(), Arc::clone(conn), keys, timeout);
        self.inner.runtime.spawn(listen);
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
    fn passwords_stay_out_of_messages() {
        assert_eq!(super::redacted("redis://:hunter2@127.0.0.1:6379"), "redis://***@127.0.0.1:6379");
        assert_eq!(super::redacted("unix:///tmp/r.sock"), "unix:///tmp/r.sock");
    }
}
