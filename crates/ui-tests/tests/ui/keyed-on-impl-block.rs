use resilience4cata::resilient;

pub struct Client;

#[resilient(policies = policies)]
#[bulkhead(max_concurrent_calls = 8, key = tenant)]
impl Client {
    pub fn usage(&self, tenant: &str) -> std::io::Result<u32> {
        Ok(tenant.len() as u32)
    }
}

fn main() {}
