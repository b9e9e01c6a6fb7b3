use resilience4cata::resilient;

pub trait Api {}

pub struct Client {
    pub policies: ClientApiPolicies,
}

impl Api for Client {}

#[resilient(policies = policies)]
impl Client {
    #[retry]
    pub fn get(&self) -> Result<u32, String> {
        Ok(1)
    }
}

#[derive(Debug)]
pub struct ClientApiPolicies;

fn main() {}
