//! The arguments of the collectives on intercommunicators (the algorithms:
//! `crate::intercomm::coll`). Each function checks a call's arguments and returns its
//! [`Plan`]: the blocking form drives it to its end at once ([`Plan::run`]), `MPI_Ixxx` and
//! `MPI_Xxx_init` launch it as the intracommunicator plans are (the functions of
//! [`super::plan`] hand intercommunicators here), so one path serves all three forms.
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
use std::sync::Arc;

use super::blocks::{laid_out, one, read_only, regular, Ints, Laid, Side, RECV, SEND};
use super::nb::finishing;
use super::plan::{keeping, Finish, Parts, Plan};
use super::*;
use crate::comm::{Comm, Inter};
use crate::error::{Class, Error, Result};
use crate::frame::Kind;
use crate::intercomm::coll::{self as icoll, Root, Stages};
use crate::request::Sched;
use crate::stats::Coll;

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

fn host_only(bufs: &[*const c_void]) -> Result<()> {
    crate::cuda::refuse_device("a collective on an intercommunicator", bufs)
}

fn inter_of(c: &Comm) -> &Inter {
    c.inter()
        .expect("an intercommunicator's plan launches on that intercommunicator")
}

/// The request's op: the stages `build` makes on `c`'s [`Inter`], `finish` run on completion.
fn launch(
    c: &Arc<Comm>,
    finish: Finish,
    build: impl for<'c> FnOnce(&'c Inter) -> Result<Stages<'c>>,
) -> Result<Sched> {
    Sched::stages(c.clone(), move |c| build(inter_of(c)), finish)
}

/// The plan of a process that takes no part in a rooted call of collective `kind`
/// (`MPI_PROC_NULL`): it still takes the call's number on the bridge.
fn bystander(stat: Option<Coll>, kind: Kind) -> Plan {
    Plan::new(stat, move |c| {
        launch(c, None, move |i| icoll::bystander(i, kind))
    })
}

/// `MPI_Barrier` (and the barrier of `MPI_Comm_disconnect`).
pub(super) fn barrier() -> Plan {
    Plan::new(Some(Coll::Barrier), |c| launch(c, None, icoll::barrier))
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
    buf: *mut c_void,
    count: Count,
    dt: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    let root = root_of(root, c)?;
    if root == Root::Bystander {
        return Ok(bystander(Some(Coll::Bcast), Kind::Bcast));
    }
    host_only(&[buf])?;
    let cnt = count_arg(count, "count")?;
    let v = type_arg(dt, "datatype")?.moving();
    let len = v.bytes(cnt, "count")?;
    buf_arg(buf, len, "buffer")?;
    let is_root = root == Root::Mine;
    Ok(Plan::new(Some(Coll::Bcast), move |c| {
        // SAFETY: MPI: `buf` holds `count` items; the root's are read, the others' written.
        let st = unsafe { v.stage(buf, cnt, is_root, !is_root) };
        let p = st.ptr();
        launch(c, finishing(st), move |i| icoll::bcast(i, p, len, root))
    }))
}

pub(super) unsafe fn reduce(
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    let root = root_of(root, c)?;
    if root == Root::Bystander {
        return Ok(bystander(Some(Coll::Reduce), Kind::Reduce));
    }
    let cnt = count_arg(count, "count")?;
    let t = type_arg(dt, "datatype")?;
    let (red, view) = reduce_args(op, &t)?;
    let elems = view.count(cnt, "count")?;
    let len = view.bytes(cnt, "count")?;
    if root == Root::Mine {
        // The root contributes nothing: only its recvbuf is significant.
        host_only(&[recv])?;
        buf_arg(recv, len, "recvbuf")?;
    } else {
        not_in_place(send, "sendbuf")?;
        host_only(&[send])?;
        buf_arg(send, len, "sendbuf")?;
    }
    Ok(Plan::new(Some(Coll::Reduce), move |c| {
        let dtv = view.dt;
        if root == Root::Mine {
            // SAFETY: MPI: the root's recvbuf holds `count` items to write.
            let st = unsafe { view.stage(recv, cnt, false, true) };
            let out = st.ptr();
            launch(c, finishing(st), move |i| {
                icoll::reduce(i, std::ptr::null(), out, elems, &dtv, red, root)
            })
        } else {
            // SAFETY: MPI: sendbuf holds `count` items to read.
            let st = unsafe { view.stage(send, cnt, true, false) };
            let inp = st.ptr() as *const u8;
            launch(c, keeping(st, drop), move |i| {
                icoll::reduce(i, inp, std::ptr::null_mut(), elems, &dtv, red, root)
            })
        }
    }))
}

pub(super) unsafe fn allreduce(
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
) -> Result<Plan> {
    not_in_place(send, "sendbuf")?;
    host_only(&[send, recv])?;
    // A dry run checks the arguments; launching stages again.
    // SAFETY: MPI's contract for sendbuf/recvbuf, checked inside.
    drop(unsafe { ReduceIo::new(send, recv, count, dt, op) }?);
    Ok(Plan::new(Some(Coll::Allreduce), move |c| {
        // SAFETY: as above.
        let io = unsafe { ReduceIo::new(send, recv, count, dt, op) }?;
        let (inp, out, n, dtv, red) = (io.input, io.output.ptr(), io.elems, io.view.dt, io.red);
        let finish = keeping(io, |io| {
            // SAFETY: staged from recvbuf for this request, which MPI keeps valid until
            // completion.
            unsafe { io.output.finish() }
        });
        launch(c, finish, move |i| {
            icoll::allreduce(i, inp, out, n, &dtv, red)
        })
    }))
}

/// Reduce_scatter and Reduce_scatter_block: `counts[i]` is local process `i`'s count.
pub(super) unsafe fn reduce_scatter(
    send: *const c_void,
    recv: *mut c_void,
    counts: Vec<usize>,
    dt: c_int,
    op: c_int,
    stat: Coll,
    c: &Comm,
) -> Result<Plan> {
    let inter = inter_of(c);
    not_in_place(send, "sendbuf")?;
    host_only(&[send, recv])?;
    let t = type_arg(dt, "datatype")?;
    let (red, view) = reduce_args(op, &t)?;
    let total_items = counts
        .iter()
        .try_fold(0usize, |a, &b| a.checked_add(b))
        .ok_or_else(|| Error::new(Class::Count, "the counts add up to too much"))?;
    let total = view.bytes(total_items, "total count")?;
    let my_items = counts[inter.local_comm.rank];
    let mine = view.bytes(my_items, "recvcount")?;
    buf_arg(send, total, "sendbuf")?;
    buf_arg(recv, mine, "recvbuf")?;
    no_alias(send, recv, mine.min(total))?;
    // Elements (of `view.dt`) per item: the staged buffers hold elements.
    let per = view.count(1, "count")?;
    let elems: Vec<usize> = counts.iter().map(|&i| i * per).collect();
    Ok(Plan::new(Some(stat), move |c| {
        // SAFETY: MPI: sendbuf holds the counts' sum of items to read, recvbuf this process's
        // count to write; both ranges checked above.
        let (s, r) = unsafe {
            (
                view.stage(send, total_items, true, false),
                view.stage(recv, my_items, false, true),
            )
        };
        let (inp, out, dtv, elems) = (s.ptr() as *const u8, r.ptr(), view.dt, elems.clone());
        let finish = keeping((s, r), |(_s, r)| {
            // SAFETY: staged from recvbuf for this request.
            unsafe { r.finish() }
        });
        launch(c, finish, move |i| {
            icoll::reduce_scatter(i, inp, out, &elems, &dtv, red)
        })
    }))
}

/// Gather and Gatherv: `counts_displs` is `None` for Gather (`recvcount` blocks back to
/// back), the root's arrays for Gatherv.
pub(super) unsafe fn gatherv(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    counts_displs: Option<(Ints, Ints)>,
    rdt: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    match root_of(root, c)? {
        Root::Bystander => Ok(bystander(None, Kind::Gatherv)),
        Root::Remote(r) => {
            not_in_place(send, "sendbuf")?;
            host_only(&[send])?;
            let s = one(send, scount, sdt, SEND)?;
            Ok(Plan::new(None, move |c| {
                // SAFETY: MPI: sendbuf holds `sendcount` items to read.
                let st = unsafe { s.side.v.stage(send, s.count, true, false) };
                let blk = (st.ptr() as *const u8, s.t.bytes);
                launch(c, keeping(st, drop), move |i| {
                    icoll::gatherv(i, blk, &[], Root::Remote(r))
                })
            }))
        }
        Root::Mine => {
            host_only(&[recv])?;
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
            Ok(Plan::new(None, move |c| {
                let rb = rs.v.blocks(recv, &laid.items);
                let spans = rb.spans().to_vec();
                let finish = keeping(rb, |rb| {
                    // SAFETY: MPI: recvbuf holds every remote process's block, to write.
                    unsafe { rb.store_all_but(None) }
                });
                launch(c, finish, move |i| {
                    icoll::gatherv(i, (std::ptr::null(), 0), &spans, Root::Mine)
                })
            }))
        }
    }
}

/// Scatter and Scatterv (`counts_displs` as in [`gatherv`], for the send side).
pub(super) unsafe fn scatterv(
    send: *const c_void,
    scount: Count,
    counts_displs: Option<(Ints, Ints)>,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
    c: &Comm,
) -> Result<Plan> {
    match root_of(root, c)? {
        Root::Bystander => Ok(bystander(None, Kind::Scatterv)),
        Root::Remote(r) => {
            not_in_place(recv, "recvbuf")?;
            host_only(&[recv])?;
            let o = one(recv, rcount, rdt, RECV)?;
            Ok(Plan::new(None, move |c| {
                // SAFETY: MPI: recvbuf holds `recvcount` items to write.
                let st = unsafe { o.side.v.stage(recv, o.count, false, true) };
                let blk = (st.ptr(), o.t.bytes);
                launch(c, finishing(st), move |i| {
                    icoll::scatterv(i, &[], blk, Root::Remote(r))
                })
            }))
        }
        Root::Mine => {
            host_only(&[send])?;
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
            Ok(Plan::new(None, move |c| {
                let sb = ss.v.blocks(send, &laid.items);
                // SAFETY: MPI: sendbuf holds every remote process's block, to read.
                unsafe { sb.load_all_but(None) };
                let spans = read_only(sb.spans());
                launch(c, keeping(sb, drop), move |i| {
                    icoll::scatterv(i, &spans, (std::ptr::null_mut(), 0), Root::Mine)
                })
            }))
        }
    }
}

/// Allgather and Allgatherv (`counts_displs` as in [`gatherv`]).
pub(super) unsafe fn allgatherv(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    counts_displs: Option<(Ints, Ints)>,
    rdt: c_int,
    c: &Comm,
) -> Result<Plan> {
    not_in_place(send, "sendbuf")?;
    host_only(&[send, recv])?;
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
    let stat = if counts_displs.is_some() {
        Coll::Allgatherv
    } else {
        Coll::Allgather
    };
    Ok(Plan::new(Some(stat), move |c| {
        let rb = rs.v.blocks(recv, &laid.items);
        // SAFETY: MPI: sendbuf holds `sendcount` items to read.
        let st = unsafe { s.side.v.stage(send, s.count, true, false) };
        let (blk, spans) = ((st.ptr() as *const u8, s.t.bytes), rb.spans().to_vec());
        let finish = keeping((st, rb), |(_st, rb)| {
            // SAFETY: MPI: recvbuf holds every remote process's block, to write.
            unsafe { rb.store_all_but(None) }
        });
        launch(c, finish, move |i| icoll::allgatherv(i, blk, &spans))
    }))
}

/// Alltoall and Alltoallv: `v` is `None` for Alltoall, else (sendcounts, sdispls, recvcounts,
/// rdispls), each per remote process.
pub(super) unsafe fn alltoallv(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    v: Option<(Ints, Ints, Ints, Ints)>,
    c: &Comm,
) -> Result<Plan> {
    not_in_place(send, "sendbuf")?;
    host_only(&[send, recv])?;
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
    Ok(exchange(
        Some((send, Parts::One(ss, slaid))),
        recv,
        Parts::One(rs, rlaid),
    ))
}

/// Alltoallw: the blocks laid out by [`super::plan::alltoallw_parts`].
pub(super) fn alltoallw(
    send: Option<(*const c_void, Parts)>,
    recv: *mut c_void,
    rparts: Parts,
) -> Result<Plan> {
    if send.is_none() {
        return Err(Error::new(
            Class::Buffer,
            "sendbuf may not be MPI_IN_PLACE on an intercommunicator",
        ));
    }
    Ok(exchange(send, recv, rparts))
}

/// The all-to-all exchange of `send`'s blocks into `recv`'s, as a plan.
fn exchange(send: Option<(*const c_void, Parts)>, recv: *mut c_void, rparts: Parts) -> Plan {
    Plan::new(None, move |c| {
        let (rb, sb) = super::plan::stage_exchange(&send, recv, &rparts);
        let sends: Vec<_> = sb
            .as_ref()
            .unwrap_or(&rb)
            .iter()
            .flat_map(|b| read_only(b.spans()))
            .collect();
        let recvs: Vec<_> = rb.iter().flat_map(|b| b.spans().iter().copied()).collect();
        let finish = keeping((sb, rb), |(_sb, rb)| {
            for b in &rb {
                // SAFETY: MPI: recvbuf holds every remote process's block, to write.
                unsafe { b.store_all_but(None) }
            }
        });
        launch(c, finish, move |i| icoll::alltoallv(i, &sends, &recvs))
    })
}
