//! Both presets on every async form (`async fn`, `impl Future + Send`, the trait, an `impl`
//! block), beside direct attributes and a written order: all compile without a warning and the
//! futures stay `Send`.
#![deny(warnings)]
use std::future::Future;

use resilience4cata::{AsyncPipeline, Pipeline, Policy, Registry, presets, resilient};
use testkit::Down;

#[resilient]
pub trait Catalog {
    #[bundle(resilience4cata::presets::standard_http)]
    async fn item(&self, id: String) -> Result<u32, Down>;

    #[bundle(resilience4cata::presets::hedged_http)]
    #[hedge(delay = "150ms")]
    fn search(&self, q: String) -> impl Future<Output = Result<Vec<u32>, Down>> + Send;

    #[bundle(resilience4cata::presets::standard_http)]
    #[retry(max_attempts = 2)]
    #[policy_order(Timeout, Retry)]
    async fn report(&self) -> Result<(), Down>;
}

#[resilient]
#[bundle(resilience4cata::presets::standard_http)]
pub trait Whole {
    async fn a(&self) -> Result<u32, Down>;
    async fn b(&self, n: u32) -> Result<u32, Down>;
}

pub struct Client {
    policies: ClientPolicies,
}

#[resilient(policies = policies)]
impl Client {
    #[bundle(resilience4cata::presets::hedged_http)]
    pub async fn get(&self, path: &str) -> Result<usize, Down> {
        Ok(path.len())
    }
}

fn is_send<T: Send>(_: &T) {}

fn pipelines(registry: &Registry) -> (AsyncPipeline<u32, Down>, AsyncPipeline<u32, Down>) {
    let standard = Pipeline::builder(registry, "standard")
        .preset(presets::StandardHttp)
        .order([Policy::Timeout, Policy::Retry])
        .build()
        .unwrap();
    let hedged = Pipeline::builder(registry, "hedged").preset(presets::HedgedHttp).build().unwrap();
    (standard, hedged)
}

fn main() {
    let registry = Registry::builder().build().unwrap();
    let client = Client { policies: ClientPolicies::new(&registry).unwrap() };
    is_send(&client.get("/"));
    let (standard, hedged) = pipelines(&registry);
    is_send(&standard);
    is_send(&hedged);
}
