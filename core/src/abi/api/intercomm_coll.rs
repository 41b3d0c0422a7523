//! The arguments of the blocking collectives on intercommunicators (the algorithms:
//! `crate::intercomm::coll`). Each collective's api function resolves its communicator and,
//! when it is an intercommunicator, hands the raw arguments here.
//!
//! What differs from intracommunicators (MPI 4.1 §6.2.2):
//! - the rooted calls take `root` = `MPI_ROOT` at the root, `MPI_PROC_NULL` at the rest of the
//!   root's group, and the root's rank in the remote group on the other side;
//! - the arrays indexed by rank (counts, displacements, blocks) are indexed by the *remote*
//!   group's ranks (the intercommunicator's `size()`), except `MPI_Reduce_scatter`'s
//!   `recvcounts`, which is per local process;
//! - `MPI_IN_PLACE` is not allowed.
//!
//! Device buffers are refused on intercommunicators (they take the point-to-point path, which
//! is host-only).
#![allow(clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use super::blocks::{laid_out, one, read_only, regular, Ints, Laid, Side, RECV, SEND};
use super::*;
use crate::comm::{Comm, Inter};
use crate::error::{Class, Error, Result};
use crate::intercomm::coll::{self as icoll, Root};

const ROOT: c_int = -3;

/// The `root` argument of a rooted collective on an intercommunicator.
fn root_of(root: c_int, c: &Comm) -> Result<Root> {
    match root {
        ROOT => Ok(Root::Mine),
        crate::abi::handles::PROC_NULL => Ok(Root::Bystander),
        r if usize::try_from(r).is_ok_and(|r| r < c.size()) => Ok(Root::Remote(r as usize)),
        r => Err(Error::new(
            Class::Root,
            format!(
                "root {r} is neither MPI_ROOT, MPI_PROC_NULL nor a rank of the remote group \
                 (size {})",
                c.size()
            ),
        )),
    }
}

fn not_in_place(p: *const c_void, what: &str) -> Result<()> {
    if is_in_place(p) {
        return Err(Error::new(
            Class::Arg,
            format!("{what} is MPI_IN_PLACE, which intercommunicator collectives do not take"),
        ));
    }
    Ok(())
}

fn host_only(name: &'static str, bufs: &[*const c_void]) -> Result<()> {
    crate::cuda::refuse_device(name, bufs)
}

/// The per-remote-process blocks of `buf`: `count` items each, back to back (`arrays` is
/// `None`: Gather, Scatter, Allgather, Alltoall), or `counts[j]` items at `displs[j]`
/// (the `v` forms). `names`: the buffer, the scalar count, the count array, the displacement
/// array.
///
/// # Safety
/// MPI: each array holds one element per remote process.
unsafe fn blocks_of(
    buf: *const c_void,
    side: &Side,
    count: Count,
    arrays: Option<(Ints, Ints)>,
    n: usize,
    names: [&str; 4],
) -> Result<Laid> {
    let [bname, cname, csname, dname] = names;
    match arrays {
        None => regular(buf, side, count_arg(count, cname)?, n, bname, cname),
        Some((counts, displs)) => {
            // SAFETY: forwarded contract.
            let (counts, displs) = unsafe { (counts.counts(n, csname)?, displs.read(n, dname)?) };
            laid_out(buf, side, &counts, &displs, [bname, csname, dname])
        }
    }
}

pub(super) unsafe fn bcast(
    name: &'static str,
    c: &Comm,
    inter: &Inter,
    buf: *mut c_void,
    count: Count,
    dt: c_int,
    root: c_int,
) -> Result<()> {
    let root = root_of(root, c)?;
    if root == Root::Bystander {
        return Ok(());
    }
    host_only(name, &[buf])?;
    let cnt = count_arg(count, "count")?;
    let v = type_arg(dt, "datatype")?.moving();
    let len = v.bytes(cnt, "count")?;
    buf_arg(buf, len, "buffer")?;
    let is_root = root == Root::Mine;
    // SAFETY: MPI: `buf` holds `count` items; the root's are read, the others' written.
    let st = unsafe { v.stage(buf, cnt, is_root, !is_root) };
    icoll::bcast(inter, st.ptr(), len, root)?;
    // SAFETY: as above.
    unsafe { st.finish() };
    Ok(())
}

pub(super) unsafe fn reduce(
    name: &'static str,
    c: &Comm,
    inter: &Inter,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    root: c_int,
) -> Result<()> {
    let root = root_of(root, c)?;
    if root == Root::Bystander {
        return Ok(());
    }
    let cnt = count_arg(count, "count")?;
    let t = type_arg(dt, "datatype")?;
    let (red, view) = reduce_args(op, &t)?;
    let elems = view.count(cnt, "count")?;
    let len = view.bytes(cnt, "count")?;
    if root == Root::Mine {
        // The root contributes nothing: only its recvbuf is significant.
        host_only(name, &[recv])?;
        buf_arg(recv, len, "recvbuf")?;
        // SAFETY: MPI: the root's recvbuf holds `count` items to write.
        let st = unsafe { view.stage(recv, cnt, false, true) };
        icoll::reduce(
            inter,
            std::ptr::null(),
            st.ptr(),
            elems,
            &view.dt,
            red,
            root,
        )?;
        // SAFETY: as above.
        unsafe { st.finish() };
    } else {
        not_in_place(send, "sendbuf")?;
        host_only(name, &[send])?;
        buf_arg(send, len, "sendbuf")?;
        // SAFETY: MPI: sendbuf holds `count` items to read.
        let st = unsafe { view.stage(send, cnt, true, false) };
        icoll::reduce(
            inter,
            st.ptr(),
            std::ptr::null_mut(),
            elems,
            &view.dt,
            red,
            root,
        )?;
    }
    Ok(())
}

pub(super) unsafe fn allreduce(
    name: &'static str,
    inter: &Inter,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
) -> Result<()> {
    not_in_place(send, "sendbuf")?;
    host_only(name, &[send, recv])?;
    // SAFETY: MPI's contract for sendbuf/recvbuf, checked inside.
    let io = unsafe { ReduceIo::new(send, recv, count, dt, op) }?;
    icoll::allreduce(
        inter,
        io.input,
        io.output.ptr(),
        io.elems,
        &io.view.dt,
        io.red,
    )?;
    // SAFETY: the output was staged from recvbuf for this call.
    unsafe { io.output.finish() };
    Ok(())
}

/// `counts(i)`: local process `i`'s count.
pub(super) unsafe fn reduce_scatter(
    name: &'static str,
    inter: &Inter,
    send: *const c_void,
    recv: *mut c_void,
    counts: &dyn Fn(usize) -> Result<usize>,
    dt: c_int,
    op: c_int,
) -> Result<()> {
    not_in_place(send, "sendbuf")?;
    host_only(name, &[send, recv])?;
    let t = type_arg(dt, "datatype")?;
    let (red, view) = reduce_args(op, &t)?;
    let n = inter.local.len();
    let items: Vec<usize> = (0..n).map(counts).collect::<Result<_>>()?;
    let total_items = items
        .iter()
        .try_fold(0usize, |a, &b| a.checked_add(b))
        .ok_or_else(|| Error::new(Class::Count, "the counts add up to too much"))?;
    let total = view.bytes(total_items, "total count")?;
    let my_items = items[inter.local_comm.rank];
    let mine = view.bytes(my_items, "recvcount")?;
    buf_arg(send, total, "sendbuf")?;
    buf_arg(recv, mine, "recvbuf")?;
    no_alias(send, recv, mine.min(total))?;
    // Elements (of `view.dt`) per item: the staged buffers hold elements.
    let per = view.count(1, "count")?;
    let elems: Vec<usize> = items.iter().map(|&i| i * per).collect();
    // SAFETY: MPI: sendbuf holds the counts' sum of items to read, recvbuf this process's
    // count to write; both ranges checked above.
    let (s, r) = unsafe {
        (
            view.stage(send, total_items, true, false),
            view.stage(recv, my_items, false, true),
        )
    };
    icoll::reduce_scatter(inter, s.ptr(), r.ptr(), &elems, &view.dt, red)?;
    // SAFETY: as above.
    unsafe { r.finish() };
    Ok(())
}

/// Gather and Gatherv: `counts_displs` is `None` for Gather (`recvcount` blocks back to
/// back), the root's arrays for Gatherv.
pub(super) unsafe fn gatherv(
    name: &'static str,
    c: &Comm,
    inter: &Inter,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    counts_displs: Option<(Ints, Ints)>,
    rdt: c_int,
    root: c_int,
) -> Result<()> {
    match root_of(root, c)? {
        Root::Bystander => Ok(()),
        Root::Remote(r) => {
            not_in_place(send, "sendbuf")?;
            host_only(name, &[send])?;
            let s = one(send, scount, sdt, SEND)?;
            // SAFETY: MPI: sendbuf holds `sendcount` items to read.
            let st = unsafe { s.side.v.stage(send, s.count, true, false) };
            icoll::gatherv(inter, (st.ptr(), s.t.bytes), &[], Root::Remote(r))
        }
        Root::Mine => {
            host_only(name, &[recv])?;
            let rs = Side::new(rdt, "recvtype")?;
            // SAFETY: MPI: the arrays hold one element per remote process.
            let laid = unsafe {
                blocks_of(
                    recv,
                    &rs,
                    rcount,
                    counts_displs,
                    c.size(),
                    ["recvbuf", "recvcount", "recvcounts", "displs"],
                )
            }?;
            let rb = rs.v.blocks(recv, &laid.items);
            icoll::gatherv(inter, (std::ptr::null(), 0), rb.spans(), Root::Mine)?;
            // SAFETY: MPI: recvbuf holds every remote process's block, to write.
            unsafe { rb.store_all_but(None) };
            Ok(())
        }
    }
}

/// Scatter and Scatterv (`counts_displs` as in [`gatherv`], for the send side).
pub(super) unsafe fn scatterv(
    name: &'static str,
    c: &Comm,
    inter: &Inter,
    send: *const c_void,
    scount: Count,
    counts_displs: Option<(Ints, Ints)>,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
) -> Result<()> {
    match root_of(root, c)? {
        Root::Bystander => Ok(()),
        Root::Remote(r) => {
            not_in_place(recv, "recvbuf")?;
            host_only(name, &[recv])?;
            let o = one(recv, rcount, rdt, RECV)?;
            // SAFETY: MPI: recvbuf holds `recvcount` items to write.
            let st = unsafe { o.side.v.stage(recv, o.count, false, true) };
            icoll::scatterv(inter, &[], (st.ptr(), o.t.bytes), Root::Remote(r))?;
            // SAFETY: as above.
            unsafe { st.finish() };
            Ok(())
        }
        Root::Mine => {
            host_only(name, &[send])?;
            let ss = Side::new(sdt, "sendtype")?;
            // SAFETY: MPI: the arrays hold one element per remote process.
            let laid = unsafe {
                blocks_of(
                    send,
                    &ss,
                    scount,
                    counts_displs,
                    c.size(),
                    ["sendbuf", "sendcount", "sendcounts", "displs"],
                )
            }?;
            let sb = ss.v.blocks(send, &laid.items);
            // SAFETY: MPI: sendbuf holds every remote process's block, to read.
            unsafe { sb.load_all_but(None) };
            icoll::scatterv(
                inter,
                &read_only(sb.spans()),
                (std::ptr::null_mut(), 0),
                Root::Mine,
            )
        }
    }
}

/// Allgather and Allgatherv (`counts_displs` as in [`gatherv`]).
pub(super) unsafe fn allgatherv(
    name: &'static str,
    c: &Comm,
    inter: &Inter,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    counts_displs: Option<(Ints, Ints)>,
    rdt: c_int,
) -> Result<()> {
    not_in_place(send, "sendbuf")?;
    host_only(name, &[send, recv])?;
    let s = one(send, scount, sdt, SEND)?;
    let rs = Side::new(rdt, "recvtype")?;
    // SAFETY: MPI: the arrays hold one element per remote process.
    let laid = unsafe {
        blocks_of(
            recv,
            &rs,
            rcount,
            counts_displs,
            c.size(),
            ["recvbuf", "recvcount", "recvcounts", "displs"],
        )
    }?;
    no_alias(send, recv, s.t.bytes.max(laid.bytes()))?;
    let rb = rs.v.blocks(recv, &laid.items);
    // SAFETY: MPI: sendbuf holds `sendcount` items to read.
    let st = unsafe { s.side.v.stage(send, s.count, true, false) };
    icoll::allgatherv(inter, (st.ptr(), s.t.bytes), rb.spans())?;
    // SAFETY: MPI: recvbuf holds every remote process's block, to write.
    unsafe { rb.store_all_but(None) };
    Ok(())
}

/// Alltoall and Alltoallv: `v` is `None` for Alltoall, else (sendcounts, sdispls, recvcounts,
/// rdispls), each per remote process.
pub(super) unsafe fn alltoallv(
    name: &'static str,
    c: &Comm,
    inter: &Inter,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    v: Option<(Ints, Ints, Ints, Ints)>,
) -> Result<()> {
    not_in_place(send, "sendbuf")?;
    host_only(name, &[send, recv])?;
    let n = c.size();
    let ss = Side::new(sdt, "sendtype")?;
    let rs = Side::new(rdt, "recvtype")?;
    // SAFETY: MPI: every array holds one element per remote process.
    let (slaid, rlaid) = unsafe {
        (
            blocks_of(
                send,
                &ss,
                scount,
                v.map(|a| (a.0, a.1)),
                n,
                ["sendbuf", "sendcount", "sendcounts", "sdispls"],
            )?,
            blocks_of(
                recv,
                &rs,
                rcount,
                v.map(|a| (a.2, a.3)),
                n,
                ["recvbuf", "recvcount", "recvcounts", "rdispls"],
            )?,
        )
    };
    no_alias(send, recv, slaid.bytes().max(rlaid.bytes()))?;
    let sb = ss.v.blocks(send, &slaid.items);
    let rb = rs.v.blocks(recv, &rlaid.items);
    // SAFETY: MPI: sendbuf holds every remote process's block, to read.
    unsafe { sb.load_all_but(None) };
    icoll::alltoallv(inter, &read_only(sb.spans()), rb.spans())?;
    // SAFETY: MPI: recvbuf holds every remote process's block, to write.
    unsafe { rb.store_all_but(None) };
    Ok(())
}
