//! The per-rank blocks of a data-movement collective's buffers: count and displacement arrays
//! ([`Ints`]), a buffer's blocks laid out and validated ([`laid_out`], [`regular`]: `count`
//! items at `displ × extent` bytes from the buffer, displacements in units of the datatype's
//! extent and possibly negative, as MPI says), and the checks that send and receive sides carry
//! the same type signature ([`matching`]). Shared by the ordinary, neighbor and
//! intercommunicator collectives and their plans.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::*;
use crate::error::{Class, Error, Result};

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
            .map(|(i, &c)| indexed(what, i, |w| count_arg(c, w)))
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
        let t = indexed(cname, i, |w| side.typed(c, w))?;
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
