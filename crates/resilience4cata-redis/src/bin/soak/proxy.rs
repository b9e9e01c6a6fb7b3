//! A fault proxy between one process and Redis, for the fault tests and the soak: a TCP proxy on
//! loopback that forwards bytes both ways until told to misbehave.
//!
//! Faults ([`Fault`]): added latency on every reply, a black hole (connections accepted, bytes
//! read and never answered, new connections too), resets mid-reply (half a reply forwarded, then
//! the connection reset), and a partition (every connection reset at once, new ones reset on
//! accept). One proxy per process, so a partition of one process leaves the others connected.
//! It runs on its own thread with its own tokio runtime: sync tests and the soak drive it alike.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does to the traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Forwards every byte as it comes.
    Healthy,
    /// Holds every reply this long before forwarding it.
    Latency(Duration),
    /// Accepts, reads and never answers: requests go nowhere, replies are dropped.
    Blackhole,
    /// Forwards half of the next reply on each connection, then resets it (and each new one
    /// after its first half reply).
    ResetMidReply,
    /// Resets every connection now and every new one on accept: the process is cut off.
    Partition,
}

impl Fault {
    /// The fault's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Healthy => "healthy",
            Fault::Latency(_) => "latency",
            Fault::Blackhole => "blackhole",
            Fault::ResetMidReply => "reset mid-reply",
            Fault::Partition => "partition",
        }
    }
}

/// A running proxy: [`addr`](Self::addr) to connect to, [`set`](Self::set) to change the fault.
/// Stops when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    mode: watch::Sender<Fault>,
    /// Connections reset by the proxy, for the reports.
    resets: Arc<AtomicU64>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl FaultProxy {
    /// A proxy on a free loopback port to `upstream` (Redis's TCP address), healthy.
    pub fn start(upstream: SocketAddr) -> std::io::Result<FaultProxy> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0"))?;
        let addr = listener.local_addr()?;
        let (mode, watching) = watch::channel(Fault::Healthy);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let resets = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&resets);
        std::thread::Builder::new().name("fault-proxy".into()).spawn(move || {
            runtime.block_on(async move {
                tokio::select! {
                    _ = stopped => {}
                    _ = accept(listener, upstream, watching, counted) => {}
                }
            });
        })?;
        Ok(FaultProxy { addr, mode, resets, _stop: stop })
    }

    /// Where the process connects: `redis://<addr>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Changes the fault, for connections open now and new ones.
    pub fn set(&self, fault: Fault) {
        self.mode.send_replace(fault);
    }

    /// The fault now.
    pub fn fault(&self) -> Fault {
        *self.mode.borrow()
    }

    /// Connections the proxy reset so far.
    pub fn resets(&self) -> u64 {
        self.resets.load(Ordering::Relaxed)
    }
}

async fn accept(listener: TcpListener, upstream: SocketAddr, mode: watch::Receiver<Fault>, resets: Arc<AtomicU64>) {
    loop {
        let Ok((client, _)) = listener.accept().await else { continue };
        let _ = client.set_nodelay(true);
        let mode = mode.clone();
        let resets = Arc::clone(&resets);
        tokio::spawn(async move {
            let fault = *mode.borrow();
            match fault {
                Fault::Partition => reset(client, &resets),
                Fault::Blackhole => swallow(client, mode).await,
                _ => match TcpStream::connect(upstream).await {
                    Ok(server) => {
                        let _ = server.set_nodelay(true);
                        forward(client, server, mode, &resets).await;
                    }
                    Err(_) => reset(client, &resets),
                },
            }
        });
    }
}

/// Resets `stream` (RST, not FIN: the peer sees "connection reset").
fn reset(stream: TcpStream, resets: &AtomicU64) {
    let _ = stream.set_zero_linger();
    resets.fetch_add(1, Ordering::Relaxed);
    drop(stream);
}

/// A black-holed connection made while the fault is on: read and drop everything until the
/// fault changes, then reset it (a real black hole ends in a timeout; the client has moved on).
async fn swallow(mut client: TcpStream, mut mode: watch::Receiver<Fault>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        tokio::select! {
            read = client.read(&mut buf) => if matches!(read, Ok(0) | Err(_)) { return },
            changed = mode.changed() => if changed.is_err() || *mode.borrow() != Fault::Blackhole {
                let _ = client.set_zero_linger();
                return;
            },
        }
    }
}

/// Forwards between `client` and `server`, applying the fault of the moment to each chunk.
async fn forward(mut client: TcpStream, mut server: TcpStream, mut mode: watch::Receiver<Fault>, resets: &AtomicU64) {
    let (mut up, mut down) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    loop {
        tokio::select! {
            read = client.read(&mut up) => {
                let n = match read { Ok(0) | Err(_) => return, Ok(n) => n };
                match *mode.borrow() {
                    Fault::Blackhole => continue,
                    Fault::Partition => break,
                    _ => {}
                }
                if server.write_all(&up[..n]).await.is_err() {
                    break;
                }
            }
            read = server.read(&mut down) => {
                let n = match read { Ok(0) | Err(_) => break, Ok(n) => n };
                let fault = *mode.borrow();
                match fault {
                    Fault::Blackhole => continue,
                    Fault::Partition => break,
                    Fault::Latency(d) => tokio::time::sleep(d).await,
                    Fault::ResetMidReply => {
                        let _ = client.write_all(&down[..n.div_ceil(2)]).await;
                        let _ = client.flush().await;
                        break;
                    }
                    Fault::Healthy => {}
                }
                if client.write_all(&down[..n]).await.is_err() {
                    return;
                }
            }
            changed = mode.changed() => {
                if changed.is_err() || *mode.borrow() == Fault::Partition {
                    break;
                }
            }
        }
    }
    let _ = server.set_zero_linger();
    drop(server);
    reset(client, resets);
}
