use resilience4cata::{Rejection, ResilienceError};

#[derive(ResilienceError)]
pub enum StockError {
    Unavailable,
    #[rejection(transparent)]
    Rejected(Rejection),
}

fn main() {}
