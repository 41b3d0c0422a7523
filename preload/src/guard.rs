//! When the interposer steps aside: `HCOMM_DISABLE=1`, and re-entry from the host MPI.
//!
//! The host MPI may call the user-level `MPI_X` symbols itself (ROMIO does in some builds), and
//! with the preload those calls land here again. A thread-local flag marks "inside an hcomm
//! entry point"; a call that finds it set goes straight to the host's `PMPI_X`, uncounted and
//! untranslated. The flag is a `const`-initialised `Cell`: no lazy TLS setup, no destructor.

use std::cell::Cell;

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// `HCOMM_DISABLE=1`: every intercepted call is forwarded untouched, nothing is counted or
/// printed.
pub fn disabled() -> bool {
    hcomm_core::param::disable()
}

/// `HCOMM_STATS=1`: print the `hcomm-stats` line at `MPI_Finalize`.
pub fn stats_enabled() -> bool {
    hcomm_core::param::stats()
}

/// True when this call must go straight to the host: hcomm is disabled, or this thread is
/// already inside an hcomm entry point (the host MPI calling back).
#[inline]
pub fn passthrough() -> bool {
    INSIDE.with(Cell::get) || disabled()
}

/// Marks this thread as inside hcomm until the returned value is dropped.
#[must_use]
pub fn enter() -> Inside {
    INSIDE.with(|c| c.set(true));
    Inside(())
}

/// Clears the re-entry flag on drop (also when unwinding).
pub struct Inside(());

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|c| c.set(false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truthy_values() {
        use hcomm_core::param::truthy;
        assert!(truthy("1") && truthy("TRUE") && truthy(" yes ") && truthy("on"));
        assert!(!truthy("0") && !truthy("") && !truthy("no"));
    }

    #[test]
    fn reentry_flag_is_scoped() {
        assert!(!INSIDE.with(Cell::get));
        {
            let _g = enter();
            assert!(passthrough());
        }
        assert!(!INSIDE.with(Cell::get));
    }
}
