//! The dashboard's chaos card (runtime feature `chaos`, SPEC §17), in a real browser: an injection
//! point's counts, and its switch, which sends `PUT /config` with `[instances."<id>".chaos]
//! enabled = true|false` under the token typed in the page; the registry injects (or stops) from
//! the next call on and the card follows.
//!
//! Without Chromium (`apt-get install chromium`) the test is skipped with a printed reason, unless
//! `R4C_REQUIRE_EXTERNAL=1` (set by `.ci/test`), which makes it fail instead.

// The examples' small DevTools client (launch, navigate, eval, console errors), shared as it is.
#[allow(dead_code)]
#[path = "../../examples/tests/cdp/mod.rs"]
mod cdp;

use std::time::Duration;

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Registry};
use resilience4cata_admin::{AdminOptions, serve};

const ID: &str = "shop::Api::stock";
const TOKEN: &str = "typed-by-the-operator";

/// `expression` evaluated inside the chaos card (`card` is the element), as text.
fn in_card(expression: &str) -> String {
    format!(
        "(() => {{ const card = document.querySelector('article[data-policy=\"chaos\"][data-instance=\"{ID}\"]'); \
         return card ? String({expression}) : ''; }})()"
    )
}

fn figure(name: &str) -> String {
    in_card(&format!("card.querySelector('[data-fig=\"{name}\"] .v')?.firstChild?.textContent ?? ''"))
}

fn enabled(registry: &Registry) -> bool {
    registry.snapshot().chaos().iter().find(|c| &*c.instance == ID).unwrap().config.enabled
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_card_counts_and_switches_injection_on_and_off() {
    if !cdp::available() {
        return;
    }
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .chaos_instance(ID, |c| c.latency_rate(1.0).latency(Duration::from_millis(40)))
        .build()
        .unwrap();
    let calls: Pipeline<u32, std::io::Error> = Pipeline::builder(&registry, ID).retry().build().unwrap();
    let admin = serve("127.0.0.1:0", registry.clone(), AdminOptions::new().token(TOKEN)).await.unwrap();
    let url = admin.url();
    tokio::task::spawn_blocking(move || {
        let mut browser = cdp::Browser::launch();
        browser.navigate(&url);
        browser.poll(&in_card("card.querySelector('.badge').textContent"), |b| b == "off");
        assert_eq!(browser.eval(&figure("delays")), "0");
        let switch = in_card("card.querySelector('button[data-chaos=\"switch\"]').textContent");
        browser.poll(&switch, |t| t == "switch on");

        // The switch needs the token typed in the page.
        browser.eval(&in_card("(card.querySelector('button[data-chaos=\"switch\"]').click(), 'sent')"));
        browser.poll(&in_card("card.querySelector('.note').textContent"), |n| n.contains("token first"));
        assert!(!enabled(&registry));

        browser.eval(&format!("document.getElementById('token').value = '{TOKEN}'"));
        browser.eval(&in_card("(card.querySelector('button[data-chaos=\"switch\"]').click(), 'sent')"));
        browser.poll(&in_card("card.querySelector('.badge').textContent"), |b| b == "injecting");
        assert!(enabled(&registry), "the page switched chaos on");
        assert_eq!(calls.execute(|| Ok(1)).unwrap(), 1);
        assert_eq!(clock.elapsed(), Duration::from_millis(40), "the call was delayed on the registry's clock");
        browser.poll(&figure("delays"), |d| d == "1");
        browser.poll(&switch, |t| t == "switch off");

        browser.eval(&in_card("(card.querySelector('button[data-chaos=\"switch\"]').click(), 'sent')"));
        browser.poll(&in_card("card.querySelector('.badge').textContent"), |b| b == "off");
        assert!(!enabled(&registry), "the page switched chaos off");
        assert_eq!(calls.execute(|| Ok(2)).unwrap(), 2);
        assert_eq!(clock.elapsed(), Duration::from_millis(40), "no delay once off");
        assert_eq!(browser.errors, Vec::<String>::new());
    })
    .await
    .unwrap();
}
