//! Collective calls checked and ready to start: one [`Plan`] per nonblocking or persistent
//! collective call.
//!
//! Making a plan validates every argument exactly as the blocking form does (a rejected call
//! writes nothing), and touches neither buffer. [`Plan::launch`] then stages the buffers —
//! packing the input of derived datatypes from the caller's buffer *now* — and builds the
//! schedule, which takes the communicator's next call number. `MPI_Ixxx` launches its plan at
//! once; a persistent request (`MPI_Xxx_init`) keeps it and launches it at every `MPI_Start`,
//! so each start reads the buffers as they are then and matches the other ranks' starts in
//! call order. Staged output is unpacked by the schedule's completion.
//!
//! Every public function here has the C parameters of the blocking collective it plans (the
//! communicator as `c: &Comm`, last): `scripts/gen-mpi-api.py` generates the entry points of the
//! nonblocking form (`MPI_Ixxx`, through [`start_nonblocking`]) and of the persistent form
//! (`MPI_Xxx_init`, through [`start_persistent`]) of each one from the standard's description,
//! so a collective's argument checks and schedule are written once for both.
//!
//! Count and displacement arrays are read when the plan is made (MPI forbids changing them
//! while a persistent request lives). Datatypes are resolved then too, except in the reducing
//! collectives, which re-resolve the datatype and op handles at each launch (so those must
//! stay valid until the persistent request is freed).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::blocks::{
    laid_out, matching, one, own_recv, own_send, read_only, regular, Ints, Laid, Side, BYTE, RECV,
    SEND,
};
use super::coll::{ReduceIo, ReduceScatterIo, RootReduceIo};
use super::intercomm_coll;
use super::nb::{finishing, Unsent};
use super::*;
use crate::coll;
use crate::error::{Class, Error, Result};
use crate::frame::Kind;
use crate::request::{Op, Sched};
use crate::stats::Coll;

type Launch = Box<dyn FnMut(&Arc<Comm>) -> Result<Box<dyn Op>>>;

/// A validated collective call (see the module comment).
pub struct Plan {
    /// The collective it is profiled as (its nonblocking row), if any.
    pub(crate) stat: Option<Coll>,
    launch: Launch,
}

// SAFETY: the launch closure holds raw pointers into the caller's buffers and argument
// arrays' copies; MPI forbids the caller to touch those buffers while the request is active,
// and a persistent request launches its plan only from `MPI_Start`, under the request's lock.
unsafe impl Send for Plan {}

impl Plan {
    pub(crate) fn new(
        stat: Option<Coll>,
        mut f: impl FnMut(&Arc<Comm>) -> Result<Sched> + 'static,
    ) -> Plan {
        Plan::of_op(stat, move |c| Ok(Box::new(f(c)?) as Box<dyn Op>))
    }

    /// As [`Plan::new`], for a plan whose launch picks its kind of operation (the small
    /// allreduce's one-shot, `coll::allreduce_op`).
    pub(crate) fn of_op(
        stat: Option<Coll>,
        f: impl FnMut(&Arc<Comm>) -> Result<Box<dyn Op>> + 'static,
    ) -> Plan {
        Plan {
            stat,
            launch: Box::new(f),
        }
    }

    /// Stages the buffers and builds the operation (taking the next call number).
    pub(crate) fn launch(&mut self, c: &Arc<Comm>) -> Result<Box<dyn Op>> {
        (self.launch)(c)
    }

    /// A blocking call: launches the plan and drives the operation to its end on the caller's
    /// thread (the same spin-then-sleep wait and liveness checks as every blocking collective;
    /// no request, no progress thread).
    pub(crate) fn run(mut self, c: &Arc<Comm>) -> Result<()> {
        let mut op = self.launch(c)?;
        match crate::engine::drive(&c.ep, &mut *op) {
            Ok(()) => op.complete().map(drop),
            Err(e) => Err(op.failed(e)),
        }
    }
}

pub(super) type Finish = Option<Box<dyn FnOnce() + Send>>;

/// A completion closure that keeps `v` (staging the schedule reads) alive, then runs `f` on it.
pub(super) fn keeping<T: 'static>(v: T, f: impl FnOnce(T) + 'static) -> Finish {
    let v = Unsent((v, f));
    Some(Box::new(move || {
        let (v, f) = v.take();
        f(v)
    }))
}

/// Device buffers: only the blocking allreduce, bcast, reduce, allgather and reduce-scatter
/// take them (their own entry points); every collective planned here refuses them.
fn host_only(ptrs: &[*const c_void]) -> Result<()> {
    crate::cuda::refuse_device("this collective", ptrs)
}

/// Refuses an intercommunicator for a collective MPI defines on intracommunicators only.
fn intra_only(c: &Comm, what: &str) -> Result<()> {
    if c.inter().is_some() {
        return Err(Error::new(
            Class::Comm,
            format!("{what} is defined on intracommunicators only; the communicator is an intercommunicator"),
        ));
    }
    Ok(())
}

pub unsafe fn barrier(c: &Comm) -> Result<Plan> {
    if c.inter().is_some() {
        return Ok(intercomm_coll::barrier());
    }
    Ok(Plan::new(Some(Coll::Barrier), |c| {
        Sched::new(c.clone(), coll::build_barrier, None)
    }))
}

pub unsafe fn bcast(
    buf: *mut c_void,
    count: Count,
    dt: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    if c.inter().is_some() {
        // SAFETY: forwarded contract.
        return unsafe { intercomm_coll::bcast(buf, count, dt, root, c) };
    }
    host_only(&[buf])?;
    let cnt = count_arg(count, "count")?;
    let v = type_arg(dt, "datatype")?.moving();
    let root = root_arg(root, c)?;
    let n = v.count(cnt, "count")?;
    buf_arg(buf, v.bytes(cnt, "count")?, "buffer")?;
    let is_root = c.rank == root;
    let s = sig(Kind::Bcast, n, v.handle, 0, root as i32);
    Ok(Plan::new(Some(Coll::Bcast), move |c| {
        // SAFETY: MPI: `buf` holds `count` items; the root's are read, the others' written.
        let st = unsafe { v.stage(buf, cnt, is_root, !is_root) };
        let (p, dtv) = (st.ptr(), v.dt);
        Sched::new(
            c.clone(),
            move |c| coll::build_bcast(c, p, n, &dtv, root, s),
            finishing(st),
        )
    }))
}

pub unsafe fn allreduce(
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    c: &Comm,
) -> Result<Plan> {
    if c.inter().is_some() {
        // SAFETY: forwarded contract.
        return unsafe { intercomm_coll::allreduce(send, recv, count, dt, op) };
    }
    host_only(&[send, recv as *const c_void])?;
    // A dry run checks the arguments; launching stages again.
    // SAFETY: MPI's contract for sendbuf/recvbuf, checked inside.
    drop(unsafe { ReduceIo::new(send, recv, count, dt, op) }?);
    Ok(Plan::of_op(Some(Coll::Allreduce), move |c| {
        // SAFETY: as above.
        let io = unsafe { ReduceIo::new(send, recv, count, dt, op) }?;
        let s = sig(Kind::Allreduce, io.elems, io.view.handle, op, -1);
        let (inp, out, n, dtv, red) = (io.input, io.output.ptr(), io.elems, io.view.dt, io.red);
        let finish = keeping(io, |io| {
            // SAFETY: staged from recvbuf for this request, which MPI keeps valid until
            // completion.
            unsafe { io.output.finish() }
        });
        coll::allreduce_op(c, inp, out, n, &dtv, red, s, finish)
    }))
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce(
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    if c.inter().is_some() {
        // SAFETY: forwarded contract.
        return unsafe { intercomm_coll::reduce(send, recv, count, dt, op, root, c) };
    }
    host_only(&[send, recv as *const c_void])?;
    // SAFETY: MPI's contract for sendbuf/recvbuf, checked inside (a dry run, as above).
    drop(unsafe { RootReduceIo::new(send, recv, count, dt, op, root, c, false) }?);
    Ok(Plan::new(Some(Coll::Reduce), move |c| {
        // SAFETY: as above.
        let io = unsafe { RootReduceIo::new(send, recv, count, dt, op, root, c, false) }?;
        let out = io.recv.as_ref().map_or(std::ptr::null_mut(), |s| s.ptr());
        let inp = io.send.as_ref().map_or(out as *const u8, |s| s.ptr());
        let (n, root, red) = (io.elems, io.root, io.red);
        let s = sig(Kind::Reduce, n, io.view.handle, op, root as i32);
        let dtv = io.view.dt;
        let finish = keeping((io.send, io.recv), |(_send, recv)| {
            if let Some(st) = recv {
                // SAFETY: staged from recvbuf for this request (see `allreduce`).
                unsafe { st.finish() }
            }
        });
        Sched::new(
            c.clone(),
            move |c| coll::build_reduce(c, inp, out, n, &dtv, red, root, s),
            finish,
        )
    }))
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn allgather(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    c: &Comm,
) -> Result<Plan> {
    if c.inter().is_some() {
        // SAFETY: forwarded contract.
        return unsafe {
            intercomm_coll::allgatherv(send, scount, sdt, recv, rcount, None, rdt, c)
        };
    }
    host_only(&[send, recv as *const c_void])?;
    let rcnt = count_arg(rcount, "recvcount")?;
    let rt = type_arg(rdt, "recvtype")?;
    let rv = rt.moving();
    let rn = rv.count(rcnt, "recvcount")?;
    let blk = rn * rv.dt.extent;
    let items = rcnt.checked_mul(c.size());
    let total = items
        .and_then(|i| rv.bytes(i, "recvcount").ok())
        .ok_or_else(|| Error::new(Class::Count, "recvcount × communicator size is too large"))?;
    let items = items.unwrap_or(0);
    buf_arg(recv, total, "recvbuf")?;
    let own_user = recv.cast::<u8>().wrapping_add(c.rank * rcnt * rt.extent());
    let mut sv = None;
    if !is_in_place(send) {
        let scnt = count_arg(scount, "sendcount")?;
        let v = type_arg(sdt, "sendtype")?.moving();
        let sbytes = v.bytes(scnt, "sendcount")?;
        if v.count(scnt, "sendcount")? * v.dt.size != rn * rv.dt.size || sbytes != blk {
            return Err(Error::new(
                Class::Truncate,
                format!("sendcount×sendtype ({sbytes} bytes) does not match recvcount×recvtype ({blk} bytes)"),
            ));
        }
        buf_arg(send, sbytes, "sendbuf")?;
        no_alias(send, own_user as *const c_void, blk)?;
        sv = Some((v, scnt));
    }
    let s = sig(Kind::Allgather, rn, rv.handle, 0, -1);
    Ok(Plan::new(Some(Coll::Allgather), move |c| {
        // SAFETY: MPI: recvbuf holds size × recvcount items (the own block is read in place),
        // sendbuf `sendcount` items.
        let st_recv = unsafe { rv.stage(recv, items, false, true) };
        let st_send = sv
            .as_ref()
            // SAFETY: as above.
            .map(|(v, n)| unsafe { v.stage(send, *n, true, false) });
        let inp = match &st_send {
            Some(s) => s.ptr() as *const u8,
            None => {
                // SAFETY: the own block lies in recvbuf (see above).
                unsafe { st_recv.load_items(c.rank * rcnt, rcnt) };
                st_recv.ptr().wrapping_add(c.rank * blk)
            }
        };
        let (out, dtv) = (st_recv.ptr(), rv.dt);
        let finish = keeping((st_send, st_recv), |(_send, recv)| {
            // SAFETY: staged from recvbuf for this request (see `allreduce`).
            unsafe { recv.finish() }
        });
        Sched::new(
            c.clone(),
            move |c| coll::build_allgather(c, inp, out, rn, &dtv, s),
            finish,
        )
    }))
}

pub unsafe fn reduce_scatter(
    send: *const c_void,
    recv: *mut c_void,
    recvcounts: RecvCounts,
    dt: c_int,
    op: c_int,
    c: &Comm,
) -> Result<Plan> {
    // SAFETY: forwarded contract (one count per rank; per local process on an
    // intercommunicator).
    let counts = unsafe { scatter_counts(recvcounts, c.local_size()) }?;
    // SAFETY: forwarded contract.
    unsafe { reduce_scatter_counts(send, recv, counts, Kind::ReduceScatter, dt, op, c) }
}

pub unsafe fn reduce_scatter_block(
    send: *const c_void,
    recv: *mut c_void,
    recvcount: Count,
    dt: c_int,
    op: c_int,
    c: &Comm,
) -> Result<Plan> {
    let n = count_arg(recvcount, "recvcount")?;
    let kind = Kind::ReduceScatterBlock;
    // SAFETY: forwarded contract.
    unsafe { reduce_scatter_counts(send, recv, vec![n; c.local_size()], kind, dt, op, c) }
}

/// The per-rank counts of `MPI_Reduce_scatter`, read and checked.
pub(crate) unsafe fn scatter_counts(counts: RecvCounts, n: usize) -> Result<Vec<usize>> {
    (0..n)
        .map(|i| {
            // SAFETY: MPI requires recvcounts to hold one element per rank (i < size).
            let v = match counts {
                RecvCounts::Int(p) if !p.is_null() => Count::from(unsafe { *p.add(i) }),
                RecvCounts::Count(p) if !p.is_null() => unsafe { *p.add(i) },
                _ => return Err(Error::new(Class::Arg, "recvcounts is NULL")),
            };
            indexed("recvcounts", i, |w| count_arg(v, w))
        })
        .collect()
}

/// Reduce_scatter(_block): `counts[i]` is rank i's count (local process i's on an
/// intercommunicator; already checked).
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_counts(
    send: *const c_void,
    recv: *mut c_void,
    counts: Vec<usize>,
    kind: Kind,
    dt: c_int,
    op: c_int,
    c: &Comm,
) -> Result<Plan> {
    let stat = match kind {
        Kind::ReduceScatterBlock => Coll::ReduceScatterBlock,
        _ => Coll::ReduceScatter,
    };
    if c.inter().is_some() {
        // SAFETY: forwarded contract.
        return unsafe { intercomm_coll::reduce_scatter(send, recv, counts, dt, op, stat, c) };
    }
    host_only(&[send, recv as *const c_void])?;
    let stat = Some(stat);
    let get = move |i: usize| -> Result<usize> { Ok(counts[i]) };
    // SAFETY: MPI's contract for the buffers, checked inside (a dry run, as in `allreduce`).
    drop(unsafe { ReduceScatterIo::new(send, recv, &get, dt, op, c) }?);
    Ok(Plan::new(stat, move |c| {
        // SAFETY: as above.
        let mut io = unsafe { ReduceScatterIo::new(send, recv, &get, dt, op, c) }?;
        let s = sig(kind, io.total, io.view.handle, op, -1);
        let (inp, out, red) = (io.input, io.output.ptr(), io.red);
        let (counts, dtv) = (std::mem::take(&mut io.counts), io.view.dt);
        let finish = keeping(io, |io| {
            // SAFETY: staged from recvbuf for this request (see `allreduce`).
            unsafe { io.output.finish() }
        });
        Sched::new(
            c.clone(),
            move |c| coll::build_reduce_scatter(c, inp, out, &counts, &dtv, red, s),
            finish,
        )
    }))
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn allgatherv(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    displs: Ints,
    rdt: c_int,
    c: &Comm,
) -> Result<Plan> {
    if c.inter().is_some() {
        let v = Some((rcounts, displs));
        // SAFETY: forwarded contract.
        return unsafe { intercomm_coll::allgatherv(send, scount, sdt, recv, 0, v, rdt, c) };
    }
    host_only(&[send, recv as *const c_void])?;
    let (n, r) = (c.size(), c.rank);
    // SAFETY: MPI requires both arrays to hold one element per rank.
    let counts = unsafe { rcounts.counts(n, "recvcounts") }?;
    // SAFETY: as above.
    let displs = unsafe { displs.read(n, "displs") }?;
    let rs = Side::new(rdt, "recvtype")?;
    let names = ["recvbuf", "recvcounts", "displs"];
    let laid = laid_out(recv, &rs, &counts, &displs, names)?;
    let own = own_send(send, scount, sdt, recv, &laid, r)?;
    // Fits: every signature is at most its block's bytes, which add up to an isize.
    let total: usize = laid.typed.iter().map(|t| t.sig).sum();
    let s = sig(Kind::Allgatherv, total, BYTE, 0, -1);
    Ok(Plan::of_op(Some(Coll::Allgatherv), move |c| {
        let rb = rs.v.blocks(recv, &laid.items);
        // SAFETY: MPI: sendbuf holds `sendcount` items to read.
        let st = own
            .as_ref()
            .map(|s| unsafe { s.side.v.stage(send, s.count, true, false) });
        let sp = match &st {
            Some(s) => s.ptr() as *const u8,
            None => {
                // SAFETY: in place, the own block is read from its place in recvbuf.
                unsafe { rb.load(r) };
                rb.spans()[r].0
            }
        };
        let spans = rb.spans().to_vec();
        let skip = st.is_none().then_some(r);
        let finish = keeping((st, rb), move |(_st, rb)| {
            // SAFETY: MPI: recvbuf holds every rank's block, to write, until completion.
            unsafe { rb.store_all_but(skip) }
        });
        coll::allgatherv_op(c, sp, spans, s, finish)
    }))
}

// ---------------------------------------------------------------------------------------------
// Alltoall, Alltoallv, Alltoallw

/// The blocks of one buffer of an all-to-all: one datatype for all ([`Laid`] with its
/// [`Side`]), or one per rank (Alltoallw).
pub(crate) enum Parts {
    One(Side, Laid),
    PerRank(Vec<Side>, Laid),
}

impl Parts {
    /// The staged blocks of `buf`: one [`Blocks`] per datatype.
    fn blocks(&self, buf: *const c_void) -> Vec<Blocks> {
        match self {
            Parts::One(s, l) => vec![s.v.blocks(buf, &l.items)],
            Parts::PerRank(s, l) => s
                .iter()
                .zip(&l.items)
                .map(|(s, &it)| s.v.blocks(buf, &[it]))
                .collect(),
        }
    }
}

/// The spans of every block, rank by rank.
fn spans(b: &[Blocks]) -> Vec<(*mut u8, usize)> {
    b.iter().flat_map(|b| b.spans().iter().copied()).collect()
}

/// An all-to-all exchange of `send`'s blocks into `recv`'s (`None`: in place, recvbuf's blocks
/// are sent), as a plan.
pub(crate) fn exchange(
    send: Option<(*const c_void, Parts)>,
    recv: *mut c_void,
    rparts: Parts,
    s: Signature,
) -> Plan {
    Plan::new(None, move |c| {
        let (rb, sb) = stage_exchange(&send, recv, &rparts);
        let ss = read_only(&spans(sb.as_ref().unwrap_or(&rb)));
        let rspans = spans(&rb);
        let finish = keeping((sb, rb), |(_sb, rb)| {
            for b in &rb {
                // SAFETY: MPI: recvbuf holds every rank's block, to write, until completion.
                unsafe { b.store_all_but(None) }
            }
        });
        Sched::new(
            c.clone(),
            move |c| coll::build_alltoallv(c, &ss, &rspans, s),
            finish,
        )
    })
}

/// The staged blocks of an all-to-all, the ones to send loaded: (recv, send unless in place).
#[allow(clippy::type_complexity)]
pub(crate) fn stage_exchange(
    send: &Option<(*const c_void, Parts)>,
    recv: *mut c_void,
    rparts: &Parts,
) -> (Vec<Blocks>, Option<Vec<Blocks>>) {
    let rb = rparts.blocks(recv);
    let sb = send.as_ref().map(|(buf, p)| p.blocks(*buf));
    for b in sb.as_ref().unwrap_or(&rb) {
        // SAFETY: MPI: sendbuf holds every rank's block, to read (in place, recvbuf does).
        unsafe { b.load_all_but(None) };
    }
    (rb, sb)
}

/// The checked layout of `MPI_Alltoall`'s buffers (and `MPI_Ialltoall`'s): the receive side,
/// and the send side unless `MPI_IN_PLACE`.
#[allow(clippy::type_complexity)]
pub(crate) fn alltoall_sides(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    c: &Comm,
) -> Result<(Side, Laid, Option<(Side, Laid)>)> {
    let n = c.size();
    let rcnt = count_arg(rcount, "recvcount")?;
    let rs = Side::new(rdt, "recvtype")?;
    let rlaid = regular(recv, &rs, rcnt, n, "recvbuf", "recvcount")?;
    let sendside = if is_in_place(send) {
        None
    } else {
        let scnt = count_arg(scount, "sendcount")?;
        let ss = Side::new(sdt, "sendtype")?;
        matching(
            &ss.typed(scnt, "sendcount")?,
            &rlaid.typed[0],
            "recvcount×recvtype",
        )?;
        let slaid = regular(send, &ss, scnt, n, "sendbuf", "sendcount")?;
        no_alias(send, recv, slaid.bytes())?;
        Some((ss, slaid))
    };
    Ok((rs, rlaid, sendside))
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn alltoall(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    c: &Comm,
) -> Result<Plan> {
    if c.inter().is_some() {
        // SAFETY: forwarded contract.
        return unsafe { intercomm_coll::alltoallv(send, scount, sdt, recv, rcount, rdt, None, c) };
    }
    host_only(&[send, recv as *const c_void])?;
    let (rs, rlaid, sendside) = alltoall_sides(send, scount, sdt, recv, rcount, rdt, c)?;
    let s = sig(Kind::Alltoall, rlaid.typed[0].sig, BYTE, 0, -1);
    let send = sendside.map(|(ss, l)| (send, Parts::One(ss, l)));
    Ok(exchange(send, recv, Parts::One(rs, rlaid), s))
}

/// The checked layout of `MPI_Alltoallv`'s buffers: the receive side, and the send side unless
/// `MPI_IN_PLACE`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoallv_parts(
    send: *const c_void,
    scounts: Ints,
    sdispls: Ints,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    rdispls: Ints,
    rdt: c_int,
    c: &Comm,
) -> Result<(Parts, Option<(*const c_void, Parts)>)> {
    let (n, r) = (c.size(), c.rank);
    // SAFETY: MPI requires every array to hold one element per rank.
    let rcounts = unsafe { rcounts.counts(n, "recvcounts") }?;
    // SAFETY: as above.
    let rdispls = unsafe { rdispls.read(n, "rdispls") }?;
    let rs = Side::new(rdt, "recvtype")?;
    let rnames = ["recvbuf", "recvcounts", "rdispls"];
    let rlaid = laid_out(recv, &rs, &rcounts, &rdispls, rnames)?;
    if is_in_place(send) {
        return Ok((Parts::One(rs, rlaid), None));
    }
    // SAFETY: as above.
    let scounts = unsafe { scounts.counts(n, "sendcounts") }?;
    // SAFETY: as above.
    let sdispls = unsafe { sdispls.read(n, "sdispls") }?;
    let ss = Side::new(sdt, "sendtype")?;
    let snames = ["sendbuf", "sendcounts", "sdispls"];
    let slaid = laid_out(send, &ss, &scounts, &sdispls, snames)?;
    super::blocks::matching(
        &slaid.typed[r],
        &rlaid.typed[r],
        "recvcounts[rank]×recvtype",
    )?;
    no_alias(send, recv, slaid.bytes().max(rlaid.bytes()))?;
    Ok((Parts::One(rs, rlaid), Some((send, Parts::One(ss, slaid)))))
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn alltoallv(
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
    if c.inter().is_some() {
        let v = Some((scounts, sdispls, rcounts, rdispls));
        // SAFETY: forwarded contract.
        return unsafe { intercomm_coll::alltoallv(send, 0, sdt, recv, 0, rdt, v, c) };
    }
    host_only(&[send, recv as *const c_void])?;
    // SAFETY: forwarded contract.
    let (rp, sp) =
        unsafe { alltoallv_parts(send, scounts, sdispls, sdt, recv, rcounts, rdispls, rdt, c) }?;
    Ok(exchange(sp, recv, rp, sig(Kind::Alltoallv, 0, BYTE, 0, -1)))
}

/// The blocks of one buffer of `MPI_Alltoallw`: `counts[i]` items of `types[i]` at byte
/// displacement `displs[i]`.
unsafe fn w_parts(
    buf: *const c_void,
    counts: Ints,
    displs: Ints,
    types: *const c_int,
    n: usize,
    names: [&str; 4],
) -> Result<Parts> {
    let [bname, cname, dname, tname] = names;
    // SAFETY: MPI requires every array to hold one element per rank.
    let counts = unsafe { counts.counts(n, cname) }?;
    // SAFETY: as above.
    let displs = unsafe { displs.read(n, dname) }?;
    if types.is_null() {
        return Err(Error::new(Class::Arg, format!("{tname} is NULL")));
    }
    let mut sides = Vec::with_capacity(n);
    let mut items = Vec::with_capacity(n);
    let mut typed = Vec::with_capacity(n);
    let mut total = 0usize;
    for i in 0..n {
        // SAFETY: as above.
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
        sides.push(side);
        items.push((at, counts[i]));
        typed.push(t);
    }
    let moving = sides.iter().zip(&items).filter(|(_, &(_, c))| c > 0);
    let offsets = moving.map(|(s, &(at, _))| at.saturating_add(s.t.true_lb()));
    buf_or_bottom(buf, total, bname, offsets)?;
    Ok(Parts::PerRank(sides, Laid { items, typed }))
}

/// The checked layout of `MPI_Alltoallw`'s buffers (as [`alltoallv_parts`]).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoallw_parts(
    send: *const c_void,
    scounts: Ints,
    sdispls: Ints,
    stypes: *const c_int,
    recv: *mut c_void,
    rcounts: Ints,
    rdispls: Ints,
    rtypes: *const c_int,
    c: &Comm,
) -> Result<(Parts, Option<(*const c_void, Parts)>)> {
    // On an intercommunicator the arrays are per remote process (`size()` counts those) and
    // no block goes to this process itself.
    let (n, r) = (c.size(), c.rank);
    let intra = c.inter().is_none();
    let rnames = ["recvbuf", "recvcounts", "rdispls", "recvtypes"];
    // SAFETY: forwarded contract.
    let rp = unsafe { w_parts(recv, rcounts, rdispls, rtypes, n, rnames) }?;
    if is_in_place(send) {
        return Ok((rp, None));
    }
    let snames = ["sendbuf", "sendcounts", "sdispls", "sendtypes"];
    // SAFETY: forwarded contract.
    let sp = unsafe { w_parts(send, scounts, sdispls, stypes, n, snames) }?;
    let (Parts::PerRank(_, sl), Parts::PerRank(_, rl)) = (&sp, &rp) else {
        unreachable!("w_parts lays out per rank")
    };
    if intra {
        super::blocks::matching(
            &sl.typed[r],
            &rl.typed[r],
            "recvcounts[rank]×recvtypes[rank]",
        )?;
    }
    if !send.is_null() {
        // Both MPI_BOTTOM: the types' addresses say where the data is, not the pointers.
        no_alias(send, recv, sl.bytes().max(rl.bytes()))?;
    }
    Ok((rp, Some((send, sp))))
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn alltoallw(
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
    host_only(&[send, recv as *const c_void])?;
    // SAFETY: forwarded contract.
    let (rp, sp) = unsafe {
        alltoallw_parts(
            send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, c,
        )
    }?;
    if c.inter().is_some() {
        return intercomm_coll::alltoallw(sp, recv, rp);
    }
    Ok(exchange(sp, recv, rp, sig(Kind::Alltoallw, 0, BYTE, 0, -1)))
}

// ---------------------------------------------------------------------------------------------
// Gather, Scatter

#[allow(clippy::too_many_arguments)]
pub unsafe fn gather(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    if c.inter().is_some() {
        // SAFETY: forwarded contract.
        return unsafe {
            intercomm_coll::gatherv(send, scount, sdt, recv, rcount, None, rdt, root, c)
        };
    }
    // SAFETY: forwarded contract.
    unsafe { gather_any(send, scount, sdt, recv, rcount, None, rdt, root, c) }
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn gatherv(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    displs: Ints,
    rdt: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    if c.inter().is_some() {
        let v = Some((rcounts, displs));
        // SAFETY: forwarded contract.
        return unsafe { intercomm_coll::gatherv(send, scount, sdt, recv, 0, v, rdt, root, c) };
    }
    let counts = Some((rcounts, displs));
    // SAFETY: forwarded contract.
    unsafe { gather_any(send, scount, sdt, recv, 0, counts, rdt, root, c) }
}

/// Gather(v): `counts` is `None` for Gather (`recvcount` at the root), the root's
/// `(recvcounts, displs)` for Gatherv.
#[allow(clippy::too_many_arguments)]
unsafe fn gather_any(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    counts: Option<(Ints, Ints)>,
    rdt: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    let root = root_arg(root, c)?;
    let kind = if counts.is_some() {
        Kind::Gatherv
    } else {
        Kind::Gather
    };
    if c.rank != root {
        host_only(&[send])?;
        let s = one(send, scount, sdt, SEND)?;
        let sg = sig(
            kind,
            if counts.is_some() { 0 } else { s.t.sig },
            BYTE,
            0,
            root as i32,
        );
        return Ok(Plan::new(None, move |c| {
            // SAFETY: MPI: sendbuf holds `sendcount` items to read.
            let st = unsafe { s.side.v.stage(send, s.count, true, false) };
            let (p, len) = (st.ptr() as *const u8, s.t.bytes);
            Sched::new(
                c.clone(),
                move |c| coll::build_gatherv(c, p, len, &[], root, sg),
                keeping(st, drop),
            )
        }));
    }
    host_only(&[send, recv as *const c_void])?;
    let n = c.size();
    let rs = Side::new(rdt, "recvtype")?;
    let laid = match counts {
        None => {
            let rcnt = count_arg(rcount, "recvcount")?;
            regular(recv, &rs, rcnt, n, "recvbuf", "recvcount")?
        }
        Some((rcounts, displs)) => {
            // SAFETY: MPI requires both arrays to hold one element per rank at the root.
            let counts = unsafe { rcounts.counts(n, "recvcounts") }?;
            // SAFETY: as above.
            let displs = unsafe { displs.read(n, "displs") }?;
            let names = ["recvbuf", "recvcounts", "displs"];
            laid_out(recv, &rs, &counts, &displs, names)?
        }
    };
    let own = own_send(send, scount, sdt, recv, &laid, root)?;
    let sg = match kind {
        Kind::Gather => sig(kind, laid.typed[root].sig, BYTE, 0, root as i32),
        _ => sig(kind, 0, BYTE, 0, root as i32),
    };
    Ok(Plan::new(None, move |c| {
        let rb = rs.v.blocks(recv, &laid.items);
        // SAFETY: MPI: sendbuf holds `sendcount` items to read.
        let st = own
            .as_ref()
            .map(|s| unsafe { s.side.v.stage(send, s.count, true, false) });
        let sp = match &st {
            Some(s) => s.ptr() as *const u8,
            None => {
                // SAFETY: in place, the root's own block is read from its place in recvbuf.
                unsafe { rb.load(root) };
                rb.spans()[root].0
            }
        };
        let (spans, len) = (rb.spans().to_vec(), laid.typed[root].bytes);
        let skip = st.is_none().then_some(root);
        let finish = keeping((st, rb), move |(_st, rb)| {
            // SAFETY: MPI: recvbuf holds every rank's block, to write, until completion.
            unsafe { rb.store_all_but(skip) }
        });
        Sched::new(
            c.clone(),
            move |c| coll::build_gatherv(c, sp, len, &spans, root, sg),
            finish,
        )
    }))
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn scatter(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    if c.inter().is_some() {
        // SAFETY: forwarded contract.
        return unsafe {
            intercomm_coll::scatterv(send, scount, None, sdt, recv, rcount, rdt, root, c)
        };
    }
    // SAFETY: forwarded contract.
    unsafe { scatter_any(send, scount, None, sdt, recv, rcount, rdt, root, c) }
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn scatterv(
    send: *const c_void,
    scounts: Ints,
    displs: Ints,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    if c.inter().is_some() {
        let v = Some((scounts, displs));
        // SAFETY: forwarded contract.
        return unsafe { intercomm_coll::scatterv(send, 0, v, sdt, recv, rcount, rdt, root, c) };
    }
    let counts = Some((scounts, displs));
    // SAFETY: forwarded contract.
    unsafe { scatter_any(send, 0, counts, sdt, recv, rcount, rdt, root, c) }
}

/// Scatter(v): `counts` is `None` for Scatter (`sendcount` at the root), the root's
/// `(sendcounts, displs)` for Scatterv.
#[allow(clippy::too_many_arguments)]
unsafe fn scatter_any(
    send: *const c_void,
    scount: Count,
    counts: Option<(Ints, Ints)>,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    let root = root_arg(root, c)?;
    let kind = if counts.is_some() {
        Kind::Scatterv
    } else {
        Kind::Scatter
    };
    if c.rank != root {
        host_only(&[recv as *const c_void])?;
        let r = one(recv, rcount, rdt, RECV)?;
        let sg = sig(
            kind,
            if counts.is_some() { 0 } else { r.t.sig },
            BYTE,
            0,
            root as i32,
        );
        return Ok(Plan::new(None, move |c| {
            // SAFETY: MPI: recvbuf holds `recvcount` items to write.
            let st = unsafe { r.side.v.stage(recv, r.count, false, true) };
            let (p, len) = (st.ptr(), r.t.bytes);
            let finish = keeping(st, |st| {
                // SAFETY: as above, until completion.
                unsafe { st.finish() }
            });
            Sched::new(
                c.clone(),
                move |c| coll::build_scatterv(c, &[], p, len, root, sg),
                finish,
            )
        }));
    }
    host_only(&[send, recv as *const c_void])?;
    let n = c.size();
    let ss = Side::new(sdt, "sendtype")?;
    let laid = match counts {
        None => {
            let scnt = count_arg(scount, "sendcount")?;
            regular(send, &ss, scnt, n, "sendbuf", "sendcount")?
        }
        Some((scounts, displs)) => {
            // SAFETY: MPI requires both arrays to hold one element per rank at the root.
            let counts = unsafe { scounts.counts(n, "sendcounts") }?;
            // SAFETY: as above.
            let displs = unsafe { displs.read(n, "displs") }?;
            let names = ["sendbuf", "sendcounts", "displs"];
            laid_out(send, &ss, &counts, &displs, names)?
        }
    };
    let own = own_recv(recv, rcount, rdt, send, &laid, root)?;
    let sg = match kind {
        Kind::Scatter => sig(kind, laid.typed[root].sig, BYTE, 0, root as i32),
        _ => sig(kind, 0, BYTE, 0, root as i32),
    };
    Ok(Plan::new(None, move |c| {
        let sb = ss.v.blocks(send, &laid.items);
        // SAFETY: MPI: sendbuf holds every rank's block, to read (in place, the root's own
        // block stays where it is and is not needed).
        unsafe { sb.load_all_but(own.is_none().then_some(root)) };
        // SAFETY: MPI: recvbuf holds `recvcount` items to write.
        let st = own
            .as_ref()
            .map(|r| unsafe { r.side.v.stage(recv, r.count, false, true) });
        let rp = st.as_ref().map_or(sb.spans()[root].0, |s| s.ptr());
        let (spans, len) = (read_only(sb.spans()), laid.typed[root].bytes);
        let finish = keeping((sb, st), |(_sb, st)| {
            if let Some(st) = st {
                // SAFETY: as above, until completion.
                unsafe { st.finish() }
            }
        });
        Sched::new(
            c.clone(),
            move |c| coll::build_scatterv(c, &spans, rp, len, root, sg),
            finish,
        )
    }))
}

// ---------------------------------------------------------------------------------------------
// Scan, Exscan

pub unsafe fn scan(
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    c: &Comm,
) -> Result<Plan> {
    intra_only(c, "MPI_Scan")?;
    // SAFETY: forwarded contract.
    unsafe { scan_any(false, send, recv, count, dt, op) }
}

pub unsafe fn exscan(
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    c: &Comm,
) -> Result<Plan> {
    intra_only(c, "MPI_Exscan")?;
    // SAFETY: forwarded contract.
    unsafe { scan_any(true, send, recv, count, dt, op) }
}

/// Scan and Exscan (`exclusive`).
unsafe fn scan_any(
    exclusive: bool,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
) -> Result<Plan> {
    host_only(&[send, recv as *const c_void])?;
    // SAFETY: MPI's contract for sendbuf/recvbuf, checked inside (a dry run, as in
    // `allreduce`).
    drop(unsafe { ReduceIo::new(send, recv, count, dt, op) }?);
    let kind = if exclusive { Kind::Exscan } else { Kind::Scan };
    Ok(Plan::new(None, move |c| {
        // SAFETY: as above.
        let io = unsafe { ReduceIo::new(send, recv, count, dt, op) }?;
        let s = sig(kind, io.elems, io.view.handle, op, -1);
        let (inp, out, n, dtv, red) = (io.input, io.output.ptr(), io.elems, io.view.dt, io.red);
        // Exscan leaves rank 0's recvbuf alone.
        let store = !(exclusive && c.rank == 0);
        let finish = keeping(io, move |io| {
            if store {
                // SAFETY: staged from recvbuf for this request (see `allreduce`).
                unsafe { io.output.finish() }
            }
        });
        Sched::new(
            c.clone(),
            move |c| coll::build_scan(c, inp, out, n, &dtv, red, exclusive, s),
            finish,
        )
    }))
}
