//! The demo's script, without a browser: at 0.2× time (12 s) it must tell its whole story (its
//! own checks: tenant-a's adaptive limit falls and rises, its breaker opens and closes, the
//! fallback answers from the cache, tenant-b is never refused), and each tenant must have its own
//! instance of every policy in the registry.

use std::sync::Arc;

use resilience4cata_examples::demo::{Demo, DemoOptions, Narrator, TENANTS, price_id};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_tells_its_story_with_one_instance_per_tenant() {
    let narrate: Narrator = Arc::new(|line| println!("{line}"));
    let options = DemoOptions { time_scale: 0.2, admin_addr: "127.0.0.1:0".into(), ..DemoOptions::default() };
    let demo = Demo::start(options, Arc::clone(&narrate)).await.unwrap();
    let story = demo.run_script(&narrate).await;
    println!("{}", story.summary());
    let failed: Vec<_> = story.checks().into_iter().filter(|c| !c.passed).collect();
    assert!(failed.is_empty(), "the demo's story did not happen: {failed:#?}");

    let snapshot = demo.registry().snapshot();
    let ids = |list: Vec<&str>| {
        let mut list: Vec<String> = list.into_iter().map(str::to_owned).collect();
        list.sort();
        list
    };
    let expected: Vec<String> = TENANTS.iter().map(|t| price_id(t)).collect();
    assert_eq!(ids(snapshot.retries().iter().map(|s| &*s.instance).collect()), expected);
    assert_eq!(ids(snapshot.circuit_breakers().iter().map(|s| &*s.instance).collect()), expected);
    assert_eq!(ids(snapshot.adaptive_limits().iter().map(|s| &*s.instance).collect()), expected);
    assert_eq!(ids(snapshot.bulkheads().iter().map(|s| &*s.instance).collect()), expected);
    assert_eq!(ids(snapshot.timeouts().iter().map(|s| &*s.instance).collect()), expected);
}
