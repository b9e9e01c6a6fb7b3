use resilience4cata::{Rejection, ResilienceError};

#[derive(ResilienceError)]
pub enum StockError {
    Unavailable,
    #[rejection]
    Rejected(Rejection, String),
}

fn main() {}
