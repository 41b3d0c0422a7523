//! Argument checks shared by the process-topology calls (`cart.rs`, `graph.rs`) and the
//! neighbor collectives: the communicator's topology, integer arrays in, integer arrays out.

use std::ffi::c_int;
use std::sync::Arc;

use super::blocks::Ints;
use crate::comm::Comm;
use crate::error::{Class, Error, Result};
use crate::process_topology::ProcTopo;

/// The communicator's process topology, or `MPI_ERR_TOPOLOGY`.
pub(crate) fn topo_of(c: &Comm) -> Result<&Arc<ProcTopo>> {
    c.proc_topo().ok_or_else(|| {
        Error::new(
            Class::Topology,
            "the communicator has no process topology (not made by MPI_Cart_create, MPI_Graph_create or MPI_Dist_graph_create*)",
        )
    })
}

/// The Cartesian grid of the communicator (`dims`, `periods`), or `MPI_ERR_TOPOLOGY`.
pub(crate) fn cart_of(c: &Comm) -> Result<(&[usize], &[bool])> {
    match &**topo_of(c)? {
        ProcTopo::Cart { dims, periods } => Ok((dims, periods)),
        _ => Err(Error::new(
            Class::Topology,
            "the communicator's process topology is not Cartesian",
        )),
    }
}

/// The graph of the communicator (`index`, `edges`), or `MPI_ERR_TOPOLOGY`.
pub(crate) fn graph_of(c: &Comm) -> Result<(&[usize], &[usize])> {
    match &**topo_of(c)? {
        ProcTopo::Graph { index, edges } => Ok((index, edges)),
        _ => Err(Error::new(
            Class::Topology,
            "the communicator's process topology is not a graph (MPI_Graph_create)",
        )),
    }
}

/// A count argument (`ndims`, `nnodes`, `maxdims`, ...): negative is `class`.
pub(crate) fn len_arg(v: c_int, what: &str, class: Class) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::new(class, format!("{what} is negative ({v})")))
}

/// `n` ints from an input array (NULL is `MPI_ERR_ARG` unless `n` is 0).
///
/// # Safety
/// A non-NULL `p` holds at least `n` ints.
pub(crate) unsafe fn ints_in(p: *const c_int, n: usize, what: &str) -> Result<Vec<c_int>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: forwarded contract.
    let v = unsafe { Ints::Int(p).read(n, what) }?;
    Ok(v.into_iter().map(|x| x as c_int).collect())
}

/// A rank of a communicator of `size` processes named `what`, or `MPI_ERR_RANK`.
pub(crate) fn rank_in(v: c_int, size: usize, what: &str) -> Result<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&r| r < size)
        .ok_or_else(|| {
            Error::new(
                Class::Rank,
                format!("{what} ({v}) is not a rank of a group of size {size}"),
            )
        })
}

/// An output array that will receive `n` ints: NULL is `MPI_ERR_ARG` unless `n` is 0.
/// Checked for every output before any is written.
pub(crate) fn ints_out(p: *mut c_int, n: usize, what: &str) -> Result<()> {
    if n > 0 && p.is_null() {
        return Err(Error::new(Class::Arg, format!("{what} is NULL")));
    }
    Ok(())
}

/// Writes `v` to an output array that passed [`ints_out`] for `v.len()` ints.
///
/// # Safety
/// `p` holds at least `v.len()` ints, writable.
pub(crate) unsafe fn put_ints(p: *mut c_int, v: impl IntoIterator<Item = usize>) {
    for (i, x) in v.into_iter().enumerate() {
        // SAFETY: per the contract (the caller checked the length and NULL).
        unsafe { p.add(i).write(x as c_int) };
    }
}
