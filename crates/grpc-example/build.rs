//! Generates the client and server of `proto/inventory.proto` with `protoc`, and sets the cfg
//! `r4c_protoc` when it did. Without `protoc` the crate still builds (the layers need no generated
//! code), the gRPC tests print why they are skipped, and a warning says so here; with
//! `R4C_REQUIRE_EXTERNAL=1` (set by `.ci/test`) a missing `protoc` fails the build instead.

use std::path::PathBuf;

const PROTO: &str = "proto/inventory.proto";
const INSTALL: &str =
    "Debian: apt-get install protobuf-compiler; `bash .ci/test` installs it; or set PROTOC=/path/to/protoc";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(r4c_protoc)");
    println!("cargo::rerun-if-changed={PROTO}");
    println!("cargo::rerun-if-env-changed=PROTOC");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=R4C_REQUIRE_EXTERNAL");
    match protoc() {
        Some(protoc) => generate(protoc),
        None => skip(),
    }
}

/// `$PROTOC` if set (and then only that), else the first `protoc` on `PATH`.
fn protoc() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PROTOC") {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths).map(|dir| dir.join("protoc")).find(|p| p.is_file())
}

fn generate(protoc: PathBuf) {
    // prost-build runs `$PROTOC` when set, else `protoc` from `PATH`: the one found above either way.
    println!("cargo::rerun-if-changed={}", protoc.display());
    if let Err(e) = tonic_prost_build::configure().compile_protos(&[PROTO], &["proto"]) {
        panic!("protoc ({}) failed on {PROTO}: {e}", protoc.display());
    }
    println!("cargo::rustc-cfg=r4c_protoc");
}

fn skip() {
    let why = format!("protoc is not installed ({INSTALL})");
    if std::env::var("R4C_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
        panic!("R4C_REQUIRE_EXTERNAL=1 but {why}: the gRPC example and its tests need it");
    }
    println!("cargo::warning=the gRPC example and tests of resilience4cata-grpc-example are skipped: {why}");
}
