//! CUDA IPC: peers on this host read each other's device memory directly.
//!
//! **Export.** A buffer is shared as its whole allocation plus an offset: `cuMemGetAddressRange`
//! gives the allocation (a caching allocator such as PyTorch's hands out pieces of large
//! allocations, and only an allocation's base has an IPC handle), `cuIpcGetMemHandle(base)` the
//! handle. Handles are cached by `CU_POINTER_ATTRIBUTE_BUFFER_ID`, which the driver never
//! reuses within a process. Memory that has no IPC handle (stream-ordered pools from
//! `cudaMallocAsync`, the virtual memory management API behind expandable segments, managed
//! memory) is "not exportable" (cached too): callers copy it into hcomm's staging buffer,
//! which is.
//!
//! **Import.** A peer's allocation is opened once per (context, peer, buffer id) with
//! `cuIpcOpenMemHandle(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)` and kept in a bounded cache
//! ([`ImportCache`]). Keying by buffer id means a buffer the peer freed and re-allocated at
//! the same address is a new entry: stale memory is never mapped. The old entry is closed as
//! soon as a new allocation of the same peer overlaps its address range (it must have been
//! freed), or when the least recently used entries are evicted. Entries in use by a call are
//! pinned and never closed under it.

use std::collections::HashMap;

use super::classify::Dev;
use super::drv::{check, sys};
use crate::error::{Error, Result};

/// What a rank tells its peers about one buffer (fixed size on the wire: [`Share::BYTES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Share {
    pub handle: [u8; 64],
    pub buffer_id: u64,
    /// The allocation, in the exporter's address space.
    pub base: u64,
    pub size: u64,
    /// The buffer's offset from `base`.
    pub offset: u64,
}

impl Share {
    pub const BYTES: usize = 64 + 4 * 8 + 8;

    /// `None` is sent as an absent entry (flag 0).
    pub fn encode(s: Option<&Share>, out: &mut [u8]) {
        out[..Self::BYTES].fill(0);
        let Some(s) = s else { return };
        out[..64].copy_from_slice(&s.handle);
        let mut at = 64;
        for v in [s.buffer_id, s.base, s.size, s.offset, 1] {
            out[at..at + 8].copy_from_slice(&v.to_le_bytes());
            at += 8;
        }
    }

    pub fn decode(b: &[u8]) -> Option<Share> {
        let word = |i: usize| {
            let at = 64 + 8 * i;
            u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
        };
        if word(4) != 1 {
            return None;
        }
        let mut handle = [0u8; 64];
        handle.copy_from_slice(&b[..64]);
        Some(Share {
            handle,
            buffer_id: word(0),
            base: word(1),
            size: word(2),
            offset: word(3),
        })
    }
}

/// Exported allocations by buffer id (`None`: not exportable).
#[derive(Default)]
pub(crate) struct Exports {
    by_id: HashMap<u64, Option<(u64, u64, [u8; 64])>>,
}

/// Buffer ids remembered at most; beyond, the table starts over (an entry costs one
/// `cuIpcGetMemHandle` to rebuild; ids of freed buffers are never asked for again).
const EXPORTS_MAX: usize = 4096;

impl Exports {
    /// The share of device buffer `ptr` (in the bound context), or `None` when its memory
    /// has no IPC handle.
    pub fn share(&mut self, ptr: u64, dev: &Dev) -> Result<Option<Share>> {
        if dev.managed {
            return Ok(None);
        }
        if !self.by_id.contains_key(&dev.buffer_id) {
            if self.by_id.len() >= EXPORTS_MAX {
                self.by_id.clear();
            }
            let e = export(ptr);
            self.by_id.insert(dev.buffer_id, e);
        }
        Ok(
            self.by_id[&dev.buffer_id].map(|(base, size, handle)| Share {
                handle,
                buffer_id: dev.buffer_id,
                base,
                size,
                offset: ptr - base,
            }),
        )
    }
}

/// `(base, size, handle)` of the allocation holding `ptr`, or `None` when it cannot be
/// exported (logged at TRACE: it is an expected outcome, the staging buffer takes over).
fn export(ptr: u64) -> Option<(u64, u64, [u8; 64])> {
    let (mut base, mut size): (sys::CUdeviceptr, usize) = (0, 0);
    // SAFETY: writes the base and size of the allocation containing `ptr`.
    let r = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr) };
    if let Err(e) = check(r, "cuMemGetAddressRange") {
        crate::trace!("device buffer {ptr:#x} not exportable: {e}");
        return None;
    }
    // SAFETY: an all-zero handle is a valid value of this plain byte struct.
    let mut h: sys::CUipcMemHandle = unsafe { std::mem::zeroed() };
    // SAFETY: writes the IPC handle of the allocation starting at `base`.
    let r = unsafe { sys::cuIpcGetMemHandle(&mut h, base) };
    if let Err(e) = check(r, "cuIpcGetMemHandle") {
        crate::trace!("device buffer {ptr:#x} not exportable: {e}");
        return None;
    }
    let mut handle = [0u8; 64];
    for (d, s) in handle.iter_mut().zip(h.reserved.iter()) {
        *d = *s as u8;
    }
    Some((base, size as u64, handle))
}

/// Which peer allocation an imported mapping is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    /// World rank of the exporter.
    pub peer: usize,
    pub buffer_id: u64,
}

struct Entry<V> {
    key: Key,
    /// The allocation in the peer's address space.
    base: u64,
    size: u64,
    value: V,
    last_use: u64,
    pins: u32,
    /// Found stale while pinned: closed when the last pin goes.
    doomed: bool,
}

/// The bounded cache of imported allocations of one context: pure bookkeeping, the caller
/// opens and closes. `V` is the mapped address (a test uses other values).
pub(crate) struct ImportCache<V> {
    entries: Vec<Entry<V>>,
    cap: usize,
    clock: u64,
}

/// Open mappings kept per context at most (beyond, least recently used ones are closed).
pub(crate) const IMPORTS_MAX: usize = 256;

pub(crate) type Imports = ImportCache<u64>;

impl Default for ImportCache<u64> {
    fn default() -> Self {
        ImportCache::new(IMPORTS_MAX)
    }
}

impl<V: Copy> ImportCache<V> {
    pub fn new(cap: usize) -> Self {
        ImportCache {
            entries: Vec::new(),
            cap: cap.max(1),
            clock: 0,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The mapping of `key`, pinned, if cached.
    pub fn get(&mut self, key: Key) -> Option<V> {
        self.clock += 1;
        let now = self.clock;
        let e = self
            .entries
            .iter_mut()
            .find(|e| e.key == key && !e.doomed)?;
        e.last_use = now;
        e.pins += 1;
        Some(e.value)
    }

    /// Adds the new mapping `value` of `key` (allocation `base`, `size` in the peer's
    /// space), pinned: [`ImportCache::evict`] then [`ImportCache::push`]. Returns the
    /// mappings to close.
    #[cfg(test)]
    pub fn insert(&mut self, key: Key, base: u64, size: u64, value: V) -> Vec<V> {
        let mut close = self.evict(key, base, size);
        close.extend(self.push(key, base, size, value));
        close
    }

    /// Before `key` (allocation `base`, `size` in the peer's space) is opened: removes the
    /// same peer's entries that overlap it (the peer freed them: it cannot hold two live
    /// allocations at overlapping addresses) and returns them to close *before* the open —
    /// the driver usually maps an import at the exporter's address, so a stale mapping still
    /// there would make the open fail with `CUDA_ERROR_ALREADY_MAPPED`. Pinned ones are
    /// doomed instead (closed when their call releases them).
    pub fn evict(&mut self, key: Key, base: u64, size: u64) -> Vec<V> {
        let mut close = Vec::new();
        let overlaps = |e: &Entry<V>| {
            e.key.peer == key.peer && e.base < base.saturating_add(size) && base < e.base + e.size
        };
        let mut i = 0;
        while i < self.entries.len() {
            let e = &mut self.entries[i];
            if overlaps(e) || e.key == key {
                if e.pins > 0 {
                    e.doomed = true;
                    i += 1;
                } else {
                    close.push(self.entries.swap_remove(i).value);
                }
            } else {
                i += 1;
            }
        }
        close
    }

    /// Every unpinned mapping of world rank `peer`, removed (to close): the retry after the
    /// driver still found `CUDA_ERROR_ALREADY_MAPPED`.
    pub fn purge_peer(&mut self, peer: usize) -> Vec<V> {
        let mut close = Vec::new();
        let mut i = 0;
        while i < self.entries.len() {
            if self.entries[i].key.peer == peer && self.entries[i].pins == 0 {
                close.push(self.entries.swap_remove(i).value);
            } else {
                i += 1;
            }
        }
        close
    }

    /// Adds the freshly opened mapping `value` of `key`, pinned; returns the least recently
    /// used unpinned mappings beyond the cap, to close.
    pub fn push(&mut self, key: Key, base: u64, size: u64, value: V) -> Vec<V> {
        self.clock += 1;
        let mut close = Vec::new();
        while self.entries.len() >= self.cap {
            let Some((idx, _)) = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.pins == 0)
                .min_by_key(|(_, e)| e.last_use)
            else {
                break; // everything is in use by running calls: go over the cap for now
            };
            close.push(self.entries.swap_remove(idx).value);
        }
        self.entries.push(Entry {
            key,
            base,
            size,
            value,
            last_use: self.clock,
            pins: 1,
            doomed: false,
        });
        close
    }

    /// Drops one pin of `key` (the mapping `value`); returns it when it must be closed now.
    pub fn unpin(&mut self, key: Key, value: V) -> Option<V>
    where
        V: PartialEq,
    {
        let i = self
            .entries
            .iter()
            .position(|e| e.key == key && e.value == value)?;
        let e = &mut self.entries[i];
        e.pins = e.pins.saturating_sub(1);
        if e.pins == 0 && e.doomed {
            return Some(self.entries.swap_remove(i).value);
        }
        None
    }
}

/// Opens a peer's allocation in the bound context (the driver's code when it fails).
fn open(s: &Share) -> std::result::Result<u64, sys::CUresult> {
    // SAFETY: an all-zero handle is a valid value of this plain byte struct.
    let mut h: sys::CUipcMemHandle = unsafe { std::mem::zeroed() };
    for (d, s) in h.reserved.iter_mut().zip(s.handle.iter()) {
        *d = *s as std::ffi::c_char;
    }
    let mut p: sys::CUdeviceptr = 0;
    // SAFETY: a handle the peer exported; the driver validates it and maps the allocation
    // into the current context.
    let r = unsafe {
        sys::cuIpcOpenMemHandle_v2(
            &mut p,
            h,
            sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32,
        )
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(p)
    } else {
        Err(r)
    }
}

/// Closes a mapping (errors are logged: the mapping is gone either way).
pub(crate) fn close(p: u64) {
    // SAFETY: a mapping we opened in the bound context and no longer use.
    let r = unsafe { sys::cuIpcCloseMemHandle(p) };
    if let Err(e) = check(r, "cuIpcCloseMemHandle") {
        crate::info!("{e}");
    }
}

/// The mappings one call uses; unpinned (and closed if doomed) when dropped. The bound
/// context must be the cache's while this lives (it is dropped inside the call).
pub(crate) struct Mapped<'a> {
    cache: &'a parking_lot::Mutex<Imports>,
    used: Vec<(Key, u64)>,
}

impl<'a> Mapped<'a> {
    pub fn new(cache: &'a parking_lot::Mutex<Imports>) -> Self {
        Mapped {
            cache,
            used: Vec::new(),
        }
    }

    /// The device address in this context of the buffer `s` that world rank `peer` shared.
    pub fn open(&mut self, peer: usize, s: &Share) -> Result<u64> {
        let key = Key {
            peer,
            buffer_id: s.buffer_id,
        };
        let mut c = self.cache.lock();
        let base = match c.get(key) {
            Some(b) => b,
            None => {
                for old in c.evict(key, s.base, s.size) {
                    close(old);
                }
                let b = match open(s) {
                    Err(sys::CUresult::CUDA_ERROR_ALREADY_MAPPED) => {
                        // Something of this peer's still holds the range (a mapping the
                        // overlap rule did not catch): close all of its idle ones, once.
                        for old in c.purge_peer(peer) {
                            close(old);
                        }
                        open(s)
                    }
                    r => r,
                }
                .map_err(|r| {
                    let e = super::drv::error(r, "cuIpcOpenMemHandle");
                    Error::new(
                        e.class,
                        format!("mapping rank {peer}'s device buffer: {}", e.msg),
                    )
                })?;
                for old in c.push(key, s.base, s.size, b) {
                    close(old);
                }
                b
            }
        };
        self.used.push((key, base));
        Ok(base + s.offset)
    }
}

impl Drop for Mapped<'_> {
    fn drop(&mut self) {
        let mut c = self.cache.lock();
        for (k, v) in self.used.drain(..) {
            if let Some(old) = c.unpin(k, v) {
                close(old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(peer: usize, id: u64) -> Key {
        Key {
            peer,
            buffer_id: id,
        }
    }

    #[test]
    fn share_round_trip() {
        let s = Share {
            handle: std::array::from_fn(|i| i as u8 ^ 0xa5),
            buffer_id: 77,
            base: 0x7f00_0000_0000,
            size: 1 << 30,
            offset: 4096,
        };
        let mut b = [0xffu8; Share::BYTES];
        Share::encode(Some(&s), &mut b);
        assert_eq!(Share::decode(&b), Some(s));
        Share::encode(None, &mut b);
        assert_eq!(Share::decode(&b), None);
    }

    #[test]
    fn a_reallocated_buffer_at_the_same_address_is_never_the_old_mapping() {
        let mut c = ImportCache::new(8);
        assert_eq!(c.get(key(1, 10)), None);
        assert!(c.insert(key(1, 10), 0x1000, 0x1000, 111).is_empty());
        c.unpin(key(1, 10), 111);
        assert_eq!(c.get(key(1, 10)), Some(111));
        c.unpin(key(1, 10), 111);
        // The peer freed buffer 10 and got buffer 11 at the same address: a new id misses,
        // and inserting it closes the stale mapping.
        assert_eq!(c.get(key(1, 11)), None);
        assert_eq!(c.insert(key(1, 11), 0x1000, 0x1000, 222), vec![111]);
        c.unpin(key(1, 11), 222);
        assert_eq!(c.get(key(1, 10)), None);
        assert_eq!(c.get(key(1, 11)), Some(222));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn overlap_closes_only_the_same_peers_entries() {
        let mut c = ImportCache::new(8);
        c.insert(key(1, 1), 0x1000, 0x1000, 1);
        c.insert(key(2, 2), 0x1000, 0x1000, 2); // same range, other peer: kept
        c.insert(key(1, 3), 0x3000, 0x1000, 3); // same peer, disjoint: kept
        for (k, v) in [(key(1, 1), 1), (key(2, 2), 2), (key(1, 3), 3)] {
            c.unpin(k, v);
        }
        // Peer 1 now has an allocation spanning 0x1800..0x3800: both of its old ones go.
        let mut closed = c.insert(key(1, 4), 0x1800, 0x2000, 4);
        closed.sort();
        assert_eq!(closed, vec![1, 3]);
        assert_eq!(c.get(key(2, 2)), Some(2));
        // Touching ranges do not overlap.
        assert!(c.insert(key(1, 5), 0x3800, 0x100, 5).is_empty());
    }

    #[test]
    fn lru_eviction_spares_pinned_and_recent_entries() {
        let mut c = ImportCache::new(3);
        for i in 0..3u64 {
            c.insert(key(1, i), i * 0x1000, 0x1000, i);
            c.unpin(key(1, i), i);
        }
        // Use 0 again: 1 is now the least recently used.
        assert_eq!(c.get(key(1, 0)), Some(0));
        c.unpin(key(1, 0), 0);
        assert_eq!(c.insert(key(1, 9), 0x9000, 0x1000, 9), vec![1]);
        c.unpin(key(1, 9), 9);
        // Pin everything but 9's neighbour 2... then insert: only unpinned entries go.
        assert_eq!(c.get(key(1, 0)), Some(0));
        assert_eq!(c.get(key(1, 9)), Some(9));
        assert_eq!(c.insert(key(1, 20), 0x20000, 0x1000, 20), vec![2]);
        // All pinned: the cache grows past its cap instead of closing a mapping in use.
        assert!(c.insert(key(1, 21), 0x21000, 0x1000, 21).is_empty());
        assert_eq!(c.len(), 4);
    }

    #[test]
    fn stale_entries_are_evicted_before_the_open_and_a_retry_purges_the_peer() {
        let mut c = ImportCache::new(8);
        for (k, b) in [
            (key(1, 1), 0x1000),
            (key(1, 2), 0x8000),
            (key(2, 3), 0x1000),
        ] {
            c.insert(k, b, 0x1000, b + k.peer as u64);
            c.unpin(k, b + k.peer as u64);
        }
        // Peer 1 re-allocated at 0x1000: its old mapping there goes before anything opens,
        // and nothing is added until the caller pushes the new mapping.
        assert_eq!(c.evict(key(1, 4), 0x1000, 0x1000), vec![0x1001]);
        assert_eq!(c.len(), 2);
        assert!(c.push(key(1, 4), 0x1000, 0x1000, 0x4001).is_empty());
        // The retry after ALREADY_MAPPED closes peer 1's idle mappings only: not the pinned
        // new one, not peer 2's.
        assert_eq!(c.purge_peer(1), vec![0x8001]);
        assert_eq!(c.get(key(2, 3)), Some(0x1002));
        assert_eq!(c.get(key(1, 4)), Some(0x4001));
    }

    #[test]
    fn a_pinned_stale_entry_closes_when_released() {
        let mut c = ImportCache::new(8);
        c.insert(key(1, 1), 0x1000, 0x1000, 1); // pinned by a running call
        assert!(c.insert(key(1, 2), 0x1000, 0x1000, 2).is_empty());
        assert_eq!(c.get(key(1, 1)), None, "doomed entries are not handed out");
        assert_eq!(c.unpin(key(1, 1), 1), Some(1));
        assert_eq!(c.unpin(key(1, 2), 2), None);
        assert_eq!(c.len(), 1);
    }
}
