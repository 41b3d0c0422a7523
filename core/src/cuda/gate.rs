//! When hcomm touches CUDA at all.
//!
//! `HCOMM_CUDA=0`: never. `=1`: at the first question (a collective that looks at its
//! buffers, `MPIX_Query_cuda_support`). Unset (auto): once the process has `libcuda.so.1`
//! loaded — a program that uses CUDA has loaded it before it can own a device buffer, so until
//! then every buffer is host memory and nothing of CUDA is touched: no `cuInit`, no context on
//! GPU 0, nothing that would break a later `fork`.
//!
//! The question is asked on every collective, so the negative answer must be cheap: the
//! `dlopen(RTLD_NOLOAD)` probe runs again only when the dynamic loader's count of objects ever
//! added (`dlpi_adds`, read through `dl_iterate_phdr` with a callback that stops at the first
//! object) has changed since the last probe. A positive or final answer is one atomic load.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// `HCOMM_CUDA`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Off,
    On,
    Auto,
}

impl Mode {
    /// Parses `HCOMM_CUDA` (unset: auto). An unknown value is `Err` with the text to warn.
    pub fn parse(v: Option<&str>) -> Result<Mode, String> {
        let Some(v) = v else { return Ok(Mode::Auto) };
        match v.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(Mode::Auto),
            "0" | "off" | "no" | "false" => Ok(Mode::Off),
            "1" | "on" | "yes" | "true" => Ok(Mode::On),
            other => Err(format!(
                "HCOMM_CUDA={other} is not 0, 1 or auto; using auto"
            )),
        }
    }
}

const UNDECIDED: u8 = 0;
const ACTIVE: u8 = 1;
/// Off, or the first touch failed: final.
const INACTIVE: u8 = 2;

/// The decision, kept in atomics so that the common answers cost one load.
pub(crate) struct Gate {
    state: AtomicU8,
    /// `dlpi_adds` at the last negative probe (`u64::MAX`: never probed).
    adds_seen: AtomicU64,
}

impl Gate {
    pub(crate) const fn new() -> Gate {
        Gate {
            state: AtomicU8::new(UNDECIDED),
            adds_seen: AtomicU64::new(u64::MAX),
        }
    }

    /// Whether CUDA is active. `adds`: the loader's object count now; `loaded`: whether
    /// libcuda is loaded; `init`: the first touch (true when CUDA works). Each probe is
    /// called only when the mode and the state need it; `init` decides for good.
    #[inline]
    pub(crate) fn query(
        &self,
        mode: impl FnOnce() -> Mode,
        adds: impl FnOnce() -> u64,
        loaded: impl FnOnce() -> bool,
        init: impl FnOnce() -> bool,
    ) -> bool {
        match self.state.load(Ordering::Acquire) {
            ACTIVE => true,
            INACTIVE => false,
            _ => self.undecided(mode(), adds, loaded, init),
        }
    }

    #[inline(never)]
    fn undecided(
        &self,
        mode: Mode,
        adds: impl FnOnce() -> u64,
        loaded: impl FnOnce() -> bool,
        init: impl FnOnce() -> bool,
    ) -> bool {
        match mode {
            Mode::Off => {
                self.state.store(INACTIVE, Ordering::Release);
                false
            }
            Mode::On => self.decide(init()),
            Mode::Auto => {
                let now = adds();
                if now == self.adds_seen.load(Ordering::Relaxed) {
                    return false;
                }
                if loaded() {
                    return self.decide(init());
                }
                // Read before the probe: a library loaded meanwhile changes the count, and
                // the next query probes again.
                self.adds_seen.store(now, Ordering::Relaxed);
                false
            }
        }
    }

    fn decide(&self, ok: bool) -> bool {
        self.state
            .store(if ok { ACTIVE } else { INACTIVE }, Ordering::Release);
        ok
    }
}

/// The dynamic loader's count of objects ever loaded (`dlpi_adds`).
pub(crate) fn loader_adds() -> u64 {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        size: usize,
        data: *mut std::ffi::c_void,
    ) -> std::ffi::c_int {
        let need = std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs);
        // SAFETY: the loader passes a valid `info` of `size` bytes; `dlpi_adds` is read only
        // when the struct is large enough to hold it; `data` is the u64 passed below.
        unsafe {
            *data.cast::<u64>() = if size >= need {
                (*info).dlpi_adds
            } else {
                // A loader without the field: make every query probe (correct, slower).
                NO_COUNTER.fetch_add(1, Ordering::Relaxed)
            };
        }
        1 // stop after the first object
    }
    static NO_COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut adds = 0u64;
    // SAFETY: `first` matches the callback type and writes only the u64 it is given.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut adds as *mut u64).cast()) };
    adds
}

/// Whether `libcuda.so.1` is loaded in this process (never loads it).
pub(crate) fn libcuda_loaded() -> bool {
    // SAFETY: a NUL-terminated name; RTLD_NOLOAD only returns a handle to an already loaded
    // object (with its reference count raised, dropped right away).
    unsafe {
        let h = libc::dlopen(
            c"libcuda.so.1".as_ptr(),
            libc::RTLD_NOLOAD | libc::RTLD_LAZY,
        );
        if h.is_null() {
            return false;
        }
        libc::dlclose(h);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Runs one query against scripted probes and counts what was called.
    struct Probe {
        adds: Cell<u64>,
        loaded: Cell<bool>,
        works: bool,
        probes: Cell<u32>,
        inits: Cell<u32>,
    }

    impl Probe {
        fn new(works: bool) -> Probe {
            Probe {
                adds: Cell::new(5),
                loaded: Cell::new(false),
                works,
                probes: Cell::new(0),
                inits: Cell::new(0),
            }
        }
        fn ask(&self, g: &Gate, mode: Mode) -> bool {
            g.query(
                || mode,
                || self.adds.get(),
                || {
                    self.probes.set(self.probes.get() + 1);
                    self.loaded.get()
                },
                || {
                    self.inits.set(self.inits.get() + 1);
                    self.works
                },
            )
        }
    }

    #[test]
    fn off_never_probes_nor_inits() {
        let (g, p) = (Gate::new(), Probe::new(true));
        p.loaded.set(true);
        for _ in 0..3 {
            assert!(!p.ask(&g, Mode::Off));
        }
        assert_eq!((p.probes.get(), p.inits.get()), (0, 0));
    }

    #[test]
    fn on_inits_once_and_keeps_the_answer() {
        let (g, p) = (Gate::new(), Probe::new(true));
        assert!(p.ask(&g, Mode::On));
        assert!(p.ask(&g, Mode::On));
        assert_eq!((p.probes.get(), p.inits.get()), (0, 1));
        let (g, p) = (Gate::new(), Probe::new(false));
        assert!(!p.ask(&g, Mode::On));
        assert!(!p.ask(&g, Mode::On));
        assert_eq!(p.inits.get(), 1, "a failed first touch is final");
    }

    #[test]
    fn auto_probes_only_when_the_loader_changed() {
        let (g, p) = (Gate::new(), Probe::new(true));
        assert!(!p.ask(&g, Mode::Auto));
        assert!(!p.ask(&g, Mode::Auto));
        assert!(!p.ask(&g, Mode::Auto));
        assert_eq!((p.probes.get(), p.inits.get()), (1, 0));
        // Some other library was loaded: one more probe, still no CUDA.
        p.adds.set(6);
        assert!(!p.ask(&g, Mode::Auto));
        assert!(!p.ask(&g, Mode::Auto));
        assert_eq!((p.probes.get(), p.inits.get()), (2, 0));
        // libcuda arrives: the next query probes, initialises once, and stays active.
        p.adds.set(7);
        p.loaded.set(true);
        assert!(p.ask(&g, Mode::Auto));
        assert!(p.ask(&g, Mode::Auto));
        p.adds.set(8);
        assert!(p.ask(&g, Mode::Auto));
        assert_eq!((p.probes.get(), p.inits.get()), (3, 1));
    }

    #[test]
    fn auto_with_a_broken_driver_gives_up_once() {
        let (g, p) = (Gate::new(), Probe::new(false));
        p.loaded.set(true);
        assert!(!p.ask(&g, Mode::Auto));
        p.adds.set(99);
        assert!(!p.ask(&g, Mode::Auto));
        assert_eq!((p.probes.get(), p.inits.get()), (1, 1));
    }

    #[test]
    fn mode_parsing() {
        assert_eq!(Mode::parse(None), Ok(Mode::Auto));
        assert_eq!(Mode::parse(Some("auto")), Ok(Mode::Auto));
        assert_eq!(Mode::parse(Some(" 0 ")), Ok(Mode::Off));
        assert_eq!(Mode::parse(Some("off")), Ok(Mode::Off));
        assert_eq!(Mode::parse(Some("1")), Ok(Mode::On));
        assert_eq!(Mode::parse(Some("YES")), Ok(Mode::On));
        assert!(Mode::parse(Some("2")).is_err());
    }

    #[test]
    fn loader_probes_work_here() {
        let a = loader_adds();
        assert!(a > 0, "the loader has added at least the executable");
        assert_eq!(loader_adds(), a, "nothing was loaded in between");
        // No CUDA on the build machine; a test run on a GPU host may have it loaded by
        // nothing either (this test binary does not link it).
        assert!(!libcuda_loaded());
    }

    /// The per-call price for a CPU-only process (auto mode, libcuda never loaded): one
    /// `dl_iterate_phdr` that stops at the first object. Printed with `--nocapture`.
    #[test]
    fn negative_query_is_cheap() {
        let g = Gate::new();
        let ask = || g.query(|| Mode::Auto, loader_adds, libcuda_loaded, || true);
        assert!(!ask());
        let n = 200_000;
        let t = std::time::Instant::now();
        for _ in 0..n {
            assert!(!std::hint::black_box(ask()));
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        println!("negative CUDA gate query: {ns:.1} ns");
        // Generous bound: a loaded test machine must not fail it; a regression to a
        // dlopen per call (about 1 µs) would.
        assert!(ns < 500.0, "{ns} ns per query");
    }
}
