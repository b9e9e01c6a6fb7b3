use resilience4cata::resilient;

pub struct Client {
    pub policies: ClientPolicies,
}

#[resilient(policies = polices)]
impl Client {
    #[retry]
    pub fn get(&self) -> Result<u32, String> {
        Ok(1)
    }
}

fn main() {}
