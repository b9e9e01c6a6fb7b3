use resilience4cata::resilient;

pub struct Client {
    pub policies: ClientPolicies,
}

#[resilient(policies = polices)]
impl Client {}

fn main() {}
