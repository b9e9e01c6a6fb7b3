use resilience4cata::resilient;

#[resilient]
pub trait Repository<K> {
    #[retry]
    fn load(&self, key: K) -> Result<u32, String>;
}

fn main() {}
