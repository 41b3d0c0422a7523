//! The two ring halves every large-message algorithm is made of.
//!
//! Ring reduce-scatter: blocks travel one hop right per step; each rank folds its own input into
//! the partial sum it receives and passes it on. After n−1 steps each rank holds one block
//! reduced over all ranks, each element reduced in the fixed order the ring visits the ranks.
//! Ring allgather: each rank passes the completed block it received in the previous step on to
//! the right. Both are pipelined: a block is cut into chunks, and chunk c moves on as soon as
//! chunk c has arrived — the next chunk's transfer overlaps the current chunk's reduction.
//! Traffic per rank: (n−1)/n of the buffer each way per half — optimal for large messages.

use super::{chunks, tag, Reduction};
use crate::engine::{Fold, Schedule, TaskId};

pub struct Ring<'b> {
    /// `(offset, count)` of each block, in elements.
    pub blocks: &'b [(usize, usize)],
    pub extent: usize,
    pub chunk_elems: usize,
    /// This rank's position in the ring.
    pub rank: usize,
    pub n: usize,
    /// Ring position → comm rank; `None`: position = comm rank (the whole communicator).
    /// A ring over some members (one host's ranks, or one rank per host) is a stage of a
    /// two-level algorithm.
    pub peers: Option<&'b [usize]>,
    /// Every receive, and the first step's sends, wait for this task: an earlier stage of
    /// the same schedule that produces the ring's input.
    pub after: Option<TaskId>,
}

impl<'b> Ring<'b> {
    /// A ring over the whole communicator, starting at once.
    pub fn flat(
        blocks: &'b [(usize, usize)],
        extent: usize,
        chunk_elems: usize,
        rank: usize,
        n: usize,
    ) -> Ring<'b> {
        Ring {
            blocks,
            extent,
            chunk_elems,
            rank,
            n,
            peers: None,
            after: None,
        }
    }

    fn member(&self, pos: usize) -> usize {
        self.peers.map_or(pos, |p| p[pos])
    }

    fn right(&self) -> usize {
        self.member((self.rank + 1) % self.n)
    }

    fn left(&self) -> usize {
        self.member((self.rank + self.n - 1) % self.n)
    }

    fn at(&self, buf: *const u8, block: usize, chunk_off: usize) -> *const u8 {
        // Pointer arithmetic only; the range was validated by the caller.
        buf.wrapping_add((self.blocks[block].0 + chunk_off) * self.extent)
    }

    /// Reduce-scatter from `input` into `work`, which may be the same buffer (in place).
    /// Rank r ends with block `(r + shift + 1) mod n` fully reduced in `work`; returns, per
    /// chunk of that block, the task completing it. Steps use tags `tag_step .. tag_step+n-1`.
    pub fn reduce_scatter(
        &self,
        s: &mut Schedule<'_>,
        red: Reduction,
        input: *const u8,
        work: *mut u8,
        shift: usize,
        tag_step: usize,
    ) -> Vec<TaskId> {
        self.reduce_scatter_to(s, red, input, work, None, shift, tag_step)
    }

    /// [`Self::reduce_scatter`], with the finished block written to `out` (its first element)
    /// instead of its place in `work` when `out` is given: no copy afterwards, and `work`
    /// holds only the partial sums passed on (at 2 ranks, none: it is never touched).
    /// `out` must not overlap `input` or `work`.
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_scatter_to(
        &self,
        s: &mut Schedule<'_>,
        red: Reduction,
        input: *const u8,
        work: *mut u8,
        out: Option<*mut u8>,
        shift: usize,
        tag_step: usize,
    ) -> Vec<TaskId> {
        let (n, r) = (self.n, self.rank);
        let mut prev: Vec<TaskId> = Vec::new();
        for st in 0..n - 1 {
            let sb = (r + shift + n - st % n) % n;
            let rb = (r + shift + 2 * n - st - 1) % n;
            for (c, (off, cnt)) in chunks(self.blocks[sb].1, self.chunk_elems).enumerate() {
                let (src, dep) = if st == 0 {
                    (self.at(input, sb, off), self.after)
                } else {
                    (self.at(work, sb, off), Some(prev[c]))
                };
                s.send(
                    self.right(),
                    tag(tag_step + st, c),
                    src,
                    cnt * self.extent,
                    &[dep],
                );
            }
            let mut cur = Vec::new();
            for (c, (off, cnt)) in chunks(self.blocks[rb].1, self.chunk_elems).enumerate() {
                let fold = Fold::Before {
                    red,
                    with: self.at(input, rb, off),
                };
                let dst = match out {
                    Some(o) if st == n - 2 => o.wrapping_add(off * self.extent),
                    _ => self.at(work, rb, off) as *mut u8,
                };
                cur.push(s.recv(
                    self.left(),
                    tag(tag_step + st, c),
                    dst,
                    cnt * self.extent,
                    fold,
                    &[self.after],
                ));
            }
            prev = cur;
        }
        prev
    }

    /// Allgather in `buf`: rank r starts owning block `own` (ready once `ready[c]` completes for
    /// each of its chunks, or at once if `ready` is empty; at step 0 it is read from `own_src`
    /// when given, and copied into `buf` as it is sent) and ends with every block. Steps use tags `tag_step .. tag_step+n-1`.
    /// Returns every receive (all of them complete: every block is in `buf`).
    pub fn allgather(
        &self,
        s: &mut Schedule<'_>,
        buf: *mut u8,
        own: usize,
        own_src: Option<*const u8>,
        ready: &[TaskId],
        tag_step: usize,
    ) -> Vec<TaskId> {
        let n = self.n;
        let mut all = Vec::new();
        let mut prev: Vec<TaskId> = Vec::new();
        for st in 0..n - 1 {
            let sb = (own + n - st % n) % n;
            let rb = (own + 2 * n - st - 1) % n;
            for (c, (off, cnt)) in chunks(self.blocks[sb].1, self.chunk_elems).enumerate() {
                let at = self.at(buf, sb, off);
                let (src, mirror, dep) = if st == 0 {
                    let (src, mirror) = match own_src {
                        Some(p) => (p.wrapping_add(off * self.extent), at as *mut u8),
                        None => (at, std::ptr::null_mut()),
                    };
                    (src, mirror, ready.get(c).copied().or(self.after))
                } else {
                    (at, std::ptr::null_mut(), Some(prev[c]))
                };
                s.send_mirrored(
                    self.right(),
                    tag(tag_step + st, c),
                    src,
                    cnt * self.extent,
                    mirror,
                    &[dep],
                );
            }
            let mut cur = Vec::new();
            for (c, (off, cnt)) in chunks(self.blocks[rb].1, self.chunk_elems).enumerate() {
                let dst = self.at(buf, rb, off) as *mut u8;
                cur.push(s.recv(
                    self.left(),
                    tag(tag_step + st, c),
                    dst,
                    cnt * self.extent,
                    Fold::Copy,
                    &[self.after],
                ));
            }
            all.extend_from_slice(&cur);
            prev = cur;
        }
        all
    }
}
