//! hcomm's world, set up at `MPI_Init` over the host MPI.
//!
//! hcomm rank r = the host's `MPI_COMM_WORLD` rank r. The address exchange hcomm's setup
//! needs (an allgather of small blobs and barriers, [`Exchange`]) runs through the host's
//! `PMPI_Allgather`/`PMPI_Barrier` on a `PMPI_Comm_dup` of its world, so it cannot match any
//! of the program's messages; the data then moves over hcomm's own transports (shared memory
//! between ranks with the same host identity, TCP otherwise).
//!
//! Setup runs inside `catch_unwind`, and every rank then agrees on the outcome with one
//! `PMPI_Allreduce(MIN)` of "set up OK" before any collective is taken: if any rank failed,
//! every rank forwards everything (one WARN). The flag set here is therefore identical on all
//! ranks, which keeps the take-or-forward decision identical too.

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use hcomm_core::abi::handles as h;
use hcomm_core::error::{Error, Result};
use hcomm_core::runtime::Exchange;

use crate::host::{self, Abi};
use crate::real::Sym;
use crate::xlate::{self, Tables};

/// Set once at init when every rank's hcomm world is up; never cleared (the runtime stays
/// mapped until the process exits).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The translation tables, when hcomm takes collectives in this process.
#[inline]
pub fn active() -> Option<&'static Tables> {
    if ACTIVE.load(Ordering::Acquire) {
        xlate::tables()
    } else {
        None
    }
}

static PMPI_ALLGATHER: Sym = Sym::new(c"PMPI_Allgather");
static PMPI_ALLREDUCE: Sym = Sym::new(c"PMPI_Allreduce");
static PMPI_BARRIER: Sym = Sym::new(c"PMPI_Barrier");
static PMPI_COMM_DUP: Sym = Sym::new(c"PMPI_Comm_dup");
static PMPI_COMM_SIZE: Sym = Sym::new(c"PMPI_Comm_size");
static PMPI_COMM_RANK: Sym = Sym::new(c"PMPI_Comm_rank");
static PMPI_CALL_ERRHANDLER: Sym = Sym::new(c"PMPI_Comm_call_errhandler");

type AllgatherFn =
    unsafe extern "C" fn(*const c_void, c_int, usize, *mut c_void, c_int, usize, usize) -> c_int;
type AllreduceFn =
    unsafe extern "C" fn(*const c_void, *mut c_void, c_int, usize, usize, usize) -> c_int;
type CommFn = unsafe extern "C" fn(usize) -> c_int;
type CommIntFn = unsafe extern "C" fn(usize, *mut c_int) -> c_int;
type CommDupFn = unsafe extern "C" fn(usize, *mut usize) -> c_int;
type CallErrhandlerFn = unsafe extern "C" fn(usize, c_int) -> c_int;

pub(crate) fn sym<T: Copy>(s: &Sym) -> Result<T> {
    let a = s
        .get()
        .ok_or_else(|| Error::other("host MPI function missing"))?;
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<usize>());
    // SAFETY: T is the function-pointer type of the named host function (checked by callers'
    // types above); a function pointer and usize have the same size.
    Ok(unsafe { std::mem::transmute_copy::<usize, T>(&a) })
}

pub(crate) fn host_rc(what: &str, rc: c_int) -> Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Error::other(format!("host {what} failed ({rc})")))
    }
}

/// A host handle by name: `MPI_BYTE`, `MPI_INT`, `MPI_MIN`.
pub(crate) fn host_handle(abi: Abi, mpich: i32, ompi: &std::ffi::CStr) -> Result<usize> {
    match abi {
        Abi::Mpich => Ok(mpich as u32 as usize),
        _ => host::ompi_object(ompi).ok_or_else(|| Error::other("Open MPI object not found")),
    }
}

/// [`Exchange`] over the host MPI: allgather and barrier on a dup of its world.
struct HostExchange {
    comm: usize,
    byte: usize,
    size: usize,
}

impl Exchange for HostExchange {
    fn allgather(&mut self, blob: &[u8]) -> Result<Vec<Vec<u8>>> {
        let ag: AllgatherFn = sym(&PMPI_ALLGATHER)?;
        let len = (blob.len() as u32).to_le_bytes();
        let mut lens = vec![0u8; 4 * self.size];
        // SAFETY: 4 bytes sent, 4 per rank received into `lens` (4 * size bytes).
        let rc = unsafe {
            ag(
                len.as_ptr().cast(),
                4,
                self.byte,
                lens.as_mut_ptr().cast(),
                4,
                self.byte,
                self.comm,
            )
        };
        host_rc("PMPI_Allgather", rc)?;
        let lens: Vec<usize> = lens
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize)
            .collect();
        let max = lens.iter().copied().max().unwrap_or(0).max(1);
        let mut mine = blob.to_vec();
        mine.resize(max, 0);
        let mut all = vec![0u8; max * self.size];
        // SAFETY: `max` bytes sent from `mine`, `max` per rank received into `all`.
        let rc = unsafe {
            ag(
                mine.as_ptr().cast(),
                max as c_int,
                self.byte,
                all.as_mut_ptr().cast(),
                max as c_int,
                self.byte,
                self.comm,
            )
        };
        host_rc("PMPI_Allgather", rc)?;
        Ok(all
            .chunks(max)
            .zip(&lens)
            .map(|(c, &l)| c[..l].to_vec())
            .collect())
    }

    fn barrier(&mut self) -> Result<()> {
        let b: CommFn = sym(&PMPI_BARRIER)?;
        // SAFETY: a barrier on our dup of the host's world.
        host_rc("PMPI_Barrier", unsafe { b(self.comm) })
    }
}

/// This rank's part: the hcomm world over the host's.
fn setup_local(t: &Tables, thread_level: c_int) -> Result<()> {
    let rank_f: CommIntFn = sym(&PMPI_COMM_RANK)?;
    let size_f: CommIntFn = sym(&PMPI_COMM_SIZE)?;
    let dup_f: CommDupFn = sym(&PMPI_COMM_DUP)?;
    let (mut rank, mut size) = (-1, -1);
    // SAFETY: output locations valid for the calls.
    host_rc("PMPI_Comm_rank", unsafe { rank_f(t.world, &mut rank) })?;
    // SAFETY: as above.
    host_rc("PMPI_Comm_size", unsafe { size_f(t.world, &mut size) })?;
    let mut dup: usize = 0;
    // SAFETY: `dup` is pointer-sized and zeroed: MPICH writes an int into its low half
    // (little-endian), Open MPI a pointer.
    host_rc("PMPI_Comm_dup", unsafe { dup_f(t.world, &mut dup) })?;
    let byte = host_handle(t.abi, 0x4c00010d, c"ompi_mpi_byte")?;
    let mut ex = HostExchange {
        comm: dup,
        byte,
        size: size as usize,
    };
    hcomm_core::runtime::init_over(
        rank as usize,
        size as usize,
        &mut ex,
        thread_level,
        h::ERRORS_RETURN,
    )?;
    crate::comms::setup(t)?;
    Ok(())
}

/// After the host's init: set up hcomm's world and agree on it. Nothing here fails the program.
pub fn setup(thread_level: c_int) {
    let Some(t) = xlate::tables() else {
        return;
    };
    // A host without the functions setup needs (a stub library) is the same on every rank:
    // then no rank sets up or agrees, and everything is forwarded.
    let needed = [
        c"PMPI_Allgather",
        c"PMPI_Allreduce",
        c"PMPI_Barrier",
        c"PMPI_Comm_dup",
        c"PMPI_Comm_size",
        c"PMPI_Comm_rank",
        c"PMPI_Comm_call_errhandler",
    ];
    if let Some(n) = needed
        .iter()
        .chain(&crate::comms::NEEDED)
        .find(|n| crate::real::lookup(n) == 0)
    {
        hcomm_core::info!(
            "preload: the host MPI has no {}; forwarding everything",
            n.to_string_lossy()
        );
        return;
    }
    let local = catch_unwind(AssertUnwindSafe(|| setup_local(t, thread_level)));
    let ok: c_int = match &local {
        Ok(Ok(())) => 1,
        Ok(Err(e)) => {
            hcomm_core::warn!("preload: hcomm world setup failed on this rank: {e}");
            0
        }
        Err(_) => {
            hcomm_core::warn!("preload: hcomm world setup panicked on this rank");
            0
        }
    };
    let agreed = catch_unwind(AssertUnwindSafe(|| -> Result<c_int> {
        let ar: AllreduceFn = sym(&PMPI_ALLREDUCE)?;
        let int = host_handle(t.abi, 0x4c000405, c"ompi_mpi_int")?;
        let min = host_handle(t.abi, 0x5800_0002, c"ompi_mpi_op_min")?;
        let mut all: c_int = 0;
        // SAFETY: one int in, one int out, on the host's world.
        let rc = unsafe {
            ar(
                (&ok as *const c_int).cast(),
                (&mut all as *mut c_int).cast(),
                1,
                int,
                min,
                t.world,
            )
        };
        host_rc("PMPI_Allreduce", rc)?;
        Ok(all)
    }));
    match agreed {
        Ok(Ok(1)) => {
            ACTIVE.store(true, Ordering::Release);
            hcomm_core::info!("preload: hcomm takes collectives on every intracommunicator");
        }
        Ok(Ok(_)) => {
            hcomm_core::warn!("preload: hcomm setup failed on some rank; forwarding everything")
        }
        // The host's own allreduce failed: nothing is known about the others, and nothing
        // better than forwarding is possible.
        _ => hcomm_core::warn!("preload: could not agree on hcomm setup; forwarding everything"),
    }
}

/// Before the host's finalize: a host barrier, so no rank leaves while a peer may still be
/// reading from it over hcomm's transports.
pub fn before_finalize() {
    let Some(t) = active() else { return };
    // From here on, a peer that exits is leaving cleanly, not lost.
    if let Ok(rt) = hcomm_core::runtime::get() {
        rt.world.ep.set_finalizing();
    }
    if let Ok(b) = sym::<CommFn>(&PMPI_BARRIER) {
        // SAFETY: a barrier on the host's world.
        let _ = unsafe { b(t.world) };
    }
}

/// The return value of a call hcomm carried out on host communicator `comm`: 0, or hcomm's
/// error class translated to the host's and passed through the host's error handler of `comm`
/// (`MPI_ERRORS_RETURN` returns it; the default handler ends the job the host's way).
pub fn finish(t: &Tables, comm: usize, rc: c_int) -> c_int {
    if rc == 0 {
        return 0;
    }
    let code = t.error_class(rc);
    if let Ok(f) = sym::<CallErrhandlerFn>(&PMPI_CALL_ERRHANDLER) {
        // SAFETY: the caller's communicator (valid: hcomm resolved it) and one of the host's
        // error classes.
        let _ = unsafe { f(comm, code) };
    }
    code
}
