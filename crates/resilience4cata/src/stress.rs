//! The async stress harness the bulkhead and adaptive limit tests share.

use std::future::Future;
use std::sync::Arc;

/// Six async tasks on a two-thread runtime, 300 calls each: `call(task, i)` makes one call and
/// answers whether it passed (`false`: refused). Returns the totals `(passed, refused)`.
pub(crate) fn stress_async<F, Fut>(call: F) -> (u32, u32)
where
    F: Fn(u32, u32) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send + 'static,
{
    let call = Arc::new(call);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..6u32)
            .map(|t| {
                let call = Arc::clone(&call);
                tokio::spawn(async move {
                    let (mut passed, mut refused) = (0u32, 0u32);
                    for i in 0..300u32 {
                        match call(t, i).await {
                            true => passed += 1,
                            false => refused += 1,
                        }
                    }
                    (passed, refused)
                })
            })
            .collect();
        let mut totals = (0, 0);
        for task in tasks {
            let (p, r) = task.await.unwrap();
            totals = (totals.0 + p, totals.1 + r);
        }
        totals
    })
}
