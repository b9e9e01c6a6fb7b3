//! The service the demo's client depends on: a real HTTP server on loopback serving two tenants'
//! prices. The shard of the troubled tenant ([`TROUBLED`]) follows the script (healthy, slow,
//! failing, healthy again); every other tenant's stays healthy throughout.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use tokio::net::TcpListener;

use super::{Phase, TROUBLED};

/// How the downstream service currently behaves; the script moves it from phase to phase.
#[derive(Debug)]
pub struct Downstream {
    phase: AtomicU8,
    time_scale: f64,
}

impl Downstream {
    /// Starts the service on a free loopback port, healthy.
    pub async fn start(time_scale: f64) -> io::Result<(Arc<Downstream>, SocketAddr)> {
        let service = Arc::new(Downstream { phase: AtomicU8::new(Phase::Healthy as u8), time_scale });
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = Router::new().route("/{tenant}/price/{sku}", get(price)).with_state(Arc::clone(&service));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok((service, addr))
    }

    /// Switches the behaviour of every later request of the troubled tenant.
    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::SeqCst);
    }

    fn phase(&self) -> Phase {
        Phase::ALL[usize::from(self.phase.load(Ordering::SeqCst))]
    }
}

/// `GET /{tenant}/price/{sku}`: a price after a short think when healthy; a long, uneven think
/// when slow (some answers come after the client's timeout); 503 at once when failing. Only the
/// troubled tenant's shard leaves the healthy phase.
async fn price(
    State(service): State<Arc<Downstream>>,
    Path((tenant, sku)): Path<(String, String)>,
) -> Result<String, StatusCode> {
    let phase = if tenant == TROUBLED { service.phase() } else { Phase::Healthy };
    let think_ms = match phase {
        Phase::Healthy | Phase::Recovered | Phase::Chaos => 15 + fastrand::u64(0..20),
        Phase::Slow => 200 + fastrand::u64(0..900),
        Phase::Failing => return Err(StatusCode::SERVICE_UNAVAILABLE),
    };
    tokio::time::sleep(Duration::from_secs_f64(think_ms as f64 / 1000.0 * service.time_scale)).await;
    Ok((100 + sku.len() * 7).to_string())
}
