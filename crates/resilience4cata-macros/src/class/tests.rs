//! The class style's expansion on `proc_macro2` input (its behaviour is tested through the runtime
//! in `crates/resilience4cata/tests/class_style*.rs`).

use proc_macro2::TokenStream;
use quote::quote;

fn expand(args: TokenStream, input: TokenStream) -> String {
    super::expand(args, input).expect("an impl block").to_string()
}

fn assert_contains(out: &str, expected: &[&str]) {
    for expected in expected {
        assert!(out.contains(expected), "missing `{expected}` in {out}");
    }
}

#[test]
fn the_body_moves_to_a_hidden_inner_method_that_the_protected_method_calls() {
    let out = expand(
        quote!(policies = p),
        quote! {
            impl Client {
                #[retry]
                pub fn get(&self, (a, b): (u32, u32)) -> Result<u32, E> { Ok(a + b) }
                pub fn plain(&self) -> u32 { 1 }
                fn new() -> Self { Client }
            }
        },
    );
    assert_contains(
        &out,
        &[
            "# [doc (hidden)] # [allow (non_snake_case)] fn __r4c_inner_get (& self , (a , b) : (u32 , u32)) -> Result < u32 , E > { Ok (a + b) }",
            "# [inline (always)] pub fn get (& self , __r4c_arg0 : (u32 , u32)) -> Result < u32 , E >",
            "Self :: __r4c_inner_get (self , :: resilience4cata :: __private :: attempt_arg (& __r4c_arg0))",
            "let __r4c_retry = & __r4c_policies_of_Client (self) . __r4c_retry_get ;",
            "pub fn plain (& self) -> u32 { 1 }",
            "fn new () -> Self { Client }",
            "pub struct ClientPolicies",
            "\"::Client::get\"",
            "fn __r4c_policies_of_Client < '__r4c > (__r4c_self : & '__r4c Client) -> & '__r4c ClientPolicies",
        ],
    );
}

#[test]
fn a_trait_impl_keeps_its_items_and_puts_inner_methods_in_an_inherent_block() {
    let out = expand(
        quote!(policies = p, vis = pub(crate)),
        quote! {
            impl<T: Sync> Api for Client<T> {
                type Error = String;
                #[retry]
                async fn get(&self) -> Result<u32, Self::Error> { Err(Self::Error::new()) }
            }
        },
    );
    assert_contains(
        &out,
        &[
            // An `async fn` is desugared, so its future's poll can be always inlined (`emit::outer`).
            "impl < T : Sync > Api for Client < T > { type Error = String ; # [inline (always)] fn get (& self) -> impl :: core :: future :: Future < Output = Result < u32 , Self :: Error > > { # [inline (always)] async move {",
            "impl < T : Sync > Client < T > { # [doc (hidden)] # [allow (non_snake_case)] async fn __r4c_inner_Api_get (& self) -> Result < u32 , < Self as Api > :: Error > { Err (< Self as Api > :: Error :: new ()) } }",
            "Self :: __r4c_inner_Api_get (self ,) . await",
            "pub (crate) struct ClientApiPolicies",
            "\"::Client::Api::get\"",
        ],
    );
}

#[test]
fn block_attributes_skip_functions_without_a_receiver() {
    let out = expand(
        quote!(policies = p),
        quote! {
            #[retry]
            impl Client {
                fn new() -> Self { Client }
                fn get(&self) -> Result<u32, E> { Ok(1) }
            }
        },
    );
    assert!(out.contains("fn new () -> Self { Client }"), "{out}");
    assert!(out.contains("__r4c_retry_get"), "{out}");
    assert!(!out.contains("__r4c_retry_new"), "{out}");
}

#[test]
fn an_item_that_is_not_an_impl_is_left_to_the_trait_style() {
    assert!(
        super::expand(
            quote!(),
            quote!(
                pub trait Api {}
            )
        )
        .is_none()
    );
}

#[test]
fn a_keyed_method_looks_its_key_up_through_the_policies_accessor() {
    let out = expand(
        quote!(policies = p),
        quote! {
            impl Client {
                #[rate_limiter(permits = 2, key = tenant)]
                pub fn get(&self, tenant: &str) -> Result<u32, E> { Ok(1) }
            }
        },
    );
    assert_contains(
        &out,
        &[
            "__r4c_rate_limiter_get : :: resilience4cata :: __private :: KeyedRateLimiterPolicy",
            ":: resilience4cata :: __private :: keyed_rate_limiter (registry",
            "KeyedRateLimiterPolicy :: for_key (& __r4c_policies_of_Client (self) . __r4c_rate_limiter_get , __r4c_key_arg . key_arg ())",
            "(* __r4c_key_rate_limiter) . acquire ()",
            "Self :: __r4c_inner_get (self , tenant)",
        ],
    );
}
