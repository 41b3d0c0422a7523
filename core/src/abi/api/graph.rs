//! Graph and distributed-graph topologies: `MPI_Graph_create`, `MPI_Graph_map`,
//! `MPI_Graphdims_get`, `MPI_Graph_get`, `MPI_Graph_neighbors_count`, `MPI_Graph_neighbors`,
//! `MPI_Dist_graph_create_adjacent`, `MPI_Dist_graph_create`,
//! `MPI_Dist_graph_neighbors_count`, `MPI_Dist_graph_neighbors`, and `MPI_Topo_test`.
//!
//! As for Cartesian grids, hcomm never reorders. `MPI_Dist_graph_create` gathers every
//! rank's edge list on every rank (two internal allgathers over the old communicator: the
//! lengths, then the lists padded to the longest), and each rank keeps the edges that end or
//! start at itself, in the order of the rank that named them, then of its list.
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

/// A graph argument (`nnodes`, `index`, `edges`) of a communicator of `size` ranks, checked.
unsafe fn graph_arg(
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    size: usize,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let n = len_arg(nnodes, "nnodes", Class::Arg)?;
    if n > size {
        return Err(Error::new(
            Class::Arg,
            format!("nnodes ({n}) is more than the communicator's {size} processes"),
        ));
    }
    // SAFETY: MPI: index holds nnodes ints.
    let idx = unsafe { ints_in(index, n, "index") }?;
    let mut prev = 0;
    let mut index = Vec::with_capacity(n);
    for (i, &v) in idx.iter().enumerate() {
        if v < prev {
            return Err(Error::new(
                Class::Arg,
                format!("index[{i}] ({v}) is less than the one before it ({prev})"),
            ));
        }
        prev = v;
        index.push(v as usize);
    }
    let nedges = index.last().copied().unwrap_or(0);
    // SAFETY: MPI: edges holds index[nnodes - 1] ints.
    let e = unsafe { ints_in(edges, nedges, "edges") }?;
    let edges = e
        .iter()
        .enumerate()
        .map(|(i, &v)| rank_in(v, n, &format!("edges[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    Ok((index, edges))
}

pub unsafe fn graph_create(
    comm_old: c_int,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    comm_graph: *mut c_int,
) -> c_int {
    guard("MPI_Graph_create", Some(comm_old), || {
        let rt = runtime::get()?;
        let c = comm_of(rt, comm_old)?;
        // SAFETY: MPI's contract for index and edges.
        let (index, edges) = unsafe { graph_arg(nnodes, index, edges, c.size()) }?;
        if comm_graph.is_null() {
            return Err(Error::new(Class::Arg, "comm_graph is NULL"));
        }
        let handle = match c.create(&c.world[..index.len()])? {
            Some(child) => {
                rt.add_comm(child.with_proc_topo(Arc::new(ProcTopo::Graph { index, edges })))?
            }
            None => h::COMM_NULL,
        };
        out(comm_graph, "comm_graph", handle)
    })
}

pub unsafe fn graph_map(
    comm: c_int,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    guard("MPI_Graph_map", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        // SAFETY: MPI's contract for index and edges.
        let (index, _) = unsafe { graph_arg(nnodes, index, edges, c.size()) }?;
        let r = if c.rank < index.len() {
            c.rank as c_int
        } else {
            h::UNDEFINED
        };
        out(newrank, "newrank", r)
    })
}

pub unsafe fn graphdims_get(comm: c_int, nnodes: *mut c_int, nedges: *mut c_int) -> c_int {
    guard("MPI_Graphdims_get", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let (index, edges) = graph_of(&c)?;
        if nnodes.is_null() || nedges.is_null() {
            return Err(Error::new(Class::Arg, "nnodes or nedges is NULL"));
        }
        out(nnodes, "nnodes", index.len() as c_int)?;
        out(nedges, "nedges", edges.len() as c_int)
    })
}

pub unsafe fn graph_get(
    comm: c_int,
    maxindex: c_int,
    maxedges: c_int,
    index: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    guard("MPI_Graph_get", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let (idx, e) = graph_of(&c)?;
        let ni = idx.len().min(len_arg(maxindex, "maxindex", Class::Arg)?);
        let ne = e.len().min(len_arg(maxedges, "maxedges", Class::Arg)?);
        ints_out(index, ni, "index")?;
        ints_out(edges, ne, "edges")?;
        // SAFETY: the arrays hold maxindex and maxedges ints (MPI), checked non-NULL.
        unsafe {
            put_ints(index, idx[..ni].iter().copied());
            put_ints(edges, e[..ne].iter().copied());
        }
        Ok(())
    })
}

pub unsafe fn graph_neighbors_count(comm: c_int, rank: c_int, nneighbors: *mut c_int) -> c_int {
    guard("MPI_Graph_neighbors_count", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let (index, edges) = graph_of(&c)?;
        let r = rank_in(rank, index.len(), "rank")?;
        let n = ProcTopo::graph_neighbors(index, edges, r).len();
        out(nneighbors, "nneighbors", n as c_int)
    })
}

pub unsafe fn graph_neighbors(
    comm: c_int,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> c_int {
    guard("MPI_Graph_neighbors", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let (index, edges) = graph_of(&c)?;
        let r = rank_in(rank, index.len(), "rank")?;
        let nb = ProcTopo::graph_neighbors(index, edges, r);
        let n = nb
            .len()
            .min(len_arg(maxneighbors, "maxneighbors", Class::Arg)?);
        ints_out(neighbors, n, "neighbors")?;
        // SAFETY: neighbors holds maxneighbors >= n ints (MPI), checked non-NULL.
        unsafe { put_ints(neighbors, nb[..n].iter().copied()) };
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------
// Distributed graphs

/// A weights argument for `n` edges: `None` for `MPI_UNWEIGHTED`; `MPI_WEIGHTS_EMPTY` (or
/// any pointer, when `n` is 0) is an empty list.
unsafe fn weights_arg(p: *const c_int, n: usize, what: &str) -> Result<Option<Vec<c_int>>> {
    if std::ptr::eq(p, &h::UNWEIGHTED_OBJ) {
        return Ok(None);
    }
    if std::ptr::eq(p, &h::WEIGHTS_EMPTY_OBJ) {
        if n > 0 {
            return Err(Error::new(
                Class::Arg,
                format!("{what} is MPI_WEIGHTS_EMPTY but there are {n} edges"),
            ));
        }
        return Ok(Some(Vec::new()));
    }
    // SAFETY: MPI: a weights array holds one int per edge.
    unsafe { ints_in(p, n, what) }.map(Some)
}

/// A list of `n` ranks of `c` (`sources`, `destinations`).
unsafe fn ranks_arg(p: *const c_int, n: usize, c: &Comm, what: &str) -> Result<Vec<usize>> {
    // SAFETY: MPI: the array holds n ints.
    let v = unsafe { ints_in(p, n, what) }?;
    v.iter()
        .enumerate()
        .map(|(i, &r)| rank_in(r, c.size(), &format!("{what}[{i}]")))
        .collect()
}

/// A new communicator over all of `c`'s ranks carrying `t`, published (no communication).
fn with_topo(rt: &runtime::Runtime, c: &Comm, t: ProcTopo) -> Result<c_int> {
    let child = c
        .create(&c.world)?
        .expect("every rank is a member of its own communicator");
    rt.add_comm(child.with_proc_topo(Arc::new(t)))
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn dist_graph_create_adjacent(
    comm_old: c_int,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    _info: c_int,
    _reorder: c_int,
    comm_dist_graph: *mut c_int,
) -> c_int {
    guard("MPI_Dist_graph_create_adjacent", Some(comm_old), || {
        let rt = runtime::get()?;
        let c = comm_of(rt, comm_old)?;
        let nin = len_arg(indegree, "indegree", Class::Arg)?;
        let nout = len_arg(outdegree, "outdegree", Class::Arg)?;
        // SAFETY: MPI's contract: each array holds its degree's ints.
        let (sources, dests, sw, dw) = unsafe {
            (
                ranks_arg(sources, nin, &c, "sources")?,
                ranks_arg(destinations, nout, &c, "destinations")?,
                weights_arg(sourceweights, nin, "sourceweights")?,
                weights_arg(destweights, nout, "destweights")?,
            )
        };
        // MPI requires MPI_UNWEIGHTED for both or neither; as MPICH does, the source side
        // decides, and a missing destination side weighs 1 per edge.
        let weights = sw.map(|s| (s, dw.unwrap_or_else(|| vec![1; nout])));
        if comm_dist_graph.is_null() {
            return Err(Error::new(Class::Arg, "comm_dist_graph is NULL"));
        }
        let t = ProcTopo::DistGraph {
            sources,
            dests,
            weights,
        };
        out(comm_dist_graph, "comm_dist_graph", with_topo(rt, &c, t)?)
    })
}

/// Bytes per edge in `MPI_Dist_graph_create`'s exchange: source, destination, weight.
const EDGE: usize = 12;

#[allow(clippy::too_many_arguments)]
pub unsafe fn dist_graph_create(
    comm_old: c_int,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights: *const c_int,
    _info: c_int,
    _reorder: c_int,
    comm_dist_graph: *mut c_int,
) -> c_int {
    guard("MPI_Dist_graph_create", Some(comm_old), || {
        let rt = runtime::get()?;
        let c = comm_of(rt, comm_old)?;
        let n = len_arg(n, "n", Class::Arg)?;
        // SAFETY: MPI: sources and degrees hold n ints.
        let srcs = unsafe { ranks_arg(sources, n, &c, "sources") }?;
        // SAFETY: as above.
        let degs = unsafe { ints_in(degrees, n, "degrees") }?;
        let mut total = 0usize;
        for (i, &d) in degs.iter().enumerate() {
            total += len_arg(d, &format!("degrees[{i}]"), Class::Arg)?;
        }
        // SAFETY: MPI: destinations and weights hold the sum of degrees ints.
        let dsts = unsafe { ranks_arg(destinations, total, &c, "destinations") }?;
        // SAFETY: as above.
        let w = unsafe { weights_arg(weights, total, "weights") }?;
        if comm_dist_graph.is_null() {
            return Err(Error::new(Class::Arg, "comm_dist_graph is NULL"));
        }
        let mut mine = Vec::with_capacity(total * EDGE);
        let mut k = 0;
        for (&s, &d) in srcs.iter().zip(&degs) {
            for _ in 0..d {
                let wt = w.as_ref().map_or(1, |w| w[k]);
                mine.extend_from_slice(&(s as u32).to_le_bytes());
                mine.extend_from_slice(&(dsts[k] as u32).to_le_bytes());
                mine.extend_from_slice(&wt.to_le_bytes());
                k += 1;
            }
        }
        let size = c.size();
        let mut lens = vec![0u8; 8 * size];
        crate::coll::allgather_internal(&c, &(total as u64).to_le_bytes(), &mut lens)?;
        let lens: Vec<usize> = lens
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
            .collect();
        let longest = lens.iter().copied().max().unwrap_or(0);
        let mut sources = Vec::new();
        let mut dests = Vec::new();
        let (mut sw, mut dw) = (Vec::new(), Vec::new());
        if longest > 0 {
            mine.resize(longest * EDGE, 0);
            let mut all = vec![0u8; longest * EDGE * size];
            crate::coll::allgather_internal(&c, &mine, &mut all)?;
            let word = |b: &[u8], at: usize| {
                u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
            };
            for (r, list) in all.chunks_exact(longest * EDGE).enumerate() {
                for e in list[..lens[r] * EDGE].chunks_exact(EDGE) {
                    let (s, d, wt) = (word(e, 0) as usize, word(e, 4) as usize, word(e, 8));
                    if d == c.rank {
                        sources.push(s);
                        sw.push(wt as c_int);
                    }
                    if s == c.rank {
                        dests.push(d);
                        dw.push(wt as c_int);
                    }
                }
            }
        }
        let t = ProcTopo::DistGraph {
            sources,
            dests,
            weights: w.map(|_| (sw, dw)),
        };
        out(comm_dist_graph, "comm_dist_graph", with_topo(rt, &c, t)?)
    })
}

/// The distributed graph of a communicator: sources, destinations, weights.
#[allow(clippy::type_complexity)]
fn dist_of(c: &Comm) -> Result<(&[usize], &[usize], Option<&(Vec<i32>, Vec<i32>)>)> {
    match &**topo_of(c)? {
        ProcTopo::DistGraph {
            sources,
            dests,
            weights,
        } => Ok((sources, dests, weights.as_ref())),
        _ => Err(Error::new(
            Class::Topology,
            "the communicator's process topology is not a distributed graph",
        )),
    }
}

pub unsafe fn dist_graph_neighbors_count(
    comm: c_int,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    guard("MPI_Dist_graph_neighbors_count", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let (s, d, w) = dist_of(&c)?;
        if indegree.is_null() || outdegree.is_null() || weighted.is_null() {
            return Err(Error::new(
                Class::Arg,
                "indegree, outdegree or weighted is NULL",
            ));
        }
        out(indegree, "indegree", s.len() as c_int)?;
        out(outdegree, "outdegree", d.len() as c_int)?;
        out(weighted, "weighted", w.is_some() as c_int)
    })
}

/// Whether a weights output array is to be written: not when the graph is unweighted or the
/// caller passed `MPI_UNWEIGHTED` / `MPI_WEIGHTS_EMPTY`.
fn weights_wanted(p: *mut c_int, weighted: bool) -> bool {
    weighted && !std::ptr::eq(p, &h::UNWEIGHTED_OBJ) && !std::ptr::eq(p, &h::WEIGHTS_EMPTY_OBJ)
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn dist_graph_neighbors(
    comm: c_int,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    guard("MPI_Dist_graph_neighbors", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let (s, d, w) = dist_of(&c)?;
        let nin = s
            .len()
            .min(len_arg(maxindegree, "maxindegree", Class::Arg)?);
        let nout = d
            .len()
            .min(len_arg(maxoutdegree, "maxoutdegree", Class::Arg)?);
        ints_out(sources, nin, "sources")?;
        ints_out(destinations, nout, "destinations")?;
        let (ws, wd) = (
            weights_wanted(sourceweights, w.is_some()),
            weights_wanted(destweights, w.is_some()),
        );
        if ws {
            ints_out(sourceweights, nin, "sourceweights")?;
        }
        if wd {
            ints_out(destweights, nout, "destweights")?;
        }
        // SAFETY: each array holds its max degree's ints (MPI), checked non-NULL above.
        unsafe {
            put_ints(sources, s[..nin].iter().copied());
            put_ints(destinations, d[..nout].iter().copied());
            if let Some((sw, dw)) = w {
                if ws {
                    put_ints(sourceweights, sw[..nin].iter().map(|&x| x as usize));
                }
                if wd {
                    put_ints(destweights, dw[..nout].iter().map(|&x| x as usize));
                }
            }
        }
        Ok(())
    })
}

/// `MPI_Topo_test`: `MPI_CART`, `MPI_GRAPH`, `MPI_DIST_GRAPH` or `MPI_UNDEFINED`.
pub unsafe fn topo_test(comm: c_int, status: *mut c_int) -> c_int {
    guard("MPI_Topo_test", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let kind = match c.proc_topo().map(|t| &**t) {
            Some(ProcTopo::Cart { .. }) => h::CART,
            Some(ProcTopo::Graph { .. }) => h::GRAPH,
            Some(ProcTopo::DistGraph { .. }) => h::DIST_GRAPH,
            None => h::UNDEFINED,
        };
        out(status, "status", kind)
    })
}
