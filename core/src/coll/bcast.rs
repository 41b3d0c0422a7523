//! `MPI_Bcast`.
//!
//! Both algorithms cut the message into chunks and forward chunk c as soon as it has arrived,
//! so the whole path is busy at once.
//! `tree` (small messages): binomial tree on ranks relative to the root — a rank receives from
//! the rank that differs in its lowest set bit and forwards to ranks above it; log2(n) hops.
//! `pipeline` (large messages): a chain root → root+1 → … → root−1; every rank receives and sends
//! each byte once, so bandwidth is that of one link regardless of n.

use super::allreduce::fragment;
use super::hier;
use super::select::{choose, forced_levels, Algo};
use super::{chunk_elems, chunks, tag};
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
    build_bcast(comm, buf, count, dt, root, sig)?.run()
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
    let algo = choose(
        "bcast",
        nbytes,
        &[Algo::Tree, Algo::Pipeline],
        Algo::Tree,
        Algo::Pipeline,
    );
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
    let ce = chunk_elems(dt.extent, count, fragment(comm)?);
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
