//! `<Generated>Ids::scoped` / `unscoped` exist for both styles, with one `MethodIds` field per
//! protected method (and none for a method without policies), before anything is built.

use resilience4cata::{MethodIds, Registry, resilient};

#[resilient]
pub trait Stock {
    #[retry]
    fn stock(&self, sku: &str) -> std::io::Result<u32>;

    #[circuit_breaker(name = "prices")]
    #[timeout(duration = "1s")]
    #[allow(async_fn_in_trait)]
    async fn price(&self, sku: &str) -> std::io::Result<u32>;

    fn unprotected(&self) -> u32;
}

pub struct Client {
    policies: ClientPolicies,
}

#[resilient(policies = policies)]
impl Client {
    #[retry]
    pub fn get(&self) -> std::io::Result<u32> {
        Ok(1)
    }

    #[bulkhead]
    pub fn put(&self) -> std::io::Result<u32> {
        Ok(2)
    }
}

fn main() {
    let ids: ResilientStockIds = ResilientStockIds::scoped("host-a");
    let (_, _): (&MethodIds, &MethodIds) = (&ids.stock, &ids.price);
    let ResilientStockIds { stock, price, .. } = ResilientStockIds::unscoped();
    assert!(stock.retry().is_some() && price.circuit_breaker() == Some("prices"));

    let ids: ClientPoliciesIds = ClientPoliciesIds::scoped("host-a");
    let (_, _): (&MethodIds, &MethodIds) = (&ids.get, &ids.put);
    assert!(ClientPoliciesIds::unscoped().put.bulkhead().is_some());

    let registry = Registry::builder().build().unwrap();
    let client = Client { policies: ClientPolicies::new(&registry).unwrap() };
    assert_eq!(client.policies.ids(), ClientPoliciesIds::unscoped());
    assert_eq!(client.get().unwrap() + client.put().unwrap(), 3);
}
