use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry(classifier = accept, retry_on = _)]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn accept(_: &Result<u32, String>) -> resilience4cata::Verdict {
    resilience4cata::Verdict::Success
}

fn main() {}
