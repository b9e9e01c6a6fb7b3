use resilience4cata::resilient;

pub struct Client {
    pub policies: u32,
}

#[resilient(policies = policies)]
impl Client {}

fn main() {}
