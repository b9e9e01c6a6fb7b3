use resilience4cata::resilient;

#[resilient]
pub trait Tenants {
    #[retry(max_attempts = 3, key = tenant)]
    fn usage(&self, tenant: &str) -> std::io::Result<u32>;
}

fn main() {}
