//! The per-policy kit: what a policy folder declares itself with. Its layered configuration builder
//! ([`Layer`], [`layered_builder!`]), its kind ([`PolicyKind`], [`policy_kind!`]) and handle
//! ([`policy_handle!`]), and the build context it reads ([`Inner`]). The registry composes the
//! policies from these; a policy never imports the registry.

mod keyed;
mod keyed_core;
mod kind;
mod layer;

pub use keyed::KeyRef;
pub(crate) use keyed::{AtRest, KeyCounts};
pub(crate) use keyed_core::{KeyedCore, KeyedKind, KeyedView};
pub(crate) use kind::{ConfigOf, Fixed, Inner, PolicyKind, no_shared_store, policy_handle, policy_kind};
pub(crate) use layer::{KeyProblem, Layer, layered_builder};
