// One coded error, on the key expression: a float is not `Eq + Hash`, so it cannot be a key.
use resilience4cata::resilient;

#[derive(Debug, resilience4cata::ResilienceError)]
pub enum PriceError {
    #[rejection]
    Refused(resilience4cata::Rejection),
}

#[resilient]
pub trait Prices {
    #[circuit_breaker(key = weight)]
    fn quote(&self, weight: f64) -> Result<u32, PriceError>;
}

fn main() {}
