//! A private `redis-server` per test: on a unix socket (or a free loopback port) in a temporary
//! directory, stopped when dropped. Without `redis-server` on the machine a test is skipped with a
//! printed reason, unless `R4C_REQUIRE_EXTERNAL=1` (CI), which makes it fail instead.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    dir: tempfile::TempDir,
    child: Option<Child>,
    extra: Vec<String>,
    port: Option<u16>,
}

/// `redis-server`, or `None` after printing why the test is skipped (panics under
/// `R4C_REQUIRE_EXTERNAL=1`).
fn binary() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("redis-server"))
        .find(|path| path.is_file());
    if found.is_none() {
        let why = "redis-server is not installed (Debian: apt-get install redis-server; `bash .ci/test` installs it)";
        assert!(std::env::var("R4C_REQUIRE_EXTERNAL").as_deref() != Ok("1"), "R4C_REQUIRE_EXTERNAL=1 but {why}");
        eprintln!("SKIPPED: {why}");
    }
    found
}

impl RedisServer {
    /// A server on a unix socket.
    pub fn start() -> Option<Self> {
        Self::start_with(&[], false)
    }

    /// A server on a free loopback port (and its socket), with extra arguments.
    pub fn start_with(extra: &[&str], tcp: bool) -> Option<Self> {
        binary()?;
        let port = tcp.then(free_port);
        let mut server = RedisServer {
            dir: tempfile::tempdir().expect("temp dir"),
            child: None,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            port,
        };
        server.run();
        Some(server)
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("redis.sock")
    }

    /// The URL of the unix socket.
    pub fn url(&self) -> String {
        format!("unix://{}", self.socket().display())
    }

    /// The TCP URL (servers started with `tcp`).
    pub fn tcp_url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port.expect("started without tcp"))
    }

    fn run(&mut self) {
        let _ = std::fs::remove_file(self.socket());
        let port = self.port.unwrap_or(0).to_string();
        let child = Command::new("redis-server")
            .args(["--port", &port, "--bind", "127.0.0.1", "--unixsocket"])
            .arg(self.socket())
            .args(["--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir"])
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.answers() {
            assert!(Instant::now() < deadline, "redis-server did not come up on {}", self.socket().display());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether the server is up (`PING` on the socket, any reply, `NOAUTH` included).
    fn answers(&self) -> bool {
        let Ok(mut s) = std::os::unix::net::UnixStream::connect(self.socket()) else { return false };
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let mut reply = [0u8; 16];
        s.write_all(b"PING\r\n").is_ok() && s.read(&mut reply).is_ok_and(|n| n > 0)
    }

    /// Kills the server (SIGKILL: no goodbye to the clients).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same socket and port, empty.
    pub fn restart(&mut self) {
        self.kill();
        self.run();
    }

    /// One command through `redis-cli`-free raw RESP on the socket; returns the raw reply.
    pub fn command(&self, args: &[&str]) -> String {
        let mut s = std::os::unix::net::UnixStream::connect(self.socket()).expect("socket");
        let mut request = format!("*{}\r\n", args.len());
        for a in args {
            request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(request.as_bytes()).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let mut reply = [0u8; 512];
        let n = s.read(&mut reply).unwrap_or(0);
        String::from_utf8_lossy(&reply[..n]).into_owned()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A loopback port nobody listens on (at the time of asking).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
