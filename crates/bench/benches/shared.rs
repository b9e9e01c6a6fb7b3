//! The shared rate limiter's pass path on loopback (SPEC §13, issue 18): leases of 1, 10 and 100
//! permits against the local limiter and against one `EVALSHA` round trip per call. Starts its own
//! `redis-server` on a unix socket in a temporary directory (skipped, with a message, without one).
//!
//! `cargo bench -p bench --bench shared -- --warm-up-time 1 --measurement-time 3`

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use resilience4cata::{Pipeline, Registry};
use resilience4cata_redis::RedisStore;

/// Enough permits that the quota never refuses: the bench measures the cost of a permit.
const PERMITS: u32 = 1_000_000_000;

struct Server {
    child: Child,
    dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Option<Server> {
        let dir = tempfile::tempdir().ok()?;
        let socket = dir.path().join("redis.sock");
        let child = Command::new("redis-server")
            .args(["--port", "0", "--save", "", "--appendonly", "no", "--unixsocket"])
            .arg(&socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let deadline = Instant::now() + Duration::from_secs(5);
        while !socket.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(Server { child, dir })
    }

    fn url(&self) -> String {
        format!("unix://{}", self.dir.path().join("redis.sock").display())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn limiter(registry: &Registry, id: &str) -> Pipeline<(), std::io::Error> {
    Pipeline::builder(registry, id).rate_limiter_with(|r| r).build().unwrap()
}

fn shared(c: &mut Criterion) {
    let Some(server) = Server::start() else {
        eprintln!("SKIPPED: redis-server is not installed (apt-get install redis-server)");
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let store = runtime.block_on(RedisStore::connect(&server.url())).unwrap();
    let mut builder = Registry::builder()
        .shared_state(store)
        .rate_limiter_defaults(|r| r.permits(PERMITS))
        .rate_limiter_instance("local", |r| r.shared(false));
    for lease in [1, 10, 100] {
        builder = builder.rate_limiter_instance(format!("lease-{lease}"), move |r| r.shared(true).lease(lease));
    }
    let registry = builder.build().unwrap();
    let mut group = c.benchmark_group("shared_limiter");
    let local = limiter(&registry, "local");
    group.bench_function("local", |b| b.iter(|| local.execute(|| Ok(()))));
    for lease in [1, 10, 100] {
        let shared = limiter(&registry, &format!("lease-{lease}"));
        group.bench_function(format!("lease {lease}"), |b| b.iter(|| shared.execute(|| Ok(()))));
        assert!(!registry.snapshot().rate_limiters().is_empty());
    }

    let client = redis::Client::open(server.url()).unwrap();
    let mut connection = client.get_connection().unwrap();
    let script = redis::Script::new(include_str!("../../resilience4cata-redis/scripts/rate_limiter.lua"));
    group.bench_function("evalsha per call", |b| {
        b.iter(|| {
            let (granted, _): (u32, u64) = script
                .key("r4c:rate_limiter:raw")
                .arg(1u64)
                .arg(1_000_000u64)
                .arg(1u32)
                .invoke(&mut connection)
                .unwrap();
            granted
        })
    });
    group.finish();
}

criterion_group!(benches, shared);
criterion_main!(benches);
