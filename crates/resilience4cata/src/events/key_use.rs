//! One key of a keyed instance (SPEC §15) as its publisher and its table slot share it: the key's
//! text, which its events carry, and whether the policy refused the call now holding it, so that
//! a refused call is not counted as a use of the key (the instance's snapshot shows its most
//! recently *served* key).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// A key's text, its serial in its table, and the refusal mark of its current call.
#[derive(Debug)]
pub(crate) struct KeyUse {
    text: Arc<str>,
    /// Unique in its table, never 0 (0 is "no key served yet").
    serial: u64,
    /// Set by the policy's refusal path (cold), read and cleared when the call's hold ends.
    refused: AtomicBool,
}

impl KeyUse {
    pub(crate) fn new(text: Arc<str>, serial: u64) -> Self {
        KeyUse { text, serial, refused: AtomicBool::new(false) }
    }

    /// The key's `Debug` text (at most 256 bytes and `…`).
    pub(crate) fn text(&self) -> &Arc<str> {
        &self.text
    }

    /// The key's serial in its table.
    pub(crate) fn serial(&self) -> u64 {
        self.serial
    }

    /// The policy refused the call on this key (the limiter had no permit, the breaker was open,
    /// the bulkhead or the adaptive limit was full).
    #[cold]
    pub(crate) fn refuse(&self) {
        self.refused.store(true, Relaxed);
    }

    /// The call's hold on the key ends: whether the policy refused it (the mark is cleared).
    #[inline]
    pub(crate) fn take_refusal(&self) -> bool {
        let refused = self.refused.load(Relaxed);
        if refused {
            self.refused.store(false, Relaxed);
        }
        refused
    }

    /// A served call on this key ends: it becomes its table's most recently served (`served`, a
    /// store only when it changes, so a key called again and again writes nothing shared).
    #[inline]
    pub(crate) fn served(&self, served: &AtomicU64) {
        if served.load(Relaxed) != self.serial {
            served.store(self.serial, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_call_leaves_the_last_served_key_in_place() {
        let served = AtomicU64::new(0);
        let end = |key: &KeyUse| {
            if !key.take_refusal() {
                key.served(&served);
            }
        };
        let a = KeyUse::new("\"a\"".into(), 1);
        let b = KeyUse::new("\"b\"".into(), 2);
        end(&b);
        assert_eq!(served.load(Relaxed), 2);
        a.refuse();
        end(&a);
        assert_eq!(served.load(Relaxed), 2, "a's refused call is not a use");
        end(&a);
        assert_eq!(served.load(Relaxed), 1, "the mark lasts one call: a's next call is served");
    }
}
