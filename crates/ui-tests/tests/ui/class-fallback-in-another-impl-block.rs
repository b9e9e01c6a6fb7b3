use resilience4cata::{FallbackContext, resilient};

pub struct Client;

#[resilient(policies = policies)]
impl Client {
    #[fallback(method = cached)]
    pub fn get(&self) -> Result<u32, String> {
        Ok(1)
    }
}

// The macro sees only the block it is on: a method of `Client` written here is not a fallback.
impl Client {
    pub fn cached(&self, ctx: FallbackContext<String>) -> Result<u32, String> {
        Err(ctx.into_error())
    }
}

fn main() {}
