resilience4cata::bundle! {
    pub critical = #[retry] #[inline];
}

fn main() {}
