use resilience4cata::{Registry, resilient};

#[derive(Clone, Debug, PartialEq)]
pub struct Order {
    pub sku: String,
}

#[resilient]
pub trait Orders {
    #[retry(max_attempts = 3, delay = "0")]
    fn place(&self, id: String, order: Order, units: u32, note: &mut String) -> Result<u32, String>;
}

struct Backend;

impl Orders for Backend {
    fn place(&self, _id: String, _order: Order, units: u32, note: &mut String) -> Result<u32, String> {
        note.push('+');
        Ok(units)
    }
}

fn main() {
    let orders = ResilientOrders::new(Backend, &Registry::builder().build().unwrap()).unwrap();
    let mut note = String::new();
    assert_eq!(orders.place("o-1".to_owned(), Order { sku: "a".into() }, 2, &mut note), Ok(2));
    assert_eq!(note, "+");
}
