//! The keyed instances of one policy kind (SPEC §15), by id: beside the instance registered under
//! the same id, so a live update, a snapshot and a handle reach every key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{RegistryError, codes};
use crate::kit::{KeyedView, PolicyKind};

/// One policy kind's keyed instances.
pub(crate) struct Keys<P: PolicyKind> {
    map: Mutex<HashMap<Arc<str>, Arc<dyn KeyedView<P>>>>,
}

impl<P: PolicyKind> Default for Keys<P> {
    fn default() -> Self {
        Keys { map: Mutex::new(HashMap::new()) }
    }
}

impl<P: PolicyKind> Keys<P> {
    /// The keyed instance `id`, if one was built.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<dyn KeyedView<P>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// Keeps `view` as the keyed instance `id`, or returns the one another site kept first.
    pub(crate) fn insert(&self, id: Arc<str>, view: Arc<dyn KeyedView<P>>) -> Arc<dyn KeyedView<P>> {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(map.entry(id).or_insert(view))
    }
}

/// `R4C-REG-008`: one id keyed at one site and unkeyed at another.
pub(crate) fn keyed_and_unkeyed(policy: &str, id: &str, keyed_here: bool) -> RegistryError {
    let (here, there) =
        if keyed_here { ("keyed (`key = …`)", "unkeyed") } else { ("unkeyed", "keyed (`key = …`)") };
    RegistryError::new(
        codes::CONFLICTING_INSTANCE,
        Some(id),
        format!(
            "this {policy} instance is {here} here but {there} where it was first built: one id is one \
             instance, with one key per call or none; give both users the same `key`, or different names"
        ),
    )
}
