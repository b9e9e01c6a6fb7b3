use resilience4cata::{Pipeline, Registry};

fn main() {
    let registry = Registry::builder().build().unwrap();
    let search = Pipeline::builder(&registry, "search").timeout().build::<u32, std::io::Error>().unwrap();
    let _ = search.execute(|| Ok(1));
}
