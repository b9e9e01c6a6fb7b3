use resilience4cata::resilient;

pub trait Api {}
pub struct Client;

#[resilient(policies = policies)]
impl Api for &Client {}

fn main() {}
