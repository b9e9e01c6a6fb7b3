//! The delegate called directly: what every other case is compared with.

use crate::{consume, exec, opaque, work};

/// `work(x)`, a plain `#[inline(never)]` call.
pub fn direct() -> impl FnMut() {
    || {
        consume(work(opaque(1)));
    }
}

/// `async { work(x) }` polled once.
pub fn direct_async() -> impl FnMut() {
    || {
        consume(exec::poll_now(async { work(opaque(1)) }));
    }
}
