// One error, on the trait's `key`: a key names parameters of one method.
use resilience4cata::resilient;

#[resilient]
#[rate_limiter(permits = 10, key = tenant)]
pub trait Tenants {
    fn usage(&self, tenant: &str) -> std::io::Result<u32>;
    fn quota(&self, tenant: &str) -> std::io::Result<u32>;
}

fn main() {}
