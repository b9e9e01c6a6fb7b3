use resilience4cata::{Registry, resilient};

#[resilient]
#[retry(max_attempts = 2, delay = "10ms", jitter = None)]
pub trait Prices {
    #[retry(max_attempts = 5, backoff = Fixed)]
    fn price(&self, sku: &str) -> Result<u32, String>;

    fn currency(&self) -> Result<String, String>;
}

struct Backend;

impl Prices for Backend {
    fn price(&self, _sku: &str) -> Result<u32, String> {
        Ok(1)
    }

    fn currency(&self) -> Result<String, String> {
        Ok("EUR".to_owned())
    }
}

fn main() {
    let registry = Registry::builder().build().unwrap();
    let prices = ResilientPrices::new(Backend, &registry).unwrap();
    assert_eq!(prices.price("a"), Ok(1));
    assert_eq!(prices.currency().unwrap(), "EUR");
    let snapshot = registry.snapshot();
    let price = snapshot.retries().iter().find(|s| s.instance.ends_with("::Prices::price")).unwrap();
    assert_eq!(price.config.max_attempts, 5);
    let currency = snapshot.retries().iter().find(|s| s.instance.ends_with("::Prices::currency")).unwrap();
    assert_eq!(currency.config.max_attempts, 2);
}
