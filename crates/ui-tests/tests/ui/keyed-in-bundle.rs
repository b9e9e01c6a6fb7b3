// One error, at the bundle: a key names parameters of one method.
use resilience4cata::resilient;

resilience4cata::bundle! {
    pub per_tenant = #[rate_limiter(permits = 10, key = tenant)];
}

#[resilient]
pub trait Tenants {
    #[bundle(per_tenant)]
    fn usage(&self, tenant: &str) -> std::io::Result<u32>;
}

fn main() {}
