use resilience4cata::{Pipeline, Registry};

fn main() {
    let registry = Registry::builder().build().unwrap();
    let search = Pipeline::builder(&registry, "search").hedge().build::<u32, String>().unwrap();
    let _ = search.execute(|| Ok(1));
}
