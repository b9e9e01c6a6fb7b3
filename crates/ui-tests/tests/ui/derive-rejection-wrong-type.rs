use resilience4cata::ResilienceError;

#[derive(ResilienceError)]
pub enum StockError {
    Unavailable,
    #[rejection]
    Rejected(String),
}

fn main() {}
