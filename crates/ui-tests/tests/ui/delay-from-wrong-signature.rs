use std::time::Duration;

use resilience4cata::resilient;

/// Two parameters where the hook takes three: the attempt's number is missing.
fn after(_error: &String, computed: Duration) -> Option<Duration> {
    Some(computed)
}

#[resilient]
pub trait Api {
    #[retry(delay_from = after)]
    fn get(&self) -> Result<u32, String>;
}

fn main() {}
