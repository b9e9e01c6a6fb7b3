use resilience4cata::resilient;

pub struct Client;

#[resilient(policies = policies)]
impl Client {
    #[retry]
    pub fn get(&mut self) -> Result<u32, String> {
        Ok(1)
    }
}

fn main() {}
