use resilience4cata::{Rejection, ResilienceError};

#[derive(ResilienceError)]
pub enum StockError {
    #[rejection]
    Rejected(Rejection),
    #[rejection]
    Refused(Rejection),
}

fn main() {}
