use resilience4cata::{Rejection, ResilienceError};

#[derive(ResilienceError)]
pub struct StockError {
    pub rejection: Rejection,
}

fn main() {}
