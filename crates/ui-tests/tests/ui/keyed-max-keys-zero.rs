use resilience4cata::resilient;

#[resilient]
pub trait Hosts {
    #[circuit_breaker(key = host, max_keys = 0)]
    fn fetch(&self, host: &str) -> std::io::Result<u32>;
}

fn main() {}
