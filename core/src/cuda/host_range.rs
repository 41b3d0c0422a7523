//! Addresses that are host memory whatever CUDA says: the `brk` heap and the calling thread's
//! stack. The CUDA driver maps device (and managed) memory with `mmap`, never inside those, so
//! a buffer there needs neither the driver nor the "is CUDA loaded yet" probe — which costs a
//! `dl_iterate_phdr` (a lock and ~150 instructions) on every call of a process without CUDA,
//! while small messages' buffers usually live exactly there.

use std::cell::Cell;
use std::sync::OnceLock;

/// Whether `[p, p + len)` lies in the `brk` heap or in the calling thread's stack (asked in
/// that order: the heap test reads two statics and glibc's break, about 15 instructions; the
/// stack test reaches a thread-local through `__tls_get_addr` in a shared library, about 35).
#[inline]
pub fn surely_host(p: usize, len: usize) -> bool {
    let Some(end) = p.checked_add(len.max(1)) else {
        return false;
    };
    in_heap(p, end) || in_stack(p, end)
}

fn in_heap(p: usize, end: usize) -> bool {
    let lo = *HEAP_START.get_or_init(start_brk);
    if lo == 0 || p < lo {
        return false;
    }
    end <= current_break()
}

static HEAP_START: OnceLock<usize> = OnceLock::new();

/// The program break as glibc's `malloc` knows it: glibc's own variable `__curbrk`, read in
/// place; 0 (no heap test) where the C library has none.
///
/// Why not `sbrk(0)`: glibc answers it without a system call, but a library that interposes
/// `sbrk` need not. UCX's memory hooks (loaded with MPICH's and Open MPI's UCX transports)
/// answer it with a `brk` system call, and under the preload in Debian's MPICH that one call
/// took the 8-byte allreduce from 0.27 to 0.8 µs.
fn current_break() -> usize {
    static CURBRK: OnceLock<usize> = OnceLock::new();
    let at = *CURBRK.get_or_init(|| {
        // SAFETY: dlsym with a NUL-terminated name and the default handle only looks the
        // symbol up.
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__curbrk".as_ptr()) as usize }
    });
    if at == 0 || at % std::mem::align_of::<usize>() != 0 {
        return 0;
    }
    // SAFETY: `at` is the address of glibc's `void *__curbrk`, a word-aligned global that
    // lives as long as the process. glibc writes it with whole-word stores when the break
    // moves; an aligned volatile word read sees the old or the new value, never a mix. An old
    // value from a break that just grew only answers "not sure" (the caller asks CUDA); one
    // from a break that just shrank covers bytes `malloc` has just given back, which no live
    // buffer can be.
    unsafe { std::ptr::read_volatile(at as *const usize) }
}

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

    #[test]
    fn the_break_is_read_without_calling_sbrk() {
        // SAFETY: reads the break only (and has glibc learn it, should nothing have yet).
        let brk = unsafe { libc::sbrk(0) } as usize;
        assert_ne!(brk, usize::MAX);
        // The break moves only if another test's allocation grows the main heap meanwhile.
        let read = current_break();
        assert!(read >= brk, "__curbrk {read:#x}, sbrk(0) {brk:#x}");
        // SAFETY: as above.
        assert!(read <= unsafe { libc::sbrk(0) } as usize);
    }
}
