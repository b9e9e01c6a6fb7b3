use resilience4cata::resilient;

pub struct Client;

#[resilient]
impl Client {}

fn main() {}
