// rustc's own error, on the key expression: a key names the method's parameters.
use resilience4cata::resilient;

#[resilient]
pub trait Tenants {
    #[rate_limiter(permits = 10, key = tenat)]
    fn usage(&self, tenant: &str) -> std::io::Result<u32>;
}

fn main() {}
