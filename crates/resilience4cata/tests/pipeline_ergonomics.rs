//! What a pipeline shares with the generated wrappers' way of naming things: `scope()` (SPEC §5:
//! one instance per backend, `<scope>/<id>`), `AsyncPipeline<T, E>` for an async-only pipeline's
//! type, and, with `tower`, `ResilientService<S, Req>` for the layer's service, stored in a struct.

use std::time::Duration;

use resilience4cata::circuit_breaker::State;
use resilience4cata::{AsyncPipeline, Pipeline, Registry, Rejection, ResilienceError};
use testkit::block_on;

#[derive(Clone, Debug, PartialEq, ResilienceError)]
pub enum HostError {
    Down,
    #[rejection]
    Refused(Rejection),
}

/// The "prices" pipeline of one host: a breaker that opens after two failures in two calls.
fn prices(registry: &Registry, scope: &str) -> Pipeline<u32, HostError> {
    Pipeline::builder(registry, "prices")
        .scope(scope)
        .circuit_breaker_with(|c| c.window_size(2).minimum_calls(2))
        .build()
        .unwrap()
}

#[test]
fn two_scopes_do_not_share_a_breaker() {
    let registry = Registry::builder().build().unwrap();
    let (a, b) = (prices(&registry, "host-a"), prices(&registry, "host-b"));
    assert_eq!((a.id(), b.id()), ("host-a/prices", "host-b/prices"));
    for _ in 0..2 {
        assert_eq!(a.execute(|| Err(HostError::Down)), Err(HostError::Down));
    }
    assert!(matches!(a.execute(|| Ok(1)), Err(HostError::Refused(Rejection::CallNotPermitted { .. }))));
    assert_eq!(b.execute(|| Ok(2)), Ok(2), "host b's breaker is its own");
    assert_eq!(registry.circuit_breaker("host-a/prices").unwrap().state(), State::Open);
    assert_eq!(registry.circuit_breaker("host-b/prices").unwrap().state(), State::Closed);
    assert!(registry.circuit_breaker("prices").is_none(), "the unscoped id is not used");
    let mut ids: Vec<_> = registry.snapshot().circuit_breakers().iter().map(|s| s.instance.to_string()).collect();
    ids.sort();
    assert_eq!(ids, ["host-a/prices", "host-b/prices"]);
}

#[test]
fn the_same_scope_shares_and_no_scope_is_the_plain_id() {
    let registry = Registry::builder().build().unwrap();
    let (first, second) = (prices(&registry, "host-a"), prices(&registry, "host-a"));
    for _ in 0..2 {
        let _ = first.execute(|| Err(HostError::Down));
    }
    assert!(second.execute(|| Ok(1)).is_err(), "one scope, one breaker");
    let plain = Pipeline::builder(&registry, "prices").circuit_breaker().build::<u32, HostError>().unwrap();
    assert_eq!(plain.id(), "prices");
    assert_eq!(plain.execute(|| Ok(3)), Ok(3));
}

#[test]
fn instance_config_for_the_scoped_id_applies_to_that_scope_only() {
    let registry = Registry::builder()
        .retry_defaults(|r| r.delay(Duration::ZERO))
        .retry_instance("host-a/prices", |r| r.max_attempts(5))
        .build()
        .unwrap();
    let scoped = |scope: &str| Pipeline::builder(&registry, "prices").scope(scope).retry().build::<u32, String>();
    let (a, b) = (scoped("host-a").unwrap(), scoped("host-b").unwrap());
    let attempts = |pipeline: &Pipeline<u32, String>| {
        let mut n = 0;
        let _ = pipeline.execute(|| {
            n += 1;
            Err("down".to_owned())
        });
        n
    };
    assert_eq!((attempts(&a), attempts(&b)), (5, 3));
    assert!(registry.unused_config().is_empty(), "{:?}", registry.unused_config());
}

#[cfg(feature = "serde")]
#[test]
fn a_config_file_reaches_the_scoped_id() {
    let registry = Registry::builder()
        .config_toml("[instances.\"host-a/prices\".circuit_breaker]\nminimum_calls = 7\n")
        .build()
        .unwrap();
    let _a =
        Pipeline::builder(&registry, "prices").scope("host-a").circuit_breaker().build::<u32, HostError>().unwrap();
    let _b =
        Pipeline::builder(&registry, "prices").scope("host-b").circuit_breaker().build::<u32, HostError>().unwrap();
    let config = |id: &str| registry.circuit_breaker(id).unwrap().snapshot().config.minimum_calls;
    assert_eq!((config("host-a/prices"), config("host-b/prices")), (7, 100));
}

#[test]
fn an_empty_scope_is_a_coded_error() {
    let registry = Registry::builder().build().unwrap();
    let err = Pipeline::builder(&registry, "prices").scope("").retry().build::<u32, String>().unwrap_err();
    assert_eq!(err.code(), "R4C-REG-003");
    assert!(registry.snapshot().retries().is_empty(), "nothing was registered");
}

/// A struct field holds an async-only pipeline without naming its mode.
struct Search {
    pipeline: AsyncPipeline<u32, HostError>,
}

#[test]
fn an_async_only_pipeline_is_named_without_its_mode() {
    let registry = Registry::builder().build().unwrap();
    let timed: AsyncPipeline<u32, HostError> =
        Pipeline::builder(&registry, "timed").timeout_with(|t| t.duration(Duration::from_secs(1))).build().unwrap();
    let hedged = Pipeline::builder(&registry, "hedged").hedge().build::<u32, HostError>().unwrap();
    let fell_back = Pipeline::builder(&registry, "fell-back")
        .build::<u32, HostError>()
        .unwrap()
        .fallback_async(|_| async { Ok(9) });
    for (pipeline, want) in [(timed, 1), (hedged, 1), (fell_back, 9)] {
        let search = Search { pipeline };
        let outcome =
            block_on(search.pipeline.execute_async(|| async { if want == 9 { Err(HostError::Down) } else { Ok(1) } }));
        assert_eq!(outcome, Ok(want));
    }
}

#[cfg(feature = "tower")]
mod named_service {
    use std::future::Ready;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::task::{Context, Poll};

    use resilience4cata::pipeline::{CloneFn, PipelineService, ResilientService, SyncOrAsync};
    use tower::{Layer, Service, ServiceExt};

    use super::*;

    /// A backend with a nameable type that fails its first `fail` calls.
    #[derive(Clone)]
    struct Backend {
        calls: Arc<AtomicU32>,
        fail: u32,
    }

    impl Service<String> for Backend {
        type Response = u32;
        type Error = HostError;
        type Future = Ready<Result<u32, HostError>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), HostError>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, sku: String) -> Self::Future {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            std::future::ready(if n <= self.fail { Err(HostError::Down) } else { Ok(sku.len() as u32) })
        }
    }

    #[allow(clippy::ptr_arg)] // a `CloneRequest` hook takes `&Req`, and `Req` is `String`
    fn copy(sku: &String) -> Option<String> {
        Some(sku.clone())
    }

    /// A client that stores its resilient services: no box, no closure type to name.
    struct Client {
        timed: ResilientService<Backend, String>,
        copied: ResilientService<Backend, String, CloneFn<String>>,
    }

    fn client(registry: &Registry, backend: &Backend) -> Client {
        let timed = Pipeline::builder(registry, "timed")
            .retry_with(|r| r.max_attempts(3).delay(Duration::ZERO))
            .timeout_with(|t| t.duration(Duration::from_secs(1)))
            .build()
            .unwrap()
            .layer()
            .layer(backend.clone());
        let copied = Pipeline::builder(registry, "copied")
            .retry_with(|r| r.max_attempts(3).delay(Duration::ZERO))
            .build()
            .unwrap()
            .layer()
            .clone_request(copy as fn(&String) -> Option<String>)
            .layer(backend.clone());
        Client { timed, copied }
    }

    #[test]
    fn a_struct_stores_the_layers_service_and_serves_through_it() {
        let registry = Registry::builder().build().unwrap();
        let backend = Backend { calls: Arc::new(AtomicU32::new(0)), fail: 2 };
        let client = client(&registry, &backend);
        assert_eq!(block_on(client.timed.clone().oneshot("sku-1".to_owned())), Ok(5));
        assert_eq!(backend.calls.load(Ordering::SeqCst), 3, "two failures retried, then the answer");
        assert_eq!(block_on(client.copied.clone().oneshot("sku-22".to_owned())), Ok(6));
        assert_eq!(backend.calls.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn the_alias_is_the_service_type_spelled_out() {
        let registry = Registry::builder().build().unwrap();
        let backend = Backend { calls: Arc::new(AtomicU32::new(0)), fail: 0 };
        let service: PipelineService<Backend, u32, HostError, SyncOrAsync> = client(&registry, &backend).timed;
        assert_eq!(block_on(service.oneshot("ab".to_owned())), Ok(2));
    }
}
