//! A tonic `Inventory` server on loopback that answers from a script, for the example and the
//! tests: it counts its calls and keeps the `grpc-timeout` each call announced, so a test can
//! check what reached the server and not only what the client saw.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Code, Request, Response, Status};

use crate::proto::inventory_server::{Inventory, InventoryServer};
use crate::proto::{StockReply, StockRequest};

/// What the server does with one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `OK` with this many units.
    Units(u32),
    /// A status with this code.
    Fail(Code),
    /// Never answers: the handler waits until the call is cut (by a deadline or a disconnect).
    Hang,
}

type Script = Arc<dyn Fn(u32) -> Answer + Send + Sync>;

/// The service: `script(n)` decides call `n` (from 1).
#[derive(Clone)]
pub struct ScriptedInventory {
    script: Script,
    calls: Arc<AtomicU32>,
    deadlines: Arc<Mutex<Vec<Option<String>>>>,
}

impl std::fmt::Debug for ScriptedInventory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedInventory").field("calls", &self.calls()).finish_non_exhaustive()
    }
}

impl ScriptedInventory {
    /// A server whose call `n` (from 1) gets `script(n)`.
    ///
    /// ```
    /// use resilience4cata_grpc_example::server::{Answer, ScriptedInventory};
    /// use tonic::Code;
    ///
    /// // UNAVAILABLE twice, then 7 units.
    /// let inventory = ScriptedInventory::new(|n| if n <= 2 { Answer::Fail(Code::Unavailable) } else { Answer::Units(7) });
    /// assert_eq!(inventory.calls(), 0);
    /// ```
    pub fn new(script: impl Fn(u32) -> Answer + Send + Sync + 'static) -> Self {
        ScriptedInventory { script: Arc::new(script), calls: Arc::default(), deadlines: Arc::default() }
    }

    /// Calls the server has received so far.
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }

    /// The `grpc-timeout` header of each call received, in order (`None` where there was none).
    pub fn deadlines(&self) -> Vec<Option<String>> {
        self.deadlines.lock().expect("no handler panics while holding it").clone()
    }

    /// Serves on a free loopback port until the returned [`Running`] is dropped.
    ///
    /// ```
    /// use resilience4cata_grpc_example::server::{Answer, ScriptedInventory};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let running = ScriptedInventory::new(|_| Answer::Units(1)).serve().await?;
    /// assert!(running.addr().ip().is_loopback());
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn serve(&self) -> std::io::Result<Running> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let service = InventoryServer::new(self.clone());
        let task = tokio::spawn(async move {
            let incoming = TcpIncoming::from(listener);
            let shutdown = async {
                let _ = stopped.await;
            };
            Server::builder().add_service(service).serve_with_incoming_shutdown(incoming, shutdown).await
        });
        Ok(Running { addr, stop: Some(stop), task })
    }
}

#[tonic::async_trait]
impl Inventory for ScriptedInventory {
    async fn stock(&self, request: Request<StockRequest>) -> Result<Response<StockReply>, Status> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let deadline = request.metadata().get("grpc-timeout").and_then(|v| v.to_str().ok()).map(str::to_owned);
        self.deadlines.lock().expect("no handler panics while holding it").push(deadline);
        let sku = request.into_inner().sku;
        match (self.script)(n) {
            Answer::Units(units) => Ok(Response::new(StockReply { sku, units })),
            Answer::Fail(code) => Err(Status::new(code, format!("scripted {code:?} for call {n}"))),
            Answer::Hang => std::future::pending().await,
        }
    }
}

/// A server running on loopback; dropping it stops the server.
#[derive(Debug)]
pub struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), tonic::transport::Error>>,
}

impl Running {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its URL for `tonic::transport::Endpoint`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.abort();
    }
}
