use std::io;

use resilience4cata::{Registry, resilient};

pub type StockResult<T> = Result<T, String>;

#[resilient]
pub trait Files {
    #[retry(max_attempts = 2, delay = "0")]
    fn read(&self, path: &str) -> io::Result<Vec<u8>>;

    #[retry(max_attempts = 2, delay = "0")]
    fn stock(&self) -> StockResult<u32>;
}

struct Backend;

impl Files for Backend {
    fn read(&self, _path: &str) -> io::Result<Vec<u8>> {
        Ok(vec![1])
    }

    fn stock(&self) -> StockResult<u32> {
        Ok(1)
    }
}

fn main() {
    let files = ResilientFiles::new(Backend, &Registry::builder().build().unwrap()).unwrap();
    assert_eq!(files.read("a").unwrap(), [1]);
    assert_eq!(files.stock(), Ok(1));
}
