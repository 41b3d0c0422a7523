//! The collectives on device memory between ranks of one host: every rank maps its peers'
//! buffers (CUDA IPC), reduces and copies with CUDA kernels and copies on hcomm's stream,
//! and host barriers order the phases. Every rank of the call is here (the path was agreed).
//!
//! Each call: (1) each rank makes its input shareable — the user's buffer when it has an IPC
//! handle, else a copy in hcomm's staging buffer — and waits for that copy; (2) one host
//! allgather exchanges the shares and the call's signature (a rank in another call fails
//! with both calls named) and doubles as the barrier "every input is ready"; (3) device
//! work, waited for asleep; (4) host barriers so that no rank changes or returns a buffer
//! its peers still read. See docs/GPU.md for the memory traffic of each algorithm.

use super::classify::Dev;
use super::ctx::{Bound, CtxRes};
use super::drv::dptr;
use super::ipc::{Mapped, Share};
use super::kernels;
use super::staging::{at, Slot};
use super::Cuda;
use crate::coll::{even_blocks, Reduction};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::error::{Class, Error, Result};
use crate::frame::{Kind, Signature};

/// A device buffer of the call on this rank.
#[derive(Clone, Copy)]
pub(crate) struct DBuf {
    pub ptr: *mut u8,
    pub dev: Dev,
}

impl DBuf {
    fn addr(&self) -> u64 {
        dptr(self.ptr)
    }
}

/// Which staging buffer of the slot a non-exportable buffer goes through.
#[derive(Clone, Copy)]
enum Staging {
    First,
    Second,
}

/// One call's context, slot and mappings.
struct Call<'a> {
    cuda: &'a Cuda,
    c: &'a Comm,
    res: &'a CtxRes,
    slot: &'a mut Slot,
}

impl Call<'_> {
    /// The address peers read for `bytes` at `b`, and its share: `b` itself when it has an
    /// IPC handle, else a staging buffer (filled from `b` when `fill`). `None` when neither
    /// can be shared (no memory for the staging buffer, a platform without CUDA IPC): this
    /// rank then shares nothing, which makes every rank agree to stage (`map_all`).
    fn shareable(
        &mut self,
        b: &DBuf,
        bytes: usize,
        st: Staging,
        fill: bool,
    ) -> Option<(u64, Share)> {
        match self.try_shareable(b, bytes, st, fill) {
            Ok(s) => Some(s),
            Err(e) => {
                crate::info!(
                    "CUDA IPC: this rank cannot share its buffer on comm {:x}: {e}; staging through host memory",
                    self.c.id
                );
                None
            }
        }
    }

    fn try_shareable(
        &mut self,
        b: &DBuf,
        bytes: usize,
        st: Staging,
        fill: bool,
    ) -> Result<(u64, Share)> {
        if let Some(s) = self.cuda.exports.lock().share(b.addr(), &b.dev)? {
            return Ok((b.addr(), s));
        }
        let buf = match st {
            Staging::First => &mut self.slot.dev,
            Staging::Second => &mut self.slot.dev2,
        };
        let p = buf.ensure(bytes)?;
        if fill {
            self.slot.d2d(p, b.addr(), bytes)?;
        }
        let dev = match super::classify::query(p as usize as *const std::ffi::c_void)? {
            super::Mem::Device(d) => d,
            _ => return Err(Error::intern("hcomm's staging buffer is not device memory")),
        };
        let s = self.cuda.exports.lock().share(p, &dev)?.ok_or_else(|| {
            Error::other("hcomm's staging buffer cannot be exported through CUDA IPC")
        })?;
        Ok((p, s))
    }

    /// Exchanges `mine` (after waiting for the copies that fill them) with every rank.
    fn exchange(
        &mut self,
        sig: Signature,
        mine: &[Option<Share>],
    ) -> Result<Vec<Vec<Option<Share>>>> {
        self.slot.wait()?;
        exchange(self.c, sig, mine)
    }

    /// Everything queued has finished, then no rank goes on before all got here.
    fn sync_all(&mut self) -> Result<()> {
        self.slot.wait()?;
        crate::coll::barrier(self.c)
    }
}

const SIG_BYTES: usize = 24;

fn encode_sig(s: &Signature, out: &mut [u8]) {
    out[0..4].copy_from_slice(&(s.kind as u32).to_le_bytes());
    out[4..8].copy_from_slice(&s.dtype.to_le_bytes());
    out[8..16].copy_from_slice(&s.count.to_le_bytes());
    out[16..20].copy_from_slice(&s.op.to_le_bytes());
    out[20..24].copy_from_slice(&s.root.to_le_bytes());
}

fn decode_sig(b: &[u8]) -> Option<Signature> {
    let u = |r: std::ops::Range<usize>| u32::from_le_bytes(b[r].try_into().expect("4 bytes"));
    Some(Signature {
        kind: Kind::from_u8(u(0..4) as u8)?,
        dtype: u(4..8),
        count: u64::from_le_bytes(b[8..16].try_into().expect("8 bytes")),
        op: u(16..20),
        root: u(20..24) as i32,
    })
}

/// Allgather of (signature, shares) blobs; fails when a rank is in another call.
pub(crate) fn exchange(
    c: &Comm,
    sig: Signature,
    mine: &[Option<Share>],
) -> Result<Vec<Vec<Option<Share>>>> {
    let per = SIG_BYTES + mine.len() * Share::BYTES;
    let mut blob = vec![0u8; per];
    encode_sig(&sig, &mut blob);
    for (i, s) in mine.iter().enumerate() {
        let at = SIG_BYTES + i * Share::BYTES;
        Share::encode(s.as_ref(), &mut blob[at..at + Share::BYTES]);
    }
    let mut all = vec![0u8; per * c.size()];
    crate::coll::allgather_internal(c, &blob, &mut all)?;
    let mut out = Vec::with_capacity(c.size());
    for (p, b) in all.chunks_exact(per).enumerate() {
        let theirs = decode_sig(b);
        if theirs != Some(sig) {
            let them = theirs.map_or("an unknown call".to_string(), |s| s.to_string());
            return Err(Error::other(format!(
                "collective call mismatch on comm {:x} (device buffers): rank {} in {sig}, rank {p} in {them}",
                c.id, c.rank
            )));
        }
        out.push(
            (0..mine.len())
                .map(|i| {
                    let at = SIG_BYTES + i * Share::BYTES;
                    Share::decode(&b[at..at + Share::BYTES])
                })
                .collect(),
        );
    }
    Ok(out)
}

/// Runs `body` with the buffer's context bound and a slot leased; the caller's context is
/// restored afterwards, whatever happened.
fn with_call<T>(
    cuda: &Cuda,
    c: &Comm,
    dev: &Dev,
    body: impl FnOnce(&mut Call<'_>, &mut Mapped<'_>) -> Result<T>,
) -> Result<T> {
    let bound: Bound = cuda.ctxs.bind(dev)?;
    let res = bound.res.clone();
    let mut lease = res.lease()?;
    let mut mapped = Mapped::new(&res.imports);
    let mut call = Call {
        cuda,
        c,
        res: &res,
        slot: &mut lease,
    };
    let r = body(&mut call, &mut mapped);
    if let Err(e) = &r {
        // Nothing of ours may still run into the user's buffers after we return, and the
        // peers waiting for this rank in the call's barriers must not wait forever.
        let _ = call.slot.wait();
        c.ep.send_notice(&c.world, c.id, c.peek_seq(), &e.msg);
    }
    drop(mapped);
    drop(lease);
    drop(bound);
    r
}

/// Each rank's addresses (in this context) of shares `which` (`(index, own address)`), once
/// every rank could map what it needs. `None` when some rank could not (every rank gets the
/// same answer): the call then goes through host memory instead, and so do later ones on
/// this communicator. The agreement also tells each rank that every peer is past its
/// mapping.
fn map_all(
    c: &Comm,
    all: &[Vec<Option<Share>>],
    which: &[(usize, u64)],
    mapped: &mut Mapped<'_>,
) -> Result<Option<Vec<Vec<u64>>>> {
    let got: Result<Vec<Vec<u64>>> = which
        .iter()
        .map(|&(i, mine)| peers(c, all, i, mine, mapped))
        .collect();
    if let Err(e) = &got {
        crate::info!(
            "CUDA IPC unusable on comm {:x}: {e}; staging through host memory",
            c.id
        );
    }
    if !super::path::all_agree(c, got.is_ok())? {
        super::path::mark_ipc_broken(c);
        return Ok(None);
    }
    got.map(Some)
}

/// Each rank's address (in this context) of share `i`: its own `mine` for this rank.
fn peers(
    c: &Comm,
    all: &[Vec<Option<Share>>],
    i: usize,
    mine: u64,
    mapped: &mut Mapped<'_>,
) -> Result<Vec<u64>> {
    (0..c.size())
        .map(|p| {
            let s = all[p][i]
                .as_ref()
                .ok_or_else(|| Error::other(format!("rank {p} shared no device buffer")))?;
            if p == c.rank {
                return Ok(mine);
            }
            mapped.open(c.world[p], s)
        })
        .collect()
}

fn kernel(dt: &Datatype, red: Reduction) -> Result<String> {
    match red {
        Reduction::Builtin { ty, op } => kernels::kernel_name(ty, op),
        Reduction::User(_) => None,
    }
    .filter(|n| kernels::has_entry(kernels::PTX, n))
    .ok_or_else(|| {
        Error::new(
            Class::Op,
            format!("no CUDA kernel for this datatype and op ({:?})", dt.elem),
        )
    })
}

/// `MPI_Allreduce`: rank r reduces chunk r of every rank's input into its output (kernel),
/// then copies every peer's reduced chunk into its receive buffer.
#[allow(clippy::too_many_arguments)]
pub(crate) fn allreduce(
    cuda: &Cuda,
    c: &Comm,
    send: Option<DBuf>,
    recv: DBuf,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    sig: Signature,
) -> Result<bool> {
    let name = kernel(dt, red)?;
    let ext = dt.extent;
    let bytes = count * ext;
    let mut ph = super::phases::Phases::start();
    with_call(cuda, c, &recv.dev, |call, mapped| {
        ph.mark(0);
        let xs = call.shareable(send.as_ref().unwrap_or(&recv), bytes, Staging::First, true);
        let ys = match &send {
            Some(_) => call.shareable(&recv, bytes, Staging::Second, false),
            // In place: the reduced chunk r overwrites input chunk r, which only rank r reads.
            None => xs,
        };
        ph.mark(1);
        call.slot.wait()?;
        ph.mark(2);
        let all = call.exchange(sig, &[xs.map(|s| s.1), ys.map(|s| s.1)])?;
        ph.mark(3);
        let (x, y) = (xs.map_or(0, |s| s.0), ys.map_or(0, |s| s.0));
        let Some(p) = map_all(c, &all, &[(0, x), (1, y)], mapped)? else {
            return Ok(false);
        };
        ph.mark(4);
        let (px, py) = (&p[0], &p[1]);
        let blocks = even_blocks(count, c.size());
        let (off, n) = blocks[c.rank];
        let inputs: Vec<u64> = px.iter().map(|&p| p + (off * ext) as u64).collect();
        // SAFETY: every input is chunk r of a rank's input buffer (mapped), `y`'s chunk r is
        // ours; all hold `n` elements; y equals our own input when in place.
        unsafe {
            kernels::reduce(
                &mut call.res.module.lock(),
                call.slot,
                &name,
                &inputs,
                y + (off * ext) as u64,
                n as u64,
                ext,
            )?
        };
        ph.mark(5);
        call.slot.wait()?;
        ph.mark(6);
        crate::coll::barrier(c)?;
        ph.mark(7);
        for (p, &(off, n)) in blocks.iter().enumerate() {
            if p != c.rank || y != recv.addr() {
                call.slot
                    .d2d(at(recv.ptr, off * ext), py[p] + (off * ext) as u64, n * ext)?;
            }
        }
        ph.mark(8);
        call.slot.wait()?;
        ph.mark(9);
        crate::coll::barrier(c)?;
        ph.mark(10);
        ph.done(c.rank, bytes);
        Ok(true)
    })
}

/// `MPI_Reduce_scatter(_block)`: rank r reduces block r of every rank's input.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce_scatter(
    cuda: &Cuda,
    c: &Comm,
    send: Option<DBuf>,
    recv: DBuf,
    counts: &[usize],
    dt: &Datatype,
    red: Reduction,
    sig: Signature,
) -> Result<bool> {
    let name = kernel(dt, red)?;
    let ext = dt.extent;
    let total: usize = counts.iter().sum();
    let blocks = crate::coll::blocks_from_counts(counts);
    let (off, n) = blocks[c.rank];
    let dev = send.as_ref().map_or(recv.dev, |s| s.dev);
    with_call(cuda, c, &dev, |call, mapped| {
        let input = send.unwrap_or(recv);
        let xs = call.shareable(&input, total * ext, Staging::First, true);
        let all = call.exchange(sig, &[xs.map(|s| s.1)])?;
        let x = xs.map_or(0, |s| s.0);
        let Some(p) = map_all(c, &all, &[(0, x)], mapped)? else {
            return Ok(false);
        };
        let inputs: Vec<u64> = p[0].iter().map(|&p| p + (off * ext) as u64).collect();
        // In place on a shared user buffer, peers read its blocks until the barrier: the
        // result goes to our own block first (only we read it) and moves to the front after.
        let shared_in_place = send.is_none() && x == recv.addr();
        let dst = if shared_in_place {
            x + (off * ext) as u64
        } else {
            recv.addr()
        };
        // SAFETY: block r of every rank's input, `n` elements; dst is either our own block
        // r of our input (aliasing one input exactly) or recv, which no peer reads.
        unsafe {
            kernels::reduce(
                &mut call.res.module.lock(),
                call.slot,
                &name,
                &inputs,
                dst,
                n as u64,
                ext,
            )?
        };
        call.sync_all()?;
        if shared_in_place && off > 0 && n > 0 {
            let len = n * ext;
            if off >= n {
                call.slot.d2d(recv.addr(), dst, len)?;
            } else {
                // Overlapping ranges: through scratch.
                let s = call.slot.scratch.ensure(len)?;
                call.slot.d2d(s, dst, len)?;
                call.slot.d2d(recv.addr(), s, len)?;
            }
            call.slot.wait()?;
        }
        Ok(true)
    })
}

/// `MPI_Allgather`: every rank copies every peer's block. `send` is `None` in place (the
/// own block is already in `recv`).
pub(crate) fn allgather(
    cuda: &Cuda,
    c: &Comm,
    send: Option<DBuf>,
    recv: DBuf,
    block: usize,
    sig: Signature,
) -> Result<bool> {
    let r = c.rank;
    let own = DBuf {
        ptr: recv.ptr.wrapping_add(r * block),
        dev: recv.dev,
    };
    with_call(cuda, c, &recv.dev, |call, mapped| {
        let mine = send.unwrap_or(own);
        let xs = call.shareable(&mine, block, Staging::First, true);
        let all = call.exchange(sig, &[xs.map(|s| s.1)])?;
        let x = xs.map_or(0, |s| s.0);
        let Some(px) = map_all(c, &all, &[(0, x)], mapped)? else {
            return Ok(false);
        };
        for (p, &src) in px[0].iter().enumerate() {
            if p != r || send.is_some() {
                let src = if p == r { mine.addr() } else { src };
                call.slot.d2d(at(recv.ptr, p * block), src, block)?;
            }
        }
        call.sync_all()?;
        Ok(true)
    })
}

/// `MPI_Bcast`: every other rank copies the root's buffer.
pub(crate) fn bcast(
    cuda: &Cuda,
    c: &Comm,
    buf: DBuf,
    bytes: usize,
    root: usize,
    sig: Signature,
) -> Result<bool> {
    with_call(cuda, c, &buf.dev, |call, mapped| {
        let mine = if c.rank == root {
            call.shareable(&buf, bytes, Staging::First, true)
        } else {
            None
        };
        let all = call.exchange(sig, &[mine.map(|m| m.1)])?;
        let src = if c.rank == root {
            // A root that could not share votes against IPC too (its peers already do).
            mine.map(|_| 0)
                .ok_or_else(|| Error::other("the root shared no device buffer"))
        } else {
            all[root][0]
                .as_ref()
                .ok_or_else(|| Error::intern(format!("root {root} shared no device buffer")))
                .and_then(|s| mapped.open(c.world[root], s))
        };
        if let Err(e) = &src {
            crate::info!(
                "CUDA IPC unusable on comm {:x}: {e}; staging through host memory",
                c.id
            );
        }
        if !super::path::all_agree(c, src.is_ok())? {
            super::path::mark_ipc_broken(c);
            return Ok(false);
        }
        if c.rank != root {
            call.slot.d2d(buf.addr(), src?, bytes)?;
        }
        call.sync_all()?;
        Ok(true)
    })
}

/// `MPI_Reduce`: the root reduces every rank's input into its receive buffer. `recv` is the
/// root's (`None` elsewhere); `send` is `None` at a root in place.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce(
    cuda: &Cuda,
    c: &Comm,
    send: Option<DBuf>,
    recv: Option<DBuf>,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    root: usize,
    sig: Signature,
) -> Result<bool> {
    let name = kernel(dt, red)?;
    let ext = dt.extent;
    let input = send
        .or(recv)
        .ok_or_else(|| Error::intern("reduce without an input buffer"))?;
    with_call(cuda, c, &input.dev, |call, mapped| {
        let xs = call.shareable(&input, count * ext, Staging::First, true);
        let all = call.exchange(sig, &[xs.map(|s| s.1)])?;
        let x = xs.map_or(0, |s| s.0);
        // Only the root maps; the others agree with its outcome (the root sees a rank that
        // shared nothing when it maps).
        let px = if c.rank == root {
            map_all(c, &all, &[(0, x)], mapped)?
        } else {
            super::path::all_agree(c, xs.is_some())?.then(Vec::new)
        };
        let Some(px) = px else {
            super::path::mark_ipc_broken(c);
            return Ok(false);
        };
        if c.rank == root {
            let out = recv.ok_or_else(|| Error::intern("reduce root without recvbuf"))?;
            let px = &px[0];
            // SAFETY: every rank's whole input, `count` elements; the output is the root's
            // recvbuf, equal to its own input when in place (and shared directly), else
            // disjoint from every input.
            unsafe {
                kernels::reduce(
                    &mut call.res.module.lock(),
                    call.slot,
                    &name,
                    px,
                    out.addr(),
                    count as u64,
                    ext,
                )?
            };
        }
        call.sync_all()?;
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_round_trip() {
        let s = Signature {
            kind: Kind::ReduceScatterBlock,
            count: 1 << 40,
            dtype: 0x4c00_040a,
            op: 0x5800_0003,
            root: -1,
        };
        let mut b = [0u8; SIG_BYTES];
        encode_sig(&s, &mut b);
        assert_eq!(decode_sig(&b), Some(s));
        b[0] = 200;
        assert_eq!(decode_sig(&b), None);
    }
}
