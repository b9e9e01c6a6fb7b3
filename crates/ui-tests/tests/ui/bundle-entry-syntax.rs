resilience4cata::bundle! {
    pub critical #[retry];
}

fn main() {}
