use resilience4cata::resilient;

pub struct Client;

#[resilient(policies = policies)]
impl Client {
    #[fallback(method = cahced)]
    pub fn get(&self) -> Result<u32, String> {
        Ok(1)
    }

    pub fn cached(&self, ctx: resilience4cata::FallbackContext<String>) -> Result<u32, String> {
        Err(ctx.into_error())
    }
}

fn main() {}
