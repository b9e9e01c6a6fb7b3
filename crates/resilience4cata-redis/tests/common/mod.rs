//! A private `redis-server` per test: on a unix socket (or a free loopback port) in a temporary
//! directory, stopped when dropped. Without `redis-server` on the machine a test is skipped with a
//! printed reason, unless `R4C_REQUIRE_EXTERNAL=1` (CI), which makes it fail instead.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The other process of the multi-process tests, `r4c-redis-fleet-member`, its stdout and stderr
/// piped; the caller adds its arguments (and environment) and spawns it.
pub fn fleet_member() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_r4c-redis-fleet-member"));
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

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

/// A reply of a Redis server, as read by [`RedisCluster::command`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Text(String),
    Int(i64),
    Array(Vec<Reply>),
    Nil,
    Error(String),
}

impl Reply {
    pub fn text(&self) -> &str {
        match self {
            Reply::Text(t) => t,
            other => panic!("not a text reply: {other:?}"),
        }
    }

    pub fn int(&self) -> i64 {
        match self {
            Reply::Int(n) => *n,
            other => panic!("not an integer reply: {other:?}"),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Reply::Array(items) => items.len(),
            other => panic!("not an array reply: {other:?}"),
        }
    }
}

fn read_line(r: &mut impl std::io::BufRead) -> std::io::Result<String> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    Ok(line.trim_end_matches("\r\n").to_owned())
}

/// One RESP2 reply.
fn read_reply(r: &mut impl std::io::BufRead) -> std::io::Result<Reply> {
    let line = read_line(r)?;
    let (kind, rest) = line.split_at(1.min(line.len()));
    Ok(match kind {
        "+" => Reply::Text(rest.to_owned()),
        "-" => Reply::Error(rest.to_owned()),
        ":" => Reply::Int(rest.parse().unwrap()),
        "$" if rest == "-1" => Reply::Nil,
        "$" => {
            let mut body = vec![0; rest.parse::<usize>().unwrap() + 2];
            r.read_exact(&mut body)?;
            body.truncate(body.len() - 2);
            Reply::Text(String::from_utf8_lossy(&body).into_owned())
        }
        "*" if rest == "-1" => Reply::Nil,
        "*" => Reply::Array((0..rest.parse::<usize>().unwrap()).map(|_| read_reply(r)).collect::<Result<_, _>>()?),
        _ => return Err(std::io::Error::other(format!("not RESP: {line:?}"))),
    })
}

/// The slots of the three masters: Redis's own split of 16,384 slots in three.
pub const CLUSTER_SLOTS: [(u16, u16); 3] = [(0, 5460), (5461, 10922), (10923, 16383)];

/// A Redis Cluster of three masters (no replicas) on loopback, in a temporary directory, stopped
/// when dropped: `redis-server --cluster-enabled yes` three times, the slots assigned by hand
/// (`CLUSTER ADDSLOTSRANGE`, then `CLUSTER MEET`: no `redis-cli` needed), ready once every node
/// says `cluster_state:ok` and knows all three. Nodes run with `cluster-require-full-coverage no`
/// (a master down leaves the others serving their slots) and a 1 s node timeout.
pub struct RedisCluster {
    dir: tempfile::TempDir,
    /// Each node's port, cluster bus port and process (none once killed).
    nodes: Vec<(u16, u16, Option<Child>)>,
}

impl RedisCluster {
    pub fn start() -> Option<Self> {
        binary()?;
        let dir = tempfile::tempdir().expect("temp dir");
        let mut nodes = Vec::new();
        for i in 0..3 {
            let (port, bus) = (free_port(), free_port());
            nodes.push((port, bus, Some(Self::spawn(dir.path(), i, port, bus))));
        }
        let cluster = RedisCluster { dir, nodes };
        let deadline = Instant::now() + Duration::from_secs(10);
        for i in 0..3 {
            while cluster.try_command(i, &["PING"]).is_err() {
                assert!(Instant::now() < deadline, "cluster node {i} did not come up");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        for (i, (first, last)) in CLUSTER_SLOTS.iter().enumerate() {
            let added = cluster.command(i, &["CLUSTER", "ADDSLOTSRANGE", &first.to_string(), &last.to_string()]);
            assert_eq!(added, Reply::Text("OK".into()));
        }
        for i in 1..3 {
            let (port, bus) = (cluster.nodes[i].0.to_string(), cluster.nodes[i].1.to_string());
            let met = cluster.command(0, &["CLUSTER", "MEET", "127.0.0.1", &port, &bus]);
            assert_eq!(met, Reply::Text("OK".into()));
        }
        for i in 0..3 {
            loop {
                let info = cluster.command(i, &["CLUSTER", "INFO"]);
                let info = info.text();
                if info.contains("cluster_state:ok")
                    && info.contains("cluster_known_nodes:3")
                    && info.contains("cluster_slots_assigned:16384")
                    && cluster.command(i, &["CLUSTER", "SLOTS"]).len() == 3
                {
                    break;
                }
                assert!(Instant::now() < deadline, "the cluster did not form:\n{info}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Some(cluster)
    }

    fn spawn(dir: &std::path::Path, i: usize, port: u16, bus: u16) -> Child {
        Command::new("redis-server")
            .args(["--port", &port.to_string(), "--cluster-port", &bus.to_string(), "--bind", "127.0.0.1"])
            .args(["--cluster-enabled", "yes", "--cluster-config-file", &format!("nodes-{i}.conf")])
            .args(["--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no"])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts")
    }

    /// Starts killed node `i` again, empty, on its ports: it rejoins with its node id and slots
    /// (its `nodes-<i>.conf`). Returns once it answers.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        let (port, bus, _) = self.nodes[i];
        self.nodes[i].2 = Some(Self::spawn(self.dir.path(), i, port, bus));
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.try_command(i, &["PING"]).is_err() {
            assert!(Instant::now() < deadline, "cluster node {i} did not come back");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The nodes' URLs, for `RedisStore::connect_cluster`.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|(port, ..)| format!("redis://127.0.0.1:{port}")).collect()
    }

    /// The node (0, 1 or 2) whose master holds `slot`.
    pub fn node_of_slot(slot: u16) -> usize {
        CLUSTER_SLOTS.iter().position(|(first, last)| (*first..=*last).contains(&slot)).unwrap()
    }

    /// The node that holds `key`, as the cluster computes it (`CLUSTER KEYSLOT`, asked of a
    /// node that is up).
    pub fn node_of_key(&self, key: &str) -> usize {
        let up = self.nodes.iter().position(|(.., child)| child.is_some()).expect("a node is up");
        Self::node_of_slot(u16::try_from(self.command(up, &["CLUSTER", "KEYSLOT", key]).int()).unwrap())
    }

    /// The keys node `i` holds that match `pattern`.
    pub fn keys(&self, i: usize, pattern: &str) -> Vec<String> {
        match self.command(i, &["KEYS", pattern]) {
            Reply::Array(keys) => keys.iter().map(|k| k.text().to_owned()).collect(),
            other => panic!("KEYS: {other:?}"),
        }
    }

    /// Kills node `i` (SIGKILL).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].2.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// One command to node `i` (raw RESP over TCP).
    pub fn command(&self, i: usize, args: &[&str]) -> Reply {
        self.try_command(i, args).unwrap_or_else(|e| panic!("node {i}: {e}"))
    }

    fn try_command(&self, i: usize, args: &[&str]) -> std::io::Result<Reply> {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.nodes[i].0))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        let mut request = format!("*{}\r\n", args.len());
        for a in args {
            request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(request.as_bytes())?;
        read_reply(&mut std::io::BufReader::new(s))
    }

    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
    }
}
