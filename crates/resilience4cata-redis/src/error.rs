//! Errors of [`RedisStore::connect`](crate::RedisStore::connect): the only place this crate
//! returns one. After connect, Redis trouble degrades instances; it never reaches a caller.

use std::fmt;

/// Why a [`RedisStore`](crate::RedisStore) could not be connected.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL is not a Redis URL (`redis://host:port`, `rediss://…`, `unix:///path`,
    /// `redis+unix:///path`).
    BadUrl(redis::RedisError),
    /// The server could not be reached, refused the credentials, or is not a Redis server.
    Server {
        /// The URL with any password removed.
        url: String,
        /// What went wrong.
        source: redis::RedisError,
    },
    /// No answer within the connect timeout.
    Timeout {
        /// The URL with any password removed.
        url: String,
        /// The timeout that passed.
        after: std::time::Duration,
    },
    /// The store's background thread could not be started.
    Runtime(std::io::Error),
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::BadUrl(e) => write!(f, "not a Redis URL: {e}"),
            ConnectError::Server { url, source } => write!(f, "Redis at {url}: {source}"),
            ConnectError::Timeout { url, after } => {
                write!(f, "Redis at {url}: no answer within {after:?} (is it a Redis server?)")
            }
            ConnectError::Runtime(e) => write!(f, "cannot start the store's background thread: {e}"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::BadUrl(e) | ConnectError::Server { source: e, .. } => Some(e),
            ConnectError::Runtime(e) => Some(e),
            ConnectError::Timeout { .. } => None,
        }
    }
}
