//! Property tests of the duration grammar: formatting round-trips, and no string makes the parser
//! panic (every failure is a `DurationError`).

use std::time::Duration;

use proptest::prelude::*;
use resilience4cata_duration::{format, parse};

fn any_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        (0u64..100_000, 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        Just(Duration::MAX),
        Just(Duration::ZERO),
    ]
}

/// Strings close to the grammar (digits, unit letters, `PT`, dots, multi-byte characters), where
/// the interesting failures are.
fn near_grammar() -> impl Strategy<Value = String> {
    proptest::string::string_regex("(PT|pt|P)?([0-9]{0,40}(\\.[0-9]{0,12})?(ns|us|ms|s|m|h|H|M|S|µs|€|é| )?){0,4}")
        .expect("a valid regex")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_inverts_format(d in any_duration()) {
        prop_assert_eq!(parse(&format(d)), Ok(d));
    }

    #[test]
    fn iso_seconds_round_trip(secs in 0u64..1_000_000_000, nanos in 0u32..1_000_000_000) {
        let text = format!("PT{secs}.{nanos:09}S");
        prop_assert_eq!(parse(&text), Ok(Duration::new(secs, nanos)));
    }

    #[test]
    fn any_string_is_a_value_or_an_error(s in any::<String>()) {
        if let Err(e) = parse(&s) {
            prop_assert!(!e.reason().is_empty());
        }
    }

    #[test]
    fn near_grammar_strings_never_panic(s in near_grammar()) {
        match parse(&s) {
            Ok(d) => prop_assert_eq!(parse(&format(d)), Ok(d)),
            Err(e) => prop_assert!(e.to_string().contains(s.as_str())),
        }
    }
}
