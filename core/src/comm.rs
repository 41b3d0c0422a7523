//! Communicators: a group of world ranks in a fixed order, an id every member agrees on, and a
//! per-communicator sequence number that tags each collective call.
//!
//! Ids are derived, not negotiated: a child's id hashes the parent's id, the parent's count of
//! children created so far (the same on every member, because creation is collective and
//! ordered) and the split color. So `MPI_Comm_dup` needs no communication, and frames of two
//! communicators never match each other.

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::coll::Algo;
use crate::endpoint::Endpoint;
use crate::engine::Ctx;
use crate::error::Result;
use crate::frame::{Kind, Signature};

pub struct Comm {
    pub id: u64,
    /// This process's rank in the communicator.
    pub rank: usize,
    /// Comm rank → world rank.
    pub world: Vec<usize>,
    pub ep: Arc<Endpoint>,
    seq: AtomicU64,
    children: AtomicU64,
    /// The error handler, as the ABI's handle value.
    pub errhandler: AtomicI32,
    /// (collective, algorithm) pairs already logged at INFO.
    logged: Mutex<Vec<(Kind, Algo)>>,
}

/// splitmix64: a cheap, well-mixed 64-bit hash step.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Reserved id of `MPI_COMM_SELF` (never communicates, so its id only has to differ from others').
pub const SELF_ID: u64 = u64::MAX;

impl Comm {
    pub fn new(
        id: u64,
        rank: usize,
        world: Vec<usize>,
        ep: Arc<Endpoint>,
        errhandler: i32,
    ) -> Comm {
        Comm {
            id,
            rank,
            world,
            ep,
            seq: AtomicU64::new(0),
            children: AtomicU64::new(0),
            errhandler: AtomicI32::new(errhandler),
            logged: Mutex::new(Vec::new()),
        }
    }

    pub fn size(&self) -> usize {
        self.world.len()
    }

    /// The next call number; every member calls collectives in the same order.
    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    pub fn ctx(&self, sig: Signature, seq: u64, extent: usize) -> Ctx<'_> {
        Ctx {
            ep: &self.ep,
            world: &self.world,
            comm_id: self.id,
            seq,
            sig,
            extent: extent.max(1),
        }
    }

    /// Logs the algorithm a collective takes, at INFO, once per (collective, algorithm) on
    /// this communicator (TRACE logs every call).
    pub fn note_algo(&self, kind: Kind, algo: Algo, bytes: usize) {
        crate::trace!(
            "{} on comm {:x}: {} bytes, algorithm {:?}",
            kind.mpi_name(),
            self.id,
            bytes,
            algo
        );
        if crate::log::enabled(crate::log::Level::Info) {
            let mut l = self.logged.lock();
            if !l.contains(&(kind, algo)) {
                l.push((kind, algo));
                crate::info!(
                    "{} on comm {:x} (size {}): algorithm {:?} (first use, {} bytes)",
                    kind.mpi_name(),
                    self.id,
                    self.size(),
                    algo,
                    bytes
                );
            }
        }
    }

    fn child_id(&self, color: u64) -> u64 {
        let n = self.children.fetch_add(1, Ordering::Relaxed);
        let id = mix(mix(self.id ^ mix(n)) ^ color);
        if id == SELF_ID || id == 0 {
            id ^ 1
        } else {
            id
        }
    }

    /// `MPI_Comm_dup`: same group, new id, same error handler.
    pub fn dup(&self) -> Comm {
        let id = self.child_id(u64::MAX - 1);
        Comm::new(
            id,
            self.rank,
            self.world.clone(),
            self.ep.clone(),
            self.errhandler.load(Ordering::Relaxed),
        )
    }

    /// `MPI_Comm_split`; `color < 0` is `MPI_UNDEFINED` (no new communicator for this rank).
    /// New ranks are ordered by key, ties by old rank.
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Comm>> {
        let mut mine = [0u8; 8];
        mine[..4].copy_from_slice(&color.to_le_bytes());
        mine[4..].copy_from_slice(&key.to_le_bytes());
        let mut all = vec![0u8; 8 * self.size()];
        crate::coll::allgather_internal(self, &mine, &mut all)?;
        let id = self.child_id(color as u32 as u64);
        if color < 0 {
            return Ok(None);
        }
        let mut members: Vec<(i32, usize)> = all
            .chunks_exact(8)
            .enumerate()
            .filter_map(|(r, b)| {
                let c = i32::from_le_bytes(b[..4].try_into().unwrap());
                let k = i32::from_le_bytes(b[4..].try_into().unwrap());
                (c == color).then_some((k, r))
            })
            .collect();
        members.sort();
        let rank = members
            .iter()
            .position(|&(_, r)| r == self.rank)
            .expect("this rank has its own color");
        let world = members.iter().map(|&(_, r)| self.world[r]).collect();
        Ok(Some(Comm::new(
            id,
            rank,
            world,
            self.ep.clone(),
            self.errhandler.load(Ordering::Relaxed),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_ids_differ_and_agree() {
        let ep = Arc::new(Endpoint::singleton());
        let a = Comm::new(0, 0, vec![0], ep.clone(), 0);
        let b = Comm::new(0, 0, vec![0], ep, 0);
        let (a1, a2) = (a.dup(), a.dup());
        let (b1, b2) = (b.dup(), b.dup());
        assert_eq!(a1.id, b1.id);
        assert_eq!(a2.id, b2.id);
        assert_ne!(a1.id, a2.id);
        assert_ne!(a1.id, a.id);
    }
}
