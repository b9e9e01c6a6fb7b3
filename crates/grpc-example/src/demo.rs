//! The scenario of `cargo run -p resilience4cata-grpc-example --example grpc`, also run by the
//! tests: a client behind the layers against a scripted server, every outcome checked.

use std::time::Duration;

use crate::proto::StockRequest;
use crate::proto::inventory_client::InventoryClient;
use crate::server::{Answer, ScriptedInventory};
use crate::{GrpcError, GrpcResponse, ResilientChannel, resilient_channel, with_grpc_rules};
use resilience4cata::circuit_breaker::{CircuitBreakerEvent, State};
use resilience4cata::{Jitter, Pipeline, Registry, RetryEvent};
use tonic::Code;
use tonic::transport::Endpoint;

/// The scenario's result: `Err` names the first outcome that was not as expected.
pub type Outcome = Result<(), Box<dyn std::error::Error>>;

/// The deadline of each attempt: the pipeline's timeout, announced in `grpc-timeout`.
const DEADLINE: Duration = Duration::from_millis(300);

fn check(what: &str, ok: bool) -> Outcome {
    println!("  {} {what}", if ok { "ok  " } else { "FAIL" });
    if ok { Ok(()) } else { Err(format!("not as expected: {what}").into()) }
}

/// The client stack: the generated client over the pipeline's layer over a tonic channel.
fn client(registry: &Registry, url: String) -> Result<InventoryClient<ResilientChannel>, Box<dyn std::error::Error>> {
    let pipeline = Pipeline::builder(registry, "inventory")
        .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(50)).jitter(Jitter::None))
        .circuit_breaker_with(|c| c.window_size(5).minimum_calls(5).wait_in_open(Duration::from_secs(30)))
        .timeout_with(|t| t.duration(DEADLINE))
        .build::<GrpcResponse, GrpcError>()?;
    let channel = Endpoint::from_shared(url)?.connect_lazy();
    Ok(InventoryClient::new(resilient_channel(channel, &with_grpc_rules(pipeline), Some(DEADLINE))))
}

async fn stock(client: &mut InventoryClient<ResilientChannel>, sku: &str) -> Result<u32, tonic::Status> {
    let reply = client.stock(StockRequest { sku: sku.to_owned() }).await?;
    Ok(reply.into_inner().units)
}

/// Runs the scenario against a fresh server on loopback, printing each step and event.
pub async fn run() -> Outcome {
    // Calls 1-2: UNAVAILABLE then OK; call 3: INVALID_ARGUMENT; call 4: hangs; 5 on: UNAVAILABLE.
    let inventory = ScriptedInventory::new(|n| match n {
        1 => Answer::Fail(Code::Unavailable),
        2 => Answer::Units(7),
        3 => Answer::Fail(Code::InvalidArgument),
        4 => Answer::Hang,
        _ => Answer::Fail(Code::Unavailable),
    });
    let running = inventory.serve().await?;
    println!("scripted inventory server on {}", running.addr());
    let registry = Registry::builder()
        .listen(|e: &RetryEvent| println!("    event: {e:?}"))
        .listen(|e: &CircuitBreakerEvent| println!("    event: {e:?}"))
        .build()?;
    let mut client = client(&registry, running.url())?;

    println!("1. the server is UNAVAILABLE once: the layer retries");
    let units = stock(&mut client, "sku-1").await;
    check("7 units on the second attempt", units.as_ref().ok() == Some(&7) && inventory.calls() == 2)?;

    println!("2. INVALID_ARGUMENT cannot pass next time: not retried");
    let status = stock(&mut client, "").await.expect_err("the script answers INVALID_ARGUMENT");
    check("INVALID_ARGUMENT after one call", status.code() == Code::InvalidArgument && inventory.calls() == 3)?;

    println!("3. a handler that hangs is cut at the {DEADLINE:?} deadline, which the server was told");
    let status = stock(&mut client, "sku-1").await.expect_err("the handler never answers");
    let told = inventory.deadlines().last().cloned().flatten();
    check(
        "DEADLINE_EXCEEDED after one call, grpc-timeout: 300m",
        status.code() == Code::DeadlineExceeded && inventory.calls() == 4 && told.as_deref() == Some("300m"),
    )?;

    println!("4. UNAVAILABLE from now on: the breaker opens, and an open breaker sends nothing");
    // Recorded so far: UNAVAILABLE, OK, INVALID_ARGUMENT (a success: the server is fine), the
    // timeout. This call's first attempt is the fifth: 3 failures of 5 open the breaker, and
    // its retry is refused (a refusal is never retried).
    let status = stock(&mut client, "sku-1").await.expect_err("the server is down");
    let breaker = registry.circuit_breaker("inventory").ok_or("no breaker")?;
    check(
        "UNAVAILABLE after one more server call, and the breaker is open",
        status.code() == Code::Unavailable && inventory.calls() == 5 && breaker.state() == State::Open,
    )?;
    let sent = inventory.calls();
    let refused = stock(&mut client, "sku-1").await.expect_err("the breaker is open");
    check(
        "the next call is refused with UNAVAILABLE without reaching the server",
        refused.code() == Code::Unavailable && inventory.calls() == sent,
    )?;
    println!("every outcome as expected ({} calls reached the server)", inventory.calls());
    Ok(())
}
