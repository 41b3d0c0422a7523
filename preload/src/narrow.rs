//! What a collective does when the host lacks the `PMPI_` function to forward it to.
//!
//! The interposer exports the MPI-4 large-count `_c` collectives, so programs that look for them
//! find them even on an MPI-3 host (Open MPI 4.1 has none): mpi4py 4.x, for one, calls
//! `MPI_Bcast_c` whenever the symbol resolves. When hcomm does not take such a call and the host
//! has no `PMPI_X_c`, it is made with the host's `int` version, which is exact when every count
//! fits in an `int`; a count that does not is `MPI_ERR_COUNT`, raised through the host's error
//! handler of the communicator. A host without even the `int` version gets its
//! `MPI_ERR_INTERN` and one message per missing function.

use std::collections::HashSet;
use std::ffi::{c_int, c_void, CStr};
use std::io::Write;

use parking_lot::Mutex;

use crate::real::Sym;
use crate::{Count, Handle};

/// `MPI_ERR_COUNT`: 2 in MPICH's numbering, Open MPI's and the standard's.
const ERR_COUNT: c_int = 2;

/// The host's `MPI_ERR_INTERN` for a call whose host function `pname` is missing; says so
/// once per function on stderr.
pub fn missing(pname: &'static CStr) -> c_int {
    static SAID: Mutex<Option<HashSet<&'static CStr>>> = Mutex::new(None);
    if SAID.lock().get_or_insert_with(HashSet::new).insert(pname) {
        let _ = writeln!(
            std::io::stderr(),
            "hcomm-preload: the host MPI has no {} (looked in RTLD_NEXT and {}); calls to it fail with MPI_ERR_INTERN",
            pname.to_string_lossy(),
            crate::real::MPI_SONAMES.map(|s| s.to_string_lossy()).join(", ")
        );
    }
    crate::missing()
}

/// `MPI_ERR_COUNT` through the host's error handler of `comm`.
fn count_error(comm: Handle) -> c_int {
    type CallErrhandler = unsafe extern "C" fn(Handle, c_int) -> c_int;
    static CALL: Sym = Sym::new(c"PMPI_Comm_call_errhandler");
    if let Some(a) = CALL.get() {
        // SAFETY: the host's PMPI_Comm_call_errhandler(MPI_Comm, int).
        let f = unsafe { std::mem::transmute::<usize, CallErrhandler>(a) };
        // SAFETY: the caller's communicator and a standard error class.
        let _ = unsafe { f(comm, ERR_COUNT) };
    }
    ERR_COUNT
}

fn narrow(c: Count) -> Option<c_int> {
    c_int::try_from(c).ok()
}

/// The `n` entries at `v` as `int`s, or `None` if one does not fit.
///
/// # Safety
/// `v` points to `n` readable counts.
unsafe fn narrow_all(v: *const Count, n: usize) -> Option<Vec<c_int>> {
    // SAFETY: the caller's contract.
    let wide = unsafe { std::slice::from_raw_parts(v, n) };
    wide.iter().map(|&c| narrow(c)).collect()
}

/// Resolves the host's `int` version, as function type `T`.
fn int_version<T: Copy>(s: &Sym) -> Option<T> {
    let a = s.get()?;
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<usize>());
    // SAFETY: T is the function-pointer type of the named host function (see each caller).
    Some(unsafe { std::mem::transmute_copy::<usize, T>(&a) })
}

/// # Safety
/// The MPI contract of `MPI_Allreduce_c`.
pub unsafe fn allreduce(
    s: *const c_void,
    r: *mut c_void,
    count: Count,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    type F =
        unsafe extern "C" fn(*const c_void, *mut c_void, c_int, Handle, Handle, Handle) -> c_int;
    static P: Sym = Sym::new(c"PMPI_Allreduce");
    let Some(n) = narrow(count) else {
        return count_error(comm);
    };
    let Some(f) = int_version::<F>(&P) else {
        return crate::missing();
    };
    // SAFETY: the same call with an equal `int` count.
    unsafe { f(s, r, n, dt, op, comm) }
}

/// # Safety
/// The MPI contract of `MPI_Bcast_c`.
pub unsafe fn bcast(
    buf: *mut c_void,
    count: Count,
    dt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    type F = unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, Handle) -> c_int;
    static P: Sym = Sym::new(c"PMPI_Bcast");
    let Some(n) = narrow(count) else {
        return count_error(comm);
    };
    let Some(f) = int_version::<F>(&P) else {
        return crate::missing();
    };
    // SAFETY: the same call with an equal `int` count.
    unsafe { f(buf, n, dt, root, comm) }
}

/// # Safety
/// The MPI contract of `MPI_Allgather_c`.
pub unsafe fn allgather(
    s: *const c_void,
    scount: Count,
    sdt: Handle,
    r: *mut c_void,
    rcount: Count,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    type F = unsafe extern "C" fn(
        *const c_void,
        c_int,
        Handle,
        *mut c_void,
        c_int,
        Handle,
        Handle,
    ) -> c_int;
    static P: Sym = Sym::new(c"PMPI_Allgather");
    let (Some(sn), Some(rn)) = (narrow(scount), narrow(rcount)) else {
        return count_error(comm);
    };
    let Some(f) = int_version::<F>(&P) else {
        return crate::missing();
    };
    // SAFETY: the same call with equal `int` counts.
    unsafe { f(s, sn, sdt, r, rn, rdt, comm) }
}

/// # Safety
/// The MPI contract of `MPI_Allgatherv_c` (`counts` and `displs` hold one entry per rank of
/// the group received from: `comm`'s, or its remote group for an intercommunicator).
#[allow(clippy::too_many_arguments)]
pub unsafe fn allgatherv(
    s: *const c_void,
    scount: Count,
    sdt: Handle,
    r: *mut c_void,
    counts: *const Count,
    displs: *const Count,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    type F = unsafe extern "C" fn(
        *const c_void,
        c_int,
        Handle,
        *mut c_void,
        *const c_int,
        *const c_int,
        Handle,
        Handle,
    ) -> c_int;
    type Query = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;
    static P: Sym = Sym::new(c"PMPI_Allgatherv");
    static INTER: Sym = Sym::new(c"PMPI_Comm_test_inter");
    static SIZE: Sym = Sym::new(c"PMPI_Comm_size");
    static REMOTE: Sym = Sym::new(c"PMPI_Comm_remote_size");
    let Some(f) = int_version::<F>(&P) else {
        return crate::missing();
    };
    let (Some(inter_f), Some(size_f), Some(remote_f)) = (
        int_version::<Query>(&INTER),
        int_version::<Query>(&SIZE),
        int_version::<Query>(&REMOTE),
    ) else {
        return crate::missing();
    };
    let Some(sn) = narrow(scount) else {
        return count_error(comm);
    };
    let (mut inter, mut n): (c_int, c_int) = (0, 0);
    // SAFETY: valid output locations; an invalid communicator is reported by the forwarded
    // call below (with NULL arrays the host reports those too).
    let known = unsafe {
        inter_f(comm, &mut inter) == 0
            && if inter != 0 {
                remote_f(comm, &mut n)
            } else {
                size_f(comm, &mut n)
            } == 0
    };
    if !known || counts.is_null() || displs.is_null() || n <= 0 {
        // SAFETY: forwarded for the host to report the bad argument its own way.
        return unsafe { f(s, sn, sdt, r, std::ptr::null(), std::ptr::null(), rdt, comm) };
    }
    // SAFETY: MPI: both arrays hold one entry per rank received from (`n`).
    let (ints, offs) = unsafe {
        (
            narrow_all(counts, n as usize),
            narrow_all(displs, n as usize),
        )
    };
    let (Some(ints), Some(offs)) = (ints, offs) else {
        return count_error(comm);
    };
    // SAFETY: the same call with equal `int` counts and displacements.
    unsafe { f(s, sn, sdt, r, ints.as_ptr(), offs.as_ptr(), rdt, comm) }
}

/// # Safety
/// The MPI contract of `MPI_Reduce_scatter_c` (`counts` holds one count per rank of `comm`).
pub unsafe fn reduce_scatter(
    s: *const c_void,
    r: *mut c_void,
    counts: *const Count,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    type F = unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        *const c_int,
        Handle,
        Handle,
        Handle,
    ) -> c_int;
    type Size = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;
    static P: Sym = Sym::new(c"PMPI_Reduce_scatter");
    static SIZE: Sym = Sym::new(c"PMPI_Comm_size");
    let Some(f) = int_version::<F>(&P) else {
        return crate::missing();
    };
    let Some(size_f) = int_version::<Size>(&SIZE) else {
        return crate::missing();
    };
    let mut n: c_int = 0;
    // SAFETY: a valid output location; an invalid communicator is reported by the forwarded
    // call below (with a NULL counts array the host reports that too).
    if unsafe { size_f(comm, &mut n) } != 0 || counts.is_null() || n <= 0 {
        // SAFETY: forwarded for the host to report the bad argument its own way.
        return unsafe { f(s, r, std::ptr::null(), dt, op, comm) };
    }
    // SAFETY: MPI: `counts` holds one entry per rank of `comm`.
    let Some(ints) = (unsafe { narrow_all(counts, n as usize) }) else {
        return count_error(comm);
    };
    // SAFETY: the same call with equal `int` counts.
    unsafe { f(s, r, ints.as_ptr(), dt, op, comm) }
}

/// # Safety
/// The MPI contract of `MPI_Reduce_scatter_block_c`.
pub unsafe fn reduce_scatter_block(
    s: *const c_void,
    r: *mut c_void,
    count: Count,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    type F =
        unsafe extern "C" fn(*const c_void, *mut c_void, c_int, Handle, Handle, Handle) -> c_int;
    static P: Sym = Sym::new(c"PMPI_Reduce_scatter_block");
    let Some(n) = narrow(count) else {
        return count_error(comm);
    };
    let Some(f) = int_version::<F>(&P) else {
        return crate::missing();
    };
    // SAFETY: the same call with an equal `int` count.
    unsafe { f(s, r, n, dt, op, comm) }
}

/// # Safety
/// The MPI contract of `MPI_Reduce_c`.
pub unsafe fn reduce(
    s: *const c_void,
    r: *mut c_void,
    count: Count,
    dt: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    type F = unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        c_int,
        Handle,
        Handle,
        c_int,
        Handle,
    ) -> c_int;
    static P: Sym = Sym::new(c"PMPI_Reduce");
    let Some(n) = narrow(count) else {
        return count_error(comm);
    };
    let Some(f) = int_version::<F>(&P) else {
        return crate::missing();
    };
    // SAFETY: the same call with an equal `int` count.
    unsafe { f(s, r, n, dt, op, root, comm) }
}

#[cfg(test)]
mod tests {
    use super::narrow;

    #[test]
    fn counts_narrow_only_when_they_fit() {
        assert_eq!(narrow(5), Some(5));
        assert_eq!(narrow(i32::MAX as i64), Some(i32::MAX));
        assert_eq!(narrow(i32::MAX as i64 + 1), None);
        assert_eq!(narrow(-1), Some(-1)); // the host reports negative counts itself
    }
}
