//! Finding the host MPI's `PMPI_X` functions.
//!
//! Each symbol is looked up once, on first use (never in a library constructor: the preload
//! also lands in `mpiexec` and its daemons, which must not notice it). First
//! `dlsym(RTLD_NEXT, name)`: the next definition after this library in the global search
//! order, which is the MPI library the program was linked with. When the MPI library was
//! loaded `RTLD_LOCAL` (Python extension modules) it is not in the global scope, so the
//! fallback asks each known MPI library by soname with `dlopen(RTLD_NOLOAD)` — that only finds
//! a library that is already loaded, it never loads one.
//!
//! A symbol the host lacks (e.g. `PMPI_Allreduce_c` on Open MPI 4.1, which has no large-count
//! functions) is reported once on stderr; the call then fails with the host's
//! `MPI_ERR_INTERN` instead of aborting.

use std::ffi::{c_void, CStr};
use std::io::Write;
use std::sync::OnceLock;

/// Sonames of the MPI libraries the interposer knows, probed in this order:
/// Open MPI 4.x/5.x, PyPI's MPICH 5.x (and MPICH-ABI vendors), Debian's MPICH, the MPI-5
/// standard ABI library.
pub const MPI_SONAMES: [&CStr; 4] = [
    c"libmpi.so.40",
    c"libmpi.so.12",
    c"libmpich.so.12",
    c"libmpi_abi.so.1",
];

/// A lazily resolved host function. The address is stored as `usize` (0 = missing) so the
/// static is `Sync`; callers transmute it to the function type of the named symbol.
pub struct Sym {
    name: &'static CStr,
    addr: OnceLock<usize>,
    /// Say nothing when missing (the caller has a fallback or reports it itself).
    quiet: bool,
}

impl Sym {
    pub const fn new(name: &'static CStr) -> Self {
        Sym {
            name,
            addr: OnceLock::new(),
            quiet: false,
        }
    }

    /// As [`Sym::new`], silent when the host lacks the symbol.
    pub const fn quiet(name: &'static CStr) -> Self {
        Sym {
            name,
            addr: OnceLock::new(),
            quiet: true,
        }
    }

    /// The symbol's address, resolving it on first call; `None` if the host lacks it (the
    /// first such call prints why).
    #[inline]
    pub fn get(&self) -> Option<usize> {
        let a = *self.addr.get_or_init(|| {
            let a = lookup(self.name);
            if a == 0 && !self.quiet {
                let _ = writeln!(
                    std::io::stderr(),
                    "hcomm-preload: the host MPI has no {} (looked in RTLD_NEXT and {}); calls to it fail with MPI_ERR_INTERN",
                    self.name.to_string_lossy(),
                    MPI_SONAMES.map(|s| s.to_string_lossy()).join(", ")
                );
            }
            a
        });
        (a != 0).then_some(a)
    }
}

/// Looks `name` up after this library, then in each already loaded known MPI library.
/// Returns 0 when nothing defines it.
pub fn lookup(name: &CStr) -> usize {
    // SAFETY: `name` is NUL-terminated; RTLD_NEXT is valid from code inside a shared object.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if !p.is_null() {
        return p as usize;
    }
    MPI_SONAMES
        .iter()
        .find_map(|so| {
            let p = in_library(so, name);
            (!p.is_null()).then_some(p as usize)
        })
        .unwrap_or(0)
}

/// `dlsym` of `name` in the library `soname` if that library is already loaded, else null.
pub fn in_library(soname: &CStr, name: &CStr) -> *mut c_void {
    // SAFETY: both strings are NUL-terminated; RTLD_NOLOAD never loads anything, it only
    // returns a handle (with its reference count raised) to an already loaded library.
    let h = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
    if h.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `h` is a live handle from dlopen. Closing it drops only the reference taken
    // above; the library stays loaded (it was loaded before), so the address stays valid.
    unsafe {
        let p = libc::dlsym(h, name.as_ptr());
        libc::dlclose(h);
        p
    }
}

/// Whether a library with this soname is loaded in the process.
pub fn is_loaded(soname: &CStr) -> bool {
    // SAFETY: as in `in_library`.
    let h = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
    if h.is_null() {
        return false;
    }
    // SAFETY: drops the reference taken above.
    unsafe { libc::dlclose(h) };
    true
}

/// The path of the loaded object that contains `addr` (`dladdr`), if any.
pub fn object_path(addr: usize) -> Option<String> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only reads the address and fills `info`; it returns 0 when no object
    // contains the address.
    let rc = unsafe { libc::dladdr(addr as *const c_void, info.as_mut_ptr()) };
    if rc == 0 {
        return None;
    }
    // SAFETY: dladdr succeeded, so `info` is initialised; dli_fname is a NUL-terminated
    // string owned by the dynamic loader (or null).
    let fname = unsafe { info.assume_init().dli_fname };
    if fname.is_null() {
        return None;
    }
    // SAFETY: non-null, NUL-terminated, alive while the object stays loaded.
    Some(
        unsafe { CStr::from_ptr(fname) }
            .to_string_lossy()
            .into_owned(),
    )
}
