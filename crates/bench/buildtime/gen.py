#!/usr/bin/env python3
"""Generates a throwaway user crate: one trait of N async methods, each under retry, circuit
breaker and timeout, a caller per method and one `ResilientApi::new` (or, with --style class,
one `impl` block of N methods in the class style and one `<Type>Policies::new`), depending on
resilience4cata by path, with the workspace's Cargo.lock so the dependencies built for the
workspace are reused.

    gen.py DIR N [--style trait|class|plain]

`plain` is the same trait without attributes (the baseline). Used by `measure.sh` and
`.ci/buildtime`.
"""
import argparse
import os
import shutil

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

HEADER = """\
#![allow(async_fn_in_trait, unused_imports)]

use resilience4cata::{Registry, Rejection, ResilienceError, resilient};

#[derive(Debug, PartialEq, ResilienceError)]
pub enum ApiError {
    Down,
    #[rejection]
    Rejected(Rejection),
}
"""

ATTRS = """\
    #[retry(max_attempts = 3, delay = "10ms")]
    #[circuit_breaker(window_size = 10, minimum_calls = 5)]
    #[timeout(duration = "1s")]
"""


def trait_style(n, attrs):
    out = [HEADER]
    out.append("#[resilient]\n" if attrs else "")
    out.append("pub trait Api {\n")
    for i in range(n):
        if attrs:
            out.append(ATTRS)
        out.append(f"    async fn m{i}(&self, x: u32) -> Result<u32, ApiError>;\n")
    out.append("}\n\npub struct Backend;\n\nimpl Api for Backend {\n")
    for i in range(n):
        out.append(f"    async fn m{i}(&self, x: u32) -> Result<u32, ApiError> {{\n")
        out.append(f"        if x == u32::MAX {{ Err(ApiError::Down) }} else {{ Ok(x + {i}) }}\n    }}\n")
    out.append("}\n\n")
    api = "ResilientApi<Backend>" if attrs else "Backend"
    for i in range(n):
        out.append(f"pub async fn call_{i}(api: &{api}, x: u32) -> Result<u32, ApiError> {{\n")
        out.append(f"    api.m{i}(x).await\n}}\n\n")
    if attrs:
        out.append("pub fn build(registry: &Registry) -> Result<ResilientApi<Backend>, resilience4cata::RegistryError> {\n")
        out.append("    ResilientApi::new(Backend, registry)\n}\n")
    else:
        out.append("pub fn build(_registry: &Registry) -> Backend {\n    Backend\n}\n")
    return "".join(out)


def class_style(n):
    out = [HEADER]
    out.append("pub struct Client {\n    policies: ClientPolicies,\n}\n\n")
    out.append("#[resilient(policies = policies)]\nimpl Client {\n")
    for i in range(n):
        out.append(ATTRS)
        out.append(f"    pub async fn m{i}(&self, x: u32) -> Result<u32, ApiError> {{\n")
        out.append(f"        if x == u32::MAX {{ Err(ApiError::Down) }} else {{ Ok(x + {i}) }}\n    }}\n")
    out.append("}\n\n")
    for i in range(n):
        out.append(f"pub async fn call_{i}(client: &Client, x: u32) -> Result<u32, ApiError> {{\n")
        out.append(f"    client.m{i}(x).await\n}}\n\n")
    out.append("pub fn build(registry: &Registry) -> Result<Client, resilience4cata::RegistryError> {\n")
    out.append("    Ok(Client { policies: ClientPolicies::new(registry)? })\n}\n")
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("n", type=int)
    ap.add_argument("--style", choices=["trait", "class", "plain"], default="trait")
    a = ap.parse_args()
    os.makedirs(os.path.join(a.dir, "src"), exist_ok=True)
    runtime = os.path.join(ROOT, "crates", "resilience4cata")
    with open(os.path.join(a.dir, "Cargo.toml"), "w") as f:
        f.write(f"""[package]
name = "r4c-buildtime"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
resilience4cata = {{ path = "{runtime}" }}

[workspace]
""")
    shutil.copy(os.path.join(ROOT, "Cargo.lock"), os.path.join(a.dir, "Cargo.lock"))
    if a.style == "class":
        src = class_style(a.n)
    else:
        src = trait_style(a.n, a.style == "trait")
    with open(os.path.join(a.dir, "src", "lib.rs"), "w") as f:
        f.write(src)


if __name__ == "__main__":
    main()
