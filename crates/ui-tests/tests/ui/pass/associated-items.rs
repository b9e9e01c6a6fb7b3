use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Store {
    type Key: Clone;
    type Error: std::fmt::Debug;
    type Page<'a>
    where
        Self: 'a;
    const NAME: &'static str;

    #[retry(max_attempts = 2, delay = "0")]
    fn load(&self, key: &Self::Key) -> Result<u32, Self::Error>;

    #[retry(max_attempts = 2, delay = "0")]
    fn save(&self, key: Self::Key) -> Result<(), Self::Error>;

    fn page(&self) -> Self::Page<'_>;
}

struct Memory(Vec<u32>);

impl Store for Memory {
    type Key = String;
    type Error = String;
    type Page<'a> = &'a [u32];
    const NAME: &'static str = "memory";

    fn load(&self, _key: &String) -> Result<u32, String> {
        Ok(1)
    }

    fn save(&self, _key: String) -> Result<(), String> {
        Ok(())
    }

    fn page(&self) -> &[u32] {
        &self.0
    }
}

fn main() {
    let store = ResilientStore::new(Memory(vec![1, 2]), &Registry::builder().build().unwrap()).unwrap();
    assert_eq!(store.load(&"k".to_owned()), Ok(1));
    assert_eq!(store.save("k".to_owned()), Ok(()));
    assert_eq!(store.page(), [1, 2]);
    assert_eq!(<ResilientStore<Memory> as Store>::NAME, "memory");
}
