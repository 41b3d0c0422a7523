//! Addresses that are host memory whatever CUDA says: the `brk` heap and the calling thread's
//! stack. The CUDA driver maps device (and managed) memory with `mmap`, never inside those, so
//! a buffer there needs neither the driver nor the "is CUDA loaded yet" probe — which costs a
//! `dl_iterate_phdr` (a lock and ~150 instructions) on every call of a process without CUDA,
//! while small messages' buffers usually live exactly there.

use std::cell::Cell;
use std::sync::OnceLock;

/// Whether `[p, p + len)` lies in the calling thread's stack or in the `brk` heap (asked in
/// that order: the stack test is the cheaper).
#[inline]
pub fn surely_host(p: usize, len: usize) -> bool {
    let Some(end) = p.checked_add(len.max(1)) else {
        return false;
    };
    in_stack(p, end) || in_heap(p, end)
}

fn in_heap(p: usize, end: usize) -> bool {
    let lo = *HEAP_START.get_or_init(start_brk);
    if lo == 0 || p < lo {
        return false;
    }
    // SAFETY: sbrk(0) only reads the current program break (glibc keeps it: no system call
    // once the break is known), changing nothing.
    let brk = unsafe { libc::sbrk(0) } as usize;
    brk != usize::MAX && end <= brk
}

static HEAP_START: OnceLock<usize> = OnceLock::new();

/// The start of the `brk` heap: field 47 (`start_brk`) of `/proc/self/stat` (Linux ≥ 3.5);
/// 0 when unknown, which disables the heap test.
fn start_brk() -> usize {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    // Field 2 (the command) is in parentheses and may hold spaces: count after the last ')'.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return 0;
    };
    // `rest` starts with field 3.
    rest.split_whitespace()
        .nth(47 - 3)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

thread_local! {
    /// This thread's stack `[lo, hi)`, read once; `(0, 0)` when unknown.
    static STACK: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
}

fn in_stack(p: usize, end: usize) -> bool {
    let (lo, hi) = STACK
        .try_with(|s| {
            s.get().unwrap_or_else(|| {
                let r = thread_stack();
                s.set(Some(r));
                r
            })
        })
        .unwrap_or((0, 0));
    p >= lo && end <= hi
}

fn thread_stack() -> (usize, usize) {
    // SAFETY: a zeroed pthread_attr_t is what pthread_getattr_np initialises; the attribute
    // object is destroyed after use; the out-pointers are valid locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return (0, 0);
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if ok {
            (addr as usize, addr as usize + size)
        } else {
            (0, 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_and_heap_are_host_mmap_is_not() {
        let local = [0u8; 64];
        assert!(surely_host(local.as_ptr() as usize, local.len()));
        // A small allocation comes from the brk heap in glibc's main arena (this test's
        // thread may use another arena: then it is simply not known as host).
        let small = Box::new([0u8; 32]);
        let _ = surely_host(small.as_ptr() as usize, 32);
        // SAFETY: an anonymous private mapping, unmapped below.
        let m = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                1 << 20,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(m, libc::MAP_FAILED);
        assert!(!surely_host(m as usize, 1 << 20));
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(m, 1 << 20) };
        assert!(!surely_host(usize::MAX - 2, 8), "overflow is not host");
    }

    #[test]
    fn heap_start_is_read() {
        let lo = start_brk();
        // SAFETY: reads the break only.
        let brk = unsafe { libc::sbrk(0) } as usize;
        assert!(lo > 0 && lo <= brk, "start_brk {lo:#x}, brk {brk:#x}");
    }
}
