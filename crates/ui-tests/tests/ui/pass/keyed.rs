//! Keyed layers in every form compile warning-free, and an async keyed method's future is `Send`
//! (the key's hold crosses its awaits).
#![deny(warnings, unused_qualifications, unused_results)]

use resilience4cata::{Rejection, ResilienceError, resilient};

#[derive(Debug, ResilienceError)]
pub enum E {
    #[rejection]
    Refused(Rejection),
}

#[derive(Clone)]
pub struct Request {
    host: String,
}

impl Request {
    fn host(&self) -> &str {
        &self.host
    }
}

#[resilient]
#[rate_limiter(max_keys = 100, key_metrics = false)]
pub trait Api: Send + Sync {
    #[retry(max_attempts = 2, delay = "0")]
    #[circuit_breaker(key = req.host())]
    #[rate_limiter(permits = 5, key = tenant)]
    #[adaptive_limit(key = (region, tenant.len()))]
    #[timeout(duration = "1s")]
    #[bulkhead(key = region)]
    async fn call(&self, tenant: &str, req: Request, region: u8) -> Result<u32, E>;

    #[hedge(delay = "10ms")]
    #[circuit_breaker(key = name.as_str())]
    async fn hedged(&self, name: String) -> Result<u32, E>;

    #[fallback(method = cached)]
    #[bulkhead(key = *id)]
    fn sync_mut(&self, id: &mut u64, buf: &mut Vec<u8>) -> Result<u32, E>;

    fn cached(&self, id: &mut u64, buf: &mut Vec<u8>, ctx: resilience4cata::FallbackContext<E>) -> Result<u32, E>;
}

fn is_send<T: Send>(_: &T) {}

fn check<D: Api>(api: &ResilientApi<D>) {
    let future = api.call("t", Request { host: "h".into() }, 1);
    is_send(&future);
    let hedged = api.hedged("n".into());
    is_send(&hedged);
}

pub struct Client {
    policies: ClientPolicies,
}

#[resilient(policies = policies)]
impl Client {
    #[rate_limiter(permits = 1, key = tenant)]
    pub fn get(&self, tenant: u64) -> Result<u32, E> {
        Ok(tenant as u32)
    }

    #[circuit_breaker(key = host)]
    pub async fn fetch(&self, host: &str) -> Result<usize, E> {
        Ok(host.len())
    }
}

fn main() {
    let _ = check::<NoApi>;
    let _ = Client::get;
    let _ = Client::fetch;
    let _ = |c: &Client| c.policies.clone();
}

struct NoApi;
impl Api for NoApi {
    async fn call(&self, _: &str, _: Request, _: u8) -> Result<u32, E> {
        Ok(1)
    }
    async fn hedged(&self, _: String) -> Result<u32, E> {
        Ok(1)
    }
    fn sync_mut(&self, _: &mut u64, _: &mut Vec<u8>) -> Result<u32, E> {
        Ok(1)
    }
    fn cached(&self, _: &mut u64, _: &mut Vec<u8>, _: resilience4cata::FallbackContext<E>) -> Result<u32, E> {
        Ok(2)
    }
}
