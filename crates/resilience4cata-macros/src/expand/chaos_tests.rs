//! Chaos (SPEC §17) in the expansion: without the injection point (the runtime's feature `chaos`
//! off, which turns this crate's feature off) the expansion is token for token what it was before
//! chaos existed, held to golden files written from the macro of the commit before it
//! (`chaos_golden/`); with it, every protected method gets a `ChaosPolicy` field, built in its
//! constructor under the method's scoped derived id, and the injection point innermost, around the
//! delegate, and a forwarded method gets none.

use proc_macro2::TokenStream;
use quote::quote;

use crate::diag::Errors;

/// The trait style: sync and async methods, one with the trait's policy alone.
fn trait_sample() -> TokenStream {
    quote! {
        #[retry(max_attempts = 3)]
        pub trait Api {
            #[circuit_breaker]
            fn get(&self, key: &str) -> Result<u32, E>;

            #[timeout(duration = "1s")]
            #[bulkhead]
            async fn load(&self, key: String) -> Result<u32, E>;

            fn forwarded(&self) -> u32;
        }
    }
}

/// The class style: an inherent block with a sync and an async method, and a trait impl.
fn class_samples() -> [(TokenStream, TokenStream); 2] {
    [
        (
            quote!(policies = policies),
            quote! {
                impl Client {
                    #[retry]
                    fn get(&self, key: &str) -> Result<u32, E> { self.fetch(key) }

                    #[timeout(duration = "1s")]
                    async fn load(&self) -> Result<u32, E> { Ok(1) }

                    fn plain(&self) -> u32 { 1 }
                }
            },
        ),
        (
            quote!(policies = policies),
            quote! {
                impl Api for Client {
                    #[retry]
                    #[circuit_breaker]
                    fn get(&self, key: &str) -> Result<u32, E> { self.fetch(key) }
                }
            },
        ),
    ]
}

fn expand_trait(input: TokenStream) -> String {
    let mut errors = Errors::default();
    let parsed = crate::parse::parse_trait(TokenStream::new(), input, &mut errors).expect("a trait");
    let model = crate::validate::validate(parsed, &mut errors);
    assert!(errors.is_empty(), "{:?}", errors.messages());
    super::expand(&model).to_string()
}

fn expand_class(args: TokenStream, input: TokenStream) -> String {
    crate::class::expand(args, input).expect("an impl block").to_string()
}

/// Every sample's expansion, with the injection point on or off.
fn expansions(chaos: bool) -> Vec<(String, String)> {
    super::chaos::with(chaos, || {
        let mut out = vec![("trait".to_string(), expand_trait(trait_sample()))];
        for (i, (args, input)) in class_samples().into_iter().enumerate() {
            out.push((format!("class{i}"), expand_class(args, input)));
        }
        out
    })
}

fn golden(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/expand/chaos_golden").join(format!("{name}.txt"))
}

/// Off, the expansion is the golden one. `R4C_WRITE_GOLDEN=1` rewrites the files (done once, on
/// the commit before chaos; never needed again unless the expansion changes on purpose).
#[test]
fn chaos_off_expands_token_for_token_as_before_chaos() {
    for (name, out) in expansions(false) {
        if std::env::var_os("R4C_WRITE_GOLDEN").is_some() {
            std::fs::write(golden(&name), &out).unwrap();
        }
        let expected = std::fs::read_to_string(golden(&name)).unwrap();
        assert!(out == expected, "{name}: the expansion without chaos changed:\n{out}\n-- expected --\n{expected}");
    }
}

/// On, each protected method has its field, its construction under its scoped derived id and one
/// injection point (sync `inject`, async `inject_async(…).await`) behind the process-wide switch;
/// a method without a policy has none.
#[test]
fn chaos_on_gives_each_protected_method_one_injection_point() {
    let all = expansions(true);
    let out = |name: &str| all.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let trait_style = out("trait");
    // `forwarded` has the trait's retry, so it has an injection point too; every call of the
    // delegate (a sync retry emits its attempt twice) is inside one.
    for method in ["get", "load", "forwarded"] {
        let points = trait_style.matches(&format!("__r4c_chaos_{method} . inject")).count();
        let calls = trait_style.matches(&format!("< D as Api > :: {method} (")).count();
        assert!(points >= 1 && points == calls, "{method}: {points} injection points, {calls} delegate calls");
    }
    assert_eq!(trait_style.matches(":: chaos_point ::").count(), 3);
    assert_eq!(trait_style.matches("ChaosPolicy :: anywhere ()").count(), trait_style.matches(". inject").count());
    assert_eq!(trait_style.matches("__r4c_chaos_load . inject_async (").count(), 1);
    assert!(trait_style.contains("__r4c_chaos_get . inject ("));
    // Innermost: the delegate's call is the injection point's own expression, after the fault's exit.
    assert!(trait_style.contains("break '__r4c_chaos :: core :: result :: Result :: Err (__r4c_fault) ; } } < Result < u32 , E > as :: resilience4cata :: __private :: ResultLike > :: into_result (< D as Api > :: get"));
    let class = out("class0");
    assert!(class.contains("__r4c_chaos_get . inject (") && class.contains("__r4c_chaos_load . inject_async ("));
    assert!(!class.contains("__r4c_chaos_plain"));
    assert!(class.contains("__r4c_chaos_load"));
    assert!(out("class1").contains("__r4c_chaos_get . inject ("));
}
