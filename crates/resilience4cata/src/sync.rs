//! The synchronisation primitives of the lock-free state machines: std's, or loom's when the crate
//! is built for model checking (`RUSTFLAGS="--cfg loom"`), so the same code runs under every
//! interleaving loom explores (see `docs/reliability.md`). loom is a dev-dependency: only the
//! crate's own unit tests are built on it.

#[cfg(all(test, loom))]
pub(crate) use loom::sync::{Mutex, MutexGuard, atomic};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::{Mutex, MutexGuard, atomic};
