//! The device-aware front of the blocking collectives that take device buffers
//! (`MPI_Allreduce`, `MPI_Bcast`, `MPI_Reduce`, `MPI_Allgather`, `MPI_Reduce_scatter(_block)`
//! and their `_c` forms): the ABI layer classifies the buffers and calls these instead of
//! the host algorithms; each chooses the path (agreed by every rank, see `path.rs`) and runs
//! it. With host buffers on a communicator that is not CUDA-aware this is the host algorithm
//! after two atomic loads.
//!
//! Semantics are those of CUDA-aware MPIs: the caller has finished writing its device
//! buffers before the call (for example with `cudaStreamSynchronize`); when the call returns,
//! the result is in the receive buffer and hcomm no longer touches any buffer.

use super::ipc_coll::{self, DBuf};
use super::path::{self, Path};
use super::staged::{self, Buf};
use super::{kernels, Dev, Mem};
use crate::coll::{self, Reduction};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::error::{Error, Result};
use crate::frame::Signature;

fn dbuf(b: &Buf) -> Result<DBuf> {
    match b.mem {
        Mem::Device(dev) => Ok(DBuf { ptr: b.ptr, dev }),
        _ => Err(Error::intern(
            "IPC path with a buffer that is not device memory",
        )),
    }
}

fn opt_dbuf(b: &Buf) -> Result<Option<DBuf>> {
    match b.mem {
        Mem::None => Ok(None),
        _ => dbuf(b).map(Some),
    }
}

/// The input pointer of the host algorithm: `send`, or `in_place` for [`Buf::NONE`].
fn input_or(send: &Buf, in_place: *mut u8) -> *const u8 {
    if send.ptr.is_null() && send.mem == Mem::None {
        in_place
    } else {
        send.ptr
    }
}

/// Whether the kernel for `red` can run in `dev`'s context: shipped in the PTX, and the
/// module loads there (the first question in a context JIT-compiles the PTX; a failure is
/// remembered, see [`kernels::Module::usable`]).
fn kernel_ok(red: &Reduction, dev: &Dev) -> bool {
    let Reduction::Builtin { ty, op } = red else {
        return false;
    };
    let Some(name) = kernels::kernel_name(*ty, *op).filter(|_| kernels::available(*ty, *op)) else {
        return false;
    };
    let Some(cuda) = super::active() else {
        return false;
    };
    match cuda.ctxs.bind(dev) {
        Ok(b) => b.res.module.lock().usable(&name, cuda.driver_version),
        Err(e) => {
            crate::info!("CUDA: cannot bind the buffer's context to load the kernels: {e}");
            false
        }
    }
}

fn run(c: &Comm, bufs: &[Mem], empty: bool, kernel: &dyn Fn(&Dev) -> bool) -> Result<Path> {
    path::choose(
        c,
        &path::Call {
            bufs,
            empty,
            kernel,
        },
    )
}

/// For a call whose buffers are all host memory and not empty: whether it takes the host path
/// without a per-call vote, i.e. the communicator is not CUDA-aware. Counts the call toward
/// the communicator's agreement exactly as [`allreduce`] & co. would (the agreement itself
/// may run here), so a caller that gets `false` and then makes the general call is counted
/// once: on a CUDA-aware communicator the general call's check counts nothing.
pub fn host_path_without_vote(c: &Comm) -> Result<bool> {
    Ok(!path::aware(c)?)
}

/// This rank refuses a device-buffer call it was about to make (see [`path::refuse`]): every
/// peer's call fails too, instead of waiting for this rank. Call it in place of returning a
/// refusal found before [`allreduce`] & co., at the same call.
pub fn refuse(c: &Comm, e: Error) -> Error {
    path::refuse(c, e)
}

/// `MPI_Allreduce` of `count` elements; `send` is [`Buf::NONE`] in place.
pub fn allreduce(
    c: &Comm,
    send: Buf,
    recv: Buf,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    sig: Signature,
) -> Result<()> {
    let empty = count == 0 || dt.extent == 0;
    match run(c, &[send.mem, recv.mem], empty, &|d| kernel_ok(&red, d))? {
        Path::Host => {
            let input = input_or(&send, recv.ptr);
            coll::allreduce(c, input, recv.ptr, count, dt, red, sig)
        }
        Path::Staged { segmented } => {
            staged::allreduce(c, send, recv, count, dt, red, sig, segmented)
        }
        Path::Ipc => {
            let cuda = super::cuda()?;
            if !ipc_coll::allreduce(cuda, c, opt_dbuf(&send)?, dbuf(&recv)?, count, dt, red, sig)? {
                staged::allreduce(c, send, recv, count, dt, red, sig, true)?;
            }
            Ok(())
        }
    }
}

/// `MPI_Bcast` of `count` elements.
pub fn bcast(
    c: &Comm,
    buf: Buf,
    count: usize,
    dt: &Datatype,
    root: usize,
    sig: Signature,
) -> Result<()> {
    let empty = count == 0 || dt.extent == 0;
    match run(c, &[buf.mem], empty, &|_| true)? {
        Path::Host => coll::bcast(c, buf.ptr, count, dt, root, sig),
        Path::Staged { segmented } => staged::bcast(c, buf, count, dt, root, sig, segmented),
        Path::Ipc => {
            let cuda = super::cuda()?;
            if !ipc_coll::bcast(cuda, c, dbuf(&buf)?, count * dt.extent, root, sig)? {
                staged::bcast(c, buf, count, dt, root, sig, true)?;
            }
            Ok(())
        }
    }
}

/// `MPI_Reduce`; `send` is [`Buf::NONE`] at a root in place, `recv` is [`Buf::NONE`] at
/// every other rank.
#[allow(clippy::too_many_arguments)]
pub fn reduce(
    c: &Comm,
    send: Buf,
    recv: Buf,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    root: usize,
    sig: Signature,
) -> Result<()> {
    let empty = count == 0 || dt.extent == 0;
    match run(c, &[send.mem, recv.mem], empty, &|d| kernel_ok(&red, d))? {
        Path::Host => {
            let input = input_or(&send, recv.ptr);
            coll::reduce(c, input, recv.ptr, count, dt, red, root, sig)
        }
        Path::Staged { segmented } => {
            staged::reduce(c, send, recv, count, dt, red, root, sig, segmented)
        }
        Path::Ipc => {
            let cuda = super::cuda()?;
            let (s, r) = (opt_dbuf(&send)?, opt_dbuf(&recv)?);
            if !ipc_coll::reduce(cuda, c, s, r, count, dt, red, root, sig)? {
                staged::reduce(c, send, recv, count, dt, red, root, sig, true)?;
            }
            Ok(())
        }
    }
}

/// `MPI_Allgather` of `count` elements per rank; `send` is [`Buf::NONE`] in place.
pub fn allgather(
    c: &Comm,
    send: Buf,
    recv: Buf,
    count: usize,
    dt: &Datatype,
    sig: Signature,
) -> Result<()> {
    let block = count * dt.extent;
    match run(c, &[send.mem, recv.mem], block == 0, &|_| true)? {
        Path::Host => {
            let input = input_or(&send, recv.ptr.wrapping_add(c.rank * block));
            coll::allgather(c, input, recv.ptr, count, dt, sig)
        }
        Path::Staged { .. } => staged::allgather(c, send, recv, count, dt, sig),
        Path::Ipc => {
            let cuda = super::cuda()?;
            if !ipc_coll::allgather(cuda, c, opt_dbuf(&send)?, dbuf(&recv)?, block, sig)? {
                staged::allgather(c, send, recv, count, dt, sig)?;
            }
            Ok(())
        }
    }
}

/// `MPI_Reduce_scatter(_block)`: rank i gets `counts[i]` elements; `send` is
/// [`Buf::NONE`] in place (the input is all of recv).
pub fn reduce_scatter(
    c: &Comm,
    send: Buf,
    recv: Buf,
    counts: &[usize],
    dt: &Datatype,
    red: Reduction,
    sig: Signature,
) -> Result<()> {
    let empty = counts.iter().all(|&n| n == 0) || dt.extent == 0;
    match run(c, &[send.mem, recv.mem], empty, &|d| kernel_ok(&red, d))? {
        Path::Host => {
            let input = input_or(&send, recv.ptr);
            coll::reduce_scatter(c, input, recv.ptr, counts, dt, red, sig)
        }
        Path::Staged { .. } => staged::reduce_scatter(c, send, recv, counts, dt, red, sig),
        Path::Ipc => {
            // A rank that receives nothing may pass any recvbuf: its block is empty.
            let dr = match (recv.mem, send.mem) {
                (Mem::None, Mem::Device(dev)) => DBuf { ptr: recv.ptr, dev },
                _ => dbuf(&recv)?,
            };
            let cuda = super::cuda()?;
            if !ipc_coll::reduce_scatter(cuda, c, opt_dbuf(&send)?, dr, counts, dt, red, sig)? {
                staged::reduce_scatter(c, send, recv, counts, dt, red, sig)?;
            }
            Ok(())
        }
    }
}
