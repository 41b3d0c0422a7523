//! The rest of the collective family: `MPI_Gather(v)`, `MPI_Scatter(v)`, `MPI_Allgatherv`,
//! `MPI_Alltoall(v)`, `MPI_Scan`, `MPI_Exscan`, and their `_c` large-count variants (`name`
//! lets a variant report its own name; count and displacement arrays come as [`Ints`]).
//!
//! Every argument is checked before any data moves. The data-movement collectives hand the
//! algorithms byte spans `(pointer, bytes)`, one per rank. A buffer's per-rank blocks are
//! first laid out ([`laid_out`], [`regular`]: `count` items at `displ × extent` bytes from the
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
//! (Alltoallv). Scan/Exscan compare count, datatype and op like the reductions.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::*;
use crate::abi::guard;
use crate::coll;
use crate::error::{Class, Error, Result};
use crate::frame::Kind;
use crate::runtime;

/// `MPI_BYTE`: the unit of data-movement signatures (see the module comment).
pub(crate) const BYTE: c_int = 0x4c00_010d;

/// An array of counts or displacements: `int[]` in the classic functions, `MPI_Count[]` /
/// `MPI_Aint[]` (both 64-bit) in the `_c` variants.
#[derive(Clone, Copy)]
pub enum Ints {
    Int(*const c_int),
    Long(*const i64),
}

impl Ints {
    /// The first `n` elements; a NULL array is `MPI_ERR_ARG` naming `what`.
    ///
    /// # Safety
    /// A non-NULL array holds at least `n` elements (MPI: one per rank).
    pub(crate) unsafe fn read(self, n: usize, what: &str) -> Result<Vec<i64>> {
        let null = || Error::new(Class::Arg, format!("{what} is NULL"));
        // SAFETY: non-NULL, and MPI requires the caller to provide one element per rank.
        Ok(match self {
            Ints::Int(p) if !p.is_null() => {
                (0..n).map(|i| i64::from(unsafe { *p.add(i) })).collect()
            }
            Ints::Long(p) if !p.is_null() => (0..n).map(|i| unsafe { *p.add(i) }).collect(),
            _ => return Err(null()),
        })
    }

    /// The first `n` elements as counts (negative: `MPI_ERR_COUNT`).
    pub(crate) unsafe fn counts(self, n: usize, what: &str) -> Result<Vec<usize>> {
        // SAFETY: forwarded contract.
        let v = unsafe { self.read(n, what) }?;
        v.iter()
            .enumerate()
            .map(|(i, &c)| count_arg(c, &format!("{what}[{i}]")))
            .collect()
    }
}

/// One side (send or receive) of a data-movement collective: its datatype and how it moves.
pub(crate) struct Side {
    pub(crate) t: TypeArg,
    pub(crate) v: View,
}

impl Side {
    pub(crate) fn new(dt: c_int, what: &str) -> Result<Side> {
        let t = type_arg(dt, what)?;
        let v = t.moving();
        Ok(Side { t, v })
    }

    /// What `count` items carry.
    pub(crate) fn typed(&self, count: usize, cname: &str) -> Result<Typed> {
        Ok(Typed {
            bytes: self.v.bytes(count, cname)?,
            sig: count * self.t.size(),
        })
    }
}

/// What a block carries.
#[derive(Clone, Copy)]
pub(crate) struct Typed {
    /// Bytes the algorithms move: the packed items (count × extent for predefined and
    /// contiguous types).
    pub(crate) bytes: usize,
    /// Length of the type signature: count × size (what must match between sender and
    /// receiver; differs from `bytes` for types with padding, such as `MPI_DOUBLE_INT`).
    pub(crate) sig: usize,
}

/// The per-rank blocks of a buffer, validated.
pub(crate) struct Laid {
    /// `(byte offset from the buffer, count)` per rank.
    pub(crate) items: Vec<(isize, usize)>,
    pub(crate) typed: Vec<Typed>,
}

impl Laid {
    pub(crate) fn bytes(&self) -> usize {
        self.typed.iter().map(|t| t.bytes).sum()
    }
}

/// Blocks of `counts[i]` items at `displs[i]` extents from `buf`, of datatype `side`.
pub(crate) fn laid_out(
    buf: *const c_void,
    side: &Side,
    counts: &[usize],
    displs: &[i64],
    names: [&str; 3],
) -> Result<Laid> {
    let [bname, cname, dname] = names;
    let ext = side.t.extent() as i64;
    let mut items = Vec::with_capacity(counts.len());
    let mut typed = Vec::with_capacity(counts.len());
    let mut total = 0usize;
    for (i, (&c, &disp)) in counts.iter().zip(displs).enumerate() {
        let t = side.typed(c, &format!("{cname}[{i}]"))?;
        let at = disp
            .checked_mul(ext)
            .and_then(|o| isize::try_from(o).ok())
            .ok_or_else(|| Error::new(Class::Arg, format!("{dname}[{i}] ({disp}) is too large")))?;
        total = total
            .checked_add(t.bytes)
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| Error::new(Class::Count, format!("the {cname} add up to too much")))?;
        items.push((at, c));
        typed.push(t);
    }
    buf_arg(buf, total, bname)?;
    Ok(Laid { items, typed })
}

/// `n` blocks of `count` items back to back from `buf` (Gather, Scatter, Alltoall).
pub(crate) fn regular(
    buf: *const c_void,
    side: &Side,
    count: usize,
    n: usize,
    bname: &str,
    cname: &str,
) -> Result<Laid> {
    let too_large = || {
        Error::new(
            Class::Count,
            format!("{cname} × communicator size is too large"),
        )
    };
    let all = count.checked_mul(n).ok_or_else(too_large)?;
    side.v.bytes(all, cname).map_err(|_| too_large())?;
    all.checked_mul(side.t.extent())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(too_large)?;
    // Fits: all × extent fits in isize.
    let displs: Vec<i64> = (0..n).map(|i| (i * count) as i64).collect();
    laid_out(
        buf,
        side,
        &vec![count; n],
        &displs,
        [bname, cname, "displs"],
    )
}

/// Sender's and receiver's sides of one block must carry the same data.
pub(crate) fn matching(send: &Typed, recv: &Typed, recv_name: &str) -> Result<()> {
    if send.sig != recv.sig || send.bytes != recv.bytes {
        return Err(Error::new(
            Class::Truncate,
            format!(
                "sendcount×sendtype ({} bytes of data) does not match {recv_name} ({} bytes of data)",
                send.sig, recv.sig
            ),
        ));
    }
    Ok(())
}

/// A validated buffer of `count` items of one datatype: a rank's send buffer, or the receive
/// buffer of Scatter(v).
pub(crate) struct One {
    pub(crate) side: Side,
    pub(crate) count: usize,
    pub(crate) t: Typed,
}

pub(crate) fn one(buf: *const c_void, count: Count, dt: c_int, names: [&str; 3]) -> Result<One> {
    let [bname, cname, tname] = names;
    let count = count_arg(count, cname)?;
    let side = Side::new(dt, tname)?;
    let t = side.typed(count, cname)?;
    buf_arg(buf, t.bytes, bname)?;
    Ok(One { side, count, t })
}

pub(crate) const SEND: [&str; 3] = ["sendbuf", "sendcount", "sendtype"];
pub(crate) const RECV: [&str; 3] = ["recvbuf", "recvcount", "recvtype"];

/// The own contribution of a rank whose block `own` of `recv` also receives it (Gather(v) at
/// the root, Allgatherv): `None` for `MPI_IN_PLACE` (it is already there).
pub(crate) fn own_send(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *const c_void,
    laid: &Laid,
    own: usize,
) -> Result<Option<One>> {
    if is_in_place(send) {
        return Ok(None);
    }
    let s = one(send, scount, sdt, SEND)?;
    matching(
        &s.t,
        &laid.typed[own],
        "this rank's block of recvcount×recvtype",
    )?;
    let own_user = recv.cast::<u8>().wrapping_offset(laid.items[own].0);
    no_alias(send, recv, s.t.bytes)?;
    no_alias(send, own_user.cast(), s.t.bytes)?;
    Ok(Some(s))
}

/// The root's own block in Scatter(v), block `own` of `send`: `None` for `MPI_IN_PLACE` (it
/// stays in the send buffer).
pub(crate) fn own_recv(
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    send: *const c_void,
    laid: &Laid,
    own: usize,
) -> Result<Option<One>> {
    if is_in_place(recv) {
        return Ok(None);
    }
    let r = one(recv, rcount, rdt, RECV)?;
    matching(&laid.typed[own], &r.t, "recvcount×recvtype")?;
    let own_user = send.cast::<u8>().wrapping_offset(laid.items[own].0);
    no_alias(send, recv, r.t.bytes)?;
    no_alias(own_user.cast(), recv, r.t.bytes)?;
    Ok(Some(r))
}

pub(crate) fn read_only(s: &[(*mut u8, usize)]) -> Vec<(*const u8, usize)> {
    s.iter().map(|&(p, len)| (p as *const u8, len)).collect()
}

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
        if let Some(inter) = c.inter() {
            // SAFETY: the caller's contract, forwarded.
            return unsafe {
                intercomm_coll::gatherv(
                    name, &c, inter, send, scount, sdt, recv, rcount, None, rdt, root,
                )
            };
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
        if let Some(inter) = c.inter() {
            // SAFETY: the caller's contract, forwarded.
            return unsafe {
                intercomm_coll::gatherv(
                    name,
                    &c,
                    inter,
                    send,
                    scount,
                    sdt,
                    recv,
                    0,
                    Some((rcounts, displs)),
                    rdt,
                    root,
                )
            };
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
        if let Some(inter) = c.inter() {
            // SAFETY: the caller's contract, forwarded.
            return unsafe {
                intercomm_coll::scatterv(
                    name, &c, inter, send, scount, None, sdt, recv, rcount, rdt, root,
                )
            };
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
        if let Some(inter) = c.inter() {
            // SAFETY: the caller's contract, forwarded.
            return unsafe {
                intercomm_coll::scatterv(
                    name,
                    &c,
                    inter,
                    send,
                    0,
                    Some((scounts, displs)),
                    sdt,
                    recv,
                    rcount,
                    rdt,
                    root,
                )
            };
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
        if let Some(inter) = c.inter() {
            // SAFETY: the caller's contract, forwarded.
            return unsafe {
                intercomm_coll::allgatherv(
                    name,
                    &c,
                    inter,
                    send,
                    scount,
                    sdt,
                    recv,
                    0,
                    Some((rcounts, displs)),
                    rdt,
                )
            };
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
        if let Some(inter) = c.inter() {
            // SAFETY: the caller's contract, forwarded.
            return unsafe {
                intercomm_coll::alltoallv(
                    name, &c, inter, send, scount, sdt, recv, rcount, rdt, None,
                )
            };
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
        if let Some(inter) = c.inter() {
            // SAFETY: the caller's contract, forwarded.
            return unsafe {
                intercomm_coll::alltoallv(
                    name,
                    &c,
                    inter,
                    send,
                    0,
                    sdt,
                    recv,
                    0,
                    rdt,
                    Some((scounts, sdispls, rcounts, rdispls)),
                )
            };
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
        let c = comm_of(runtime::get()?, comm)?;
        // SAFETY: MPI requires every array to hold one element per rank.
        let (rp, sp) = unsafe {
            super::plan::alltoallw_parts(
                send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, &c,
            )
        }?;
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

// ---------------------------------------------------------------------------------------------
// Scan, Exscan

/// `MPI_Scan` and `MPI_Exscan` (`exclusive`).
#[allow(clippy::too_many_arguments)]
/// `MPI_Scan` (inclusive prefix reduction).
pub unsafe fn scan(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    comm: c_int,
) -> c_int {
    // SAFETY: the caller's contract, passed on.
    unsafe { prefix_reduction(name, false, send, recv, count, dt, op, comm) }
}

/// `MPI_Exscan` (exclusive prefix reduction).
pub unsafe fn exscan(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    comm: c_int,
) -> c_int {
    // SAFETY: the caller's contract, passed on.
    unsafe { prefix_reduction(name, true, send, recv, count, dt, op, comm) }
}

#[allow(clippy::too_many_arguments)]
unsafe fn prefix_reduction(
    name: &'static str,
    exclusive: bool,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        crate::cuda::refuse_device(name, &[send, recv as *const c_void])?;
        let c = comm_of(runtime::get()?, comm)?;
        // Derived datatypes are packed when needed (see `typearg.rs`).
        // SAFETY: MPI's contract for sendbuf/recvbuf, checked inside.
        let io = unsafe { ReduceIo::new(send, recv, count, dt, op) }?;
        let kind = if exclusive { Kind::Exscan } else { Kind::Scan };
        let sig = sig(kind, io.elems, io.view.handle, op, -1);
        let (n, red) = (io.elems, io.red);
        coll::scan(
            &c,
            io.input,
            io.output.ptr(),
            n,
            &io.view.dt,
            red,
            exclusive,
            sig,
        )?;
        let st_recv = io.output;
        if !(exclusive && c.rank == 0) {
            // SAFETY: as above (Exscan leaves rank 0's recvbuf alone).
            unsafe { st_recv.finish() };
        }
        Ok(())
    })
}
