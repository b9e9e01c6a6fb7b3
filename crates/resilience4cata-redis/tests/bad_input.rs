//! Bad input never panics (SPEC §13): an unreachable URL, a wrong password, a server that is not
//! Redis and a URL that is not a Redis URL are clear errors at connect; garbage in the keys is
//! either overwritten (a value that is not a number) or degrades the instance (a key of another
//! type), and calls keep being served.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use resilience4cata::shared::{SharedPolicy, SharedStateEvent};
use resilience4cata::{Pipeline, Registry};
use resilience4cata_redis::{ConnectError, RedisStore};

fn connect(url: &str) -> Result<RedisStore, ConnectError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(RedisStore::builder(url).connect_timeout(Duration::from_millis(500)).connect())
}

#[test]
fn an_unreachable_url_is_an_error_at_connect() {
    let started = Instant::now();
    let err = connect(&format!("redis://127.0.0.1:{}", common::free_port())).unwrap_err();
    assert!(matches!(err, ConnectError::Server { .. } | ConnectError::Timeout { .. }), "{err:?}");
    assert!(err.to_string().contains("127.0.0.1"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let err = connect("unix:///nonexistent/redis.sock").unwrap_err();
    assert!(err.to_string().contains("/nonexistent/redis.sock"), "{err}");
}

#[test]
fn a_url_that_is_not_redis_is_an_error_at_connect() {
    let err = connect("http://127.0.0.1:80").unwrap_err();
    assert!(matches!(err, ConnectError::BadUrl(_)), "{err:?}");
    assert!(err.to_string().starts_with("not a Redis URL"), "{err}");
}

#[test]
fn a_wrong_password_is_an_error_at_connect_without_the_password_in_it() {
    let Some(redis) = common::RedisServer::start_with(&["--requirepass", "right-one"], true) else { return };
    let url = redis.tcp_url().replace("redis://", "redis://:wrong-one@");
    let err = connect(&url).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ConnectError::Server { .. }), "{err:?}");
    assert!(!text.contains("wrong-one"), "{text}");
    assert!(text.to_lowercase().contains("pass") || text.contains("auth") || text.contains("AUTH"), "{text}");
    let ok = connect(&redis.tcp_url().replace("redis://", "redis://:right-one@"));
    assert!(ok.is_ok(), "{:?}", ok.err());
}

#[test]
fn a_server_that_is_not_redis_is_an_error_at_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let err = connect(&format!("redis://127.0.0.1:{port}")).unwrap_err();
    assert!(matches!(err, ConnectError::Server { .. } | ConnectError::Timeout { .. }), "{err:?}");
}

#[test]
fn garbage_in_the_keys_is_overwritten_or_degrades_never_panics() {
    let Some(redis) = common::RedisServer::start() else { return };
    let store = connect(&redis.url()).unwrap();
    assert!(redis.command(&["SET", "r4c:rate_limiter:text", "not a number"]).starts_with("+OK"));
    assert!(redis.command(&["HSET", "r4c:rate_limiter:hash", "a", "b"]).starts_with(':'));
    let seen: Arc<Mutex<Vec<SharedStateEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let registry = Registry::builder()
        .shared_state(store)
        .listen(move |e: &SharedStateEvent| sink.lock().unwrap().push(e.clone()))
        .rate_limiter_instance("text", |r| r.shared(true).permits(10).lease(2))
        .rate_limiter_instance("hash", |r| r.shared(true).permits(10).lease(2))
        .build()
        .unwrap();
    let text = Pipeline::builder(&registry, "text").rate_limiter_with(|r| r).build::<(), std::io::Error>().unwrap();
    let hash = Pipeline::builder(&registry, "hash").rate_limiter_with(|r| r).build::<(), std::io::Error>().unwrap();
    std::thread::sleep(Duration::from_millis(100)); // the first leases
    assert!(text.execute(|| Ok(())).is_ok(), "a value that is not a number is an idle limiter");
    assert!(hash.execute(|| Ok(())).is_ok(), "a key of another type: served locally");
    let tat = redis.command(&["GET", "r4c:rate_limiter:text"]);
    assert!(tat.lines().nth(1).is_some_and(|v| v.parse::<u64>().is_ok()), "overwritten with a TAT: {tat}");
    assert_eq!(
        *seen.lock().unwrap(),
        [SharedStateEvent::Degraded { instance: Arc::from("hash"), policy: SharedPolicy::RateLimiter }]
    );
}
