//! The class style's expansion is warning-free and documented, for crates that deny both; an
//! inherent and a trait block on one (generic) type, sync, `async fn` and `impl Future` methods.
#![deny(warnings, missing_docs, missing_debug_implementations, unused_qualifications, unused_results)]

use std::future::Future;

use resilience4cata::{FallbackContext, Registry, RegistryError, resilient};

/// An API.
pub trait Api {
    /// The error.
    type Error;
    /// Gets a path.
    fn get(&self, path: &str) -> Result<String, Self::Error>;
}

/// A client over any transport.
#[derive(Debug)]
pub struct Client<T> {
    transport: T,
    policies: ClientPolicies,
    api: ClientApiPolicies,
}

#[resilient(policies = policies)]
#[retry(max_attempts = 2, delay = "0")]
impl<T: Sync> Client<T> {
    /// Builds it.
    pub fn new(transport: T, registry: &Registry) -> Result<Self, RegistryError> {
        Ok(Client { transport, policies: ClientPolicies::new(registry)?, api: ClientApiPolicies::new(registry)? })
    }

    /// Sync.
    #[fallback(method = cached)]
    pub fn stock(&self, sku: &str) -> Result<u32, String> {
        Ok(sku.len() as u32)
    }

    /// The fallback.
    #[retry(enabled = false)]
    pub fn cached(&self, _sku: &str, ctx: FallbackContext<String>) -> Result<u32, String> {
        Err(ctx.into_error())
    }

    /// Async.
    pub async fn reserve(&self, (a, b): (u32, u32)) -> Result<u32, String> {
        Ok(a + b)
    }

    /// A future.
    #[inline]
    pub fn release(&self, units: u32) -> impl Future<Output = Result<u32, String>> + Send {
        async move { Ok(units) }
    }
}

/// Block-level attributes apply to every method with a receiver of their block: methods that are
/// not protected live in another block.
impl<T> Client<T> {
    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }
}

#[resilient(policies = api, vis = pub(crate))]
impl<T> Api for Client<T> {
    type Error = String;

    #[retry]
    fn get(&self, path: &str) -> Result<String, Self::Error> {
        Err(Self::Error::from(path))
    }
}

fn main() {}
