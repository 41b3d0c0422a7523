//! Collective algorithms. Each builds a [`Schedule`] of sends, receives and local steps and runs
//! it; none touches a transport. Datatype and op are run-time values (type-erased reductions),
//! as in Gloo.
//!
//! Conventions for every entry point: counts are in elements; buffers are byte pointers the ABI
//! layer has validated for `count × extent` bytes; "in place" is expressed by passing the same
//! pointer as input and output (the ABI layer translates `MPI_IN_PLACE`). Every rank of a
//! communicator picks the same algorithm and chunking from the same arguments, so all ranks
//! reduce in the same order and get bitwise identical results, run after run.

mod allgather;
mod allreduce;
mod barrier;
mod bcast;
mod reduce;
mod reduce_scatter;
mod ring;
mod select;

pub use allgather::{allgather, allgather_internal};
pub use allreduce::allreduce;
pub use barrier::barrier;
pub use bcast::bcast;
pub use reduce::reduce;
pub use reduce_scatter::reduce_scatter;
pub use select::{chunk_elems, Algo};

use crate::datatype::{Datatype, ElemType, ReduceOp};

/// What a reducing collective reduces with. Algorithms apply it only through
/// [`Reduction::apply`] and ask [`Reduction::commutative`] before reordering operands, so
/// user-defined ops can be added here without touching them.
#[derive(Clone, Copy, Debug)]
pub struct Reduction {
    pub ty: ElemType,
    pub op: ReduceOp,
}

impl Reduction {
    /// `dst = a op b` over `count` elements (`a` is the earlier operand in rank order).
    ///
    /// # Safety
    /// `a` and `b` are valid for reading and `dst` for writing `count` elements; `dst` is
    /// exactly `a`, exactly `b`, or disjoint from both.
    #[inline]
    pub unsafe fn apply(&self, dst: *mut u8, a: *const u8, b: *const u8, count: usize) {
        // SAFETY: forwarded contract.
        unsafe { crate::reduce::reduce(self.ty, self.op, dst, a, b, count) }
    }

    /// Whether operands may be combined in any order (all predefined ops are).
    pub fn commutative(&self) -> bool {
        true
    }
}

/// Splits `count` elements into `n` blocks as evenly as possible (the first `count % n`
/// blocks get one more). Returns `(offset, count)` per block, in elements.
pub fn even_blocks(count: usize, n: usize) -> Vec<(usize, usize)> {
    let base = count / n;
    let rem = count % n;
    let mut off = 0;
    (0..n)
        .map(|i| {
            let c = base + usize::from(i < rem);
            let b = (off, c);
            off += c;
            b
        })
        .collect()
}

/// Blocks with the given counts, laid out back to back.
pub fn blocks_from_counts(counts: &[usize]) -> Vec<(usize, usize)> {
    let mut off = 0;
    counts
        .iter()
        .map(|&c| {
            let b = (off, c);
            off += c;
            b
        })
        .collect()
}

/// The pipeline chunks of a block of `count` elements: `(offset, count)` pairs. Always at least
/// one chunk, so that an empty block still sends one (empty) message and the schedule keeps its
/// shape on every rank.
pub fn chunks(count: usize, chunk_elems: usize) -> impl Iterator<Item = (usize, usize)> {
    let chunk_elems = chunk_elems.max(1);
    let n = count.div_ceil(chunk_elems).max(1);
    (0..n).map(move |c| {
        let off = c * chunk_elems;
        (off, chunk_elems.min(count - off.min(count)))
    })
}

/// Tag of chunk `chunk` of step `step`. Chunk counts are capped (see [`chunk_elems`]) below 2^20.
#[inline]
pub fn tag(step: usize, chunk: usize) -> u32 {
    debug_assert!(chunk < (1 << 20));
    ((step as u32) << 20) | chunk as u32
}

/// Bytes of `count` elements.
#[inline]
pub fn bytes(dt: &Datatype, count: usize) -> usize {
    count * dt.extent
}

/// A scratch buffer for one call.
pub fn scratch(len: usize) -> Vec<u8> {
    vec![0u8; len]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_blocks_cover_everything() {
        for count in [0usize, 1, 5, 7, 100, 1001] {
            for n in 1..9 {
                let b = even_blocks(count, n);
                assert_eq!(b.len(), n);
                assert_eq!(b.iter().map(|x| x.1).sum::<usize>(), count);
                let mut off = 0;
                for &(o, c) in &b {
                    assert_eq!(o, off);
                    off += c;
                }
                let (mn, mx) = (
                    b.iter().map(|x| x.1).min().unwrap(),
                    b.iter().map(|x| x.1).max().unwrap(),
                );
                assert!(mx - mn <= 1);
            }
        }
    }

    #[test]
    fn chunks_partition_blocks() {
        assert_eq!(chunks(0, 4).collect::<Vec<_>>(), vec![(0, 0)]);
        assert_eq!(chunks(3, 4).collect::<Vec<_>>(), vec![(0, 3)]);
        assert_eq!(
            chunks(9, 4).collect::<Vec<_>>(),
            vec![(0, 4), (4, 4), (8, 1)]
        );
        assert_eq!(chunks(8, 4).collect::<Vec<_>>(), vec![(0, 4), (4, 4)]);
        for count in 0..50 {
            for ce in 1..10 {
                let v: Vec<_> = chunks(count, ce).collect();
                assert_eq!(v.iter().map(|c| c.1).sum::<usize>(), count);
                assert!(v.iter().all(|c| c.1 <= ce));
            }
        }
    }

    #[test]
    fn tags_are_unique() {
        assert_ne!(tag(1, 0), tag(0, 1));
        assert_eq!(tag(2, 5), (2 << 20) | 5);
    }

    #[test]
    fn counts_layout() {
        assert_eq!(blocks_from_counts(&[2, 0, 3]), vec![(0, 2), (2, 0), (2, 3)]);
    }
}
