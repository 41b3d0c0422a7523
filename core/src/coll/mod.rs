//! Collective algorithms. Each builds a [`Schedule`] of sends, receives and local steps and runs
//! it; none touches a transport. The collectives that have a nonblocking form also expose the
//! build step alone (`build_x`): the call number is taken and local copies made at once, and
//! the returned schedule owns its scratch, so a request can run it later ([`crate::request`]). Datatype and op are run-time values (type-erased reductions),
//! as in Gloo.
//!
//! Conventions for every entry point: counts are in elements; buffers are byte pointers the ABI
//! layer has validated for `count × extent` bytes; "in place" is expressed by passing the same
//! pointer as input and output (the ABI layer translates `MPI_IN_PLACE`). Every rank of a
//! communicator picks the same algorithm and chunking from the same arguments, so all ranks
//! reduce in the same order and get bitwise identical results, run after run.

mod allgather;
mod allgatherv;
mod allreduce;
mod alltoall;
mod alltoall_hosts;
mod barrier;
mod bcast;
mod direct;
mod gather;
mod hier;
mod reduce;
mod reduce_scatter;
mod ring;
mod scan;
mod scatter;
mod select;

pub use allgather::{allgather, allgather_internal, build_allgather};
pub use allgatherv::{allgatherv, allgatherv_op, build_allgatherv};
pub use allreduce::{allreduce, allreduce_op, build_allreduce};
pub use alltoall::{alltoallv, build_alltoallv};
pub use barrier::{barrier, build_barrier};
pub use bcast::{bcast, build_bcast};
pub use gather::{build_gatherv, gatherv};
pub use reduce::{build_reduce, reduce};
pub use reduce_scatter::{build_reduce_scatter, reduce_scatter};
pub use scan::{build_scan, scan};
pub use scatter::{build_scatterv, scatterv};
pub use select::{chunk_elems, Algo};

use std::ffi::{c_int, c_void};

use crate::datatype::{Datatype, ElemType, ReduceOp};

/// The C type of a user-defined reduction, `MPI_User_function` of the MPICH ABI:
/// `f(invec, inoutvec, &len, &datatype)` computes `inoutvec[i] = invec[i] op inoutvec[i]`.
pub type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_int);

/// `MPI_User_function_c` (`MPI_Op_create_c`): the same with an `MPI_Count` length.
pub type LargeUserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64, *mut c_int);

/// The function of a user-defined op, in the form it was created with.
#[derive(Clone, Copy, Debug)]
pub enum UserFunction {
    Int(UserFn),
    Large(LargeUserFn),
}

/// A user-defined op bound to the datatype of one call.
#[derive(Clone, Copy, Debug)]
pub struct UserOp {
    pub f: UserFunction,
    pub commute: bool,
    /// The datatype handle passed to `f`: the one the caller gave.
    pub dtype: i32,
    /// Operands are arrays of items of `extent` bytes in the user's own layout; the
    /// algorithms' pointers point at an item's lower bound `lb`, `f` gets the item's origin.
    pub extent: usize,
    pub lb: isize,
}

/// What a reducing collective reduces with. Algorithms apply it only through
/// [`Reduction::apply`] and ask [`Reduction::commutative`] before reordering operands.
#[derive(Clone, Copy, Debug)]
pub enum Reduction {
    /// A predefined op on a predefined element type (CPU kernels of `reduce.rs`).
    Builtin { ty: ElemType, op: ReduceOp },
    /// `MPI_Op_create`.
    User(UserOp),
}

impl Reduction {
    pub const fn builtin(ty: ElemType, op: ReduceOp) -> Self {
        Reduction::Builtin { ty, op }
    }

    /// `dst = a op b` over `count` elements (`a` is the earlier operand in rank order).
    ///
    /// # Safety
    /// `a` and `b` are valid for reading and `dst` for writing `count` elements; `dst` is
    /// exactly `a`, exactly `b`, or disjoint from both.
    #[inline]
    pub unsafe fn apply(&self, dst: *mut u8, a: *const u8, b: *const u8, count: usize) {
        match self {
            // SAFETY: forwarded contract.
            Reduction::Builtin { ty, op } => unsafe {
                crate::reduce::reduce(*ty, *op, dst, a, b, count)
            },
            // SAFETY: forwarded contract.
            Reduction::User(u) => unsafe { apply_user(u, dst, a, b, count) },
        }
    }

    /// Whether operands may be combined in any order (all predefined ops are; a user op
    /// is when created so).
    pub fn commutative(&self) -> bool {
        match self {
            Reduction::Builtin { .. } => true,
            Reduction::User(u) => u.commute,
        }
    }
}

/// `dst = a op b` with a user function, which only computes `inout = in op inout`: `b` is
/// first copied to `dst` (unless it is `dst`), and when `dst` is `a`, `a` is first saved
/// to a scratch copy. Calls are split so that `len` fits the function's length type.
unsafe fn apply_user(u: &UserOp, dst: *mut u8, a: *const u8, b: *const u8, count: usize) {
    if count == 0 {
        return;
    }
    let bytes = count * u.extent;
    // 16-byte aligned, as the C types the function casts to expect.
    let mut keep: Vec<u128> = Vec::new();
    let input = if std::ptr::eq(dst, a) {
        keep.resize(bytes.div_ceil(16), 0);
        let p = keep.as_mut_ptr().cast::<u8>();
        // SAFETY: `a` is readable for `bytes`; `keep` is a fresh allocation of at least that.
        unsafe { std::ptr::copy_nonoverlapping(a, p, bytes) };
        p as *const u8
    } else {
        a
    };
    if !std::ptr::eq(dst, b) {
        // SAFETY: contract: `b` readable, `dst` writable for `bytes`; `copy` allows `b` to
        // overlap `dst` when `dst == a` and `a` overlaps `b`.
        unsafe { std::ptr::copy(b, dst, bytes) };
    }
    let call = |done: usize, n: usize| {
        let off = (done * u.extent) as isize - u.lb;
        let (inp, io) = (
            input.wrapping_offset(off) as *mut c_void,
            dst.wrapping_offset(off).cast::<c_void>(),
        );
        let mut dt = u.dtype;
        // SAFETY: the function reads `n` items at `inp` and updates `n` items at `io`, both
        // given at the items' origin (their lower bound is `lb` bytes further); both ranges
        // are valid per the contract. It is C code: it cannot unwind into Rust.
        unsafe {
            match u.f {
                UserFunction::Int(f) => f(inp, io, &mut (n as c_int), &mut dt),
                UserFunction::Large(f) => f(inp, io, &mut (n as i64), &mut dt),
            }
        }
    };
    // An `int` length caps one call of an MPI_Op_create function.
    let most = match u.f {
        UserFunction::Int(_) => c_int::MAX as usize,
        UserFunction::Large(_) => i64::MAX as usize,
    };
    let mut done = 0;
    while done < count {
        let n = (count - done).min(most);
        call(done, n);
        done += n;
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

/// Whether a collective on `comm` may fan out through the shared-memory stage (one copy of a
/// message for all of its local readers, `transport::shm`): one host, at least 3 ranks (with
/// one reader there is nothing to share), shared memory in use and the stage not turned off.
/// Every rank answers alike (topology and settings), so algorithms may be chosen by it.
pub fn fans_out(comm: &crate::comm::Comm) -> bool {
    comm.size() >= 3 && !comm.topology().spans_hosts() && crate::transport::shm::stage_in_use()
}

/// `(a + b) mod n` for `a < n` and `b <= n`, without a division (a 64-bit `div` takes tens of
/// cycles, several per small call).
#[inline]
pub(super) fn rotate(a: usize, b: usize, n: usize) -> usize {
    debug_assert!(a < n && b <= n);
    let s = a + b;
    if s >= n {
        s - n
    } else {
        s
    }
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
pub fn scratch(len: usize) -> crate::scratch::Scratch {
    crate::scratch::Scratch::new(len)
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

    /// A non-commutative user function on i32: `inout = in * 10 + inout`.
    unsafe extern "C" fn digits(a: *mut c_void, b: *mut c_void, len: *mut c_int, dt: *mut c_int) {
        // SAFETY: called by `apply_user` with `len` valid items in both buffers.
        unsafe {
            assert_eq!(*dt, 77);
            for i in 0..*len as usize {
                let x = *a.cast::<i32>().add(i);
                *b.cast::<i32>().add(i) = x * 10 + *b.cast::<i32>().add(i);
            }
        }
    }

    #[test]
    fn user_op_every_aliasing_case() {
        let red = Reduction::User(UserOp {
            f: UserFunction::Int(digits),
            commute: false,
            dtype: 77,
            extent: 4,
            lb: 0,
        });
        assert!(
            !red.commutative() && Reduction::builtin(ElemType::I32, ReduceOp::Sum).commutative()
        );
        let a = [1i32, 2, 3];
        let b = [4i32, 5, 6];
        let want = [14, 25, 36];
        let p = |x: &[i32]| x.as_ptr().cast::<u8>();
        // SAFETY (all four): three valid i32 per buffer; dst is a, b, or disjoint.
        let mut d = [0i32; 3];
        unsafe { red.apply(d.as_mut_ptr().cast(), p(&a), p(&b), 3) };
        assert_eq!(d, want);
        let mut d = a;
        unsafe { red.apply(d.as_mut_ptr().cast(), p(&d), p(&b), 3) };
        assert_eq!(d, want);
        let mut d = b;
        unsafe { red.apply(d.as_mut_ptr().cast(), p(&a), p(&d), 3) };
        assert_eq!(d, want);
        let mut d = a;
        unsafe { red.apply(d.as_mut_ptr().cast(), p(&d), p(&d), 3) };
        assert_eq!(d, [11, 22, 33]);
    }

    #[test]
    fn counts_layout() {
        assert_eq!(blocks_from_counts(&[2, 0, 3]), vec![(0, 2), (2, 0), (2, 3)]);
    }
}
