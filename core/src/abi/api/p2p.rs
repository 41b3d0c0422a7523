//! Point-to-point: `MPI_Send`, `MPI_Recv`, `MPI_Sendrecv`, `MPI_Sendrecv_replace`,
//! `MPI_Probe`, `MPI_Iprobe`, `MPI_Get_count` (and the `_c` variants MPI-4 defines). `name` lets
//! the `_c` variants report their own name.
//!
//! Statuses are MPICH's: the count is the message size in bytes, split over `count_lo` (low 32
//! bits) and `count_hi_and_cancelled` (high bits shifted left by one; bit 0 is "cancelled",
//! always 0 here). A receive fills `MPI_SOURCE`, `MPI_TAG` and the count and leaves
//! `MPI_ERROR` alone, as MPI says (only calls returning `MPI_ERR_IN_STATUS` set it) — also on
//! truncation, where the call returns `MPI_ERR_TRUNCATE` and the count says how many bytes were
//! stored (the reference MPIs differ there: MPICH 4.0.2 reports 0, Open MPI 4.1 the message
//! size; both leave `MPI_ERROR` alone too).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::*;
use crate::abi::{guard, out};
use crate::error::{Class, Error, Result};
use crate::p2p::{self, Incoming, Outgoing, Received, Source};
use crate::runtime;

/// `MPI_Status`, MPICH layout (20 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
}

const _: () = assert!(std::mem::size_of::<Status>() == 20);

/// `MPI_STATUS_IGNORE` (= `MPI_STATUSES_IGNORE`) in the MPICH ABI.
pub(crate) const STATUS_IGNORE: usize = 1;
pub(crate) const ANY_TAG: c_int = -1;

impl Status {
    /// The count in bytes.
    pub fn bytes(&self) -> u64 {
        (self.count_lo as u32 as u64) | ((self.count_hi_and_cancelled as u32 as u64 >> 1) << 32)
    }

    pub(crate) fn set_bytes(&mut self, bytes: u64) {
        self.count_lo = bytes as u32 as c_int;
        self.count_hi_and_cancelled = ((bytes >> 32) << 1) as u32 as c_int;
    }
}

// ---------------------------------------------------------------------------------------------
// Argument checks

fn tag_out_of_range(what: &str, tag: c_int) -> Error {
    Error::new(
        Class::Tag,
        format!(
            "{what} {tag} is invalid (tags are 0..={}{})",
            h::MAX_TAG,
            if what == "tag" || what == "sendtag" {
                ""
            } else {
                " or MPI_ANY_TAG"
            }
        ),
    )
}

pub(crate) fn send_tag_arg(tag: c_int, what: &str) -> Result<u32> {
    if (0..=h::MAX_TAG).contains(&tag) {
        Ok(tag as u32)
    } else {
        Err(tag_out_of_range(what, tag))
    }
}

/// `None`: `MPI_ANY_TAG`.
pub(crate) fn recv_tag_arg(tag: c_int, what: &str) -> Result<Option<u32>> {
    if tag == ANY_TAG {
        Ok(None)
    } else if (0..=h::MAX_TAG).contains(&tag) {
        Ok(Some(tag as u32))
    } else {
        Err(tag_out_of_range(what, tag))
    }
}

fn rank_error(what: &str, r: c_int, c: &Comm, extra: &str) -> Error {
    Error::new(
        Class::Rank,
        format!(
            "{what} {r} is not a rank of a communicator of size {} (nor MPI_PROC_NULL{extra})",
            c.size()
        ),
    )
}

/// `None`: `MPI_PROC_NULL`.
pub(crate) fn dest_arg(dest: c_int, c: &Comm, what: &str) -> Result<Option<usize>> {
    match dest {
        h::PROC_NULL => Ok(None),
        d if d >= 0 && (d as usize) < c.size() => Ok(Some(d as usize)),
        d => Err(rank_error(what, d, c, "")),
    }
}

/// `None`: `MPI_PROC_NULL`.
pub(crate) fn source_arg(source: c_int, c: &Comm, what: &str) -> Result<Option<Source>> {
    match source {
        h::PROC_NULL => Ok(None),
        h::ANY_SOURCE => Ok(Some(Source::Any)),
        s if s >= 0 && (s as usize) < c.size() => Ok(Some(Source::Rank(s as usize))),
        s => Err(rank_error(what, s, c, ", MPI_ANY_SOURCE")),
    }
}

/// An output status: `None` for `MPI_STATUS_IGNORE`; NULL is an error.
pub(crate) fn status_arg(p: *mut Status) -> Result<Option<*mut Status>> {
    if p.is_null() {
        return Err(Error::new(
            Class::Arg,
            "status is NULL (use MPI_STATUS_IGNORE)",
        ));
    }
    Ok((p as usize != STATUS_IGNORE).then_some(p))
}

/// A send buffer: checked, and described for the core. A derived datatype's items are packed
/// into the returned staging buffer (see `typearg.rs`), which must outlive the send.
pub(crate) fn outgoing(
    buf: *const c_void,
    count: Count,
    dt: c_int,
    what: [&str; 3],
) -> Result<(Outgoing, Staged)> {
    let n = count_arg(count, what[1])?;
    outgoing_typed(buf, n, &type_arg(dt, what[2])?, what)
}

/// [`outgoing`] with the count and datatype already resolved (a persistent send keeps them).
pub(crate) fn outgoing_typed(
    buf: *const c_void,
    n: usize,
    t: &TypeArg,
    what: [&str; 3],
) -> Result<(Outgoing, Staged)> {
    let v = t.moving();
    let len = v.bytes(n, what[1])?;
    buf_or_bottom(buf, len, what[0], (n > 0).then(|| t.true_lb()))?;
    // SAFETY: MPI: `buf` holds `count` items of the datatype to read.
    let st = unsafe { v.stage(buf, n, true, false) };
    let msg = Outgoing {
        buf: st.ptr(),
        len,
        // MPI's size of the message: items × the type's size (not the bytes on the wire, which
        // include the padding of pair types inside a mixed derived type).
        mpi_bytes: (n as u64).saturating_mul(t.size() as u64),
        dtype: v.handle as u32,
    };
    Ok((msg, st))
}

/// A receive buffer: checked, and described for the core. A derived datatype's items are
/// received into the returned staging buffer and unpacked by [`unstage`].
pub(crate) fn incoming(
    buf: *mut c_void,
    count: Count,
    dt: c_int,
    what: [&str; 3],
) -> Result<(Incoming, Staged)> {
    let n = count_arg(count, what[1])?;
    incoming_typed(buf, n, &type_arg(dt, what[2])?, what)
}

/// [`incoming`] with the count and datatype already resolved (a persistent receive keeps them).
pub(crate) fn incoming_typed(
    buf: *mut c_void,
    n: usize,
    t: &TypeArg,
    what: [&str; 3],
) -> Result<(Incoming, Staged)> {
    let v = t.moving();
    let cap = v.bytes(n, what[1])?;
    buf_or_bottom(buf, cap, what[0], (n > 0).then(|| t.true_lb()))?;
    // SAFETY: MPI: `buf` holds `count` items of the datatype to write.
    let st = unsafe { v.stage(buf, n, false, true) };
    let into = Incoming {
        buf: st.ptr(),
        cap,
        dt: v.dt,
    };
    Ok((into, st))
}

/// Unpacks what a receive stored (nothing to do for contiguous types).
pub(crate) fn unstage(st: Staged, r: &Received, cap: usize) {
    let stored = if r.truncated {
        cap
    } else {
        r.env.wire_bytes as usize
    };
    // SAFETY: the buffer was validated by `incoming`; only received items are written.
    unsafe { st.finish_received(stored) };
}

fn overlaps(a: *const c_void, alen: usize, b: *const c_void, blen: usize) -> bool {
    let (a, b) = (a as usize, b as usize);
    alen > 0 && blen > 0 && a < b.saturating_add(blen) && b < a.saturating_add(alen)
}

// ---------------------------------------------------------------------------------------------
// Status writing

/// Fills a status (unless ignored): count, `MPI_SOURCE`, `MPI_TAG`; never `MPI_ERROR`.
pub(crate) fn set_status(st: Option<*mut Status>, source: c_int, tag: c_int, bytes: u64) {
    let Some(p) = st else { return };
    // SAFETY: `p` is a non-NULL, non-MPI_STATUS_IGNORE status pointer the caller supplied for
    // this output (checked by status_arg); writing field by field leaves MPI_ERROR untouched.
    unsafe {
        let s = &mut *p;
        s.set_bytes(bytes);
        s.source = source;
        s.tag = tag;
    }
}

/// The status of a receive from `MPI_PROC_NULL`.
pub(crate) fn set_status_proc_null(st: Option<*mut Status>) {
    set_status(st, h::PROC_NULL, ANY_TAG, 0);
}

/// Reports a completed receive: fills the status; truncation is `MPI_ERR_TRUNCATE`.
pub(crate) fn finish_recv(st: Option<*mut Status>, r: &Received, cap: usize) -> Result<()> {
    if !r.truncated {
        set_status(st, r.env.source, r.env.tag, r.bytes);
        return Ok(());
    }
    set_status(st, r.env.source, r.env.tag, r.bytes);
    Err(Error::new(
        Class::Truncate,
        format!(
            "message truncated: rank {} sent {} bytes with tag {}, the receive buffer holds {cap} bytes (the first {cap} were stored)",
            r.env.source, r.env.wire_bytes, r.env.tag
        ),
    ))
}

// ---------------------------------------------------------------------------------------------
// The calls

pub unsafe fn send(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
) -> c_int {
    send_in_mode(name, buf, count, dt, dest, tag, comm, p2p::Mode::Standard)
}

/// `MPI_Send` or `MPI_Ssend`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn send_in_mode(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    mode: p2p::Mode,
) -> c_int {
    guard(name, Some(comm), || {
        host_only(&[buf])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        let (msg, _staged) = outgoing(buf, count, dt, ["buf", "count", "datatype"])?;
        let tag = send_tag_arg(tag, "tag")?;
        match dest_arg(dest, &c, "dest")? {
            Some(dest) => p2p::send(&c, dest, tag, &msg, mode),
            None => Ok(()),
        }
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn recv(
    name: &'static str,
    buf: *mut c_void,
    count: Count,
    dt: c_int,
    source: c_int,
    tag: c_int,
    comm: c_int,
    status: *mut Status,
) -> c_int {
    guard(name, Some(comm), || {
        host_only(&[buf])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        let (into, staged) = incoming(buf, count, dt, ["buf", "count", "datatype"])?;
        let tag = recv_tag_arg(tag, "tag")?;
        let source = source_arg(source, &c, "source")?;
        let st = status_arg(status)?;
        match source {
            Some(source) => {
                let r = p2p::recv(&c, source, tag, &into)?;
                unstage(staged, &r, into.cap);
                finish_recv(st, &r, into.cap)
            }
            None => {
                set_status_proc_null(st);
                Ok(())
            }
        }
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn sendrecv(
    name: &'static str,
    sbuf: *const c_void,
    scount: Count,
    sdt: c_int,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: Count,
    rdt: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    status: *mut Status,
) -> c_int {
    guard(name, Some(comm), || {
        host_only(&[sbuf, rbuf as *const c_void])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        let (msg, _staged) = outgoing(sbuf, scount, sdt, ["sendbuf", "sendcount", "sendtype"])?;
        let stag = send_tag_arg(stag, "sendtag")?;
        let dest = dest_arg(dest, &c, "dest")?;
        let (into, staged) = incoming(rbuf, rcount, rdt, ["recvbuf", "recvcount", "recvtype"])?;
        let rtag = recv_tag_arg(rtag, "recvtag")?;
        let source = source_arg(source, &c, "source")?;
        let st = status_arg(status)?;
        if dest.is_some()
            && source.is_some()
            && overlaps(sbuf, msg.len, rbuf as *const c_void, into.cap)
            // Staged (derived) types: their typemaps may interleave in one array legally.
            && std::ptr::eq(msg.buf, sbuf.cast())
            && std::ptr::eq(into.buf, rbuf.cast())
        {
            return Err(Error::new(
                Class::Buffer,
                "sendbuf and recvbuf overlap (use MPI_Sendrecv_replace)",
            ));
        }
        let r = p2p::sendrecv(
            &c,
            dest.map(|d| (d, stag, &msg)),
            source.map(|s| (s, rtag, &into)),
        )?;
        match r {
            Some(r) => {
                unstage(staged, &r, into.cap);
                finish_recv(st, &r, into.cap)
            }
            None => {
                set_status_proc_null(st);
                Ok(())
            }
        }
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn sendrecv_replace(
    name: &'static str,
    buf: *mut c_void,
    count: Count,
    dt: c_int,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    status: *mut Status,
) -> c_int {
    guard(name, Some(comm), || {
        host_only(&[buf])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        let (mut msg, _staged) = outgoing(buf, count, dt, ["buf", "count", "datatype"])?;
        let stag = send_tag_arg(stag, "sendtag")?;
        let dest = dest_arg(dest, &c, "dest")?;
        let (into, staged) = incoming(buf, count, dt, ["buf", "count", "datatype"])?;
        let rtag = recv_tag_arg(rtag, "recvtag")?;
        let source = source_arg(source, &c, "source")?;
        let st = status_arg(status)?;
        // The receive overwrites the buffer while the send may still read it: send a copy.
        let copy: Vec<u8>;
        if dest.is_some() && source.is_some() && msg.len > 0 {
            // SAFETY: buf..buf+len is the caller's buffer (validated above).
            copy = unsafe { std::slice::from_raw_parts(msg.buf, msg.len) }.to_vec();
            msg.buf = copy.as_ptr();
        }
        let r = p2p::sendrecv(
            &c,
            dest.map(|d| (d, stag, &msg)),
            source.map(|s| (s, rtag, &into)),
        )?;
        match r {
            Some(r) => {
                unstage(staged, &r, into.cap);
                finish_recv(st, &r, into.cap)
            }
            None => {
                set_status_proc_null(st);
                Ok(())
            }
        }
    })
}

pub unsafe fn probe(source: c_int, tag: c_int, comm: c_int, status: *mut Status) -> c_int {
    guard("MPI_Probe", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        let tag = recv_tag_arg(tag, "tag")?;
        let source = source_arg(source, &c, "source")?;
        let st = status_arg(status)?;
        let Some(source) = source else {
            set_status_proc_null(st);
            return Ok(());
        };
        let env = p2p::probe(&c, source, tag, true)?.expect("a blocking probe finds a message");
        set_status(st, env.source, env.tag, env.mpi_bytes);
        Ok(())
    })
}

pub unsafe fn iprobe(
    source: c_int,
    tag: c_int,
    comm: c_int,
    flag: *mut c_int,
    status: *mut Status,
) -> c_int {
    guard("MPI_Iprobe", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        let tag = recv_tag_arg(tag, "tag")?;
        let source = source_arg(source, &c, "source")?;
        if flag.is_null() {
            return Err(Error::new(Class::Arg, "flag is NULL"));
        }
        let st = status_arg(status)?;
        let Some(source) = source else {
            set_status_proc_null(st);
            return out(flag, "flag", 1);
        };
        match p2p::probe(&c, source, tag, false)? {
            Some(env) => {
                set_status(st, env.source, env.tag, env.mpi_bytes);
                out(flag, "flag", 1)
            }
            None => out(flag, "flag", 0),
        }
    })
}

/// Elements of `size` bytes in `bytes`; `None` (`MPI_UNDEFINED`) when not a whole number.
fn elements(bytes: u64, size: usize) -> Option<u64> {
    match size as u64 {
        0 => (bytes == 0).then_some(0),
        s => (bytes % s == 0).then_some(bytes / s),
    }
}

/// The count of a status in elements of `dt`, `None` for `MPI_UNDEFINED`.
unsafe fn status_elements(status: *const Status, dt: c_int) -> Result<Option<u64>> {
    if status.is_null() || status as usize == STATUS_IGNORE {
        return Err(Error::new(
            Class::Arg,
            "status is NULL or MPI_STATUS_IGNORE",
        ));
    }
    let d = datatype_arg(dt, "datatype")?;
    // SAFETY: a non-NULL status pointer the caller supplied for reading (checked above).
    let bytes = unsafe { (*status).bytes() };
    Ok(elements(bytes, d.size))
}

pub unsafe fn get_count(status: *const Status, dt: c_int, count: *mut c_int) -> c_int {
    guard("MPI_Get_count", None, || {
        let n = unsafe { status_elements(status, dt) }?;
        let v = n
            .and_then(|n| c_int::try_from(n).ok())
            .unwrap_or(h::UNDEFINED);
        out(count, "count", v)
    })
}

pub unsafe fn get_count_c(status: *const Status, dt: c_int, count: *mut Count) -> c_int {
    guard("MPI_Get_count_c", None, || {
        let n = unsafe { status_elements(status, dt) }?;
        let v = n
            .and_then(|n| Count::try_from(n).ok())
            .unwrap_or(h::UNDEFINED as Count);
        out(count, "count", v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_count_round_trips_mpich_encoding() {
        let mut s = Status {
            count_hi_and_cancelled: 0,
            error: 77,
            ..Default::default()
        };
        for b in [0u64, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 5 << 32 | 3] {
            s.set_bytes(b);
            assert_eq!(s.bytes(), b);
            assert_eq!(s.count_hi_and_cancelled & 1, 0);
        }
        s.set_bytes(0x1_0000_0002);
        assert_eq!((s.count_lo, s.count_hi_and_cancelled), (2, 2));
        assert_eq!(s.error, 77);
    }

    #[test]
    fn get_count_is_undefined_for_partial_elements() {
        assert_eq!(elements(12, 4), Some(3));
        assert_eq!(elements(13, 4), None);
        assert_eq!(elements(0, 8), Some(0));
        assert_eq!(elements(0, 0), Some(0));
        assert_eq!(elements(3, 0), None);
    }

    #[test]
    fn tags_and_buffers() {
        assert_eq!(send_tag_arg(0, "tag").unwrap(), 0);
        assert_eq!(send_tag_arg(h::MAX_TAG, "tag").unwrap(), h::MAX_TAG as u32);
        assert_eq!(send_tag_arg(-1, "tag").unwrap_err().class, Class::Tag);
        assert_eq!(recv_tag_arg(-1, "tag").unwrap(), None);
        assert_eq!(recv_tag_arg(-2, "tag").unwrap_err().class, Class::Tag);
        let p = 0x1000 as *const c_void;
        let q = 0x1008 as *const c_void;
        assert!(overlaps(p, 16, q, 8));
        assert!(!overlaps(p, 8, q, 8));
        assert!(!overlaps(p, 0, p, 8));
    }
}
