resilience4cata::bundle! {
    pub critical = #[retry] #[policy_order(Timeout, Retry)];
}

fn main() {}
