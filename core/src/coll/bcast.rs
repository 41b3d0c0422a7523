//! `MPI_Bcast`.
//!
//! Both algorithms cut the message into chunks and forward chunk c as soon as it has arrived,
//! so the whole path is busy at once.
//! `tree` (small messages): binomial tree on ranks relative to the root — a rank receives from
//! the rank that differs in its lowest set bit and forwards to ranks above it; log2(n) hops.
//! `pipeline` (large messages): a chain root → root+1 → … → root−1; every rank receives and sends
//! each byte once, so bandwidth is that of one link regardless of n.
//! `oneshot` (large messages, one host, 3 ranks or more): the root sends to every rank as one
//! fan-out ([`crate::engine::Schedule::fanout`]): it copies each fragment once into its stage,
//! and every rank copies it out from there — n copies of the message in all, where the chain
//! makes 2(n−1) (docs/PERFORMANCE.md, "Fan-out").

use super::allreduce::fragment;
use super::direct;
use super::hier;
use super::select::{choose, forced_levels, Algo};
use super::{chunk_elems, chunks, fans_out, tag};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::{Kind, Signature};

pub fn bcast(
    comm: &Comm,
    buf: *mut u8,
    count: usize,
    dt: &Datatype,
    root: usize,
    sig: Signature,
) -> Result<()> {
    let n = comm.size();
    let nbytes = count * dt.extent;
    if n > 1
        && !comm.topology().spans_hosts()
        && algo(comm, nbytes) == Algo::Tree
        && direct::fits(comm, nbytes)
        // The schedule's tree in one chunk. Without `HCOMM_CHUNK_SIZE` a chunk is a fragment,
        // which `fits` has checked already; the setting may cut it smaller.
        && (crate::param::chunk_size().is_none()
            || chunk_elems(dt.extent, count, fragment(comm)?) >= count)
    {
        // Latency-bound: the allocation-free tree (the schedule's frames, one chunk).
        let seq = comm.next_seq();
        comm.note_algo(Kind::Bcast, Algo::Tree, nbytes);
        return direct::relay(comm, seq, buf, nbytes, root, sig);
    }
    build_bcast(comm, buf, count, dt, root, sig)?.run()
}

/// The one-host algorithm for `nbytes` (every rank decides alike: size, topology, settings).
fn algo(comm: &Comm, nbytes: usize) -> Algo {
    let fan = fans_out(comm);
    let large = if fan { Algo::OneShot } else { Algo::Pipeline };
    let available: &[Algo] = if fan {
        &[Algo::Tree, Algo::Pipeline, Algo::OneShot]
    } else {
        &[Algo::Tree, Algo::Pipeline]
    };
    choose("bcast", nbytes, available, Algo::Tree, large)
}

/// The schedule of [`bcast`], built (call number taken) but not run.
pub fn build_bcast<'c>(
    comm: &'c Comm,
    buf: *mut u8,
    count: usize,
    dt: &Datatype,
    root: usize,
    sig: Signature,
) -> Result<Schedule<'c>> {
    let (n, r) = (comm.size(), comm.rank);
    let nbytes = count * dt.extent;
    let seq = comm.next_seq();
    if n == 1 {
        comm.note_algo(Kind::Bcast, Algo::Local, nbytes);
        return Ok(Schedule::new(comm.ctx(sig, seq, dt.extent)));
    }
    let algo = algo(comm, nbytes);
    // Across hosts the chain or tree runs over the ranks in host-major order (two levels);
    // on one host, over root, root+1, ...
    let t = comm.topology();
    let order: Option<Vec<usize>> = (t.spans_hosts() && forced_levels("bcast") != Some(false))
        .then(|| hier::host_major_order(t, root));
    comm.note_algo(
        Kind::Bcast,
        if order.is_some() { Algo::Hier } else { algo },
        nbytes,
    );
    let vr = match &order {
        Some(o) => o.iter().position(|&x| x == r).unwrap_or(0),
        None => (r + n - root) % n,
    };
    let real = |v: usize| match &order {
        Some(o) => o[v],
        None => (v + root) % n,
    };
    if algo == Algo::OneShot && order.is_none() {
        let mut s = Schedule::new(comm.ctx(sig, seq, dt.extent));
        if r == root {
            let g = s.fanout();
            for v in 1..n {
                s.send_fanout(
                    g,
                    real(v),
                    tag(0, 0),
                    buf,
                    nbytes,
                    std::ptr::null_mut(),
                    &[],
                );
            }
        } else {
            s.recv(root, tag(0, 0), buf, nbytes, Fold::Copy, &[]);
        }
        return Ok(s);
    }
    let (parent, children): (Option<usize>, Vec<usize>) = match algo {
        Algo::Pipeline => (
            (vr > 0).then(|| real(vr - 1)),
            if vr + 1 < n {
                vec![real(vr + 1)]
            } else {
                vec![]
            },
        ),
        _ => {
            let mut mask = 1;
            let mut parent = None;
            while mask < n {
                if vr & mask != 0 {
                    parent = Some(real(vr - mask));
                    break;
                }
                mask <<= 1;
            }
            let mut kids = Vec::new();
            mask >>= 1;
            while mask > 0 {
                if vr + mask < n {
                    kids.push(real(vr + mask));
                }
                mask >>= 1;
            }
            (parent, kids)
        }
    };
    let mut s = Schedule::new(comm.ctx(sig, seq, dt.extent));
    let ce = match single_copy_whole(comm, nbytes, order.is_some()) {
        Some(c) => {
            s.single_copy();
            chunk_elems(dt.extent, count, c)
        }
        None => chunk_elems(dt.extent, count, fragment(comm)?),
    };
    for (c, (off, cnt)) in chunks(count, ce).enumerate() {
        let p = buf.wrapping_add(off * dt.extent);
        let len = cnt * dt.extent;
        let got = parent.map(|par| s.recv(par, tag(0, c), p, len, Fold::Copy, &[]));
        for &k in &children {
            s.send(k, tag(0, c), p, len, &[got]);
        }
    }
    Ok(s)
}

/// On 2 ranks of one host, a message of 128 to 512 KiB goes whole, as one single copy (the
/// receiver's kernel read of the root's buffer). Measured against the slots' pipelined two
/// copies (docs/PERFORMANCE.md, "Bcast"): faster there (128 KiB 9.0 against 10.7 µs, 512 KiB
/// 29 against 39), slower at 1 MiB (88 against 75), where the slots keep both cores copying at
/// once; and slower on a chain of 4 ranks at every size from 128 KiB (a forwarding rank waits
/// for its child's read, and that read pulls lines the forwarder's own read just wrote). Every
/// rank decides alike (settings, topology, size).
fn single_copy_whole(comm: &Comm, nbytes: usize, two_level: bool) -> Option<usize> {
    let ok = !two_level
        && comm.size() == 2
        && crate::param::cma() != crate::param::CmaMode::Off
        && !comm.topology().spans_hosts()
        && (BCAST_SINGLE_MIN..=BCAST_SINGLE_MAX).contains(&nbytes);
    ok.then_some(nbytes)
}

const BCAST_SINGLE_MIN: usize = 128 << 10;
const BCAST_SINGLE_MAX: usize = 512 << 10;
