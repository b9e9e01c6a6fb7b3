use resilience4cata::resilient;

pub struct Client;

#[resilient(policies = policies, vis = crate)]
impl Client {}

fn main() {}
