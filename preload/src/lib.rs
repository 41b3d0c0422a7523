//! libhcomm_preload.so: hcomm as an `LD_PRELOAD` interposer for programs built against a real
//! MPI (MPICH ABI: Debian's `libmpich.so.12`, PyPI's `libmpi.so.12`; Open MPI:
//! `libmpi.so.40`). Launch with `mpiexec -genv LD_PRELOAD …/libhcomm_preload.so` (MPICH) or
//! `mpirun -x LD_PRELOAD=…` (Open MPI).
//!
//! Exports: only the calls it intercepts — `MPI_Init`, `MPI_Init_thread`, `MPI_Finalize` and
//! the collectives hcomm will take (`MPI_Allreduce`, `MPI_Bcast`, `MPI_Allgather`,
//! `MPI_Allgatherv`, `MPI_Reduce_scatter`, `MPI_Reduce_scatter_block`, `MPI_Reduce`,
//! `MPI_Barrier`, and the large-count `_c` variants of those that have one). No `PMPI_` names
//! and nothing else (`MPI_Get_version`, `MPI_Comm_rank`, …): the host MPI keeps answering
//! those, and probes such as mpi4py's still see the real library.
//! `libhcomm_preload.symbols` is the checked-in list.
//!
//! Every entry point forwards to the host's `PMPI_X` ([`real`]), resolved once on first use.
//! Handle parameters are pointer-sized: one symbol receives MPICH's `int` handles and Open
//! MPI's pointers, and forwarding the full register passes either through unchanged (code that
//! interprets an MPICH handle must narrow it to `i32`: the upper half of an `int` argument
//! register is undefined). At `MPI_Init` the host ABI is detected ([`host`]) and, for MPICH-ABI
//! and Open MPI hosts, hcomm's world is set up over the host's ([`world`]). Collectives on any of
//! the host's intracommunicators (state per communicator, [`comms`]) with predefined datatypes
//! and ops are then taken by hcomm ([`take`],
//! handles translated by [`xlate`]); everything else is forwarded. Both are counted
//! (`hcomm_core::stats`). Library constructors: none — the preload also lands in `mpiexec` and its
//! daemons.

use std::ffi::{c_char, c_int, c_void};
use std::panic::catch_unwind;

mod comms;
mod cuda_fwd;
mod guard;
mod host;
mod narrow;
mod real;
mod take;
mod world;
mod xlate;

use hcomm_core::abi::api::{Ints, RecvCounts};
use hcomm_core::stats::{self, Coll};
use real::Sym;

/// An MPI handle (communicator, datatype, op) as received from either ABI.
type Handle = usize;
/// `MPI_Count`: 8 bytes in every ABI.
type Count = i64;

/// The return value of a call whose host function is missing.
fn missing() -> c_int {
    host::host().abi.err_intern()
}

/// Defines forwarding collective entry points:
/// `fn MPI_X = c"PMPI_X", Coll, (args) [buffers; comm] => take, else fallback;` where
/// `fallback` runs when the host has no `PMPI_X` (an MPI-3 host asked for an MPI-4 `_c` call)
/// and `buffers` are the arguments that may be device memory (see [`cuda_fwd`]).
macro_rules! collectives {
    ($( fn $name:ident = $pname:expr, $coll:expr, ( $($arg:ident : $ty:ty),* ) [$($buf:ident),* ; $comm:ident] => $take:expr, else $fallback:expr; )*) => { $(
        #[doc = concat!("`", stringify!($name), "`: taken by hcomm when [`take`] says so, else forwarded to the host's `PMPI_` function (counted either way).")]
        ///
        /// # Safety
        /// The MPI standard's contract for this call: the host MPI receives the arguments as given.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            type Real = unsafe extern "C" fn($($ty),*) -> c_int;
            static REAL: Sym = Sym::quiet($pname);
            // SAFETY: an address from `REAL` is the host's PMPI function of the same name,
            // whose C prototype has these parameters (handles widened to pointer size, see the
            // crate docs).
            let real = REAL.get().map(|a| unsafe { std::mem::transmute::<usize, Real>(a) });
            // SAFETY (both calls): forwarded verbatim to the host's implementation, or to the
            // fallback, which checks what it narrows.
            let forward = || match real {
                Some(f) => unsafe { f($($arg),*) },
                // (`missing` needs no `unsafe`; the narrowing fallbacks do.)
                #[allow(unused_unsafe)]
                None => unsafe { $fallback },
            };
            if guard::passthrough() {
                return forward();
            }
            let _inside = guard::enter();
            // hcomm's entry point counts the call as handled.
            if let Some(rc) = $take {
                return rc;
            }
            if let Some(rc) = cuda_fwd::refuse(stringify!($name), &[$($buf as *const c_void),*], $comm) {
                return rc;
            }
            stats::forwarded($coll);
            hcomm_core::trace!(concat!("preload: ", stringify!($name), " forwarded to the host MPI (", $(stringify!($arg), "={:#x} ",)* ")"), $($arg as usize),*);
            forward()
        }
    )* };
}

collectives! {
    fn MPI_Allreduce = c"PMPI_Allreduce", Coll::Allreduce,
        (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle, comm: Handle) [sendbuf, recvbuf; comm]
        => take::allreduce("MPI_Allreduce", sendbuf, recvbuf, count.into(), datatype, op, comm), else narrow::missing(c"PMPI_Allreduce");
    fn MPI_Allreduce_c = c"PMPI_Allreduce_c", Coll::Allreduce,
        (sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Handle, op: Handle, comm: Handle) [sendbuf, recvbuf; comm]
        => take::allreduce("MPI_Allreduce_c", sendbuf, recvbuf, count, datatype, op, comm), else narrow::allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    fn MPI_Bcast = c"PMPI_Bcast", Coll::Bcast,
        (buffer: *mut c_void, count: c_int, datatype: Handle, root: c_int, comm: Handle) [buffer; comm]
        => take::bcast("MPI_Bcast", buffer, count.into(), datatype, root, comm), else narrow::missing(c"PMPI_Bcast");
    fn MPI_Bcast_c = c"PMPI_Bcast_c", Coll::Bcast,
        (buffer: *mut c_void, count: Count, datatype: Handle, root: c_int, comm: Handle) [buffer; comm]
        => take::bcast("MPI_Bcast_c", buffer, count, datatype, root, comm), else narrow::bcast(buffer, count, datatype, root, comm);
    fn MPI_Allgather = c"PMPI_Allgather", Coll::Allgather,
        (sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, comm: Handle) [sendbuf, recvbuf; comm]
        => take::allgather("MPI_Allgather", sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm), else narrow::missing(c"PMPI_Allgather");
    fn MPI_Allgather_c = c"PMPI_Allgather_c", Coll::Allgather,
        (sendbuf: *const c_void, sendcount: Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: Count, recvtype: Handle, comm: Handle) [sendbuf, recvbuf; comm]
        => take::allgather("MPI_Allgather_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm), else narrow::allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    fn MPI_Allgatherv = c"PMPI_Allgatherv", Coll::Allgatherv,
        (sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Handle, comm: Handle) [sendbuf, recvbuf; comm]
        => take::allgatherv("MPI_Allgatherv", sendbuf, sendcount.into(), sendtype, recvbuf, Ints::Int(recvcounts), Ints::Int(displs), recvtype, comm), else narrow::missing(c"PMPI_Allgatherv");
    fn MPI_Allgatherv_c = c"PMPI_Allgatherv_c", Coll::Allgatherv,
        (sendbuf: *const c_void, sendcount: Count, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Count, recvtype: Handle, comm: Handle) [sendbuf, recvbuf; comm]
        => take::allgatherv("MPI_Allgatherv_c", sendbuf, sendcount, sendtype, recvbuf, Ints::Long(recvcounts), Ints::Long(displs), recvtype, comm), else narrow::allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    fn MPI_Reduce_scatter = c"PMPI_Reduce_scatter", Coll::ReduceScatter,
        (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: Handle, op: Handle, comm: Handle) [sendbuf, recvbuf; comm]
        => take::reduce_scatter("MPI_Reduce_scatter", sendbuf, recvbuf, RecvCounts::Int(recvcounts), datatype, op, comm), else narrow::missing(c"PMPI_Reduce_scatter");
    fn MPI_Reduce_scatter_c = c"PMPI_Reduce_scatter_c", Coll::ReduceScatter,
        (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: Handle, op: Handle, comm: Handle) [sendbuf, recvbuf; comm]
        => take::reduce_scatter("MPI_Reduce_scatter_c", sendbuf, recvbuf, RecvCounts::Count(recvcounts), datatype, op, comm), else narrow::reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    fn MPI_Reduce_scatter_block = c"PMPI_Reduce_scatter_block", Coll::ReduceScatterBlock,
        (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: Handle, op: Handle, comm: Handle) [sendbuf, recvbuf; comm]
        => take::reduce_scatter_block("MPI_Reduce_scatter_block", sendbuf, recvbuf, recvcount.into(), datatype, op, comm), else narrow::missing(c"PMPI_Reduce_scatter_block");
    fn MPI_Reduce_scatter_block_c = c"PMPI_Reduce_scatter_block_c", Coll::ReduceScatterBlock,
        (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: Handle, op: Handle, comm: Handle) [sendbuf, recvbuf; comm]
        => take::reduce_scatter_block("MPI_Reduce_scatter_block_c", sendbuf, recvbuf, recvcount, datatype, op, comm), else narrow::reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
    fn MPI_Reduce = c"PMPI_Reduce", Coll::Reduce,
        (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle, root: c_int, comm: Handle) [sendbuf, recvbuf; comm]
        => take::reduce("MPI_Reduce", sendbuf, recvbuf, count.into(), datatype, op, root, comm), else narrow::missing(c"PMPI_Reduce");
    fn MPI_Reduce_c = c"PMPI_Reduce_c", Coll::Reduce,
        (sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Handle, op: Handle, root: c_int, comm: Handle) [sendbuf, recvbuf; comm]
        => take::reduce("MPI_Reduce_c", sendbuf, recvbuf, count, datatype, op, root, comm), else narrow::reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    fn MPI_Barrier = c"PMPI_Barrier", Coll::Barrier,
        (comm: Handle) [; comm]
        => take::barrier(comm), else narrow::missing(c"PMPI_Barrier");
}

/// After the host's init succeeded: detect the host and log it. Nothing here may fail the
/// program: a panic is caught and reported.
fn after_init(thread_level: c_int) {
    let r = catch_unwind(|| {
        let h = host::host();
        if let Some(rank) = host::world_rank() {
            hcomm_core::log::set_rank(rank as usize);
        }
        if hcomm_core::log::enabled(hcomm_core::log::Level::Info) {
            let version = host::library_version().unwrap_or_default();
            hcomm_core::info!(
                "preload: host MPI is {} ({}): {}{}",
                h.abi,
                h.library,
                version,
                if h.abi == host::Abi::Mpi5 {
                    " (MPI-5 ABI: untouched)"
                } else {
                    ""
                }
            );
        }
    });
    if r.is_err() {
        hcomm_core::warn!("preload: internal error after MPI_Init; forwarding everything");
        return;
    }
    // Collective on the host's world: every rank that got here calls it (a failure above is
    // a bug in detection, the same on every rank).
    world::setup(thread_level);
}

/// Before the host's finalize: the `HCOMM_STATS` line.
fn before_finalize() {
    if !guard::stats_enabled() && !stats::profile::enabled() {
        return;
    }
    let r = catch_unwind(|| {
        let rank = host::world_rank().unwrap_or(-1);
        stats::print_if_enabled(rank);
        stats::profile::finish(rank);
    });
    if r.is_err() {
        hcomm_core::warn!("preload: internal error writing HCOMM_STATS");
    }
}

static PMPI_INIT: Sym = Sym::new(c"PMPI_Init");
static PMPI_INIT_THREAD: Sym = Sym::new(c"PMPI_Init_thread");
static PMPI_FINALIZE: Sym = Sym::new(c"PMPI_Finalize");

/// `MPI_Init`: the host's init, then host detection (logged at INFO).
///
/// # Safety
/// The MPI standard's contract for this call: the host MPI receives the arguments as given.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    type Real = unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int;
    let Some(addr) = PMPI_INIT.get() else {
        return missing();
    };
    // SAFETY: the host's PMPI_Init(int *, char ***).
    let real = unsafe { std::mem::transmute::<usize, Real>(addr) };
    if guard::passthrough() {
        // SAFETY: forwarded verbatim.
        return unsafe { real(argc, argv) };
    }
    let rc = {
        let _inside = guard::enter();
        // SAFETY: forwarded verbatim.
        unsafe { real(argc, argv) }
    };
    if rc == 0 {
        let _inside = guard::enter();
        after_init(0);
    }
    rc
}

/// `MPI_Init_thread`: the host's init, then host detection (logged at INFO).
///
/// # Safety
/// The MPI standard's contract for this call: the host MPI receives the arguments as given.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    type Real = unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int) -> c_int;
    let Some(addr) = PMPI_INIT_THREAD.get() else {
        return missing();
    };
    // SAFETY: the host's PMPI_Init_thread(int *, char ***, int, int *).
    let real = unsafe { std::mem::transmute::<usize, Real>(addr) };
    if guard::passthrough() {
        // SAFETY: forwarded verbatim.
        return unsafe { real(argc, argv, required, provided) };
    }
    let rc = {
        let _inside = guard::enter();
        // SAFETY: forwarded verbatim.
        unsafe { real(argc, argv, required, provided) }
    };
    if rc == 0 {
        let _inside = guard::enter();
        // SAFETY: the host's init succeeded, so it wrote `provided` (when non-NULL).
        let level = if provided.is_null() {
            0
        } else {
            unsafe { *provided }
        };
        after_init(level);
    }
    rc
}

/// `MPI_Finalize`: the `HCOMM_STATS` line, then the host's finalize.
///
/// # Safety
/// The MPI standard's contract for this call: the host MPI receives the arguments as given.
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    type Real = unsafe extern "C" fn() -> c_int;
    let Some(addr) = PMPI_FINALIZE.get() else {
        return missing();
    };
    // SAFETY: the host's PMPI_Finalize(void).
    let real = unsafe { std::mem::transmute::<usize, Real>(addr) };
    if guard::passthrough() {
        // SAFETY: forwarded verbatim.
        return unsafe { real() };
    }
    let _inside = guard::enter();
    before_finalize();
    world::before_finalize();
    // SAFETY: forwarded verbatim.
    unsafe { real() }
}
