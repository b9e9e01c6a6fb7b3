//! The per-policy kit: what a policy folder declares itself with. Its layered configuration builder
//! ([`Layer`], [`layered_builder!`]), its kind ([`PolicyKind`], [`policy_kind!`]) and handle
//! ([`policy_handle!`]), and the build context it reads ([`Inner`]); and keyed instances (SPEC §15): `keyed.rs`, the
//! table of one keyed instance's keys, and `keyed_core.rs`, the instance around it ([`KeyedCore`]). The registry composes the
//! policies from these; a policy never imports the registry.

mod handle;
mod keyed;
mod keyed_core;
mod kind;
mod layer;
#[cfg(all(test, loom))]
mod loom;

pub(crate) use handle::policy_handle;
pub use keyed::KeyRef;
pub(crate) use keyed::{AtRest, KeyCounts};
pub(crate) use keyed_core::{KeyedCore, KeyedKind, KeyedView};
pub(crate) use kind::{ConfigOf, Fixed, Inner, PolicyKind, no_shared_store, policy_kind};
pub(crate) use layer::{KeyProblem, Layer, layered_builder};
