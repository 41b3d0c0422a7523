//! Scratch buffers for collectives, reused from call to call.
//!
//! A large collective needs a buffer the size of its message (a reduce-scatter's partial sums,
//! an in-place input's copy). Asking the allocator afresh every call is what made a 16 MiB
//! `MPI_Reduce_scatter` slower than a whole 16 MiB `MPI_Allreduce`: glibc serves it either
//! with a new `mmap` (every page faults on first touch, and `munmap` on free) or, once its
//! dynamic threshold has risen, from the heap with `calloc`'s memset of the whole buffer —
//! both cost about as much as moving the data. The pool keeps a few large buffers and hands
//! them out again. Contents of a reused buffer are whatever the last user left (every
//! algorithm writes its scratch before reading it; debug builds poison reused buffers to
//! catch one that does not).
//!
//! Bounds: buffers under [`POOLED_MIN`] bytes are not pooled (the allocator's free lists serve
//! them without faults or memsets), at most [`POOLED_BUFFERS`] are kept, and at most
//! `HCOMM_SCRATCH_CACHE` bytes in all (0 turns the pool off).

use std::ops::{Deref, DerefMut};

use parking_lot::Mutex;

/// Smaller buffers come from the allocator directly (glibc's mmap threshold is 128 KiB).
pub const POOLED_MIN: usize = 256 << 10;

/// The most buffers the pool keeps (a few schedules alive at once, two buffers each at most).
pub const POOLED_BUFFERS: usize = 8;

/// Idle buffers, each fully initialized (its length is its usable size).
struct Pool(Mutex<Vec<Vec<u8>>>);

static POOL: Pool = Pool(Mutex::new(Vec::new()));

fn cache_limit() -> usize {
    crate::param::scratch_cache().unwrap_or(256 << 20)
}

/// A scratch buffer of a fixed length; it goes back to the pool when dropped.
pub struct Scratch {
    buf: Vec<u8>,
    len: usize,
}

impl Scratch {
    /// A buffer of `len` bytes: a pooled one at least that long if there is one, else a new
    /// zeroed one. The bytes of a reused buffer are unspecified.
    pub fn new(len: usize) -> Scratch {
        let buf = match POOL.take_fitting(len) {
            Some(mut buf) => {
                if cfg!(debug_assertions) {
                    buf[..len].fill(0xA5);
                }
                buf
            }
            None => vec![0u8; len],
        };
        Scratch { buf, len }
    }
}

impl Pool {
    /// The smallest pooled buffer of at least `len` bytes, taken out of the pool.
    fn take_fitting(&self, len: usize) -> Option<Vec<u8>> {
        if len < POOLED_MIN {
            return None;
        }
        let mut pool = self.0.lock();
        let best = pool
            .iter()
            .enumerate()
            .filter(|(_, b)| b.len() >= len)
            .min_by_key(|(_, b)| b.len())
            .map(|(i, _)| i)?;
        Some(pool.swap_remove(best))
    }

    /// Keeps `buf` for later calls if the bounds (`limit` bytes in all) allow, evicting
    /// smaller buffers first.
    fn give_back(&self, buf: Vec<u8>, limit: usize) {
        if buf.len() < POOLED_MIN || buf.len() > limit {
            return;
        }
        let evicted: Vec<Vec<u8>> = {
            let mut pool = self.0.lock();
            pool.push(buf);
            // Largest first: under the bounds, the small ones go.
            pool.sort_unstable_by_key(|b| std::cmp::Reverse(b.len()));
            let mut total = 0usize;
            let mut keep = 0usize;
            for b in pool.iter() {
                if keep == POOLED_BUFFERS || total + b.len() > limit {
                    break;
                }
                total += b.len();
                keep += 1;
            }
            pool.drain(keep..).collect()
        };
        // Freed outside the lock: munmap is not free.
        drop(evicted);
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        POOL.give_back(std::mem::take(&mut self.buf), cache_limit());
    }
}

impl Deref for Scratch {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> Pool {
        Pool(Mutex::new(Vec::new()))
    }

    #[test]
    fn hands_back_the_smallest_fitting_buffer() {
        let p = pool();
        let (a, b) = (vec![1u8; POOLED_MIN * 4], vec![2u8; POOLED_MIN * 2]);
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        p.give_back(a, usize::MAX);
        p.give_back(b, usize::MAX);
        let first = p.take_fitting(POOLED_MIN + 1).unwrap();
        assert_eq!(first.as_ptr(), pb);
        assert!(p.take_fitting(POOLED_MIN * 5).is_none());
        let second = p.take_fitting(POOLED_MIN * 3).unwrap();
        assert_eq!(second.as_ptr(), pa);
        assert!(p.take_fitting(POOLED_MIN).is_none());
    }

    #[test]
    fn small_buffers_are_not_pooled() {
        let p = pool();
        p.give_back(vec![0u8; POOLED_MIN - 1], usize::MAX);
        assert!(p.0.lock().is_empty());
        p.give_back(vec![0u8; POOLED_MIN], usize::MAX);
        assert!(
            p.take_fitting(POOLED_MIN - 1).is_none(),
            "small requests allocate"
        );
    }

    #[test]
    fn bounds_evict_the_smallest_first() {
        let p = pool();
        for k in 1..=POOLED_BUFFERS + 2 {
            p.give_back(vec![0u8; POOLED_MIN * k], usize::MAX);
        }
        let lens: Vec<usize> = p.0.lock().iter().map(|b| b.len() / POOLED_MIN).collect();
        assert_eq!(lens.len(), POOLED_BUFFERS);
        assert!(!lens.contains(&1) && !lens.contains(&2));
        // A byte limit: 10 + 9 fit in 20 units, 8 does not.
        let p = pool();
        for k in [8, 10, 9] {
            p.give_back(vec![0u8; POOLED_MIN * k], POOLED_MIN * 20);
        }
        let lens: Vec<usize> = p.0.lock().iter().map(|b| b.len() / POOLED_MIN).collect();
        assert_eq!(lens, [10, 9]);
        // Limit 0: nothing kept.
        let p = pool();
        p.give_back(vec![0u8; POOLED_MIN], 0);
        assert!(p.0.lock().is_empty());
    }

    #[test]
    fn a_scratch_has_the_length_asked_for() {
        for len in [0, 100, POOLED_MIN, POOLED_MIN * 3 + 5] {
            let s = Scratch::new(len);
            assert_eq!(s.len(), len);
        }
        let s = Scratch::new(100);
        assert!(s.iter().all(|&b| b == 0), "a fresh buffer is zeroed");
    }
}
