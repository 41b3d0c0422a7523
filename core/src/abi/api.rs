//! The MPI functions, MPICH ABI. Every function validates all arguments before any data moves
//! (a rejected call writes nothing), then calls the communicator layer.
//!
//! # Safety
//! Every function here is `unsafe`: the caller (C code) promises that non-NULL pointers point
//! to memory as MPI specifies for that argument. NULL pointers and invalid handles are errors.
//! That one contract is stated here, once, rather than on each of the functions.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::handles::{self as h, IN_PLACE};
use super::{guard, out};
use crate::coll::{self, Reduction};
use crate::comm::Comm;
use crate::datatype::{Datatype, ElemType};
use crate::error::{Class, Error, Result, LAST_CLASS};
use crate::frame::{Kind, Signature};
use crate::runtime;

pub type Count = i64;

const VERSION: (c_int, c_int) = (4, 0);

fn library_version() -> String {
    format!(
        "hcomm {} (MPICH ABI; shared-memory ring collectives)",
        env!("CARGO_PKG_VERSION")
    )
}

// ---------------------------------------------------------------------------------------------
// Argument checking helpers

fn comm_of(rt: &runtime::Runtime, c: c_int) -> Result<Arc<Comm>> {
    // One lookup per call; the Arc keeps the communicator alive even if freed meanwhile.
    rt.comm(c)
}

fn count_arg(count: Count, what: &str) -> Result<usize> {
    usize::try_from(count)
        .map_err(|_| Error::new(Class::Count, format!("{what} is negative ({count})")))
}

fn datatype_arg(dt: c_int, what: &str) -> Result<Datatype> {
    if dt == h::DATATYPE_NULL {
        return Err(Error::new(
            Class::Type,
            format!("{what} is MPI_DATATYPE_NULL"),
        ));
    }
    h::datatype(dt)
        .map(|d| d.0)
        .filter(|d| d.size > 0)
        .ok_or_else(|| Error::new(Class::Type, format!("{what} 0x{dt:x} is not a valid datatype (hcomm supports the predefined datatypes)")))
}

fn reduction_arg(op: c_int, dt: c_int, d: &Datatype) -> Result<Reduction> {
    if op == h::OP_NULL {
        return Err(Error::new(Class::Op, "op is MPI_OP_NULL"));
    }
    let (o, oname) = h::op(op).ok_or_else(|| {
        Error::new(
            Class::Op,
            format!("op 0x{op:x} is not a valid reduction op (hcomm supports the predefined ops)"),
        )
    })?;
    if d.elem == ElemType::Opaque || !crate::reduce::is_supported(d.elem, o) {
        let tname = h::datatype(dt).map(|x| x.1).unwrap_or("?");
        return Err(Error::new(
            Class::Op,
            format!("{oname} is not defined for datatype {tname}"),
        ));
    }
    Ok(Reduction { ty: d.elem, op: o })
}

fn root_arg(root: c_int, comm: &Comm) -> Result<usize> {
    usize::try_from(root)
        .ok()
        .filter(|&r| r < comm.size())
        .ok_or_else(|| {
            Error::new(
                Class::Root,
                format!(
                    "root {root} is not a rank of a communicator of size {}",
                    comm.size()
                ),
            )
        })
}

fn nbytes(count: usize, d: &Datatype, what: &str) -> Result<usize> {
    count
        .checked_mul(d.extent)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            Error::new(
                Class::Count,
                format!("{what} {count} is too large for the datatype"),
            )
        })
}

fn is_in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

/// A buffer that must be valid for `len` bytes: NULL is allowed only when `len == 0`.
fn buf_arg(p: *const c_void, len: usize, what: &str) -> Result<()> {
    if len > 0 && p.is_null() {
        return Err(Error::new(
            Class::Buffer,
            format!("{what} is NULL but the count is not zero"),
        ));
    }
    if is_in_place(p) {
        return Err(Error::new(
            Class::Buffer,
            format!("{what} may not be MPI_IN_PLACE here"),
        ));
    }
    Ok(())
}

fn no_alias(send: *const c_void, recv: *const c_void, len: usize) -> Result<()> {
    if len > 0 && send == recv {
        return Err(Error::new(
            Class::Buffer,
            "sendbuf and recvbuf are the same buffer: use MPI_IN_PLACE",
        ));
    }
    Ok(())
}

fn sig(kind: Kind, count: usize, dt: c_int, op: c_int, root: i32) -> Signature {
    Signature {
        kind,
        count: count as u64,
        dtype: dt as u32,
        op: op as u32,
        root,
    }
}

// ---------------------------------------------------------------------------------------------
// Environment

pub unsafe fn init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    guard("MPI_Init", None, || {
        runtime::init(h::THREAD_SINGLE).map(|_| ())
    })
}

pub unsafe fn init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    guard("MPI_Init_thread", None, || {
        if provided.is_null() {
            return Err(Error::new(Class::Arg, "provided is NULL"));
        }
        let level = runtime::init(required)?;
        out(provided, "provided", level)
    })
}

pub unsafe fn initialized(flag: *mut c_int) -> c_int {
    guard("MPI_Initialized", None, || {
        out(flag, "flag", runtime::is_initialized() as c_int)
    })
}

pub unsafe fn finalized(flag: *mut c_int) -> c_int {
    guard("MPI_Finalized", None, || {
        out(flag, "flag", runtime::is_finalized() as c_int)
    })
}

pub unsafe fn finalize() -> c_int {
    guard("MPI_Finalize", None, runtime::finalize)
}

pub unsafe fn abort(comm: c_int, errorcode: c_int) -> c_int {
    let rank = runtime::get()
        .map(|rt| rt.world.rank.to_string())
        .unwrap_or_else(|_| "?".into());
    let line = format!(
        "hcomm: MPI_Abort called on rank {rank} (communicator 0x{comm:x}) with error code {errorcode}: ending the job\n"
    );
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    // The launcher ends the other ranks when one exits non-zero; 0 (or a code that wraps to
    // 0) would look like success, so it becomes 1.
    let status = if (1..=255).contains(&errorcode) {
        errorcode
    } else {
        1
    };
    // SAFETY: ends the process at once, as MPI_Abort must; no MPI state is touched after.
    unsafe { libc::_exit(status) }
}

pub unsafe fn query_thread(provided: *mut c_int) -> c_int {
    guard("MPI_Query_thread", None, || {
        let level = runtime::get()
            .map(|rt| rt.thread_level)
            .unwrap_or(h::THREAD_SINGLE);
        out(provided, "provided", level)
    })
}

pub unsafe fn is_thread_main(flag: *mut c_int) -> c_int {
    guard("MPI_Is_thread_main", None, || {
        let rt = runtime::get()?;
        out(flag, "flag", rt.is_main_thread() as c_int)
    })
}

pub unsafe fn get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    guard("MPI_Get_version", None, || {
        out(version, "version", VERSION.0)?;
        out(subversion, "subversion", VERSION.1)
    })
}

/// Copies `s` NUL-terminated into `buf` (capacity `cap`), stores the length without the NUL.
fn write_string(buf: *mut c_char, cap: usize, len: *mut c_int, s: &str, what: &str) -> Result<()> {
    if buf.is_null() || len.is_null() {
        return Err(Error::new(
            Class::Arg,
            format!("{what} or its length is NULL"),
        ));
    }
    let bytes = &s.as_bytes()[..s.len().min(cap - 1)];
    // SAFETY: buf has room for `cap` bytes (the MPI_MAX_* constant of this argument); we write
    // at most cap-1 bytes and a NUL.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len());
        *buf.add(bytes.len()) = 0;
    }
    out(len, "resultlen", bytes.len() as c_int)
}

pub unsafe fn get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int {
    guard("MPI_Get_library_version", None, || {
        write_string(
            version,
            h::MAX_LIBRARY_VERSION_STRING,
            resultlen,
            &library_version(),
            "version",
        )
    })
}

pub unsafe fn get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    guard("MPI_Get_processor_name", None, || {
        write_string(
            name,
            h::MAX_PROCESSOR_NAME,
            resultlen,
            &crate::log::hostname(),
            "name",
        )
    })
}

pub unsafe fn wtime() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-parameter; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

pub unsafe fn wtick() -> f64 {
    1e-9
}

// ---------------------------------------------------------------------------------------------
// Communicators and errors

pub unsafe fn comm_rank(comm: c_int, rank: *mut c_int) -> c_int {
    guard("MPI_Comm_rank", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        out(rank, "rank", c.rank as c_int)
    })
}

pub unsafe fn comm_size(comm: c_int, size: *mut c_int) -> c_int {
    guard("MPI_Comm_size", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        out(size, "size", c.size() as c_int)
    })
}

pub unsafe fn comm_dup(comm: c_int, newcomm: *mut c_int) -> c_int {
    guard("MPI_Comm_dup", Some(comm), || {
        let rt = runtime::get()?;
        let c = comm_of(rt, comm)?;
        if newcomm.is_null() {
            return Err(Error::new(Class::Arg, "newcomm is NULL"));
        }
        let handle = rt.add_comm(c.dup())?;
        out(newcomm, "newcomm", handle)
    })
}

pub unsafe fn comm_split(comm: c_int, color: c_int, key: c_int, newcomm: *mut c_int) -> c_int {
    guard("MPI_Comm_split", Some(comm), || {
        let rt = runtime::get()?;
        let c = comm_of(rt, comm)?;
        if newcomm.is_null() {
            return Err(Error::new(Class::Arg, "newcomm is NULL"));
        }
        if color < 0 && color != h::UNDEFINED {
            return Err(Error::new(
                Class::Arg,
                format!("color {color} is negative and not MPI_UNDEFINED"),
            ));
        }
        let handle = match c.split(if color == h::UNDEFINED { -1 } else { color }, key)? {
            Some(child) => rt.add_comm(child)?,
            None => h::COMM_NULL,
        };
        out(newcomm, "newcomm", handle)
    })
}

pub unsafe fn comm_free(comm: *mut c_int) -> c_int {
    // SAFETY: read only after the NULL check.
    let handle = if comm.is_null() {
        None
    } else {
        Some(unsafe { *comm })
    };
    guard("MPI_Comm_free", handle, || {
        let rt = runtime::get()?;
        let handle = handle.ok_or_else(|| Error::new(Class::Arg, "comm is NULL"))?;
        rt.free_comm(handle)?;
        out(comm, "comm", h::COMM_NULL)
    })
}

pub unsafe fn comm_compare(c1: c_int, c2: c_int, result: *mut c_int) -> c_int {
    guard("MPI_Comm_compare", Some(c1), || {
        let rt = runtime::get()?;
        let (a, b) = (comm_of(rt, c1)?, comm_of(rt, c2)?);
        let r = if c1 == c2 {
            h::IDENT
        } else if a.world == b.world {
            h::CONGRUENT
        } else {
            let (mut x, mut y) = (a.world.clone(), b.world.clone());
            x.sort_unstable();
            y.sort_unstable();
            if x == y {
                h::SIMILAR
            } else {
                h::UNEQUAL
            }
        };
        out(result, "result", r)
    })
}

pub unsafe fn comm_set_errhandler(comm: c_int, errhandler: c_int) -> c_int {
    guard("MPI_Comm_set_errhandler", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        if !h::is_errhandler(errhandler) {
            return Err(Error::new(
                Class::Arg,
                format!("errhandler 0x{errhandler:x} is not a valid error handler"),
            ));
        }
        c.errhandler.store(errhandler, Ordering::Relaxed);
        Ok(())
    })
}

pub unsafe fn comm_get_errhandler(comm: c_int, errhandler: *mut c_int) -> c_int {
    guard("MPI_Comm_get_errhandler", Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        out(
            errhandler,
            "errhandler",
            c.errhandler.load(Ordering::Relaxed),
        )
    })
}

pub unsafe fn error_class(code: c_int, class: *mut c_int) -> c_int {
    guard("MPI_Error_class", None, || {
        if !(0..=LAST_CLASS).contains(&code) {
            return Err(Error::new(
                Class::Arg,
                format!("{code} is not a valid error code"),
            ));
        }
        out(class, "errorclass", code)
    })
}

pub unsafe fn error_string(code: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int {
    guard("MPI_Error_string", None, || {
        let text = match Class::from_code(code) {
            Some(c) => format!("{}: {}", c.name(), c.description()),
            None if (0..=LAST_CLASS).contains(&code) => format!("MPI error class {code}"),
            None => {
                return Err(Error::new(
                    Class::Arg,
                    format!("{code} is not a valid error code"),
                ))
            }
        };
        write_string(string, h::MAX_ERROR_STRING, resultlen, &text, "string")
    })
}

pub unsafe fn type_size(datatype: c_int, size: *mut c_int) -> c_int {
    guard("MPI_Type_size", None, || {
        let d = datatype_arg(datatype, "datatype")?;
        out(size, "size", d.size as c_int)
    })
}

pub unsafe fn type_size_c(datatype: c_int, size: *mut Count) -> c_int {
    guard("MPI_Type_size_c", None, || {
        let d = datatype_arg(datatype, "datatype")?;
        out(size, "size", d.size as Count)
    })
}

// ---------------------------------------------------------------------------------------------
// Collectives. `name` lets the `_c` variants report their own name.

pub unsafe fn barrier(comm: c_int) -> c_int {
    guard("MPI_Barrier", Some(comm), || {
        coll::barrier(&*comm_of(runtime::get()?, comm)?)
    })
}

pub unsafe fn bcast(
    name: &'static str,
    buf: *mut c_void,
    count: Count,
    dt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let n = count_arg(count, "count")?;
        let d = datatype_arg(dt, "datatype")?;
        let root = root_arg(root, &c)?;
        let len = nbytes(n, &d, "count")?;
        buf_arg(buf, len, "buffer")?;
        coll::bcast(
            &c,
            buf.cast(),
            n,
            &d,
            root,
            sig(Kind::Bcast, n, dt, 0, root as i32),
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let n = count_arg(count, "count")?;
        let d = datatype_arg(dt, "datatype")?;
        let red = reduction_arg(op, dt, &d)?;
        let root = root_arg(root, &c)?;
        let len = nbytes(n, &d, "count")?;
        let is_root = c.rank == root;
        let send = if is_root && is_in_place(send) {
            buf_arg(recv, len, "recvbuf")?;
            recv as *const c_void
        } else {
            buf_arg(send, len, "sendbuf")?;
            if is_root {
                buf_arg(recv, len, "recvbuf")?;
                no_alias(send, recv, len)?;
            }
            send
        };
        coll::reduce(
            &c,
            send.cast(),
            recv.cast(),
            n,
            &d,
            red,
            root,
            sig(Kind::Reduce, n, dt, op, root as i32),
        )
    })
}

pub unsafe fn allreduce(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let n = count_arg(count, "count")?;
        let d = datatype_arg(dt, "datatype")?;
        let red = reduction_arg(op, dt, &d)?;
        let len = nbytes(n, &d, "count")?;
        buf_arg(recv, len, "recvbuf")?;
        let send = if is_in_place(send) {
            recv as *const c_void
        } else {
            buf_arg(send, len, "sendbuf")?;
            no_alias(send, recv, len)?;
            send
        };
        coll::allreduce(
            &c,
            send.cast(),
            recv.cast(),
            n,
            &d,
            red,
            sig(Kind::Allreduce, n, dt, op, -1),
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn allgather(
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
        let rn = count_arg(rcount, "recvcount")?;
        let rd = datatype_arg(rdt, "recvtype")?;
        let blk = nbytes(rn, &rd, "recvcount")?;
        let total = blk
            .checked_mul(c.size())
            .filter(|&t| t <= isize::MAX as usize)
            .ok_or_else(|| {
                Error::new(Class::Count, "recvcount × communicator size is too large")
            })?;
        buf_arg(recv, total, "recvbuf")?;
        let own = recv.cast::<u8>().wrapping_add(c.rank * blk);
        let send: *const u8 = if is_in_place(send) {
            own
        } else {
            let sn = count_arg(scount, "sendcount")?;
            let sd = datatype_arg(sdt, "sendtype")?;
            let sbytes = nbytes(sn, &sd, "sendcount")?;
            if sn * sd.size != rn * rd.size || sbytes != blk {
                return Err(Error::new(
                    Class::Truncate,
                    format!("sendcount×sendtype ({sbytes} bytes) does not match recvcount×recvtype ({blk} bytes)"),
                ));
            }
            buf_arg(send, sbytes, "sendbuf")?;
            no_alias(send, own as *const c_void, blk)?;
            send.cast()
        };
        coll::allgather(
            &c,
            send,
            recv.cast(),
            rn,
            &rd,
            sig(Kind::Allgather, rn, rdt, 0, -1),
        )
    })
}

/// Shared by `MPI_Reduce_scatter(_c)` and `MPI_Reduce_scatter_block(_c)`.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_common(
    send: *const c_void,
    recv: *mut c_void,
    counts: &dyn Fn(usize) -> Result<usize>,
    kind: Kind,
    dt: c_int,
    op: c_int,
    comm: &Comm,
) -> Result<()> {
    let d = datatype_arg(dt, "datatype")?;
    let red = reduction_arg(op, dt, &d)?;
    let counts: Vec<usize> = (0..comm.size()).map(counts).collect::<Result<_>>()?;
    let total = counts
        .iter()
        .try_fold(0usize, |a, &b| a.checked_add(b))
        .ok_or_else(|| Error::new(Class::Count, "the counts add up to too much"))?;
    let total_bytes = nbytes(total, &d, "total count")?;
    let mine = nbytes(counts[comm.rank], &d, "recvcount")?;
    let send = if is_in_place(send) {
        buf_arg(recv, total_bytes, "recvbuf")?;
        recv as *const c_void
    } else {
        buf_arg(send, total_bytes, "sendbuf")?;
        buf_arg(recv, mine, "recvbuf")?;
        no_alias(send, recv, mine.min(total_bytes))?;
        send
    };
    coll::reduce_scatter(
        comm,
        send.cast(),
        recv.cast(),
        &counts,
        &d,
        red,
        sig(kind, total, dt, op, -1),
    )
}

pub unsafe fn reduce_scatter(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    counts: RecvCounts,
    dt: c_int,
    op: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let get = |i: usize| -> Result<usize> {
            let v = match counts {
                RecvCounts::Int(p) if !p.is_null() => Count::from(unsafe { *p.add(i) }),
                RecvCounts::Count(p) if !p.is_null() => unsafe { *p.add(i) },
                _ => return Err(Error::new(Class::Arg, "recvcounts is NULL")),
            };
            count_arg(v, &format!("recvcounts[{i}]"))
        };
        // SAFETY: get reads recvcounts[0..size], which MPI requires the caller to provide.
        unsafe { reduce_scatter_common(send, recv, &get, Kind::ReduceScatter, dt, op, &c) }
    })
}

pub unsafe fn reduce_scatter_block(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let n = count_arg(count, "recvcount")?;
        // SAFETY: pointers are validated inside before use.
        unsafe {
            reduce_scatter_common(send, recv, &|_| Ok(n), Kind::ReduceScatterBlock, dt, op, &c)
        }
    })
}

/// `recvcounts` of `MPI_Reduce_scatter` (int) or `MPI_Reduce_scatter_c` (MPI_Count).
#[derive(Clone, Copy)]
pub enum RecvCounts {
    Int(*const c_int),
    Count(*const Count),
}
