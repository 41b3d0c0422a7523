//! The data-movement collectives: `MPI_Gather(v)`, `MPI_Scatter(v)`, `MPI_Allgatherv`,
//! `MPI_Alltoall(v,w)`, and their `_c` large-count variants (`name`
//! lets a variant report its own name; count and displacement arrays come as [`Ints`]).
//!
//! Every argument is checked before any data moves. The data-movement collectives hand the
//! algorithms byte spans `(pointer, bytes)`, one per rank. A buffer's per-rank blocks are
//! first laid out (`blocks.rs`: `count` items at `displ × extent` bytes from the
//! buffer, displacements in units of the datatype's extent and possibly negative, as MPI
//! says), then turned into spans by the datatype's view (see `typearg.rs`): predefined and
//! contiguous types are spans of the user's buffer (zero copies, nothing allocated); any other
//! derived type (vector, indexed, struct) is packed block by block into one staging buffer,
//! and received blocks are unpacked into the user's layout after the call, leaving the bytes
//! between the typemap's entries untouched. A block's span is its packed form: every rank's
//! view of the same type signature has the same bytes, so sendtype and recvtype may differ
//! (2 × `vector(2, 1, 3, MPI_INT)` against 4 × `MPI_INT`).
//!
//! Signatures: every frame carries one and receivers compare it. Since sendtype and recvtype
//! may differ as long as the type signatures match, the count in a data-movement signature is
//! the type signature's length in bytes (count × type size) with the datatype `MPI_BYTE`: per
//! block for Gather/Scatter/Alltoall, the total for Allgatherv (every rank knows all counts),
//! and 0 where no rank but one knows the counts (Gatherv, Scatterv) or they are pairwise
//! (Alltoallv).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::*;
use crate::abi::guard;
use crate::coll;
use crate::error::Result;
use crate::frame::Kind;
use crate::runtime;

use super::blocks::*;

// ---------------------------------------------------------------------------------------------
// Gather, Scatter

/// A rank that only sends its block to the root.
unsafe fn gather_leaf(
    c: &Comm,
    send: *const c_void,
    s: &One,
    root: usize,
    sig: Signature,
) -> Result<()> {
    // SAFETY: MPI: sendbuf holds `sendcount` items to read.
    let st = unsafe { s.side.v.stage(send, s.count, true, false) };
    coll::gatherv(c, st.ptr(), s.t.bytes, &[], root, sig)
}

/// The root of Gather(v): receives block p of `recv` from rank p; `own` is its own
/// contribution (`None`: in place).
#[allow(clippy::too_many_arguments)]
unsafe fn gather_root(
    c: &Comm,
    send: *const c_void,
    own: Option<One>,
    recv: *mut c_void,
    rs: &Side,
    laid: &Laid,
    root: usize,
    sig: Signature,
) -> Result<()> {
    let rb = rs.v.blocks(recv, &laid.items);
    // SAFETY: MPI: sendbuf holds `sendcount` items to read.
    let st = own.map(|s| unsafe { s.side.v.stage(send, s.count, true, false) });
    let sp = match &st {
        Some(s) => s.ptr() as *const u8,
        None => {
            // SAFETY: in place, the root's own block is read from its place in recvbuf.
            unsafe { rb.load(root) };
            rb.spans()[root].0
        }
    };
    coll::gatherv(c, sp, laid.typed[root].bytes, rb.spans(), root, sig)?;
    // SAFETY: MPI: recvbuf holds every rank's block, to write.
    unsafe { rb.store_all_but(st.is_none().then_some(root)) };
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn gather(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        if c.inter().is_some() {
            // SAFETY: the caller's contract, forwarded.
            let plan = unsafe {
                intercomm_coll::gatherv(name, send, scount, sdt, recv, rcount, None, rdt, root, &c)
            }?;
            return intercomm_coll::run(&c, plan);
        }
        let root = root_arg(root, &c)?;
        // Only the arguments significant at this rank: MPI ignores the receive buffer
        // of a non-root, which may be anything (a device pointer included).
        if c.rank == root {
            crate::cuda::refuse_device(name, &[send, recv as *const c_void])?;
        } else {
            crate::cuda::refuse_device(name, &[send])?;
        }
        if c.rank != root {
            let s = one(send, scount, sdt, SEND)?;
            let sig = sig(Kind::Gather, s.t.sig, BYTE, 0, root as i32);
            // SAFETY: validated above.
            return unsafe { gather_leaf(&c, send, &s, root, sig) };
        }
        let rcnt = count_arg(rcount, "recvcount")?;
        let rs = Side::new(rdt, "recvtype")?;
        let laid = regular(recv, &rs, rcnt, c.size(), "recvbuf", "recvcount")?;
        let own = own_send(send, scount, sdt, recv, &laid, root)?;
        let sig = sig(Kind::Gather, laid.typed[root].sig, BYTE, 0, root as i32);
        // SAFETY: validated above.
        unsafe { gather_root(&c, send, own, recv, &rs, &laid, root, sig) }
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn gatherv(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    displs: Ints,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        if c.inter().is_some() {
            // SAFETY: the caller's contract, forwarded.
            let plan = unsafe {
                intercomm_coll::gatherv(
                    name,
                    send,
                    scount,
                    sdt,
                    recv,
                    0,
                    Some((rcounts, displs)),
                    rdt,
                    root,
                    &c,
                )
            }?;
            return intercomm_coll::run(&c, plan);
        }
        let root = root_arg(root, &c)?;
        // Only the arguments significant at this rank: MPI ignores the receive buffer
        // of a non-root, which may be anything (a device pointer included).
        if c.rank == root {
            crate::cuda::refuse_device(name, &[send, recv as *const c_void])?;
        } else {
            crate::cuda::refuse_device(name, &[send])?;
        }
        let sig = sig(Kind::Gatherv, 0, BYTE, 0, root as i32);
        if c.rank != root {
            let s = one(send, scount, sdt, SEND)?;
            // SAFETY: validated above.
            return unsafe { gather_leaf(&c, send, &s, root, sig) };
        }
        let n = c.size();
        // SAFETY: MPI requires both arrays to hold one element per rank at the root.
        let counts = unsafe { rcounts.counts(n, "recvcounts") }?;
        // SAFETY: as above.
        let displs = unsafe { displs.read(n, "displs") }?;
        let rs = Side::new(rdt, "recvtype")?;
        let laid = laid_out(
            recv,
            &rs,
            &counts,
            &displs,
            ["recvbuf", "recvcounts", "displs"],
        )?;
        let own = own_send(send, scount, sdt, recv, &laid, root)?;
        // SAFETY: validated above.
        unsafe { gather_root(&c, send, own, recv, &rs, &laid, root, sig) }
    })
}

/// A rank that only receives its block from the root.
unsafe fn scatter_leaf(
    c: &Comm,
    recv: *mut c_void,
    r: &One,
    root: usize,
    sig: Signature,
) -> Result<()> {
    // SAFETY: MPI: recvbuf holds `recvcount` items to write.
    let st = unsafe { r.side.v.stage(recv, r.count, false, true) };
    coll::scatterv(c, &[], st.ptr(), r.t.bytes, root, sig)?;
    // SAFETY: as above.
    unsafe { st.finish() };
    Ok(())
}

/// The root of Scatter(v): sends block p of `send` to rank p; `own` receives its own block
/// (`None`: in place).
#[allow(clippy::too_many_arguments)]
unsafe fn scatter_root(
    c: &Comm,
    send: *const c_void,
    ss: &Side,
    laid: &Laid,
    recv: *mut c_void,
    own: Option<One>,
    root: usize,
    sig: Signature,
) -> Result<()> {
    let sb = ss.v.blocks(send, &laid.items);
    // SAFETY: MPI: sendbuf holds every rank's block, to read (in place, the root's own block
    // stays where it is and is not needed).
    unsafe { sb.load_all_but(own.is_none().then_some(root)) };
    // SAFETY: MPI: recvbuf holds `recvcount` items to write.
    let st = own.map(|r| unsafe { r.side.v.stage(recv, r.count, false, true) });
    let rp = st.as_ref().map_or(sb.spans()[root].0, |s| s.ptr());
    coll::scatterv(
        c,
        &read_only(sb.spans()),
        rp,
        laid.typed[root].bytes,
        root,
        sig,
    )?;
    if let Some(st) = st {
        // SAFETY: as above.
        unsafe { st.finish() };
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn scatter(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        if c.inter().is_some() {
            // SAFETY: the caller's contract, forwarded.
            let plan = unsafe {
                intercomm_coll::scatterv(name, send, scount, None, sdt, recv, rcount, rdt, root, &c)
            }?;
            return intercomm_coll::run(&c, plan);
        }
        let root = root_arg(root, &c)?;
        // Only the arguments significant at this rank: MPI ignores the send buffer
        // of a non-root, which may be anything (a device pointer included).
        if c.rank == root {
            crate::cuda::refuse_device(name, &[send, recv as *const c_void])?;
        } else {
            crate::cuda::refuse_device(name, &[recv as *const c_void])?;
        }
        if c.rank != root {
            let r = one(recv, rcount, rdt, RECV)?;
            let sig = sig(Kind::Scatter, r.t.sig, BYTE, 0, root as i32);
            // SAFETY: validated above.
            return unsafe { scatter_leaf(&c, recv, &r, root, sig) };
        }
        let scnt = count_arg(scount, "sendcount")?;
        let ss = Side::new(sdt, "sendtype")?;
        let laid = regular(send, &ss, scnt, c.size(), "sendbuf", "sendcount")?;
        let own = own_recv(recv, rcount, rdt, send, &laid, root)?;
        let sig = sig(Kind::Scatter, laid.typed[root].sig, BYTE, 0, root as i32);
        // SAFETY: validated above.
        unsafe { scatter_root(&c, send, &ss, &laid, recv, own, root, sig) }
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn scatterv(
    name: &'static str,
    send: *const c_void,
    scounts: Ints,
    displs: Ints,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        if c.inter().is_some() {
            // SAFETY: the caller's contract, forwarded.
            let plan = unsafe {
                intercomm_coll::scatterv(
                    name,
                    send,
                    0,
                    Some((scounts, displs)),
                    sdt,
                    recv,
                    rcount,
                    rdt,
                    root,
                    &c,
                )
            }?;
            return intercomm_coll::run(&c, plan);
        }
        let root = root_arg(root, &c)?;
        // Only the arguments significant at this rank: MPI ignores the send buffer
        // of a non-root, which may be anything (a device pointer included).
        if c.rank == root {
            crate::cuda::refuse_device(name, &[send, recv as *const c_void])?;
        } else {
            crate::cuda::refuse_device(name, &[recv as *const c_void])?;
        }
        let sig = sig(Kind::Scatterv, 0, BYTE, 0, root as i32);
        if c.rank != root {
            let r = one(recv, rcount, rdt, RECV)?;
            // SAFETY: validated above.
            return unsafe { scatter_leaf(&c, recv, &r, root, sig) };
        }
        let n = c.size();
        // SAFETY: MPI requires both arrays to hold one element per rank at the root.
        let counts = unsafe { scounts.counts(n, "sendcounts") }?;
        // SAFETY: as above.
        let displs = unsafe { displs.read(n, "displs") }?;
        let ss = Side::new(sdt, "sendtype")?;
        let laid = laid_out(
            send,
            &ss,
            &counts,
            &displs,
            ["sendbuf", "sendcounts", "displs"],
        )?;
        let own = own_recv(recv, rcount, rdt, send, &laid, root)?;
        // SAFETY: validated above.
        unsafe { scatter_root(&c, send, &ss, &laid, recv, own, root, sig) }
    })
}

// ---------------------------------------------------------------------------------------------
// Allgatherv, Alltoall(v)

#[allow(clippy::too_many_arguments)]
pub unsafe fn allgatherv(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    displs: Ints,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        crate::cuda::refuse_device(name, &[send, recv as *const c_void])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        if c.inter().is_some() {
            // SAFETY: the caller's contract, forwarded.
            let plan = unsafe {
                intercomm_coll::allgatherv(
                    name,
                    send,
                    scount,
                    sdt,
                    recv,
                    0,
                    Some((rcounts, displs)),
                    rdt,
                    &c,
                )
            }?;
            return intercomm_coll::run(&c, plan);
        }
        let (n, r) = (c.size(), c.rank);
        // SAFETY: MPI requires both arrays to hold one element per rank.
        let counts = unsafe { rcounts.counts(n, "recvcounts") }?;
        // SAFETY: as above.
        let displs = unsafe { displs.read(n, "displs") }?;
        let rs = Side::new(rdt, "recvtype")?;
        let laid = laid_out(
            recv,
            &rs,
            &counts,
            &displs,
            ["recvbuf", "recvcounts", "displs"],
        )?;
        let own = own_send(send, scount, sdt, recv, &laid, r)?;
        // Fits: every signature is at most its block's bytes, which add up to an isize.
        let total: usize = laid.typed.iter().map(|t| t.sig).sum();
        let rb = rs.v.blocks(recv, &laid.items);
        // SAFETY: MPI: sendbuf holds `sendcount` items to read.
        let st = own.map(|s| unsafe { s.side.v.stage(send, s.count, true, false) });
        let sp = match &st {
            Some(s) => s.ptr() as *const u8,
            None => {
                // SAFETY: in place, the own block is read from its place in recvbuf.
                unsafe { rb.load(r) };
                rb.spans()[r].0
            }
        };
        coll::allgatherv(
            &c,
            sp,
            rb.spans(),
            sig(Kind::Allgatherv, total, BYTE, 0, -1),
        )?;
        // SAFETY: MPI: recvbuf holds every rank's block, to write.
        unsafe { rb.store_all_but(st.is_none().then_some(r)) };
        Ok(())
    })
}

/// Alltoall(v) once both buffers are laid out: `send` is `None` in place (the blocks to send
/// are the receive buffer's).
unsafe fn exchange(
    c: &Comm,
    send: Option<(*const c_void, &Side, &Laid)>,
    recv: *mut c_void,
    rs: &Side,
    rlaid: &Laid,
    sig: Signature,
) -> Result<()> {
    let rb = rs.v.blocks(recv, &rlaid.items);
    let sb = send.map(|(buf, s, l)| s.v.blocks(buf, &l.items));
    // SAFETY: MPI: sendbuf holds every rank's block, to read (in place, recvbuf does).
    unsafe { sb.as_ref().unwrap_or(&rb).load_all_but(None) };
    let ss = read_only(sb.as_ref().unwrap_or(&rb).spans());
    coll::alltoallv(c, &ss, rb.spans(), sig)?;
    // SAFETY: MPI: recvbuf holds every rank's block, to write.
    unsafe { rb.store_all_but(None) };
    Ok(())
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
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        crate::cuda::refuse_device(name, &[send, recv as *const c_void])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        if c.inter().is_some() {
            // SAFETY: the caller's contract, forwarded.
            let plan = unsafe {
                intercomm_coll::alltoallv(name, send, scount, sdt, recv, rcount, rdt, None, &c)
            }?;
            return intercomm_coll::run(&c, plan);
        }
        let (rs, rlaid, sendside) = alltoall_sides(send, scount, sdt, recv, rcount, rdt, &c)?;
        let sig = sig(Kind::Alltoall, rlaid.typed[0].sig, BYTE, 0, -1);
        let s = sendside.as_ref().map(|(ss, l)| (send, ss, l));
        // SAFETY: validated above.
        unsafe { exchange(&c, s, recv, &rs, &rlaid, sig) }
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn alltoallv(
    name: &'static str,
    send: *const c_void,
    scounts: Ints,
    sdispls: Ints,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    rdispls: Ints,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        crate::cuda::refuse_device(name, &[send, recv as *const c_void])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        if c.inter().is_some() {
            // SAFETY: the caller's contract, forwarded.
            let plan = unsafe {
                intercomm_coll::alltoallv(
                    name,
                    send,
                    0,
                    sdt,
                    recv,
                    0,
                    rdt,
                    Some((scounts, sdispls, rcounts, rdispls)),
                    &c,
                )
            }?;
            return intercomm_coll::run(&c, plan);
        }
        let (n, r) = (c.size(), c.rank);
        // SAFETY: MPI requires every array to hold one element per rank.
        let rcounts = unsafe { rcounts.counts(n, "recvcounts") }?;
        // SAFETY: as above.
        let rdispls = unsafe { rdispls.read(n, "rdispls") }?;
        let rs = Side::new(rdt, "recvtype")?;
        let rlaid = laid_out(
            recv,
            &rs,
            &rcounts,
            &rdispls,
            ["recvbuf", "recvcounts", "rdispls"],
        )?;
        let sendside = if is_in_place(send) {
            None
        } else {
            // SAFETY: as above.
            let scounts = unsafe { scounts.counts(n, "sendcounts") }?;
            // SAFETY: as above.
            let sdispls = unsafe { sdispls.read(n, "sdispls") }?;
            let ss = Side::new(sdt, "sendtype")?;
            let slaid = laid_out(
                send,
                &ss,
                &scounts,
                &sdispls,
                ["sendbuf", "sendcounts", "sdispls"],
            )?;
            matching(
                &slaid.typed[r],
                &rlaid.typed[r],
                "recvcounts[rank]×recvtype",
            )?;
            let moved = slaid.bytes().max(rlaid.bytes());
            no_alias(send, recv, moved)?;
            Some((ss, slaid))
        };
        let sig = sig(Kind::Alltoallv, 0, BYTE, 0, -1);
        let s = sendside.as_ref().map(|(ss, l)| (send, ss, l));
        // SAFETY: validated above.
        unsafe { exchange(&c, s, recv, &rs, &rlaid, sig) }
    })
}

/// `MPI_Alltoallw`: a datatype per rank and byte displacements (laid out by
/// [`super::plan::alltoallw_parts`], which the nonblocking form uses too).
#[allow(clippy::too_many_arguments)]
pub unsafe fn alltoallw(
    name: &'static str,
    send: *const c_void,
    scounts: Ints,
    sdispls: Ints,
    stypes: *const c_int,
    recv: *mut c_void,
    rcounts: Ints,
    rdispls: Ints,
    rtypes: *const c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        crate::cuda::refuse_device(name, &[send, recv as *const c_void])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        // SAFETY: MPI requires every array to hold one element per rank (per remote process
        // on an intercommunicator).
        let (rp, sp) = unsafe {
            super::plan::alltoallw_parts(
                send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, &c,
            )
        }?;
        if c.inter().is_some() {
            return intercomm_coll::run(&c, intercomm_coll::alltoallw(sp, recv, rp)?);
        }
        let (rb, sb) = super::plan::stage_exchange(&sp, recv, &rp);
        let sends: Vec<_> = sb
            .as_ref()
            .unwrap_or(&rb)
            .iter()
            .flat_map(|b| read_only(b.spans()))
            .collect();
        let recvs: Vec<_> = rb.iter().flat_map(|b| b.spans().iter().copied()).collect();
        coll::alltoallv(&c, &sends, &recvs, sig(Kind::Alltoallw, 0, BYTE, 0, -1))?;
        for b in &rb {
            // SAFETY: MPI: recvbuf holds every rank's block, to write.
            unsafe { b.store_all_but(None) };
        }
        Ok(())
    })
}
