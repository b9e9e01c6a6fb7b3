//! Every code the project emits has a section in docs/errors.md, and every section names a code the
//! project emits.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `R4C-XXX-NNN` codes in `text`.
fn codes(text: &str) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    let mut found = BTreeSet::new();
    for (i, _) in text.match_indices("R4C-") {
        let rest = &bytes[i + 4..];
        let family = rest.iter().take_while(|b| b.is_ascii_uppercase()).count();
        if !(2..=3).contains(&family) || rest.get(family) != Some(&b'-') {
            continue;
        }
        let digits = rest[family + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 3 {
            found.insert(text[i..i + 4 + family + 1 + 3].to_owned());
        }
    }
    found
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn emitted() -> BTreeSet<String> {
    let mut files = Vec::new();
    for krate in ["resilience4cata", "resilience4cata-macros", "resilience4cata-duration"] {
        rust_sources(&workspace().join("crates").join(krate).join("src"), &mut files);
    }
    files.iter().flat_map(|f| codes(&std::fs::read_to_string(f).unwrap())).collect()
}

fn documented() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(workspace().join("docs/errors.md")).unwrap();
    doc.lines().filter(|l| l.starts_with("## R4C-")).flat_map(codes).collect()
}

#[test]
fn every_emitted_code_has_a_section() {
    let missing: Vec<_> = emitted().difference(&documented()).cloned().collect();
    assert!(missing.is_empty(), "codes without a section in docs/errors.md: {missing:?}");
}

#[test]
fn every_section_is_a_code_the_project_emits() {
    let stale: Vec<_> = documented().difference(&emitted()).cloned().collect();
    assert!(stale.is_empty(), "sections in docs/errors.md for codes nothing emits: {stale:?}");
}

#[test]
fn the_scanner_finds_codes() {
    let found = codes("x [R4C-ATR-001] y R4C-REG-008, R4C-X-1 R4C-ABCD-123 R4C-SIG-12");
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ["R4C-ATR-001", "R4C-REG-008"]);
}
