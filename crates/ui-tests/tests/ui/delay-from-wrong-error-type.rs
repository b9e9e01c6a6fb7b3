use std::time::Duration;

use resilience4cata::resilient;

/// The hook reads an `io::Error`, but the method fails with a `String`.
fn after(_error: &std::io::Error, _attempt: u32, computed: Duration) -> Option<Duration> {
    Some(computed)
}

#[resilient]
pub trait Api {
    #[retry(delay_from = after)]
    async fn get(&self) -> Result<u32, String>;
}

fn main() {}
