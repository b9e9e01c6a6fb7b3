use resilience4cata::{Rejection, ResilienceError};

#[derive(Debug, ResilienceError)]
pub enum Tuple {
    Busy,
    #[rejection]
    Rejected(Rejection),
}

#[derive(Debug, ResilienceError)]
pub enum Named<T> {
    Other(T),
    #[rejection]
    Refused { rejection: Rejection },
}

#[derive(Debug, ResilienceError)]
pub enum Only {
    #[rejection]
    Rejected(resilience4cata::Rejection),
}

fn main() {
    let r = || Rejection::CallNotPermitted { instance: "x".into() };
    assert_eq!(Tuple::from_rejection(r()).rejection(), Some(&r()));
    assert!(Tuple::Busy.rejection().is_none());
    assert_eq!(Named::<u8>::from_rejection(r()).rejection(), Some(&r()));
    assert!(Named::Other(1u8).rejection().is_none());
    assert!(Only::from_rejection(r()).rejection().is_some());
}
