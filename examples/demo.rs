//! The live demo: a real HTTP dependency whose shard for one tenant turns slow, then fails, then
//! recovers, called by two tenants' clients through one `#[resilient]` trait (fallback, retry,
//! breaker, adaptive limit, timeout, bulkhead), each tenant in its own scope, with the admin
//! dashboard showing the policies react. It ends with a summary and checks its own story: it
//! exits 1 when the story did not happen (a breaker that never opened, a tenant refused for the
//! other's trouble, ...).
//!
//! ```sh
//! cargo run --example demo                       # the one-minute script, then it stops
//! cargo run --example demo -- --forever          # the script again and again
//! cargo run --example demo -- --time-scale 0.2   # the same script in 12 s
//! ```
//! Open the URL it prints: the dashboard is served on loopback only.

use std::sync::Arc;

use resilience4cata_examples::demo::{Demo, DemoOptions, Narrator};

fn usage() -> ! {
    eprintln!("usage: demo [--forever] [--time-scale FACTOR] [--addr HOST:PORT]");
    std::process::exit(2);
}

fn parse_args() -> (DemoOptions, bool) {
    let mut options = DemoOptions::default();
    let mut forever = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--forever" => forever = true,
            "--time-scale" => {
                options.time_scale =
                    args.next().and_then(|v| v.parse().ok()).filter(|f: &f64| *f > 0.0).unwrap_or_else(|| usage())
            }
            "--addr" => options.admin_addr = args.next().unwrap_or_else(|| usage()),
            _ => usage(),
        }
    }
    (options, forever)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let (options, forever) = parse_args();
    let narrate: Narrator = Arc::new(|line| println!("{line}"));
    let demo = Demo::start(options, Arc::clone(&narrate)).await?;
    println!("dashboard: {}  (open it now: the script starts in 3 s)", demo.dashboard_url());
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    loop {
        let story = demo.run_script(&narrate).await;
        println!("== summary\n{}", story.summary());
        if !story.passed() {
            eprintln!("the story did not happen: see the FAIL lines above");
            std::process::exit(1);
        }
        if !forever {
            break;
        }
        println!("-- again (--forever); Ctrl-C stops");
    }
    println!("done: the script is over and told its story. `--forever` keeps it running.");
    Ok(())
}
