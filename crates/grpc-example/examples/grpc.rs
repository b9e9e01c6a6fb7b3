//! A tonic client behind resilience4cata's tower layer, against a scripted tonic server on
//! loopback: `UNAVAILABLE` is retried, `INVALID_ARGUMENT` is not, a hanging handler is cut at
//! the deadline (which the server was told), and after enough server faults the breaker opens
//! and refuses calls without sending them. It checks every outcome and exits non-zero if one is
//! not what it should be.
//!
//! Run with `cargo run -p resilience4cata-grpc-example --example grpc` (needs `protoc` at build
//! time: Debian's `protobuf-compiler`).

#[cfg(not(r4c_protoc))]
fn main() -> std::process::ExitCode {
    eprintln!(
        "this example was built without protoc, so it has no gRPC client to run \
         (Debian: apt-get install protobuf-compiler, then rebuild)"
    );
    std::process::ExitCode::from(2)
}

#[cfg(r4c_protoc)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(resilience4cata_grpc_example::demo::run())
}
