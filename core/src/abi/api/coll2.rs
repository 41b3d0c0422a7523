//! The rest of the collective family: `MPI_Gather(v)`, `MPI_Scatter(v)`, `MPI_Allgatherv`,
//! `MPI_Alltoall(v)`, `MPI_Scan`, `MPI_Exscan`, and their `_c` large-count variants (`name`
//! lets a variant report its own name; count and displacement arrays come as [`Ints`]).
//!
//! Every argument is checked before any data moves. The data-movement collectives hand the
//! algorithms byte spans `(pointer, bytes)`, one per rank: the turning of (buffer, count,
//! datatype, displacement) into bytes happens only in [`typed`], [`spans`] and [`regular`].
//! Displacements may be negative (MPI allows blocks before the buffer's start address).
//!
//! Signatures: every frame carries one and receivers compare it. sendtype and recvtype may
//! differ as long as the type signatures match, so the count in a data-movement signature is
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
const BYTE: c_int = 0x4c00_010d;

/// A byte span `(pointer, bytes)` of a receive buffer; send spans are the same, read-only.
type Span = (*mut u8, usize);

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
    unsafe fn read(self, n: usize, what: &str) -> Result<Vec<i64>> {
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
    unsafe fn counts(self, n: usize, what: &str) -> Result<Vec<usize>> {
        // SAFETY: forwarded contract.
        let v = unsafe { self.read(n, what) }?;
        v.iter()
            .enumerate()
            .map(|(i, &c)| count_arg(c, &format!("{what}[{i}]")))
            .collect()
    }
}

/// A validated (count, datatype) pair and the bytes it covers.
struct Typed {
    /// Bytes in a buffer: count × extent.
    bytes: usize,
    /// Length of the type signature: count × size (what must match between sender and
    /// receiver; differs from `bytes` only for types with padding, such as `MPI_DOUBLE_INT`).
    sig: usize,
}

fn typed(count: Count, dt: c_int, cname: &str, tname: &str) -> Result<Typed> {
    let count = count_arg(count, cname)?;
    let d = raw_datatype_arg(dt, tname)?;
    let bytes = nbytes(count, &d, cname)?;
    Ok(Typed {
        bytes,
        sig: count * d.size,
    })
}

/// Spans of `counts[i]` elements at `displs[i]` elements from `buf`, of datatype `d`.
fn spans(
    buf: *const c_void,
    counts: &[usize],
    displs: &[i64],
    d: &Datatype,
    names: [&str; 3],
) -> Result<Vec<Span>> {
    let [bname, cname, dname] = names;
    let mut out = Vec::with_capacity(counts.len());
    let mut total = 0usize;
    for (i, (&c, &disp)) in counts.iter().zip(displs).enumerate() {
        let len = nbytes(c, d, &format!("{cname}[{i}]"))?;
        let off = disp
            .checked_mul(d.extent as i64)
            .and_then(|o| isize::try_from(o).ok())
            .ok_or_else(|| Error::new(Class::Arg, format!("{dname}[{i}] ({disp}) is too large")))?;
        total = total.saturating_add(len);
        out.push((buf.cast::<u8>().wrapping_offset(off) as *mut u8, len));
    }
    buf_arg(buf, total, bname)?;
    Ok(out)
}

/// `n` spans of `t` back to back from `buf` (Gather, Scatter, Alltoall).
fn regular(buf: *const c_void, t: &Typed, n: usize, bname: &str, cname: &str) -> Result<Vec<Span>> {
    let total = t
        .bytes
        .checked_mul(n)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            Error::new(
                Class::Count,
                format!("{cname} × communicator size is too large"),
            )
        })?;
    buf_arg(buf, total, bname)?;
    let base = buf.cast::<u8>() as *mut u8;
    Ok((0..n)
        .map(|i| (base.wrapping_add(i * t.bytes), t.bytes))
        .collect())
}

/// Sender's and receiver's sides of one block must carry the same data.
fn matching(send: &Typed, recv_sig: usize, recv_bytes: usize, recv_name: &str) -> Result<()> {
    if send.sig != recv_sig || send.bytes != recv_bytes {
        return Err(Error::new(
            Class::Truncate,
            format!(
                "sendcount×sendtype ({} bytes) does not match {recv_name} ({recv_bytes} bytes)",
                send.bytes
            ),
        ));
    }
    Ok(())
}

/// The own contribution of a rank whose block also lands in its receive buffer at `own`
/// (Gather(v) at the root, Allgatherv): `MPI_IN_PLACE` means it is already there. Returns the
/// send pointer.
unsafe fn own_send(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    own: Span,
    own_sig: usize,
    recv: *const c_void,
) -> Result<*const u8> {
    if is_in_place(send) {
        return Ok(own.0);
    }
    let t = typed(scount, sdt, "sendcount", "sendtype")?;
    buf_arg(send, t.bytes, "sendbuf")?;
    matching(
        &t,
        own_sig,
        own.1,
        "this rank's block of recvcount×recvtype",
    )?;
    no_alias(send, recv, t.bytes)?;
    no_alias(send, own.0 as *const c_void, t.bytes)?;
    Ok(send.cast())
}

/// A send buffer on a rank that only sends (Gather(v) off the root): pointer and bytes.
fn plain_send(send: *const c_void, scount: Count, sdt: c_int) -> Result<(*const u8, Typed)> {
    let t = typed(scount, sdt, "sendcount", "sendtype")?;
    buf_arg(send, t.bytes, "sendbuf")?;
    Ok((send.cast(), t))
}

/// A receive buffer on a rank that only receives (Scatter(v) off the root).
fn plain_recv(recv: *mut c_void, rcount: Count, rdt: c_int) -> Result<(*mut u8, Typed)> {
    let t = typed(rcount, rdt, "recvcount", "recvtype")?;
    buf_arg(recv, t.bytes, "recvbuf")?;
    Ok((recv.cast(), t))
}

/// The root's own block in Scatter(v): `MPI_IN_PLACE` leaves it in the send buffer at `own`.
unsafe fn own_recv(
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    own: Span,
    own_sig: usize,
    send: *const c_void,
) -> Result<*mut u8> {
    if is_in_place(recv) {
        return Ok(own.0);
    }
    let (p, t) = plain_recv(recv, rcount, rdt)?;
    let own_t = Typed {
        sig: own_sig,
        bytes: own.1,
    };
    matching(&own_t, t.sig, t.bytes, "recvcount×recvtype")?;
    no_alias(send, recv, t.bytes)?;
    no_alias(own.0 as *const c_void, recv, t.bytes)?;
    Ok(p)
}

// ---------------------------------------------------------------------------------------------
// Gather, Scatter

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
        let c = comm_of(runtime::get()?, comm)?;
        let root = root_arg(root, &c)?;
        let (sp, slen, ssig, rs) = if c.rank == root {
            let t = typed(rcount, rdt, "recvcount", "recvtype")?;
            let rs = regular(recv, &t, c.size(), "recvbuf", "recvcount")?;
            // SAFETY: pointers are checked inside before use.
            let sp = unsafe { own_send(send, scount, sdt, rs[root], t.sig, recv) }?;
            (sp, t.bytes, t.sig, rs)
        } else {
            let (sp, t) = plain_send(send, scount, sdt)?;
            (sp, t.bytes, t.sig, Vec::new())
        };
        let sig = sig(Kind::Gather, ssig, BYTE, 0, root as i32);
        coll::gatherv(&c, sp, slen, &rs, root, sig)
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
        let c = comm_of(runtime::get()?, comm)?;
        let root = root_arg(root, &c)?;
        let (sp, slen, rs) = if c.rank == root {
            let n = c.size();
            // SAFETY: MPI requires both arrays to hold one element per rank at the root.
            let counts = unsafe { rcounts.counts(n, "recvcounts") }?;
            // SAFETY: as above.
            let displs = unsafe { displs.read(n, "displs") }?;
            let d = raw_datatype_arg(rdt, "recvtype")?;
            let rs = spans(
                recv,
                &counts,
                &displs,
                &d,
                ["recvbuf", "recvcounts", "displs"],
            )?;
            // SAFETY: pointers are checked inside before use.
            let sp = unsafe { own_send(send, scount, sdt, rs[root], counts[root] * d.size, recv) }?;
            (sp, rs[root].1, rs)
        } else {
            let (sp, t) = plain_send(send, scount, sdt)?;
            (sp, t.bytes, Vec::new())
        };
        let sig = sig(Kind::Gatherv, 0, BYTE, 0, root as i32);
        coll::gatherv(&c, sp, slen, &rs, root, sig)
    })
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
        let c = comm_of(runtime::get()?, comm)?;
        let root = root_arg(root, &c)?;
        let (ss, rp, rlen, rsig) = if c.rank == root {
            let t = typed(scount, sdt, "sendcount", "sendtype")?;
            let ss = regular(send, &t, c.size(), "sendbuf", "sendcount")?;
            // SAFETY: pointers are checked inside before use.
            let rp = unsafe { own_recv(recv, rcount, rdt, ss[root], t.sig, send) }?;
            (ss, rp, t.bytes, t.sig)
        } else {
            let (rp, t) = plain_recv(recv, rcount, rdt)?;
            (Vec::new(), rp, t.bytes, t.sig)
        };
        let sig = sig(Kind::Scatter, rsig, BYTE, 0, root as i32);
        coll::scatterv(&c, &read_only(&ss), rp, rlen, root, sig)
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
        let c = comm_of(runtime::get()?, comm)?;
        let root = root_arg(root, &c)?;
        let (ss, rp, rlen) = if c.rank == root {
            let n = c.size();
            // SAFETY: MPI requires both arrays to hold one element per rank at the root.
            let counts = unsafe { scounts.counts(n, "sendcounts") }?;
            // SAFETY: as above.
            let displs = unsafe { displs.read(n, "displs") }?;
            let d = raw_datatype_arg(sdt, "sendtype")?;
            let ss = spans(
                send,
                &counts,
                &displs,
                &d,
                ["sendbuf", "sendcounts", "displs"],
            )?;
            // SAFETY: pointers are checked inside before use.
            let rp = unsafe { own_recv(recv, rcount, rdt, ss[root], counts[root] * d.size, send) }?;
            let rlen = ss[root].1;
            (ss, rp, rlen)
        } else {
            let (rp, t) = plain_recv(recv, rcount, rdt)?;
            (Vec::new(), rp, t.bytes)
        };
        let sig = sig(Kind::Scatterv, 0, BYTE, 0, root as i32);
        coll::scatterv(&c, &read_only(&ss), rp, rlen, root, sig)
    })
}

fn read_only(s: &[Span]) -> Vec<(*const u8, usize)> {
    s.iter().map(|&(p, len)| (p as *const u8, len)).collect()
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
        let c = comm_of(runtime::get()?, comm)?;
        let n = c.size();
        // SAFETY: MPI requires both arrays to hold one element per rank.
        let counts = unsafe { rcounts.counts(n, "recvcounts") }?;
        // SAFETY: as above.
        let displs = unsafe { displs.read(n, "displs") }?;
        let d = raw_datatype_arg(rdt, "recvtype")?;
        let rs = spans(
            recv,
            &counts,
            &displs,
            &d,
            ["recvbuf", "recvcounts", "displs"],
        )?;
        let own_sig = counts[c.rank] * d.size;
        // SAFETY: pointers are checked inside before use.
        let sp = unsafe { own_send(send, scount, sdt, rs[c.rank], own_sig, recv) }?;
        // Fits: every block's bytes fit in isize, and size <= extent.
        let total = counts
            .iter()
            .fold(0usize, |a, &k| a.saturating_add(k * d.size));
        coll::allgatherv(&c, sp, &rs, sig(Kind::Allgatherv, total, BYTE, 0, -1))
    })
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
        let c = comm_of(runtime::get()?, comm)?;
        let n = c.size();
        let rt = typed(rcount, rdt, "recvcount", "recvtype")?;
        let rs = regular(recv, &rt, n, "recvbuf", "recvcount")?;
        let ss = if is_in_place(send) {
            rs.clone()
        } else {
            let st = typed(scount, sdt, "sendcount", "sendtype")?;
            matching(&st, rt.sig, rt.bytes, "recvcount×recvtype")?;
            let ss = regular(send, &st, n, "sendbuf", "sendcount")?;
            no_alias(send, recv, st.bytes * n)?;
            ss
        };
        let sig = sig(Kind::Alltoall, rt.sig, BYTE, 0, -1);
        coll::alltoallv(&c, &read_only(&ss), &rs, sig)
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
        let c = comm_of(runtime::get()?, comm)?;
        let (n, r) = (c.size(), c.rank);
        // SAFETY: MPI requires every array to hold one element per rank.
        let rcounts = unsafe { rcounts.counts(n, "recvcounts") }?;
        // SAFETY: as above.
        let rdispls = unsafe { rdispls.read(n, "rdispls") }?;
        let rd = raw_datatype_arg(rdt, "recvtype")?;
        let rs = spans(
            recv,
            &rcounts,
            &rdispls,
            &rd,
            ["recvbuf", "recvcounts", "rdispls"],
        )?;
        let ss = if is_in_place(send) {
            rs.clone()
        } else {
            // SAFETY: as above.
            let scounts = unsafe { scounts.counts(n, "sendcounts") }?;
            // SAFETY: as above.
            let sdispls = unsafe { sdispls.read(n, "sdispls") }?;
            let sd = raw_datatype_arg(sdt, "sendtype")?;
            let ss = spans(
                send,
                &scounts,
                &sdispls,
                &sd,
                ["sendbuf", "sendcounts", "sdispls"],
            )?;
            let own = Typed {
                bytes: ss[r].1,
                sig: scounts[r] * sd.size,
            };
            matching(
                &own,
                rcounts[r] * rd.size,
                rs[r].1,
                "recvcounts[rank]×recvtype",
            )?;
            let moved = ss.iter().chain(&rs).map(|s| s.1).max().unwrap_or(0);
            no_alias(send, recv, moved)?;
            ss
        };
        coll::alltoallv(
            &c,
            &read_only(&ss),
            &rs,
            sig(Kind::Alltoallv, 0, BYTE, 0, -1),
        )
    })
}

// ---------------------------------------------------------------------------------------------
// Scan, Exscan

/// `MPI_Scan` and `MPI_Exscan` (`exclusive`).
#[allow(clippy::too_many_arguments)]
pub unsafe fn scan(
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
        let c = comm_of(runtime::get()?, comm)?;
        let cnt = count_arg(count, "count")?;
        // Derived datatypes go through `type_arg` (see `typearg.rs`): packed when needed.
        let t = type_arg(dt, "datatype")?;
        let (red, v) = reduce_args(op, &t)?;
        let n = v.count(cnt, "count")?;
        let len = v.bytes(cnt, "count")?;
        buf_arg(recv, len, "recvbuf")?;
        let in_place = is_in_place(send);
        if !in_place {
            buf_arg(send, len, "sendbuf")?;
            no_alias(send, recv, len)?;
        }
        // SAFETY: MPI: sendbuf holds `count` items to read, recvbuf `count` items to write
        // (and read, in place).
        let (st_send, st_recv) = unsafe {
            let r = v.stage(recv, cnt, in_place, true);
            ((!in_place).then(|| v.stage(send, cnt, true, false)), r)
        };
        let inp = st_send
            .as_ref()
            .map_or(st_recv.ptr() as *const u8, |s| s.ptr());
        let kind = if exclusive { Kind::Exscan } else { Kind::Scan };
        let sig = sig(kind, n, v.handle, op, -1);
        coll::scan(&c, inp, st_recv.ptr(), n, &v.dt, red, exclusive, sig)?;
        if !(exclusive && c.rank == 0) {
            // SAFETY: as above (Exscan leaves rank 0's recvbuf alone).
            unsafe { st_recv.finish() };
        }
        Ok(())
    })
}
