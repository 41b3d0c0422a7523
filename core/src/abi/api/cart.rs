//! Cartesian topologies: `MPI_Cart_create`, `MPI_Cart_map`, `MPI_Cartdim_get`,
//! `MPI_Cart_get`, `MPI_Cart_rank`, `MPI_Cart_coords`, `MPI_Cart_shift`, `MPI_Cart_sub`.
//!
//! hcomm never reorders: process `i` of the grid is rank `i` of the old communicator, and
//! ranks beyond the grid get `MPI_COMM_NULL` (`MPI_Cart_map` says the same).
#![allow(clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::sync::Arc;

use super::topo_args::*;
use super::*;
use crate::abi::guard;
use crate::abi::handles as h;
use crate::abi::out;
use crate::error::{Class, Error, Result};
use crate::process_topology::ProcTopo;
use crate::runtime;

/// A grid argument (`ndims`, `dims`, `periods`), checked: its dims, periods and size.
unsafe fn grid_arg(
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
) -> Result<(Vec<usize>, Vec<bool>, usize)> {
    let n = len_arg(ndims, "ndims", Class::Dims)?;
    // SAFETY: MPI: dims and periods hold ndims ints.
    let d = unsafe { ints_in(dims, n, "dims") }?;
    // SAFETY: as above.
    let p = unsafe { ints_in(periods, n, "periods") }?;
    let mut size: usize = 1;
    let mut out = Vec::with_capacity(n);
    for (i, &v) in d.iter().enumerate() {
        let v = usize::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| Error::new(Class::Dims, format!("dims[{i}] is not positive ({v})")))?;
        size = size
            .checked_mul(v)
            .filter(|&s| s <= c_int::MAX as usize)
            .ok_or_else(|| Error::new(Class::Dims, "the product of dims is too large"))?;
        out.push(v);
    }
    Ok((out, p.iter().map(|&x| x != 0).collect(), size))
}

/// The grid's size must not exceed the communicator's.
fn fits(size: usize, c: &Comm) -> Result<()> {
    if size > c.size() {
        return Err(Error::new(
            Class::Arg,
            format!(
                "the grid has {size} processes (the product of dims), more than the communicator's {}",
                c.size()
            ),
        ));
    }
    Ok(())
}

pub unsafe fn cart_create(
    comm_old: c_int,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    comm_cart: *mut c_int,
) -> c_int {
    guard("MPI_Cart_create", Some(comm_old), || {
        let rt = runtime::get()?;
        let c = comm_of(rt, comm_old)?;
        // SAFETY: MPI's contract for dims and periods.
        let (dims, periods, size) = unsafe { grid_arg(ndims, dims, periods) }?;
        fits(size, &c)?;
        if comm_cart.is_null() {
            return Err(Error::new(Class::Arg, "comm_cart is NULL"));
        }
        let handle = match c.create(&c.world[..size])? {
            Some(child) => {
                rt.add_comm(child.with_proc_topo(Arc::new(ProcTopo::Cart { dims, periods })))?
            }
            None => h::COMM_NULL,
        };
        out(comm_cart, "comm_cart", handle)
    })
}

pub unsafe fn cart_map(
    comm: c_int,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    guard("MPI_Cart_map", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        // SAFETY: MPI's contract for dims and periods.
        let (_, _, size) = unsafe { grid_arg(ndims, dims, periods) }?;
        fits(size, &c)?;
        let r = if c.rank < size {
            c.rank as c_int
        } else {
            h::UNDEFINED
        };
        out(newrank, "newrank", r)
    })
}

pub unsafe fn cartdim_get(comm: c_int, ndims: *mut c_int) -> c_int {
    guard("MPI_Cartdim_get", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let (dims, _) = cart_of(&c)?;
        out(ndims, "ndims", dims.len() as c_int)
    })
}

pub unsafe fn cart_get(
    comm: c_int,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    guard("MPI_Cart_get", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let (d, p) = cart_of(&c)?;
        let max = len_arg(maxdims, "maxdims", Class::Arg)?;
        let n = d.len().min(max);
        ints_out(dims, n, "dims")?;
        ints_out(periods, n, "periods")?;
        ints_out(coords, n, "coords")?;
        let me = ProcTopo::coords_of(d, c.rank);
        // SAFETY: each array holds maxdims >= n ints (MPI), checked non-NULL.
        unsafe {
            put_ints(dims, d[..n].iter().copied());
            put_ints(periods, p[..n].iter().map(|&x| x as usize));
            put_ints(coords, me[..n].iter().copied());
        }
        Ok(())
    })
}

pub unsafe fn cart_rank(comm: c_int, coords: *const c_int, rank: *mut c_int) -> c_int {
    guard("MPI_Cart_rank", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let (d, p) = cart_of(&c)?;
        // SAFETY: MPI: coords holds ndims ints.
        let given = unsafe { ints_in(coords, d.len(), "coords") }?;
        let mut at = Vec::with_capacity(d.len());
        for (i, &v) in given.iter().enumerate() {
            let x = ProcTopo::moved(0, v as i64, d[i], p[i]).ok_or_else(|| {
                Error::new(
                    Class::Arg,
                    format!(
                        "coords[{i}] ({v}) is outside 0..{} in a non-periodic dimension",
                        d[i]
                    ),
                )
            })?;
            at.push(x);
        }
        out(rank, "rank", ProcTopo::rank_of(d, &at) as c_int)
    })
}

pub unsafe fn cart_coords(comm: c_int, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int {
    guard("MPI_Cart_coords", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let (d, _) = cart_of(&c)?;
        let r = rank_in(rank, c.size(), "rank")?;
        let max = len_arg(maxdims, "maxdims", Class::Arg)?;
        if max < d.len() {
            return Err(Error::new(
                Class::Arg,
                format!(
                    "maxdims ({max}) is less than the topology's {} dimensions",
                    d.len()
                ),
            ));
        }
        ints_out(coords, d.len(), "coords")?;
        // SAFETY: coords holds maxdims >= ndims ints (MPI), checked non-NULL.
        unsafe { put_ints(coords, ProcTopo::coords_of(d, r)) };
        Ok(())
    })
}

pub unsafe fn cart_shift(
    comm: c_int,
    direction: c_int,
    disp: c_int,
    source: *mut c_int,
    dest: *mut c_int,
) -> c_int {
    guard("MPI_Cart_shift", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let (d, p) = cart_of(&c)?;
        let dim = usize::try_from(direction)
            .ok()
            .filter(|&x| x < d.len())
            .ok_or_else(|| {
                Error::new(
                    Class::Arg,
                    format!(
                        "direction ({direction}) is not a dimension of the {}-dimensional grid",
                        d.len()
                    ),
                )
            })?;
        if source.is_null() || dest.is_null() {
            return Err(Error::new(Class::Arg, "source or dest is NULL"));
        }
        let (s, t) = ProcTopo::shift(d, p, c.rank, dim, disp as i64);
        let as_int = |x: Option<usize>| x.map_or(h::PROC_NULL, |r| r as c_int);
        out(source, "source", as_int(s))?;
        out(dest, "dest", as_int(t))
    })
}

pub unsafe fn cart_sub(comm: c_int, remain_dims: *const c_int, newcomm: *mut c_int) -> c_int {
    guard("MPI_Cart_sub", Some(comm), || {
        let rt = runtime::get()?;
        let c = comm_of(rt, comm)?;
        let (d, p) = cart_of(&c)?;
        // SAFETY: MPI: remain_dims holds ndims ints.
        let keep: Vec<bool> = unsafe { ints_in(remain_dims, d.len(), "remain_dims") }?
            .iter()
            .map(|&x| x != 0)
            .collect();
        if newcomm.is_null() {
            return Err(Error::new(Class::Arg, "newcomm is NULL"));
        }
        let me = ProcTopo::coords_of(d, c.rank);
        let pick = |want: bool| -> (Vec<usize>, Vec<usize>, Vec<bool>) {
            let idx: Vec<usize> = (0..d.len()).filter(|&i| keep[i] == want).collect();
            (
                idx.iter().map(|&i| d[i]).collect(),
                idx.iter().map(|&i| me[i]).collect(),
                idx.iter().map(|&i| p[i]).collect(),
            )
        };
        // One subgrid per position in the dropped dimensions; within it, the old rank order
        // is the row-major order of the kept coordinates.
        let (gone_dims, gone_at, _) = pick(false);
        let (dims, _, periods) = pick(true);
        let color = ProcTopo::rank_of(&gone_dims, &gone_at) as c_int;
        let child = c
            .split(color, c.rank as c_int)?
            .expect("a non-negative color always gives a communicator");
        let handle =
            rt.add_comm(child.with_proc_topo(Arc::new(ProcTopo::Cart { dims, periods })))?;
        out(newcomm, "newcomm", handle)
    })
}
