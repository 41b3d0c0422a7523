//! Device buffers through pinned host memory, around the host collectives: for ranks on other
//! hosts (the TCP transport), for communicators that mix host and device buffers, and
//! wherever the IPC path is not agreed.
//!
//! Allreduce, bcast and reduce are elementwise, so they run as a pipeline of segments: the
//! copy to the host of segment k+1 and the copy back of segment k−1 overlap the host
//! collective of segment k (two pinned halves, one stream, events). When every rank agreed
//! on this path the segments are [`SEG_BYTES`] long and every rank — host buffers included —
//! runs the same sequence of host collectives; otherwise (a communicator that is not
//! CUDA-aware) the whole message is one segment and the host collective is exactly the one
//! the other ranks run. Allgather and reduce-scatter stage the whole message.
//!
//! Host buffers are passed straight through; a rank without device buffers makes no CUDA call.

use super::classify::Mem;
use super::staging::{at, seg_elems, segments, sync, Slot, SEG_BYTES};
use crate::coll::Reduction;
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::error::Result;
use crate::frame::Signature;

/// A buffer of the call: where it is and what memory.
#[derive(Clone, Copy)]
pub struct Buf {
    pub ptr: *mut u8,
    pub mem: Mem,
}

impl Buf {
    pub const NONE: Buf = Buf {
        ptr: std::ptr::null_mut(),
        mem: Mem::None,
    };

    fn is_dev(&self) -> bool {
        self.mem.is_device()
    }
}

/// Runs `body` with the context of the first device buffer bound and a slot leased; waits
/// for every queued copy before returning, error or not.
fn with_slot(bufs: &[Buf], body: impl FnOnce(&mut Slot) -> Result<()>) -> Result<()> {
    let cuda = super::cuda()?;
    let dev = bufs
        .iter()
        .find_map(|b| b.mem.dev().copied())
        .expect("a staged call has a device buffer");
    let bound = cuda.ctxs.bind(&dev)?;
    let res = bound.res.clone();
    let mut slot = res.lease()?;
    let r = body(&mut slot);
    let w = slot.wait();
    drop(slot);
    drop(bound);
    r.and(w)
}

/// Segment size in elements on this path.
pub(crate) fn seg_for(segmented: bool, count: usize, extent: usize) -> usize {
    if segmented {
        seg_elems(extent, SEG_BYTES)
    } else {
        count.max(1)
    }
}

/// The pipeline shared by allreduce, reduce and bcast. `input`/`output`: the buffers the
/// host collective reads and writes (`Buf::NONE`: none on this rank); `same`: they are one
/// buffer (in place). `op(k, in, out, n)` runs the host collective of segment k on host
/// pointers: the user's host buffers, or pinned memory that device data was copied into.
#[allow(clippy::too_many_arguments)]
fn pipeline(
    count: usize,
    ext: usize,
    seg: usize,
    input: Buf,
    output: Buf,
    same: bool,
    mut op: impl FnMut(usize, *const u8, *mut u8, usize) -> Result<()>,
) -> Result<()> {
    let segs = segments(count, seg);
    if !input.is_dev() && !output.is_dev() {
        for (k, &(off, n)) in segs.iter().enumerate() {
            op(
                k,
                input.ptr.wrapping_add(off * ext),
                output.ptr.wrapping_add(off * ext),
                n,
            )?;
        }
        return Ok(());
    }
    with_slot(&[input, output], |slot| {
        let seg_bytes = segs[0].1 * ext;
        let halves = if segs.len() > 1 { 2 } else { 1 };
        // Each half: [input segment][output segment].
        let host = slot.host.ensure(halves * 2 * seg_bytes)?;
        let in_half = |k: usize| host.wrapping_add((k % 2) * 2 * seg_bytes);
        let out_half = |k: usize| in_half(k).wrapping_add(seg_bytes);
        let host_in = |k: usize, off: usize| {
            if input.is_dev() {
                in_half(k)
            } else {
                input.ptr.wrapping_add(off * ext)
            }
        };
        let host_out = |k: usize, off: usize| match () {
            _ if !output.is_dev() => output.ptr.wrapping_add(off * ext),
            // One buffer on the device: the collective runs in place in pinned memory.
            _ if same && input.is_dev() => in_half(k),
            _ => out_half(k),
        };
        let (d2h_ev, h2d_ev) = (slot.ev, slot.ev_back);
        let d2h = |slot: &Slot, k: usize| -> Result<()> {
            let (off, n) = segs[k];
            slot.d2h(in_half(k), at(input.ptr, off * ext), n * ext)?;
            slot.record(d2h_ev[k % 2])
        };
        if input.is_dev() {
            d2h(slot, 0)?;
        }
        for (k, &(off, n)) in segs.iter().enumerate() {
            if input.is_dev() {
                sync(d2h_ev[k % 2])?;
            }
            if output.is_dev() && k >= 2 {
                // The copy back of segment k−2 read this half.
                sync(h2d_ev[k % 2])?;
            }
            if input.is_dev() && k + 1 < segs.len() {
                // Queued after the copy back of segment k−1 on the same stream, which read
                // the half it overwrites.
                d2h(slot, k + 1)?;
            }
            let (i, o) = (host_in(k, off), host_out(k, off));
            op(k, i, o, n)?;
            if output.is_dev() {
                slot.h2d(at(output.ptr, off * ext), o, n * ext)?;
                slot.record(h2d_ev[k % 2])?;
            }
        }
        Ok(())
    })
}

fn with_count(sig: Signature, n: usize) -> Signature {
    Signature {
        count: n as u64,
        ..sig
    }
}

/// `MPI_Allreduce`. `send` is `Buf::NONE` in place.
#[allow(clippy::too_many_arguments)]
pub(crate) fn allreduce(
    c: &Comm,
    send: Buf,
    recv: Buf,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    sig: Signature,
    segmented: bool,
) -> Result<()> {
    let in_place = send.mem == Mem::None;
    let input = if in_place { recv } else { send };
    let seg = seg_for(segmented, count, dt.extent);
    pipeline(
        count,
        dt.extent,
        seg,
        input,
        recv,
        in_place,
        |_, i, o, n| crate::coll::allreduce(c, i, o, n, dt, red, with_count(sig, n)),
    )
}

/// `MPI_Reduce`. `send` is `Buf::NONE` at a root in place; `recv` is `Buf::NONE` except at
/// the root.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce(
    c: &Comm,
    send: Buf,
    recv: Buf,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    root: usize,
    sig: Signature,
    segmented: bool,
) -> Result<()> {
    let in_place = send.mem == Mem::None;
    let input = if in_place { recv } else { send };
    let seg = seg_for(segmented, count, dt.extent);
    let at_root = c.rank == root;
    pipeline(
        count,
        dt.extent,
        seg,
        input,
        recv,
        in_place,
        |_, i, o, n| {
            let out = if at_root { o } else { std::ptr::null_mut() };
            crate::coll::reduce(c, i, out, n, dt, red, root, with_count(sig, n))
        },
    )
}

/// `MPI_Bcast`: the root's buffer is the input, every other rank's the output.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bcast(
    c: &Comm,
    buf: Buf,
    count: usize,
    dt: &Datatype,
    root: usize,
    sig: Signature,
    segmented: bool,
) -> Result<()> {
    let seg = seg_for(segmented, count, dt.extent);
    let is_root = c.rank == root;
    let (input, output) = if is_root {
        (buf, Buf::NONE)
    } else {
        (Buf::NONE, buf)
    };
    pipeline(count, dt.extent, seg, input, output, false, |_, i, o, n| {
        let p = if is_root { i as *mut u8 } else { o };
        crate::coll::bcast(c, p, n, dt, root, with_count(sig, n))
    })
}

/// `MPI_Allgather` of `count` elements per rank; `send` is `Buf::NONE` in place.
#[allow(clippy::too_many_arguments)]
pub(crate) fn allgather(
    c: &Comm,
    send: Buf,
    recv: Buf,
    count: usize,
    dt: &Datatype,
    sig: Signature,
) -> Result<()> {
    let block = count * dt.extent;
    let r = c.rank;
    let in_place = send.mem == Mem::None;
    if !send.is_dev() && !recv.is_dev() {
        let inp = if in_place {
            recv.ptr.wrapping_add(r * block)
        } else {
            send.ptr
        };
        return crate::coll::allgather(c, inp, recv.ptr, count, dt, sig);
    }
    with_slot(&[send, recv], |slot| {
        let total = block * c.size();
        let host = slot.host.ensure(total + block)?;
        let out = if recv.is_dev() { host } else { recv.ptr };
        // This rank's block where the host collective reads it.
        let inp = if in_place {
            // The own block is already in recv: on the device, copy it to its place.
            let own = out.wrapping_add(r * block);
            slot.d2h(own, at(recv.ptr, r * block), block)?;
            own as *const u8
        } else if send.is_dev() {
            let p = if recv.is_dev() {
                out.wrapping_add(r * block)
            } else {
                host.wrapping_add(total)
            };
            slot.d2h(p, at(send.ptr, 0), block)?;
            p as *const u8
        } else {
            send.ptr as *const u8
        };
        slot.wait()?;
        crate::coll::allgather(c, inp, out, count, dt, sig)?;
        if recv.is_dev() {
            slot.h2d(at(recv.ptr, 0), out, total)?;
        }
        Ok(())
    })
}

/// `MPI_Reduce_scatter(_block)`; `send` is `Buf::NONE` in place (the input is all of recv).
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce_scatter(
    c: &Comm,
    send: Buf,
    recv: Buf,
    counts: &[usize],
    dt: &Datatype,
    red: Reduction,
    sig: Signature,
) -> Result<()> {
    let ext = dt.extent;
    let total = counts.iter().sum::<usize>() * ext;
    let mine = counts[c.rank] * ext;
    let in_place = send.mem == Mem::None;
    let input = if in_place { recv } else { send };
    if !input.is_dev() && !recv.is_dev() {
        let out = recv.ptr;
        return crate::coll::reduce_scatter(c, input.ptr, out, counts, dt, red, sig);
    }
    with_slot(&[send, recv], |slot| {
        let host = slot.host.ensure(total + mine)?;
        let inp: *const u8 = if input.is_dev() {
            slot.d2h(host, at(input.ptr, 0), total)?;
            host
        } else {
            input.ptr
        };
        let out: *mut u8 = match () {
            _ if !recv.is_dev() => recv.ptr,
            // In place on the device: in place in pinned memory too.
            _ if in_place => host,
            _ => host.wrapping_add(total),
        };
        slot.wait()?;
        crate::coll::reduce_scatter(c, inp, out, counts, dt, red, sig)?;
        if recv.is_dev() {
            slot.h2d(at(recv.ptr, 0), out, mine)?;
        }
        Ok(())
    })
}
