//! Which MPI the program runs on, and the few host constants the interposer needs.
//!
//! Detected once, lazily (first `MPI_Init`, or the first failure that needs an error code):
//! 1. the object that defines the host's `PMPI_Init` (`dladdr`), classified by file name;
//! 2. else which known MPI library is loaded (`dlopen(RTLD_NOLOAD)` probes by soname);
//! 3. else whether `ompi_mpi_comm_world` is visible (an Open MPI under another name).
//!
//! MPI-5 standard-ABI programs (`libmpi_abi.so.1`) are recognised and only forwarded.

use std::ffi::{c_int, CStr};
use std::fmt;
use std::sync::OnceLock;

use crate::real::{self, Sym};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abi {
    /// MPICH, Intel MPI, MVAPICH, ...: `int` handles (`libmpich.so.12`, `libmpi.so.12`).
    Mpich,
    /// Open MPI 4.x/5.x: handles are addresses of global objects (`libmpi.so.40`).
    OpenMpi,
    /// The MPI-5 standard ABI (`libmpi_abi.so.1`): forwarded untouched for now.
    Mpi5,
    /// No known MPI found: everything is forwarded.
    Unknown,
}

impl fmt::Display for Abi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Abi::Mpich => "MPICH ABI",
            Abi::OpenMpi => "Open MPI ABI",
            Abi::Mpi5 => "MPI-5 standard ABI",
            Abi::Unknown => "unknown MPI",
        })
    }
}

impl Abi {
    /// The host's `MPI_ERR_INTERN`: MPICH numbers its error classes its own way (16), Open
    /// MPI and the MPI-5 ABI follow the standard's order (17).
    pub fn err_intern(self) -> c_int {
        match self {
            Abi::Mpich | Abi::Unknown => 16,
            Abi::OpenMpi | Abi::Mpi5 => 17,
        }
    }
}

/// What was detected, and from which library.
#[derive(Debug)]
pub struct Host {
    pub abi: Abi,
    /// The library that was recognised (a path from `dladdr`, or a soname).
    pub library: String,
}

/// Classifies an MPI library by its file name (a path or a bare soname).
pub fn classify(path: &str) -> Abi {
    let base = path.rsplit('/').next().unwrap_or(path);
    if base.starts_with("libmpi_abi.so") {
        Abi::Mpi5
    } else if base.starts_with("libmpich.so") || base.starts_with("libmpi.so.12") {
        Abi::Mpich
    } else if base.starts_with("libmpi.so.40") {
        Abi::OpenMpi
    } else {
        Abi::Unknown
    }
}

static PMPI_INIT: Sym = Sym::new(c"PMPI_Init");

fn detect() -> Host {
    if let Some(path) = PMPI_INIT.get().and_then(real::object_path) {
        let abi = classify(&path);
        if abi != Abi::Unknown {
            return Host { abi, library: path };
        }
    }
    for so in real::MPI_SONAMES {
        if real::is_loaded(so) {
            return Host {
                abi: classify(&so.to_string_lossy()),
                library: so.to_string_lossy().into_owned(),
            };
        }
    }
    if ompi_world().is_some() {
        return Host {
            abi: Abi::OpenMpi,
            library: "(defines ompi_mpi_comm_world)".into(),
        };
    }
    Host {
        abi: Abi::Unknown,
        library: "(none found)".into(),
    }
}

/// The host, detected on first call.
pub fn host() -> &'static Host {
    static H: OnceLock<Host> = OnceLock::new();
    H.get_or_init(detect)
}

/// Open MPI's `MPI_COMM_WORLD`: `&ompi_mpi_comm_world` as the program sees it. In a PIE
/// executable that is the program's copy-relocated object, which `RTLD_DEFAULT` finds first;
/// when libmpi was loaded `RTLD_LOCAL` only the library itself knows the name.
fn ompi_world() -> Option<usize> {
    ompi_object(c"ompi_mpi_comm_world")
}

/// The address of one of Open MPI's predefined objects (`ompi_mpi_float`, `ompi_mpi_op_sum`,
/// …) as the program sees it: `RTLD_DEFAULT` first (a PIE executable's copy-relocated object
/// is the one its code passes), then the `RTLD_LOCAL`-loaded library itself.
pub fn ompi_object(name: &CStr) -> Option<usize> {
    // SAFETY: `name` is NUL-terminated; RTLD_DEFAULT searches the global scope.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if !p.is_null() {
        return Some(p as usize);
    }
    let p = real::in_library(c"libmpi.so.40", name);
    (!p.is_null()).then_some(p as usize)
}

/// The host's `MPI_COMM_WORLD` handle, widened to pointer size.
pub fn comm_world(abi: Abi) -> Option<usize> {
    match abi {
        Abi::Mpich => Some(0x4400_0000),
        Abi::Mpi5 => Some(0x101),
        Abi::OpenMpi => ompi_world(),
        Abi::Unknown => None,
    }
}

static PMPI_COMM_RANK: Sym = Sym::new(c"PMPI_Comm_rank");

/// This process's rank in the host's `MPI_COMM_WORLD` (needs an initialised host MPI).
pub fn world_rank() -> Option<c_int> {
    type CommRank = unsafe extern "C" fn(usize, *mut c_int) -> c_int;
    let world = comm_world(host().abi)?;
    let addr = PMPI_COMM_RANK.get()?;
    // SAFETY: `addr` is the host's PMPI_Comm_rank(MPI_Comm, int *); a handle passed as a
    // pointer-sized value is right for every ABI (MPICH reads the low 32 bits).
    let f = unsafe { std::mem::transmute::<usize, CommRank>(addr) };
    let mut rank: c_int = -1;
    // SAFETY: `rank` is a valid output location for the call's duration.
    let rc = unsafe { f(world, &mut rank) };
    (rc == 0 && rank >= 0).then_some(rank)
}

static PMPI_GET_LIBRARY_VERSION: Sym = Sym::new(c"PMPI_Get_library_version");

/// The first line of the host's `MPI_Get_library_version` string, for the log.
pub fn library_version() -> Option<String> {
    type GetLibraryVersion = unsafe extern "C" fn(*mut u8, *mut c_int) -> c_int;
    let addr = PMPI_GET_LIBRARY_VERSION.get()?;
    // SAFETY: `addr` is the host's PMPI_Get_library_version(char *, int *).
    let f = unsafe { std::mem::transmute::<usize, GetLibraryVersion>(addr) };
    // MPICH's MPI_MAX_LIBRARY_VERSION_STRING is 8192, Open MPI's 256: the larger fits both.
    let mut buf = vec![0u8; 8192];
    let mut len: c_int = 0;
    // SAFETY: `buf` holds 8192 writable bytes, at least the host's maximum.
    let rc = unsafe { f(buf.as_mut_ptr(), &mut len) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let text = String::from_utf8_lossy(&buf[..end]);
    // MPICH's first line is "MPICH Version:\t4.0.2": collapse whitespace for one log line.
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .find(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_by_name() {
        assert_eq!(
            classify("/usr/lib/x86_64-linux-gnu/libmpich.so.12"),
            Abi::Mpich
        );
        assert_eq!(classify("/venv/lib/libmpi.so.12"), Abi::Mpich);
        assert_eq!(classify("libmpi.so.40"), Abi::OpenMpi);
        assert_eq!(classify("/opt/ompi/lib/libmpi.so.40.30.4"), Abi::OpenMpi);
        assert_eq!(classify("/venv/lib/libmpi_abi.so.1"), Abi::Mpi5);
        assert_eq!(classify("/usr/lib/libc.so.6"), Abi::Unknown);
    }

    #[test]
    fn error_classes() {
        assert_eq!(Abi::Mpich.err_intern(), 16);
        assert_eq!(Abi::OpenMpi.err_intern(), 17);
        assert_eq!(Abi::Mpi5.err_intern(), 17);
    }
}
