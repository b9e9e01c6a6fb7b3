//! Live configuration from the dashboard, in a real browser (SPEC §16): an operator changes a rate
//! limiter's limit with the card's edit form (the page sends `PUT /config` with the token typed in
//! the page), the card shows the new limit and when it changed; a bad value shows the coded error
//! and changes nothing; a change made by the application itself (`update_toml`) shows too.
//!
//! Without Chromium (`apt-get install chromium`) the test is skipped with a printed reason, unless
//! `R4C_REQUIRE_EXTERNAL=1` (set by `.ci/test`), which makes it fail instead.

use std::path::{Path, PathBuf};
use std::time::Duration;

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Registry};
use resilience4cata_admin::{AdminOptions, serve};

use crate::cdp;

const ID: &str = "host-a/shop::Api::price";
const TOKEN: &str = "typed-by-the-operator";

/// `expression` evaluated inside the rate limiter's card (`card` is the element), as text.
fn in_card(expression: &str) -> String {
    format!(
        "(() => {{ const card = document.querySelector('article[data-policy=\"rate_limiter\"][data-instance=\"{ID}\"]'); \
         return card ? String({expression}) : ''; }})()"
    )
}

fn permits_figure() -> String {
    in_card("card.querySelector('[data-fig=\"permits\"] .v')?.firstChild?.textContent ?? ''")
}

fn changed_line() -> String {
    in_card("card.querySelector('.changed').hidden ? '' : card.querySelector('.changed').textContent")
}

fn edit_message() -> String {
    in_card("card.querySelector('.edit-msg').textContent")
}

fn edit_error() -> String {
    in_card("card.querySelector('.edit-msg').dataset.error ?? ''")
}

/// Fills the card's edit form with `key = value` and submits it with the apply button.
fn submit(key: &str, value: &str) -> String {
    in_card(&format!(
        "(card.querySelector('details.edit').open = true, \
          card.querySelector('select[data-edit=\"key\"]').value = '{key}', \
          card.querySelector('input[data-edit=\"value\"]').value = '{value}', \
          card.querySelector('button[data-edit=\"apply\"]').click(), 'sent')"
    ))
}

/// Waits until the page has polled once more after now (its "updated" time moves; it shows
/// seconds and the page polls every 2 s).
fn one_more_poll(browser: &mut cdp::Browser) {
    const UPDATED: &str = "document.getElementById('s-updated').textContent";
    let before = browser.eval(UPDATED).as_str().unwrap_or_default().to_owned();
    browser.poll(UPDATED, |t| t != before);
}

fn permits(registry: &Registry) -> u32 {
    registry.rate_limiter(ID).unwrap().snapshot().config.permits
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_changes_a_limit_from_the_page() {
    if !cdp::available() {
        return;
    }
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let _calls: Pipeline<u32, std::io::Error> = Pipeline::builder(&registry, ID)
        .rate_limiter_with(|r| r.permits(1000).period(Duration::from_secs(1)))
        .build()
        .unwrap();
    let admin = serve("127.0.0.1:0", registry.clone(), AdminOptions::new().token(TOKEN)).await.unwrap();
    let url = admin.url();
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard-config-edit.png");

    let browser = tokio::task::spawn_blocking({
        let registry = registry.clone();
        let shot = shot.clone();
        move || {
            let mut browser = cdp::Browser::launch();
            browser.navigate(&url);
            browser.poll(&permits_figure(), |p| p == "1000");
            assert_eq!(browser.eval(&changed_line()), "", "no change yet: no changed line");
            browser.poll("document.getElementById('conn').textContent", |c| c == "live");

            // Without the token typed in, nothing is sent.
            browser.eval(&submit("permits", "5"));
            browser.poll(&edit_message(), |m| m.contains("token first"));
            assert_eq!(permits(&registry), 1000);

            // With it: the limit changes, the card shows it and when it changed.
            browser.eval(&format!("document.getElementById('token').value = '{TOKEN}'"));
            browser.eval(&submit("permits", "5"));
            browser.poll(&edit_message(), |m| m.starts_with("applied"));
            assert_eq!(permits(&registry), 5, "the page changed the registry");
            browser.poll(&permits_figure(), |p| p == "5");
            let changed = browser.poll(&changed_line(), |t| t.starts_with("config changed "));
            let first_change = browser.eval(&in_card("card.dataset.changed"));
            browser.screenshot(&shot);

            // A bad value: the coded error, and nothing changes.
            browser.eval(&submit("permits", "lots"));
            let message = browser.poll(&edit_message(), |m| m.contains("R4C-"));
            assert!(message.starts_with("[R4C-CFG-003]") && message.contains("permits"), "{message}");
            assert_eq!(browser.eval(&edit_error()), "R4C-CFG-003");
            one_more_poll(&mut browser);
            assert_eq!(permits(&registry), 5);
            assert_eq!(browser.eval(&permits_figure()), "5");
            assert_eq!(browser.eval(&in_card("card.dataset.changed")), first_change, "a refused update is no change");

            // A change the application makes itself shows too, with a later time.
            registry.update_toml(&format!("[instances.\"{ID}\".rate_limiter]\npermits = 7\n")).unwrap();
            browser.poll(&permits_figure(), |p| p == "7");
            browser.poll(&in_card("card.dataset.changed"), |t| {
                t.parse::<u64>().unwrap_or(0) > first_change.as_str().unwrap().parse::<u64>().unwrap()
            });
            println!("{changed}; bad value: {message}; screenshot: {}", shot.display());
            browser
        }
    })
    .await
    .unwrap();
    println!("browser errors: {:?}", browser.errors);
    // The only errors: the browser's own log lines for the 400 answers (the page shows them).
    let other: Vec<_> = browser.errors.iter().filter(|e| !e.contains("status of 400")).collect();
    assert_eq!(other, Vec::<&String>::new());
}

/// Without a token the admin has no write routes: no edit form either. The read-only page still
/// shows changes made elsewhere: a watched file's new limit with its time on the card, and a
/// refused file in the header with its code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_page_has_no_form_and_shows_a_watched_file() {
    if !cdp::available() {
        return;
    }
    let registry = Registry::builder().build().unwrap();
    let _calls: Pipeline<u32, std::io::Error> = Pipeline::builder(&registry, ID).rate_limiter().build().unwrap();
    let admin = serve("127.0.0.1:0", registry.clone(), AdminOptions::new()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.toml");
    std::fs::write(&path, "").unwrap();
    let _watch = registry.watch_file_every(&path, Duration::from_millis(20)).unwrap();
    let url = admin.url();
    const REFUSED: &str =
        "(() => { const r = document.getElementById('cfg-rejected'); return r.hidden ? '' : r.textContent; })()";
    let (forms, refused) = tokio::task::spawn_blocking(move || {
        let mut browser = cdp::Browser::launch();
        browser.navigate(&url);
        browser.poll(&permits_figure(), |p| p == "50");
        one_more_poll(&mut browser);
        let forms = browser.eval("String(document.querySelectorAll('details.edit').length)");
        assert_eq!(browser.eval(REFUSED), "", "nothing refused yet");
        replace(&path, &format!("[instances.\"{ID}\".rate_limiter]\npermits = 9\n"));
        browser.poll(&permits_figure(), |p| p == "9");
        browser.poll(&changed_line(), |t| t.starts_with("config changed "));
        replace(&path, "[defaults.retry]\nmax_attempts = 0\n");
        let refused = browser.poll(REFUSED, |t| !t.is_empty());
        assert_eq!(browser.eval(&permits_figure()), "9", "the refused file changed nothing");
        assert_eq!(browser.errors, Vec::<String>::new());
        (forms, refused)
    })
    .await
    .unwrap();
    assert_eq!(forms, "0");
    assert!(refused.starts_with("config refused at ") && refused.contains("[R4C-CFG-004]"), "{refused}");
    assert!(refused.contains("live.toml:2"), "{refused}");
}

/// Writes `text` beside `path` and renames it over `path`: a polling watcher never reads it half-written.
fn replace(path: &Path, text: &str) {
    let next = path.with_extension("next");
    std::fs::write(&next, text).unwrap();
    std::fs::rename(&next, path).unwrap();
}
