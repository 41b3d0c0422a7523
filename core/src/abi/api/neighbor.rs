//! Neighbor collectives: `MPI_Neighbor_allgather(v)`, `MPI_Neighbor_alltoall(v|w)`, their
//! nonblocking `MPI_Ineighbor_*` forms and the `_c` large-count variants of all of them.
//!
//! Every rank exchanges with its neighbors only ([`crate::process_topology`]): block `i` of
//! the receive buffer comes from source `i`, block `i` of the send buffer (the whole send
//! buffer in the allgathers) goes to destination `i`. One schedule of sends and receives
//! does it, paired by tag where two processes are neighbors more than once; a process that is
//! its own neighbor copies locally. `MPI_PROC_NULL` neighbors (a non-periodic grid's edges)
//! send nothing, and their receive blocks are left untouched — also for derived datatypes,
//! whose staged blocks are unpacked only where something arrived.
//!
//! Buffers are laid out and checked like those of the ordinary collectives (`blocks.rs`),
//! before anything moves. The signature carries the kind only: counts are pairwise.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::blocks::{laid_out, regular, Ints, Side, BYTE};
use super::plan::Plan;
use super::topo_args::topo_of;
use super::typearg::Blocks;
use super::*;
use crate::engine::{Fold, Schedule};
use crate::error::{Class, Error, Result};
use crate::frame::Kind;
use crate::process_topology::Neighbors;
use crate::request::Sched;

/// One buffer's blocks: block `i` is item `at[i].1` of `groups[at[i].0]` (one group per
/// datatype: a single one except in the alltoallw forms).
struct Parts {
    groups: Vec<Blocks>,
    at: Vec<(usize, usize)>,
}

impl Parts {
    /// `n` blocks laid out by `laid_out`/`regular` in one datatype.
    fn uniform(buf: *const c_void, side: &Side, items: &[(isize, usize)]) -> Parts {
        Parts {
            groups: vec![side.v.blocks(buf, items)],
            at: (0..items.len()).map(|i| (0, i)).collect(),
        }
    }

    fn span(&self, i: usize) -> (*mut u8, usize) {
        let (g, k) = self.at[i];
        self.groups[g].spans()[k]
    }

    /// # Safety
    /// Block `i` is readable in the user's buffer.
    unsafe fn load(&self, i: usize) {
        let (g, k) = self.at[i];
        // SAFETY: forwarded contract.
        unsafe { self.groups[g].load(k) }
    }

    /// # Safety
    /// Block `i` is writable in the user's buffer.
    unsafe fn store(&self, i: usize) {
        let (g, k) = self.at[i];
        // SAFETY: forwarded contract.
        unsafe { self.groups[g].store(k) }
    }
}

/// A checked neighbor exchange: the neighbors, both buffers' blocks, and which send block
/// goes to each destination.
struct Exchange {
    /// This process's rank in the communicator.
    me: usize,
    nb: Neighbors,
    send: Parts,
    recv: Parts,
    /// Send block of destination `i` (all 0 in the allgathers).
    send_of: Vec<usize>,
}

// SAFETY: an exchange holds raw pointers into the caller's buffers, which MPI forbids the
// caller to touch while the request is active. One thread at a time uses it: a launch runs
// under the request's lock, and the completion of that launch (which stores the receive
// blocks) ends before the next `MPI_Start` may launch again.
unsafe impl Send for Exchange {}
// SAFETY: as above; shared (an `Arc`) between the plan and the completion of its launch only.
unsafe impl Sync for Exchange {}

/// The tasks of one exchange, as plain pointers (what the schedule is built from).
#[derive(Clone)]
struct Tasks {
    sends: Vec<(usize, u32, *const u8, usize)>,
    recvs: Vec<(usize, u32, *mut u8, usize)>,
    /// Messages to itself: `(dst, src, len)`.
    copies: Vec<(*mut u8, *const u8, usize)>,
}

impl Exchange {
    /// The tasks, pairing the messages a process sends to itself with its receives from
    /// itself (by tag); an unpaired or mismatched one is an error, caught before anything
    /// moves.
    fn tasks(&self, me: usize) -> Result<Tasks> {
        let mut t = Tasks {
            sends: Vec::new(),
            recvs: Vec::new(),
            copies: Vec::new(),
        };
        let mut to_self: Vec<(u32, *const u8, usize)> = Vec::new();
        for (i, &(peer, tag)) in self.nb.send.iter().enumerate() {
            let (p, len) = self.send.span(self.send_of[i]);
            match peer {
                Some(q) if q == me => to_self.push((tag, p, len)),
                Some(q) => t.sends.push((q, tag, p, len)),
                None => {}
            }
        }
        for (i, &(peer, tag)) in self.nb.recv.iter().enumerate() {
            let (p, len) = self.recv.span(i);
            match peer {
                Some(q) if q == me => {
                    let k = to_self
                        .iter()
                        .position(|x| x.0 == tag)
                        .ok_or_else(|| {
                            Error::new(
                                Class::Topology,
                                format!("source {i} is this process, but it is not among its own destinations as often"),
                            )
                        })?;
                    let (_, src, slen) = to_self.swap_remove(k);
                    if slen != len {
                        return Err(Error::new(
                            Class::Truncate,
                            format!("this process sends itself {slen} bytes but receives block {i} of {len} bytes"),
                        ));
                    }
                    t.copies.push((p, src, len));
                }
                Some(q) => t.recvs.push((q, tag, p, len)),
                None => {}
            }
        }
        Ok(t)
    }

    /// Loads the send blocks that go somewhere.
    ///
    /// # Safety
    /// The send buffer is readable as laid out.
    unsafe fn load(&self) {
        let mut done = vec![false; self.send.at.len()];
        for (i, &(peer, _)) in self.nb.send.iter().enumerate() {
            let b = self.send_of[i];
            if peer.is_some() && !done[b] {
                done[b] = true;
                // SAFETY: forwarded contract.
                unsafe { self.send.load(b) };
            }
        }
    }

    /// Writes back the receive blocks that something arrived in.
    ///
    /// # Safety
    /// The receive buffer is writable as laid out.
    unsafe fn store(&self) {
        for (i, &(peer, _)) in self.nb.recv.iter().enumerate() {
            if peer.is_some() {
                // SAFETY: forwarded contract.
                unsafe { self.recv.store(i) };
            }
        }
    }
}

fn build<'c>(c: &'c Comm, t: &Tasks, kind: Kind) -> Schedule<'c> {
    let seq = c.next_seq();
    let mut s = Schedule::new(c.ctx(sig(kind, 0, BYTE, 0, -1), seq, 1));
    for &(dst, src, len) in &t.copies {
        s.copy(dst, src, len, &[]);
    }
    for &(peer, tag, p, len) in &t.sends {
        s.send(peer, tag, p, len, &[]);
    }
    for &(peer, tag, p, len) in &t.recvs {
        s.recv(peer, tag, p, len, Fold::Copy, &[]);
    }
    s
}

impl Exchange {
    /// The collective's plan: at each launch (once for `MPI_Ineighbor_*` and the blocking
    /// form, at every `MPI_Start` of a persistent request) the send blocks are loaded as they
    /// are then, the schedule is built, and its completion stores the receive blocks.
    fn launcher(self, kind: Kind) -> Result<Plan> {
        // The tasks are checked now (a self-exchange that does not pair up is an error before
        // anything moves); `me` is the rank in the communicator the plan was made on.
        let me = self.me;
        let tasks = self.tasks(me)?;
        let this = Arc::new(self);
        Ok(Plan::new(None, move |c| {
            // SAFETY: MPI: the send buffer holds the blocks as laid out (checked when the plan
            // was made) and stays valid while the request is active.
            unsafe { this.load() };
            let keep = this.clone();
            let finish: Box<dyn FnOnce() + Send> = Box::new(move || {
                // SAFETY: as above, for the receive buffer; MPI keeps it valid and untouched
                // until completion.
                unsafe { keep.store() }
            });
            let tasks = tasks.clone();
            Sched::new(c.clone(), move |c| Ok(build(c, &tasks, kind)), Some(finish))
        }))
    }
}

/// The first `n` elements of an array argument (none read when `n` is 0: NULL is fine then).
unsafe fn array(v: Ints, n: usize, what: &str) -> Result<Vec<i64>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: forwarded contract.
    unsafe { v.read(n, what) }
}

/// Like [`array`], as counts.
unsafe fn counts(v: Ints, n: usize, what: &str) -> Result<Vec<usize>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: forwarded contract.
    unsafe { v.counts(n, what) }
}

/// The communicator's neighbors, after the device-buffer check every neighbor call makes.
fn neighbors_of(c: &Comm, bufs: [*const c_void; 2]) -> Result<Neighbors> {
    host_only(&bufs)?;
    Ok(topo_of(c)?.neighbors(c.rank))
}

/// The send buffer and the receive buffer must not overlap where something moves.
fn apart(send: *const c_void, recv: *const c_void, sbytes: usize, rbytes: usize) -> Result<()> {
    no_alias(send, recv, sbytes.min(rbytes))
}

// ---------------------------------------------------------------------------------------------
// Allgather(v)

/// The plan of `MPI_Neighbor_allgather`; its three forms' entry points are generated.
#[allow(clippy::too_many_arguments)]
pub unsafe fn neighbor_allgather(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    c: &Comm,
) -> Result<Plan> {
    let nb = neighbors_of(c, [send, recv])?;
    let ss = Side::new(sdt, "sendtype")?;
    let scnt = count_arg(scount, "sendcount")?;
    let slaid = laid_out(send, &ss, &[scnt], &[0], ["sendbuf", "sendcount", "displs"])?;
    let rs = Side::new(rdt, "recvtype")?;
    let rcnt = count_arg(rcount, "recvcount")?;
    let rlaid = regular(recv, &rs, rcnt, nb.recv.len(), "recvbuf", "recvcount")?;
    apart(send, recv, slaid.bytes(), rlaid.bytes())?;
    let plan = Exchange {
        send_of: vec![0; nb.send.len()],
        send: Parts::uniform(send, &ss, &slaid.items),
        recv: Parts::uniform(recv, &rs, &rlaid.items),
        me: c.rank,
        nb,
    };
    plan.launcher(Kind::NeighborAllgather)
}

/// The plan of `MPI_Neighbor_allgatherv`; its three forms' entry points are generated.
#[allow(clippy::too_many_arguments)]
pub unsafe fn neighbor_allgatherv(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    displs: Ints,
    rdt: c_int,
    c: &Comm,
) -> Result<Plan> {
    let nb = neighbors_of(c, [send, recv])?;
    let ss = Side::new(sdt, "sendtype")?;
    let scnt = count_arg(scount, "sendcount")?;
    let slaid = laid_out(send, &ss, &[scnt], &[0], ["sendbuf", "sendcount", "displs"])?;
    let n = nb.recv.len();
    let rs = Side::new(rdt, "recvtype")?;
    // SAFETY: MPI: one count and one displacement per source.
    let (rc, rd) = unsafe {
        (
            counts(rcounts, n, "recvcounts")?,
            array(displs, n, "displs")?,
        )
    };
    let rlaid = laid_out(recv, &rs, &rc, &rd, ["recvbuf", "recvcounts", "displs"])?;
    apart(send, recv, slaid.bytes(), rlaid.bytes())?;
    let plan = Exchange {
        send_of: vec![0; nb.send.len()],
        send: Parts::uniform(send, &ss, &slaid.items),
        recv: Parts::uniform(recv, &rs, &rlaid.items),
        me: c.rank,
        nb,
    };
    plan.launcher(Kind::NeighborAllgatherv)
}

// ---------------------------------------------------------------------------------------------
// Alltoall(v)

/// The plan of `MPI_Neighbor_alltoall`; its three forms' entry points are generated.
#[allow(clippy::too_many_arguments)]
pub unsafe fn neighbor_alltoall(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    c: &Comm,
) -> Result<Plan> {
    let nb = neighbors_of(c, [send, recv])?;
    let ss = Side::new(sdt, "sendtype")?;
    let scnt = count_arg(scount, "sendcount")?;
    let slaid = regular(send, &ss, scnt, nb.send.len(), "sendbuf", "sendcount")?;
    let rs = Side::new(rdt, "recvtype")?;
    let rcnt = count_arg(rcount, "recvcount")?;
    let rlaid = regular(recv, &rs, rcnt, nb.recv.len(), "recvbuf", "recvcount")?;
    apart(send, recv, slaid.bytes(), rlaid.bytes())?;
    let plan = Exchange {
        send_of: (0..nb.send.len()).collect(),
        send: Parts::uniform(send, &ss, &slaid.items),
        recv: Parts::uniform(recv, &rs, &rlaid.items),
        me: c.rank,
        nb,
    };
    plan.launcher(Kind::NeighborAlltoall)
}

/// The plan of `MPI_Neighbor_alltoallv`; its three forms' entry points are generated.
#[allow(clippy::too_many_arguments)]
pub unsafe fn neighbor_alltoallv(
    send: *const c_void,
    scounts: Ints,
    sdispls: Ints,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    rdispls: Ints,
    rdt: c_int,
    c: &Comm,
) -> Result<Plan> {
    let nb = neighbors_of(c, [send, recv])?;
    let (nout, nin) = (nb.send.len(), nb.recv.len());
    let ss = Side::new(sdt, "sendtype")?;
    // SAFETY: MPI: one count and one displacement per destination / source.
    let (sc, sd, rc, rd) = unsafe {
        (
            counts(scounts, nout, "sendcounts")?,
            array(sdispls, nout, "sdispls")?,
            counts(rcounts, nin, "recvcounts")?,
            array(rdispls, nin, "rdispls")?,
        )
    };
    let slaid = laid_out(send, &ss, &sc, &sd, ["sendbuf", "sendcounts", "sdispls"])?;
    let rs = Side::new(rdt, "recvtype")?;
    let rlaid = laid_out(recv, &rs, &rc, &rd, ["recvbuf", "recvcounts", "rdispls"])?;
    apart(send, recv, slaid.bytes(), rlaid.bytes())?;
    let plan = Exchange {
        send_of: (0..nout).collect(),
        send: Parts::uniform(send, &ss, &slaid.items),
        recv: Parts::uniform(recv, &rs, &rlaid.items),
        me: c.rank,
        nb,
    };
    plan.launcher(Kind::NeighborAlltoallv)
}

// ---------------------------------------------------------------------------------------------
// Alltoallw

/// Blocks of `counts[i]` items of `types[i]` at byte displacement `displs[i]` from `buf`.
unsafe fn per_type(
    buf: *const c_void,
    counts: &[usize],
    displs: &[i64],
    types: *const c_int,
    names: [&str; 4],
) -> Result<Parts> {
    let [bname, cname, dname, tname] = names;
    let n = counts.len();
    if n > 0 && types.is_null() {
        return Err(Error::new(Class::Arg, format!("{tname} is NULL")));
    }
    let mut groups = Vec::with_capacity(n);
    let mut total = 0usize;
    let mut offsets = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: MPI: one datatype per neighbor, non-NULL checked above.
        let side = indexed(tname, i, |w| Side::new(unsafe { *types.add(i) }, w))?;
        let t = indexed(cname, i, |w| side.typed(counts[i], w))?;
        let at = isize::try_from(displs[i]).map_err(|_| {
            Error::new(
                Class::Arg,
                format!("{dname}[{i}] ({}) is too large", displs[i]),
            )
        })?;
        total = total
            .checked_add(t.bytes)
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| Error::new(Class::Count, format!("the {cname} add up to too much")))?;
        if counts[i] > 0 {
            offsets.push(at.saturating_add(side.t.true_lb()));
        }
        groups.push(side.v.blocks(buf, &[(at, counts[i])]));
    }
    buf_or_bottom(buf, total, bname, offsets)?;
    Ok(Parts {
        groups,
        at: (0..n).map(|i| (i, 0)).collect(),
    })
}

/// The plan of `MPI_Neighbor_alltoallw`; its three forms' entry points are generated.
#[allow(clippy::too_many_arguments)]
pub unsafe fn neighbor_alltoallw(
    send: *const c_void,
    scounts: Ints,
    sdispls: Ints,
    stypes: *const c_int,
    recv: *mut c_void,
    rcounts: Ints,
    rdispls: Ints,
    rtypes: *const c_int,
    c: &Comm,
) -> Result<Plan> {
    let nb = neighbors_of(c, [send, recv])?;
    let (nout, nin) = (nb.send.len(), nb.recv.len());
    // SAFETY: MPI: one count, displacement and datatype per destination / source.
    let (sendp, recvp) = unsafe {
        let sc = counts(scounts, nout, "sendcounts")?;
        let sd = array(sdispls, nout, "sdispls")?;
        let rc = counts(rcounts, nin, "recvcounts")?;
        let rd = array(rdispls, nin, "rdispls")?;
        (
            per_type(
                send,
                &sc,
                &sd,
                stypes,
                ["sendbuf", "sendcounts", "sdispls", "sendtypes"],
            )?,
            per_type(
                recv,
                &rc,
                &rd,
                rtypes,
                ["recvbuf", "recvcounts", "rdispls", "recvtypes"],
            )?,
        )
    };
    // Both MPI_BOTTOM: the types' addresses say where the data is, not the pointers.
    if nout > 0 && nin > 0 && !send.is_null() && std::ptr::eq(send, recv as *const c_void) {
        let moved = (0..nout).any(|i| sendp.span(i).1 > 0) && (0..nin).any(|i| recvp.span(i).1 > 0);
        if moved {
            return Err(Error::new(
                Class::Buffer,
                "sendbuf and recvbuf are the same buffer",
            ));
        }
    }
    let plan = Exchange {
        send_of: (0..nout).collect(),
        send: sendp,
        recv: recvp,
        me: c.rank,
        nb,
    };
    plan.launcher(Kind::NeighborAlltoallw)
}
