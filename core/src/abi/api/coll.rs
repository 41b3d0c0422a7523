//! Collectives. `name` lets the `_c` variants report their own name.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::*;
use crate::abi::guard;
use crate::coll;
use crate::cuda::{self, Buf, Mem};
use crate::error::{Class, Error, Result};
use crate::frame::Kind;
use crate::runtime;

/// Device buffers travel as they are: a datatype that would be packed on the host, or a
/// user function that reads the buffer on the host, cannot take them.
pub(crate) fn device_ok(view: &View, red: Option<&coll::Reduction>) -> Result<()> {
    if !view.is_direct() {
        return Err(Error::new(
            Class::Buffer,
            "hcomm cannot take device buffers with a derived datatype that is not contiguous \
             (use a predefined or contiguous datatype, or host buffers)",
        ));
    }
    if matches!(red, Some(coll::Reduction::User(_))) {
        return Err(Error::new(
            Class::Buffer,
            "hcomm cannot take device buffers with a user-defined op (it runs on the host; use a \
             predefined op, or host buffers)",
        ));
    }
    Ok(())
}

/// A buffer argument for the device-aware front: `ptr` (a staged pointer, the user's own
/// for direct views) and what memory the user's buffer is.
fn buf(ptr: *const u8, mem: Mem) -> Buf {
    Buf {
        ptr: ptr as *mut u8,
        mem,
    }
}
// ---------------------------------------------------------------------------------------------
// Collectives. `name` lets the `_c` variants report their own name.

/// A barrier over `c`, intra- or intercommunicator (`MPI_Barrier`, `MPI_Comm_disconnect`).
pub(super) fn barrier_on(c: &Arc<Comm>) -> Result<()> {
    match c.inter() {
        Some(_) => super::intercomm_coll::barrier().run(c),
        None => coll::barrier(c),
    }
}

pub unsafe fn barrier(comm: c_int) -> c_int {
    crate::stats::call(crate::stats::Coll::Barrier, || {
        guard("MPI_Barrier", Some(comm), || {
            let c = any_comm_of(runtime::get()?, comm)?;
            barrier_on(&c)
        })
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
    crate::stats::call(crate::stats::Coll::Bcast, || {
        guard(name, Some(comm), || {
            let c = any_comm_of(runtime::get()?, comm)?;
            if c.inter().is_some() {
                // SAFETY: the caller's contract, forwarded.
                let plan = unsafe { super::plan::bcast(buf, count, dt, root, &c) }?;
                return plan.run(&c);
            }
            // SAFETY: MPI's contract for `buf`, forwarded.
            if let Some(done) = unsafe { super::fast_lane::bcast(buf, count, dt, root, &c) } {
                return done;
            }
            let cnt = count_arg(count, "count")?;
            let v = type_arg(dt, "datatype")?.moving();
            let root = root_arg(root, &c)?;
            let n = v.count(cnt, "count")?;
            let len = v.bytes(cnt, "count")?;
            buf_arg(buf, len, "buffer")?;
            let mem = cuda::classify(buf, len).map_err(|e| cuda::refuse(&c, e))?;
            if mem.is_device() {
                device_ok(&v, None).map_err(|e| cuda::refuse(&c, e))?;
            }
            let is_root = c.rank == root;
            // SAFETY: MPI: `buf` holds `count` items; the root's are read, the others' written.
            // A device buffer has a direct view (checked above): staging does not touch it.
            let st = unsafe { v.stage(buf, cnt, is_root, !is_root) };
            let s = sig(Kind::Bcast, n, v.handle, 0, root as i32);
            cuda::bcast(&c, self::buf(st.ptr(), mem), n, &v.dt, root, s)?;
            // SAFETY: as above.
            unsafe { st.finish() };
            Ok(())
        })
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
    crate::stats::call(crate::stats::Coll::Reduce, || {
        guard(name, Some(comm), || {
            let c = any_comm_of(runtime::get()?, comm)?;
            if c.inter().is_some() {
                // SAFETY: the caller's contract, forwarded.
                let plan = unsafe { super::plan::reduce(send, recv, count, dt, op, root, &c) }?;
                return plan.run(&c);
            }
            // SAFETY: MPI's contract for sendbuf/recvbuf, forwarded.
            if let Some(done) =
                unsafe { super::fast_lane::reduce(send, recv, count, dt, op, root, &c) }
            {
                return done;
            }
            // SAFETY: MPI's contract for sendbuf/recvbuf, checked inside.
            let io = unsafe { RootReduceIo::new(send, recv, count, dt, op, root, &c, true) }?;
            let s = sig(Kind::Reduce, io.elems, io.view.handle, op, io.root as i32);
            let (inp, out) = (io.send_buf(), io.recv_buf());
            cuda::reduce(&c, inp, out, io.elems, &io.view.dt, io.red, io.root, s)?;
            if let Some(st) = io.recv {
                // SAFETY: staged from the root's recvbuf for this call.
                unsafe { st.finish() };
            }
            Ok(())
        })
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
    crate::stats::call(crate::stats::Coll::Allreduce, || {
        guard(name, Some(comm), || {
            let c = any_comm_of(runtime::get()?, comm)?;
            if c.inter().is_some() {
                // SAFETY: the caller's contract, forwarded.
                let plan = unsafe { super::plan::allreduce(send, recv, count, dt, op, &c) }?;
                return plan.run(&c);
            }
            // SAFETY: MPI's contract for sendbuf/recvbuf, forwarded.
            if let Some(done) =
                unsafe { super::fast_lane::allreduce(send, recv, count, dt, op, &c) }
            {
                return done;
            }
            // SAFETY: MPI's contract for sendbuf/recvbuf, checked inside.
            let io = unsafe { ReduceIo::new_device(send, recv, count, dt, op, &c) }?;
            let s = sig(Kind::Allreduce, io.elems, io.view.handle, op, -1);
            cuda::allreduce(
                &c,
                io.send_buf(),
                buf(io.output.ptr(), io.recv_mem),
                io.elems,
                &io.view.dt,
                io.red,
                s,
            )?;
            // SAFETY: the output was staged from recvbuf just above.
            unsafe { io.output.finish() };
            Ok(())
        })
    })
}

/// `MPI_Reduce_local`: `inoutbuf = inbuf op inoutbuf`, on this process alone.
pub unsafe fn reduce_local(
    name: &'static str,
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: Count,
    datatype: c_int,
    op: c_int,
) -> c_int {
    guard(name, None, || {
        if is_in_place(inbuf) {
            return Err(Error::new(
                Class::Buffer,
                "inbuf may not be MPI_IN_PLACE (MPI_Reduce_local has no in-place form)",
            ));
        }
        crate::cuda::refuse_device(name, &[inbuf, inoutbuf as *const c_void])?;
        // SAFETY: MPI's contract for inbuf (read) and inoutbuf (read and written), checked
        // inside; not in place, so `io.input` is the staged inbuf.
        let io = unsafe { ReduceIo::new(inbuf, inoutbuf, count, datatype, op) }?;
        let out = io.output.ptr();
        // SAFETY: `io.input` and `out` hold `io.elems` elements each (checked and staged
        // above); `dst` is exactly the second operand.
        unsafe { io.red.apply(out, io.input, out, io.elems) };
        let staged = io.output;
        // SAFETY: writes the staged result back to inoutbuf (validated above).
        unsafe { staged.finish() };
        Ok(())
    })
}

/// The checked, staged buffers of a reduction whose result every rank receives in its own
/// recvbuf (`MPI_Allreduce`, `MPI_Scan`, `MPI_Exscan`); `MPI_IN_PLACE` reads the input from
/// recvbuf. Validation happens before anything is staged, so a rejected call writes nothing.
pub(crate) struct ReduceIo {
    pub red: coll::Reduction,
    pub view: View,
    /// Elements (of `view.dt`) in the message.
    pub elems: usize,
    /// The staged sendbuf, or the staged recvbuf in place.
    pub input: *const u8,
    pub output: Staged,
    /// Keeps the staged sendbuf alive while `input` points into it.
    _send: Option<Staged>,
    pub in_place: bool,
    /// The memory of sendbuf ([`Mem::None`] in place) and recvbuf; [`Mem::Host`] unless
    /// built by [`ReduceIo::new_device`].
    pub send_mem: Mem,
    pub recv_mem: Mem,
}

impl ReduceIo {
    /// As [`ReduceIo::new`], for the calls that take device buffers: classifies both
    /// buffers (before anything touches them) and rejects what cannot run on device memory.
    ///
    /// # Safety
    /// As for [`ReduceIo::new`].
    pub(crate) unsafe fn new_device(
        send: *const c_void,
        recv: *mut c_void,
        count: Count,
        dt: c_int,
        op: c_int,
        comm: &Comm,
    ) -> Result<ReduceIo> {
        // SAFETY: forwarded contract.
        unsafe { Self::build(send, recv, count, dt, op, Some(comm)) }
    }

    /// The input for the device-aware front ([`Buf::NONE`] in place).
    pub(crate) fn send_buf(&self) -> Buf {
        if self.in_place {
            Buf::NONE
        } else {
            buf(self.input, self.send_mem)
        }
    }

    /// # Safety
    /// MPI's contract: `send` (unless `MPI_IN_PLACE`) holds `count` items to read, `recv`
    /// `count` items to write (and read, in place).
    pub(crate) unsafe fn new(
        send: *const c_void,
        recv: *mut c_void,
        count: Count,
        dt: c_int,
        op: c_int,
    ) -> Result<ReduceIo> {
        // SAFETY: forwarded contract.
        unsafe { Self::build(send, recv, count, dt, op, None) }
    }

    unsafe fn build(
        send: *const c_void,
        recv: *mut c_void,
        count: Count,
        dt: c_int,
        op: c_int,
        device: Option<&Comm>,
    ) -> Result<ReduceIo> {
        let cnt = count_arg(count, "count")?;
        let t = type_arg(dt, "datatype")?;
        let (red, view) = reduce_args(op, &t)?;
        let elems = view.count(cnt, "count")?;
        let len = view.bytes(cnt, "count")?;
        buf_arg(recv, len, "recvbuf")?;
        let in_place = is_in_place(send);
        if !in_place {
            buf_arg(send, len, "sendbuf")?;
            no_alias(send, recv, len)?;
        }
        let (send_mem, recv_mem) = match device {
            None => (Mem::Host, Mem::Host),
            Some(comm) => {
                // A refusal here is made collective (the peers would wait for us otherwise).
                let k = cuda::Classifier::new();
                let refuse = |e| cuda::refuse(comm, e);
                let m = if in_place {
                    (Mem::None, k.of(recv, len).map_err(refuse)?)
                } else {
                    (
                        k.of(send, len).map_err(refuse)?,
                        k.of(recv, len).map_err(refuse)?,
                    )
                };
                if m.0.is_device() || m.1.is_device() {
                    device_ok(&view, Some(&red)).map_err(refuse)?;
                }
                m
            }
        };
        // SAFETY: the caller's contract, with both ranges checked above; device buffers
        // have direct views (checked above), which staging does not touch.
        let (send, output) = unsafe {
            let r = view.stage(recv, cnt, in_place, true);
            ((!in_place).then(|| view.stage(send, cnt, true, false)), r)
        };
        let input = send.as_ref().map_or(output.ptr() as *const u8, |s| s.ptr());
        Ok(ReduceIo {
            red,
            view,
            elems,
            input,
            output,
            _send: send,
            in_place,
            send_mem,
            recv_mem,
        })
    }
}

/// The checked, staged buffers of a reduction to a root (`MPI_Reduce`, `MPI_Ireduce`): the
/// staged sendbuf (none in place), and at the root the staged recvbuf. Validation happens
/// before anything is staged, so a rejected call writes nothing.
pub(crate) struct RootReduceIo {
    pub red: coll::Reduction,
    pub view: View,
    /// Elements (of `view.dt`) in the message.
    pub elems: usize,
    pub root: usize,
    pub send: Option<Staged>,
    pub recv: Option<Staged>,
    /// As in [`ReduceIo`].
    pub send_mem: Mem,
    pub recv_mem: Mem,
}

impl RootReduceIo {
    /// `device`: classify the buffers for the device-aware front (blocking calls only).
    ///
    /// # Safety
    /// MPI's contract: `send` (unless the root's `MPI_IN_PLACE`) holds `count` items to read,
    /// the root's `recv` `count` items to write (and read, in place).
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn new(
        send: *const c_void,
        recv: *mut c_void,
        count: Count,
        dt: c_int,
        op: c_int,
        root: c_int,
        comm: &Comm,
        device: bool,
    ) -> Result<RootReduceIo> {
        let cnt = count_arg(count, "count")?;
        let t = type_arg(dt, "datatype")?;
        let (red, view) = reduce_args(op, &t)?;
        let root = root_arg(root, comm)?;
        let elems = view.count(cnt, "count")?;
        let len = view.bytes(cnt, "count")?;
        let is_root = comm.rank == root;
        let in_place = is_root && is_in_place(send);
        if in_place {
            buf_arg(recv, len, "recvbuf")?;
        } else {
            buf_arg(send, len, "sendbuf")?;
            if is_root {
                buf_arg(recv, len, "recvbuf")?;
                no_alias(send, recv, len)?;
            }
        }
        // A refusal on device buffers is made collective (the peers would wait otherwise).
        let refuse = |e| cuda::refuse(comm, e);
        let (send_mem, recv_mem) = match device.then(cuda::Classifier::new) {
            None => (Mem::Host, Mem::Host),
            Some(k) => (
                if in_place {
                    Mem::None
                } else {
                    k.of(send, len).map_err(refuse)?
                },
                if is_root {
                    k.of(recv, len).map_err(refuse)?
                } else {
                    Mem::None
                },
            ),
        };
        if send_mem.is_device() || recv_mem.is_device() {
            device_ok(&view, Some(&red)).map_err(refuse)?;
        }
        // SAFETY: the caller's contract, with the ranges checked above; device buffers have
        // direct views (checked above), which staging does not touch.
        let (send, recv) = unsafe {
            if in_place {
                (None, Some(view.stage(recv, cnt, true, true)))
            } else {
                let s = view.stage(send, cnt, true, false);
                (Some(s), is_root.then(|| view.stage(recv, cnt, false, true)))
            }
        };
        Ok(RootReduceIo {
            red,
            view,
            elems,
            root,
            send,
            recv,
            send_mem,
            recv_mem,
        })
    }

    /// The input for the device-aware front ([`Buf::NONE`] in place).
    pub(crate) fn send_buf(&self) -> Buf {
        self.send
            .as_ref()
            .map_or(Buf::NONE, |s| buf(s.ptr(), self.send_mem))
    }

    /// The output for the device-aware front ([`Buf::NONE`] at a non-root).
    pub(crate) fn recv_buf(&self) -> Buf {
        self.recv
            .as_ref()
            .map_or(Buf::NONE, |s| buf(s.ptr(), self.recv_mem))
    }
}

/// The checked, staged buffers of a reduce-scatter (`MPI_Reduce_scatter(_block)` and their
/// nonblocking forms): `counts(i)` is rank i's count; the input is the staged sendbuf, or the
/// staged recvbuf in place. Validation happens before anything is staged.
pub(crate) struct ReduceScatterIo {
    pub red: coll::Reduction,
    pub view: View,
    /// Elements (of `view.dt`) per rank's block.
    pub counts: Vec<usize>,
    /// Elements in the whole input.
    pub total: usize,
    pub input: *const u8,
    pub output: Staged,
    /// Keeps the staged sendbuf alive while `input` points into it.
    _send: Option<Staged>,
    pub in_place: bool,
    /// As in [`ReduceIo`].
    pub send_mem: Mem,
    pub recv_mem: Mem,
}

impl ReduceScatterIo {
    /// # Safety
    /// MPI's contract: `send` (or `recv` in place) holds the sum of the counts, `recv` this
    /// rank's count; `counts` reads the caller's count array for ranks `0..size`.
    pub(crate) unsafe fn new(
        send: *const c_void,
        recv: *mut c_void,
        counts: &dyn Fn(usize) -> Result<usize>,
        dt: c_int,
        op: c_int,
        comm: &Comm,
    ) -> Result<ReduceScatterIo> {
        // SAFETY: forwarded contract.
        unsafe { Self::build(send, recv, counts, dt, op, comm, false) }
    }

    /// As [`ReduceScatterIo::new`], classifying the buffers for the device-aware front.
    ///
    /// # Safety
    /// As for [`ReduceScatterIo::new`].
    pub(crate) unsafe fn new_device(
        send: *const c_void,
        recv: *mut c_void,
        counts: &dyn Fn(usize) -> Result<usize>,
        dt: c_int,
        op: c_int,
        comm: &Comm,
    ) -> Result<ReduceScatterIo> {
        // SAFETY: forwarded contract.
        unsafe { Self::build(send, recv, counts, dt, op, comm, true) }
    }

    /// The input for the device-aware front ([`Buf::NONE`] in place).
    pub(crate) fn send_buf(&self) -> Buf {
        if self.in_place {
            Buf::NONE
        } else {
            buf(self.input, self.send_mem)
        }
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn build(
        send: *const c_void,
        recv: *mut c_void,
        counts: &dyn Fn(usize) -> Result<usize>,
        dt: c_int,
        op: c_int,
        comm: &Comm,
        device: bool,
    ) -> Result<ReduceScatterIo> {
        let t = type_arg(dt, "datatype")?;
        let (red, view) = reduce_args(op, &t)?;
        let items: Vec<usize> = (0..comm.size()).map(counts).collect::<Result<_>>()?;
        let total_items = items
            .iter()
            .try_fold(0usize, |a, &b| a.checked_add(b))
            .ok_or_else(|| Error::new(Class::Count, "the counts add up to too much"))?;
        let total = view.count(total_items, "total count")?;
        let counts: Vec<usize> = items
            .iter()
            .map(|&i| i * (total / total_items.max(1)))
            .collect();
        let total_bytes = view.bytes(total_items, "total count")?;
        let my_items = items[comm.rank];
        let mine = view.bytes(my_items, "recvcount")?;
        let in_place = is_in_place(send);
        if in_place {
            buf_arg(recv, total_bytes, "recvbuf")?;
        } else {
            buf_arg(send, total_bytes, "sendbuf")?;
            buf_arg(recv, mine, "recvbuf")?;
            no_alias(send, recv, mine.min(total_bytes))?;
        }
        // A refusal on device buffers is made collective (the peers would wait otherwise).
        let refuse = |e| cuda::refuse(comm, e);
        let (send_mem, recv_mem) = match device.then(cuda::Classifier::new) {
            None => (Mem::Host, Mem::Host),
            Some(k) if in_place => (Mem::None, k.of(recv, total_bytes).map_err(refuse)?),
            Some(k) => (
                k.of(send, total_bytes).map_err(refuse)?,
                k.of(recv, mine).map_err(refuse)?,
            ),
        };
        if send_mem.is_device() || recv_mem.is_device() {
            device_ok(&view, Some(&red)).map_err(refuse)?;
        }
        // SAFETY: the caller's contract, with the ranges checked above; device buffers have
        // direct views, which staging does not touch.
        let (send, mut output) = unsafe {
            if in_place {
                (None, view.stage(recv, total_items, true, true))
            } else {
                let s = view.stage(send, total_items, true, false);
                (Some(s), view.stage(recv, my_items, false, true))
            }
        };
        output.store_only(my_items);
        let input = send.as_ref().map_or(output.ptr() as *const u8, |s| s.ptr());
        Ok(ReduceScatterIo {
            red,
            view,
            counts,
            total,
            input,
            output,
            _send: send,
            in_place,
            send_mem,
            recv_mem,
        })
    }
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
    crate::stats::call(crate::stats::Coll::Allgather, || {
        guard(name, Some(comm), || {
            let c = any_comm_of(runtime::get()?, comm)?;
            if c.inter().is_some() {
                // SAFETY: the caller's contract, forwarded.
                let plan =
                    unsafe { super::plan::allgather(send, scount, sdt, recv, rcount, rdt, &c) }?;
                return plan.run(&c);
            }
            // SAFETY: MPI's contract for sendbuf/recvbuf, forwarded.
            if let Some(done) =
                unsafe { super::fast_lane::allgather(send, scount, sdt, recv, rcount, rdt, &c) }
            {
                return done;
            }
            let rcnt = count_arg(rcount, "recvcount")?;
            let rt = type_arg(rdt, "recvtype")?;
            let rv = rt.moving();
            let rn = rv.count(rcnt, "recvcount")?;
            let blk = rn * rv.dt.extent;
            let items = rcnt.checked_mul(c.size());
            let total = items
                .and_then(|i| rv.bytes(i, "recvcount").ok())
                .ok_or_else(|| {
                    Error::new(Class::Count, "recvcount × communicator size is too large")
                })?;
            let items = items.unwrap_or(0);
            buf_arg(recv, total, "recvbuf")?;
            let own_user = recv.cast::<u8>().wrapping_add(c.rank * rcnt * rt.extent());
            let in_place = is_in_place(send);
            let k = cuda::Classifier::new();
            // Refusals on device buffers are made collective (peers would wait otherwise).
            let refuse = |e| cuda::refuse(&c, e);
            let rmem = k.of(recv, total).map_err(refuse)?;
            let mut smem = Mem::None;
            let mut sv = None;
            if !in_place {
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
                smem = k.of(send, sbytes).map_err(refuse)?;
                if smem.is_device() {
                    device_ok(&v, None).map_err(refuse)?;
                }
                sv = Some((v, scnt));
            }
            if rmem.is_device() {
                device_ok(&rv, None).map_err(refuse)?;
            }
            // SAFETY: MPI: recvbuf holds size × recvcount items (the own block is read in
            // place), sendbuf `sendcount` items. Device buffers have direct views (checked
            // above): staging and loading do not touch them.
            let st_recv = unsafe { rv.stage(recv, items, false, true) };
            let st_send = sv
                .as_ref()
                .map(|(v, n)| unsafe { v.stage(send, *n, true, false) });
            let inp = match &st_send {
                Some(s) => buf(s.ptr(), smem),
                None => {
                    // SAFETY: the own block lies in recvbuf (see above).
                    unsafe { st_recv.load_items(c.rank * rcnt, rcnt) };
                    Buf::NONE
                }
            };
            let s = sig(Kind::Allgather, rn, rv.handle, 0, -1);
            cuda::allgather(&c, inp, buf(st_recv.ptr(), rmem), rn, &rv.dt, s)?;
            // SAFETY: as above.
            unsafe { st_recv.finish() };
            Ok(())
        })
    })
}

/// Shared by `MPI_Reduce_scatter(_c)` and `MPI_Reduce_scatter_block(_c)`.
unsafe fn reduce_scatter_common(
    send: *const c_void,
    recv: *mut c_void,
    counts: &dyn Fn(usize) -> Result<usize>,
    kind: Kind,
    dt: c_int,
    op: c_int,
    comm: &Comm,
) -> Result<()> {
    // SAFETY: the caller's contract for the buffers and the count array.
    let io = unsafe { ReduceScatterIo::new_device(send, recv, counts, dt, op, comm) }?;
    let s = sig(kind, io.total, io.view.handle, op, -1);
    cuda::reduce_scatter(
        comm,
        io.send_buf(),
        buf(io.output.ptr(), io.recv_mem),
        &io.counts,
        &io.view.dt,
        io.red,
        s,
    )?;
    // SAFETY: the output was staged from recvbuf just above.
    unsafe { io.output.finish() };
    Ok(())
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
    crate::stats::call(crate::stats::Coll::ReduceScatter, || {
        guard(name, Some(comm), || {
            let c = any_comm_of(runtime::get()?, comm)?;
            let get = |i: usize| -> Result<usize> {
                let v = match counts {
                    RecvCounts::Int(p) if !p.is_null() => Count::from(unsafe { *p.add(i) }),
                    RecvCounts::Count(p) if !p.is_null() => unsafe { *p.add(i) },
                    _ => return Err(Error::new(Class::Arg, "recvcounts is NULL")),
                };
                indexed("recvcounts", i, |w| count_arg(v, w))
            };
            if c.inter().is_some() {
                // SAFETY: the caller's contract, forwarded.
                let plan = unsafe { super::plan::reduce_scatter(send, recv, counts, dt, op, &c) }?;
                return plan.run(&c);
            }
            // SAFETY: get reads recvcounts[0..size], which MPI requires the caller to provide.
            unsafe { reduce_scatter_common(send, recv, &get, Kind::ReduceScatter, dt, op, &c) }
        })
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
    crate::stats::call(crate::stats::Coll::ReduceScatterBlock, || {
        guard(name, Some(comm), || {
            let c = any_comm_of(runtime::get()?, comm)?;
            let n = count_arg(count, "recvcount")?;
            if c.inter().is_some() {
                // SAFETY: the caller's contract, forwarded.
                let plan =
                    unsafe { super::plan::reduce_scatter_block(send, recv, count, dt, op, &c) }?;
                return plan.run(&c);
            }
            // SAFETY: MPI's contract for sendbuf/recvbuf, forwarded.
            if let Some(done) =
                unsafe { super::fast_lane::reduce_scatter_block(send, recv, count, dt, op, &c) }
            {
                return done;
            }
            // SAFETY: pointers are validated inside before use.
            unsafe {
                reduce_scatter_common(send, recv, &|_| Ok(n), Kind::ReduceScatterBlock, dt, op, &c)
            }
        })
    })
}

/// `recvcounts` of `MPI_Reduce_scatter` (int) or `MPI_Reduce_scatter_c` (MPI_Count).
#[derive(Clone, Copy)]
pub enum RecvCounts {
    Int(*const c_int),
    Count(*const Count),
}

// ---------------------------------------------------------------------------------------------
// Scan, Exscan

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
