use resilience4cata::resilient;

pub struct Client;

#[resilient(polices = policies)]
impl Client {}

fn main() {}
