//! The pipeline's tower layer around a real `hyper-util` client, against a hyper server on
//! loopback: a request with a buffered body is copied by the `clone_request` hook and retried
//! after a 503; one with a streaming body cannot be copied, so it is sent once and its 503 comes
//! back to the caller.

use std::collections::HashMap;
use std::convert::Infallible;
use std::error::Error as StdError;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::channel::Channel;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use resilience4cata::{Jitter, Pipeline, Registry};
use tower::{Layer, ServiceExt};

type Body = Either<Full<Bytes>, Channel<Bytes>>;
type BoxError = Box<dyn StdError + Send + Sync>;

/// Answers the first request to each path with 503, later ones with 200 and the body's length.
async fn serve(hits: Arc<Mutex<HashMap<String, u32>>>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let hits = Arc::clone(&hits);
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let hits = Arc::clone(&hits);
                async move {
                    let path = request.uri().path().to_owned();
                    let body = request.into_body().collect().await.map(|b| b.to_bytes().len()).unwrap_or(0);
                    let before = {
                        let mut hits = hits.lock().unwrap();
                        let n = hits.entry(path).or_default();
                        *n += 1;
                        *n - 1
                    };
                    let status = if before == 0 { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
                    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
                    *response.status_mut() = status;
                    Ok::<_, Infallible>(response)
                }
            });
            tokio::spawn(async move {
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    addr
}

/// A buffered body is copied (with method, URI and headers); a streaming one cannot be.
fn copy_request(request: &Request<Body>) -> Option<Request<Body>> {
    let Either::Left(full) = request.body() else { return None };
    let mut copy = Request::new(Either::Left(full.clone()));
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.headers_mut() = request.headers().clone();
    Some(copy)
}

/// A 5xx is an `Err` for the policies; a transport error too.
fn status_as_error(
    result: Result<Response<Incoming>, hyper_util::client::legacy::Error>,
) -> Result<Response<Incoming>, BoxError> {
    match result {
        Ok(response) if response.status().is_server_error() => Err(format!("status {}", response.status()).into()),
        Ok(response) => Ok(response),
        Err(e) => Err(e.into()),
    }
}

fn hits_of(hits: &Mutex<HashMap<String, u32>>, path: &str) -> u32 {
    hits.lock().unwrap().get(path).copied().unwrap_or(0)
}

#[tokio::test]
async fn buffered_requests_are_retried_and_streaming_ones_sent_once() {
    let hits = Arc::new(Mutex::new(HashMap::new()));
    let addr = serve(Arc::clone(&hits)).await;
    let registry = Registry::builder().build().unwrap();
    let pipeline = Pipeline::builder(&registry, "http")
        .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(5)).jitter(Jitter::None))
        .build::<Response<Incoming>, BoxError>()
        .unwrap();
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    let service = pipeline.layer().clone_request(copy_request).layer(client.map_result(status_as_error));

    let get = Request::get(format!("http://{addr}/stock")).body(Either::Left(Full::new(Bytes::new()))).unwrap();
    let response = service.clone().oneshot(get).await.expect("retried after the 503");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(hits_of(&hits, "/stock"), 2);

    let buffered =
        Request::post(format!("http://{addr}/buffered")).body(Either::Left(Full::new(Bytes::from("abc")))).unwrap();
    let response = service.clone().oneshot(buffered).await.expect("retried after the 503");
    assert_eq!(response.into_body().collect().await.unwrap().to_bytes(), "3", "the copy carried the body");
    assert_eq!(hits_of(&hits, "/buffered"), 2);

    let (mut sender, body) = Channel::<Bytes>::new(4);
    let upload = Request::post(format!("http://{addr}/upload")).body(Either::Right(body)).unwrap();
    let sending = tokio::spawn(async move {
        sender.send_data(Bytes::from("chunk")).await.unwrap();
    });
    let err = service.oneshot(upload).await.expect_err("a streaming body is sent once");
    sending.await.unwrap();
    assert_eq!(err.to_string(), "status 503 Service Unavailable");
    assert_eq!(hits_of(&hits, "/upload"), 1, "never sent twice");
}
