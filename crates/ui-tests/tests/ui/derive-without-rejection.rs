use resilience4cata::{Rejection, ResilienceError};

#[derive(ResilienceError)]
pub enum StockError {
    Unavailable,
    Rejected(Rejection),
}

fn main() {}
