//! Fault injection (SPEC §17): whether the expansion has injection points, which the runtime's
//! feature `chaos` decides by turning on this crate's feature of the same name. Off, nothing of
//! chaos is emitted, so the expansion is token for token what it was before chaos existed.

#[cfg(test)]
thread_local! {
    /// A test's choice, over the feature.
    static FORCED: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// Whether protected methods get an injection point.
pub(crate) fn on() -> bool {
    #[cfg(test)]
    if let Some(forced) = FORCED.with(std::cell::Cell::get) {
        return forced;
    }
    cfg!(feature = "chaos")
}

/// Runs `f` with the injection points on or off, whatever the feature.
#[cfg(test)]
pub(crate) fn with<R>(chaos: bool, f: impl FnOnce() -> R) -> R {
    FORCED.with(|c| c.set(Some(chaos)));
    let out = f();
    FORCED.with(|c| c.set(None));
    out
}
