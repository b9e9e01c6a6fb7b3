use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Counter {
    fn get(&self) -> u32;
    fn bump(&mut self, by: u32) -> u32;
    fn into_total(self) -> u32
    where
        Self: Sized;
    fn label() -> &'static str
    where
        Self: Sized;
    fn with_default(&self) -> u32 {
        42
    }
    async fn later(&self) -> u32;
    fn pair(&self, (a, b): (u32, u32)) -> u32 {
        a + b
    }
    #[cfg(any())]
    fn compiled_out(&self) -> u32;
    #[cfg(any())]
    #[retry]
    fn protected_compiled_out(&self) -> Result<u32, String>;

    #[retry]
    fn checked(&self) -> Result<u32, String>;
}

struct Backend(u32);

impl Counter for Backend {
    fn get(&self) -> u32 {
        self.0
    }
    fn bump(&mut self, by: u32) -> u32 {
        self.0 += by;
        self.0
    }
    fn into_total(self) -> u32 {
        self.0
    }
    fn label() -> &'static str {
        "backend"
    }
    async fn later(&self) -> u32 {
        self.0
    }
    fn checked(&self) -> Result<u32, String> {
        Ok(self.0)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::builder().build().unwrap();
    let mut counter = ResilientCounter::new(Backend(1), &registry).unwrap();
    assert_eq!(counter.bump(2), 3);
    assert_eq!(counter.get(), 3);
    assert_eq!(counter.with_default(), 42);
    assert_eq!(counter.later().await, 3);
    assert_eq!(counter.pair((1, 2)), 3);
    assert_eq!(counter.checked(), Ok(3));
    assert_eq!(<ResilientCounter<Backend> as Counter>::label(), "backend");
    assert_eq!(counter.into_total(), 3);
}
