//! The live demo: a real HTTP dependency that turns slow, then fails, then recovers, called
//! through a `#[resilient]` trait, with the admin dashboard showing the policies react.
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
        demo.run_script(&narrate).await;
        if !forever {
            break;
        }
        println!("-- again (--forever); Ctrl-C stops");
    }
    println!("done: the script is over. `--forever` keeps it running.");
    Ok(())
}
