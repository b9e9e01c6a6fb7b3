//! What an admin endpoint exposes and who may use it.

use std::fmt;

/// Options of [`router`](crate::router) and [`serve`](crate::serve).
///
/// Without a token the endpoint is read-only: the control routes do not exist. With one, they
/// exist and need `Authorization: Bearer <token>`; `protect_reads(true)` puts the read routes
/// behind it too. Asking for protected reads without a token locks every read route (401): a
/// forgotten token never leaves reads open that were meant to be closed.
///
/// ```
/// use resilience4cata_admin::AdminOptions;
///
/// let open = AdminOptions::new();
/// let guarded = AdminOptions::new().token("s3cret").protect_reads(true).event_buffer(256);
/// // The token is never printed.
/// assert!(!format!("{guarded:?}").contains("s3cret"));
/// # let _ = open;
/// ```
#[derive(Clone)]
#[must_use]
pub struct AdminOptions {
    pub(crate) token: Option<String>,
    pub(crate) protect_reads: bool,
    pub(crate) event_buffer: usize,
}

/// Events kept per `/events` client before it starts losing them.
const DEFAULT_EVENT_BUFFER: usize = 1024;

impl AdminOptions {
    /// Read-only, reads open, 1024 events of buffer per `/events` client.
    pub fn new() -> Self {
        AdminOptions { token: None, protect_reads: false, event_buffer: DEFAULT_EVENT_BUFFER }
    }

    /// The bearer token the control routes (and, with [`protect_reads`](Self::protect_reads),
    /// the read routes) require. Setting one is what creates the control routes. An empty token
    /// is treated as none.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into()).filter(|t| !t.is_empty());
        self
    }

    /// Whether `GET /`, `/snapshot`, `/counters`, `/events` and `/metrics` need the token too.
    pub fn protect_reads(mut self, protect: bool) -> Self {
        self.protect_reads = protect;
        self
    }

    /// How many events one `/events` client may fall behind before it loses events (at least 1).
    /// The loss is counted and sent to the client; the policies never wait for it.
    pub fn event_buffer(mut self, events: usize) -> Self {
        self.event_buffer = events.max(1);
        self
    }
}

impl Default for AdminOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for AdminOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdminOptions")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("protect_reads", &self.protect_reads)
            .field("event_buffer", &self.event_buffer)
            .finish()
    }
}
