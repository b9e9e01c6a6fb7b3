use resilience4cata::{FallbackContext, Pipeline, Registry};

fn main() {
    let registry = Registry::builder().build().unwrap();
    let quotes = Pipeline::builder(&registry, "quotes")
        .build::<u32, String>()
        .unwrap()
        .fallback_async(|ctx: FallbackContext<String>| async move { Err(ctx.into_error()) });
    let _ = quotes.execute(|| Ok(1));
}
