//! The hosts a middleware has met, each with its own instances, created on first use and kept
//! for the registry's life (a registry never forgets an instance), so their number is capped.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use reqwest::Url;
use resilience4cata::{Registry, RegistryError};

use crate::chain::{HostChains, Recipe};

/// The host part of an instance id: `host`, or `host:port` when the URL names a port other than
/// its scheme's default (two servers on one machine are two hosts).
pub(crate) fn host_of(url: &Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => String::new(),
    }
}

/// The instance id used for the hosts beyond the cap: `<name>/*`.
pub(crate) const OVERFLOW: &str = "*";

/// Every host met so far, by host text, and the shared chains of the hosts beyond `max_hosts`.
#[derive(Debug)]
pub(crate) struct Hosts {
    registry: Registry,
    name: String,
    recipe: Recipe,
    max_hosts: usize,
    known: RwLock<HashMap<String, Arc<HostChains>>>,
}

impl Hosts {
    pub(crate) fn new(registry: Registry, name: String, recipe: Recipe, max_hosts: usize) -> Self {
        Hosts { registry, name, recipe, max_hosts, known: RwLock::default() }
    }

    /// The chains of `host`, built on first use. Beyond `max_hosts` distinct hosts, every new
    /// host shares the chains of `<name>/*`. A known host costs one read lock.
    pub(crate) fn get(&self, host: &str) -> Result<Arc<HostChains>, RegistryError> {
        if let Some(found) = self.lookup(&self.known.read().unwrap_or_else(PoisonError::into_inner), host) {
            return Ok(found);
        }
        let mut known = self.known.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = self.lookup(&known, host) {
            return Ok(found);
        }
        let key = if self.full(&known) { OVERFLOW } else { host };
        let chains = Arc::new(HostChains::build(&self.registry, &format!("{}/{key}", self.name), &self.recipe)?);
        known.insert(key.to_owned(), Arc::clone(&chains));
        Ok(chains)
    }

    /// `host`'s chains if it has its own, the shared ones if it arrives past the cap and they
    /// exist already.
    fn lookup(&self, known: &HashMap<String, Arc<HostChains>>, host: &str) -> Option<Arc<HostChains>> {
        let found = known.get(host).or_else(|| known.get(OVERFLOW).filter(|_| self.full(known)));
        found.map(Arc::clone)
    }

    /// Whether `max_hosts` hosts have their own chains.
    fn full(&self, known: &HashMap<String, Arc<HostChains>>) -> bool {
        known.len() - usize::from(known.contains_key(OVERFLOW)) >= self.max_hosts
    }

    /// The instance ids made so far, sorted.
    pub(crate) fn ids(&self) -> Vec<Arc<str>> {
        let known = self.known.read().unwrap_or_else(PoisonError::into_inner);
        let mut ids: Vec<Arc<str>> = known.values().map(|c| Arc::clone(&c.id)).collect();
        ids.sort();
        ids
    }
}
