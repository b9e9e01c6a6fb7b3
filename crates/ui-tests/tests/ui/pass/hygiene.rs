//! The expansion names nothing the user imported: it compiles in a module without the prelude,
//! beside user items named like the ones it uses.
#![no_implicit_prelude]

pub struct D;
pub struct Option;
pub struct Ok;
pub mod core {}

pub type Result<T> = ::std::result::Result<T, ::std::string::String>;

#[::resilience4cata::resilient]
pub trait Shadowed {
    #[retry(max_attempts = 2, delay = "0", abort_on_if = never)]
    fn get(&self, d: &D) -> Result<u32>;

    fn plain(&self) -> D;
}

fn never(_: &::std::string::String) -> bool {
    false
}

struct Backend;

impl Shadowed for Backend {
    fn get(&self, _d: &D) -> Result<u32> {
        ::std::result::Result::Ok(1)
    }

    fn plain(&self) -> D {
        D
    }
}

fn main() {
    let registry = ::resilience4cata::Registry::builder().build().unwrap();
    let wrapper = ResilientShadowed::new(Backend, &registry).unwrap();
    ::std::assert_eq!(wrapper.get(&D), ::std::result::Result::Ok(1));
    let _: D = wrapper.plain();
    let _ = (Option, Ok);
}
