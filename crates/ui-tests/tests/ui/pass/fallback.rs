//! Every fallback form compiles: sync, `async fn`, `impl Future + Send`, `io::Result` aliases,
//! named lifetimes spelled differently, any error type, a chain of two fallbacks (the second takes
//! the first one's parameters, its context included, plus its own).
#![deny(warnings)]
use std::future::Future;

use resilience4cata::{FallbackContext, resilient};

#[resilient]
pub trait Forms {
    #[fallback(method = sync_cache)]
    fn sync<'a>(&self, key: &'a str, n: u32) -> std::io::Result<u32>;
    fn sync_cache<'b>(&self, key: &'b str, n: u32, ctx: FallbackContext<std::io::Error>) -> std::io::Result<u32>;

    #[retry(max_attempts = 2, delay = "0")]
    #[fallback(method = async_cache)]
    async fn async_fn(&self, key: &str) -> Result<Vec<u8>, ()>;
    #[fallback(method = last_resort)]
    async fn async_cache(&self, key: &str, ctx: FallbackContext<()>) -> Result<Vec<u8>, ()>;
    async fn last_resort(&self, key: &str, first: FallbackContext<()>, ctx: FallbackContext<()>) -> Result<Vec<u8>, ()>;

    #[fallback(method = send_cache)]
    fn send(&self, key: String) -> impl Future<Output = Result<String, String>> + Send;
    fn send_cache(&self, key: String, ctx: FallbackContext<String>) -> impl Future<Output = Result<String, String>> + Send;
}

fn main() {}
