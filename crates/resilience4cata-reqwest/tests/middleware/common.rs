//! A scripted axum server on loopback: each request is answered by the test's closure, given the
//! request's number (from 0); the server counts requests and records each body's length.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use resilience4cata_reqwest::ResilientMiddleware;
use tokio::sync::Notify;

/// One answer: a status, headers, and optionally a wait before answering.
#[derive(Clone, Debug, Default)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    /// Real time the handler sleeps before answering (the timeout test).
    pub delay: Option<Duration>,
    /// The handler waits for this before answering (the bulkhead test).
    pub hold: Option<Arc<Notify>>,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Reply { status, ..Reply::default() }
    }

    pub fn ok() -> Self {
        Reply::status(200)
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

type Script = dyn Fn(u32) -> Reply + Send + Sync;

struct Shared {
    script: Box<Script>,
    hits: AtomicU32,
    bodies: Mutex<Vec<usize>>,
}

/// A running server.
#[derive(Clone)]
pub struct Server {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Server {
    /// How many requests reached the server.
    pub fn hits(&self) -> u32 {
        self.shared.hits.load(Ordering::SeqCst)
    }

    /// The length of each request body received, in order.
    pub fn bodies(&self) -> Vec<usize> {
        self.shared.bodies.lock().unwrap().clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The host part of this server's instance ids: `127.0.0.1:<port>`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// Waits (real time, polling) until `n` requests have reached the server.
    pub async fn wait_for_hits(&self, n: u32) {
        while self.hits() < n {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

async fn answer(State(shared): State<Arc<Shared>>, body: Bytes) -> (StatusCode, HeaderMap) {
    shared.bodies.lock().unwrap().push(body.len());
    let n = shared.hits.fetch_add(1, Ordering::SeqCst);
    let reply = (shared.script)(n);
    if let Some(delay) = reply.delay {
        tokio::time::sleep(delay).await;
    }
    if let Some(hold) = &reply.hold {
        hold.notified().await;
    }
    let mut headers = HeaderMap::new();
    for (name, value) in reply.headers {
        headers.insert(HeaderName::from_static(name), HeaderValue::from_str(&value).unwrap());
    }
    (StatusCode::from_u16(reply.status).unwrap(), headers)
}

/// Starts a server on a fresh loopback port answering every path and method with `script`.
pub async fn serve(script: impl Fn(u32) -> Reply + Send + Sync + 'static) -> Server {
    let shared = Arc::new(Shared { script: Box::new(script), hits: AtomicU32::new(0), bodies: Mutex::default() });
    let app = Router::new().fallback(answer).with_state(Arc::clone(&shared));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("the server runs") });
    Server { addr, shared }
}

/// A client with `middleware` and nothing else.
pub fn client(middleware: ResilientMiddleware) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new()).with(middleware).build()
}
