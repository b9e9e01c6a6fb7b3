//! `serve`: a standalone admin server on its own listener.

use std::io;
use std::net::SocketAddr;

use resilience4cata::Registry;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::task::JoinHandle;

use crate::{AdminOptions, router};

/// Where [`serve`] is usually pointed: the loopback interface only, so nothing outside the
/// machine can reach the endpoint unless the application chooses another address.
pub const DEFAULT_ADDR: &str = "127.0.0.1:9464";

/// Binds `addr` and serves the admin routes on the current Tokio runtime until the returned
/// [`AdminServer`] is shut down or dropped.
///
/// Use [`DEFAULT_ADDR`] (loopback) unless the endpoint must be reachable from elsewhere; port 0
/// picks a free port ([`AdminServer::local_addr`] tells which).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// use resilience4cata::Registry;
/// use resilience4cata_admin::{AdminOptions, serve};
///
/// let registry = Registry::builder().build().expect("valid configuration");
/// // In an application: `serve(DEFAULT_ADDR, …)` and then `admin.wait().await`.
/// let admin = serve("127.0.0.1:0", registry, AdminOptions::new()).await?;
/// assert!(admin.local_addr().ip().is_loopback());
/// println!("dashboard: {}", admin.url());
/// admin.shutdown();
/// # Ok(())
/// # }
/// ```
pub async fn serve(addr: impl ToSocketAddrs, registry: Registry, options: AdminOptions) -> io::Result<AdminServer> {
    let listener = TcpListener::bind(addr).await?;
    let local_addr = listener.local_addr()?;
    let app = router(registry, options);
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(AdminServer { local_addr, task })
}

/// A running admin server; dropping it stops the server.
#[derive(Debug)]
#[must_use = "dropping the AdminServer stops it"]
pub struct AdminServer {
    local_addr: SocketAddr,
    task: JoinHandle<io::Result<()>>,
}

impl AdminServer {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The dashboard's URL, `http://<addr>/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.local_addr)
    }

    /// Serves until the server fails (it otherwise runs until the process ends).
    pub async fn wait(mut self) -> io::Result<()> {
        match (&mut self.task).await {
            Ok(result) => result,
            Err(join) => Err(io::Error::other(join)),
        }
    }

    /// Stops the server: open connections, `/events` streams included, are closed.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for AdminServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
