//! A duration written with a space inside (`"100 ms"`) is refused with a message that says where
//! the space is and what to write, in a configuration file as in an attribute (the attribute's
//! case is `crates/ui-tests/tests/ui/duration-space-before-unit.rs`).

use resilience4cata::Registry;

#[test]
fn a_spaced_duration_in_a_configuration_file_names_the_fix() {
    let err = Registry::builder().config_toml("[defaults.retry]\ndelay = \"100 ms\"\n").build().unwrap_err();
    assert_eq!(err.code(), "R4C-CFG-003");
    let message = err.to_string();
    assert!(message.contains(r#"`100 ms` is not a duration (a space between 100 and ms); write "100ms""#), "{message}");
    assert!(message.contains("defaults.retry.delay"), "the key path: {message}");

    let fixed = Registry::builder().config_toml("[defaults.retry]\ndelay = \"100ms\"\n").build();
    assert!(fixed.is_ok(), "{:?}", fixed.err());
}
