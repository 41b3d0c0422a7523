//! Communicators: a group of world ranks in a fixed order, an id every member agrees on, and a
//! per-communicator sequence number that tags each collective call.
//!
//! Ids are derived, not negotiated: a child's id hashes the parent's id, the parent's count of
//! children created so far (the same on every member, because creation is collective and
//! ordered) and the split color. So `MPI_Comm_dup` needs no communication, and frames of two
//! communicators never match each other. `MPI_Comm_create` uses a hash of the new member list
//! as the color: members agree on it without talking, and disjoint groups passed by different
//! ranks (allowed since MPI-2.2) get different ids.
//!
//! `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` is a split whose color is a hash of each rank's
//! host identity (hostname + boot id), gathered once over the parent: it needs nothing from
//! the transport setup, and ranks on one host land in one communicator whatever launched them.

use std::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::coll::Algo;
use crate::endpoint::Endpoint;
use crate::engine::Ctx;
use crate::error::{Class, Error, Result};
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
    /// `MPI_Comm_set_name`/`MPI_Comm_get_name`; new communicators have none (as in MPICH and
    /// Open MPI, a dup does not inherit the name).
    name: Mutex<String>,
    /// Whether the members agreed that device buffers may occur (`crate::cuda`, agreed at
    /// the first collective that can carry them; every communicator agrees on its own).
    pub(crate) cuda: AtomicU8,
    /// Collectives that asked `cuda` while it said "not CUDA-aware" (the same count on every
    /// member: it schedules the re-agreements, see `crate::cuda::path`).
    pub(crate) cuda_calls: std::sync::atomic::AtomicU32,
    /// Which members share a host ([`crate::topology`]), derived on first use.
    topo: std::sync::OnceLock<crate::topology::Topology>,
    /// The largest message the allocation-free small paths take on this communicator
    /// (`coll::direct::fits`), derived on first use: it depends only on the links and the
    /// process's settings, and deriving it is a tenth of an 8-byte call.
    pub(crate) direct_limit: std::sync::OnceLock<Option<usize>>,
    /// Set on an intercommunicator (then `world` is the remote group and `rank` this
    /// process's rank in the local group; see `crate::intercomm`).
    inter: std::sync::OnceLock<Box<Inter>>,
    /// The process topology (`MPI_Cart_create` and friends), set once before the handle is
    /// published; `MPI_Comm_dup` copies it.
    proc_topo: std::sync::OnceLock<Arc<crate::process_topology::ProcTopo>>,
    /// The communicator of `MPIX_Comm_(i)agree` (see [`Comm::agreement`]), made at first use.
    agreement: std::sync::OnceLock<Arc<Comm>>,
    /// The twin nonblocking and persistent collectives run on (see [`Comm::nonblocking`]).
    nonblocking: std::sync::OnceLock<Arc<Comm>>,
}

/// The first call number of nonblocking and persistent collectives ([`Comm::nonblocking`]):
/// far above any number the blocking sequence reaches, so the two never meet.
pub const NONBLOCKING_SEQ: u64 = 1 << 62;

/// What makes a [`Comm`] an intercommunicator (built by `crate::intercomm`).
pub struct Inter {
    /// The local group: world ranks in local rank order.
    pub local: Vec<usize>,
    /// An intracommunicator over the local group, for this side's part of collective calls.
    pub local_comm: Comm,
    /// The intercommunicator's twin (same groups, another id): the leaders' internal messages.
    pub bridge: Comm,
    /// Whether this side's group comes first where an order of the two is needed (the side
    /// holding the lowest world rank).
    pub first: bool,
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

/// Longest communicator name kept, in bytes (`MPI_MAX_OBJECT_NAME` less the NUL).
pub const MAX_NAME: usize = 127;

/// The name a communicator starts with: the predefined ones are named after their handles
/// (recognised by their reserved ids, world 0 and `SELF_ID`), all others have none.
fn default_name(id: u64) -> &'static str {
    match id {
        0 => "MPI_COMM_WORLD",
        SELF_ID => "MPI_COMM_SELF",
        _ => "",
    }
}

/// A 64-bit hash of bytes (FNV-1a, then a splitmix64 step to spread it).
pub(crate) fn hash_bytes(b: &[u8]) -> u64 {
    let h = b.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01b3)
    });
    mix(h)
}

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
            name: Mutex::new(default_name(id).to_string()),
            cuda: AtomicU8::new(0),
            cuda_calls: std::sync::atomic::AtomicU32::new(0),
            topo: std::sync::OnceLock::new(),
            direct_limit: std::sync::OnceLock::new(),
            inter: std::sync::OnceLock::new(),
            proc_topo: std::sync::OnceLock::new(),
            agreement: std::sync::OnceLock::new(),
            nonblocking: std::sync::OnceLock::new(),
        }
    }

    /// The communicator nonblocking and persistent collectives (`MPI_Ixxx`, `MPI_Xxx_init`)
    /// run on: this one's twin — same id, groups, process topology and intercommunicator
    /// parts — whose call numbers count from [`NONBLOCKING_SEQ`]. Blocking and nonblocking
    /// collectives are so numbered in two sequences, as MPICH and Open MPI number them: MPI
    /// asks every process to call all of a communicator's collectives in one order, but
    /// programs that start a nonblocking collective on one side of an `MPI_Barrier` on one
    /// rank and on the other side on another run on both, and must on hcomm too (mpi4py's
    /// `Iagree` test does). The price: a blocking call matched against a nonblocking one is
    /// not reported as a mismatch, it waits (and the wait's liveness reports name it).
    /// Frames of the two sequences never match each other (their numbers differ); a failure
    /// notice of a blocking call still ends every later nonblocking call (their numbers are
    /// higher), not the other way round.
    pub fn nonblocking(&self) -> &Arc<Comm> {
        self.nonblocking.get_or_init(|| Arc::new(self.twin()))
    }

    /// A copy of this communicator's identity with a fresh call sequence from
    /// [`NONBLOCKING_SEQ`] (intercommunicator parts twinned alike).
    fn twin(&self) -> Comm {
        let errh = self.errhandler.load(Ordering::Relaxed);
        let c = Comm::new(
            self.id,
            self.rank,
            self.world.clone(),
            self.ep.clone(),
            errh,
        );
        c.seq.store(NONBLOCKING_SEQ, Ordering::Relaxed);
        if let Some(t) = self.proc_topo() {
            // A fresh `Comm`'s cell is empty, so `set` cannot fail.
            let _ = c.proc_topo.set(t.clone());
        }
        if let Some(i) = self.inter() {
            c.set_inter(Inter {
                local: i.local.clone(),
                local_comm: i.local_comm.twin(),
                bridge: i.bridge.twin(),
                first: i.first,
            });
        }
        c
    }

    /// The communicator agreements (`MPIX_Comm_agree`, `MPIX_Comm_iagree`) run on: every
    /// process of this communicator — both groups of an intercommunicator, the group that
    /// comes first (`Inter::first`) first — under an id derived from this one's alone. Its call
    /// numbers therefore count agreements only: an agreement never matches another collective
    /// of this communicator, whatever order the processes call them in (ULFM's agreement is
    /// an operation of its own, not a collective in the communicator's sequence). Made locally
    /// at first use; the same on every process because nothing but the id and the groups
    /// goes into it.
    pub fn agreement(&self) -> &Arc<Comm> {
        self.agreement.get_or_init(|| {
            let (world, rank) = match self.inter() {
                None => (self.world.clone(), self.rank),
                Some(i) if i.first => {
                    let w = i.local.iter().chain(&self.world).copied().collect();
                    (w, self.rank)
                }
                Some(i) => {
                    let w = self.world.iter().chain(&i.local).copied().collect();
                    (w, self.world.len() + self.rank)
                }
            };
            let errh = self.errhandler.load(Ordering::Relaxed);
            let id = mix(self.id ^ 0x0a97_ee00_0000_0000);
            Arc::new(Comm::new(id, rank, world, self.ep.clone(), errh))
        })
    }

    /// The intercommunicator part; `None` on an intracommunicator.
    pub fn inter(&self) -> Option<&Inter> {
        self.inter.get().map(|b| &**b)
    }

    /// Makes this new communicator an intercommunicator (once, before it is registered).
    pub fn set_inter(&self, inter: Inter) {
        if self.inter.set(Box::new(inter)).is_err() {
            unreachable!("a communicator becomes an intercommunicator once, when it is made");
        }
    }

    /// The size of this process's group: the local group on an intercommunicator.
    pub fn local_size(&self) -> usize {
        self.inter().map_or(self.world.len(), |i| i.local.len())
    }

    /// The process topology, if the communicator was made with one.
    pub fn proc_topo(&self) -> Option<&Arc<crate::process_topology::ProcTopo>> {
        self.proc_topo.get()
    }

    /// Gives a new communicator (not yet published) its process topology.
    pub fn with_proc_topo(self, t: Arc<crate::process_topology::ProcTopo>) -> Comm {
        // A fresh `Comm` has none: the cell is empty, so `set` cannot fail.
        let _ = self.proc_topo.set(t);
        self
    }

    pub fn name(&self) -> String {
        self.name.lock().clone()
    }

    /// Sets the name, cut to [`MAX_NAME`] bytes (at a character boundary).
    pub fn set_name(&self, name: &str) {
        let mut end = name.len().min(MAX_NAME);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        *self.name.lock() = name[..end].to_string();
    }

    /// Which members share a host: the same on every member (derived from the world's
    /// address exchange), computed once per communicator.
    pub fn topology(&self) -> &crate::topology::Topology {
        self.topo.get_or_init(|| {
            crate::topology::Topology::new(self.size(), |r| self.ep.host_index(self.world[r]))
        })
    }

    /// This process's world rank.
    pub fn my_world_rank(&self) -> usize {
        self.world[self.rank]
    }

    pub fn size(&self) -> usize {
        self.world.len()
    }

    /// The next call number; every member calls collectives in the same order.
    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// The number the next call will take (for failure notices of work between calls).
    pub fn peek_seq(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }

    pub fn ctx(&self, sig: Signature, seq: u64, extent: usize) -> Ctx<'_> {
        Ctx {
            ep: &self.ep,
            world: &self.world,
            rank: self.rank,
            comm_id: self.id,
            seq,
            sig,
            extent: extent.max(1),
        }
    }

    /// Logs the algorithm a collective takes, at INFO, once per (collective, algorithm) on
    /// this communicator (TRACE logs every call).
    #[inline]
    pub fn note_algo(&self, kind: Kind, algo: Algo, bytes: usize) {
        crate::stats::note(algo, bytes, self.size());
        // TRACE implies INFO: one level check on the path of every small call.
        if crate::log::enabled(crate::log::Level::Info) {
            self.log_algo(kind, algo, bytes);
        }
    }

    #[cold]
    fn log_algo(&self, kind: Kind, algo: Algo, bytes: usize) {
        crate::trace!(
            "{} on comm {:x}: {} bytes, algorithm {:?}",
            kind.mpi_name(),
            self.id,
            bytes,
            algo
        );
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

    /// A new child id (collective: every member calls it in the same order), for
    /// communicators made outside this module.
    pub(crate) fn next_child_id(&self, color: u64) -> u64 {
        self.child_id(color)
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

    /// `MPI_Comm_dup`: same group, new id, same error handler, same process topology.
    pub fn dup(&self) -> Comm {
        let id = self.child_id(u64::MAX - 1);
        let c = Comm::new(
            id,
            self.rank,
            self.world.clone(),
            self.ep.clone(),
            self.errhandler.load(Ordering::Relaxed),
        );
        match self.proc_topo() {
            Some(t) => c.with_proc_topo(t.clone()),
            None => c,
        }
    }

    /// `MPI_Comm_split`; `color < 0` is `MPI_UNDEFINED` (no new communicator for this rank).
    /// New ranks are ordered by key, ties by old rank.
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Comm>> {
        self.split_by((color >= 0).then_some(color as u32 as u64), key)
    }

    /// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`: the ranks whose host identity equals this
    /// rank's `host`, ordered by key, ties by old rank; `host == None` is `MPI_UNDEFINED`.
    pub fn split_shared(&self, host: Option<&str>, key: i32) -> Result<Option<Comm>> {
        self.split_by(host.map(|h| hash_bytes(h.as_bytes())), key)
    }

    /// The split engine: one internal allgather of (color, key) over this communicator, then
    /// each rank keeps the ranks of its own color. `None` takes part but gets no communicator.
    fn split_by(&self, color: Option<u64>, key: i32) -> Result<Option<Comm>> {
        // 16 bytes per rank: color (u64), key (i32), has-color flag (u32).
        let mut mine = [0u8; 16];
        mine[..8].copy_from_slice(&color.unwrap_or(0).to_le_bytes());
        mine[8..12].copy_from_slice(&key.to_le_bytes());
        mine[12..].copy_from_slice(&(color.is_some() as u32).to_le_bytes());
        let mut all = vec![0u8; 16 * self.size()];
        crate::coll::allgather_internal(self, &mine, &mut all)?;
        // Every rank derives a child id, so the children counters stay equal.
        let id = self.child_id(color.unwrap_or(u64::MAX));
        let Some(color) = color else {
            return Ok(None);
        };
        let mut members: Vec<(i32, usize)> = all
            .chunks_exact(16)
            .enumerate()
            .filter_map(|(r, b)| {
                let c = u64::from_le_bytes(b[..8].try_into().unwrap());
                let k = i32::from_le_bytes(b[8..12].try_into().unwrap());
                let has = u32::from_le_bytes(b[12..].try_into().unwrap()) != 0;
                (has && c == color).then_some((k, r))
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

    /// `MPI_Comm_create`: a communicator of the world ranks `members`, in that order, which
    /// must all belong to this communicator. Called by every rank of this communicator
    /// (collective), without communication; ranks not in `members` get `None`.
    pub fn create(&self, members: &[usize]) -> Result<Option<Comm>> {
        if let Some(w) = members.iter().find(|w| !self.world.contains(w)) {
            return Err(Error::new(
                Class::Group,
                format!("group holds world rank {w}, which is not in the communicator"),
            ));
        }
        let bytes: Vec<u8> = members
            .iter()
            .flat_map(|&w| (w as u64).to_le_bytes())
            .collect();
        let id = self.child_id(hash_bytes(&bytes));
        let me = self.my_world_rank();
        Ok(members.iter().position(|&w| w == me).map(|rank| {
            Comm::new(
                id,
                rank,
                members.to_vec(),
                self.ep.clone(),
                self.errhandler.load(Ordering::Relaxed),
            )
        }))
    }
}

/// How many communicators each key of [`create_tagged`] has made in this process.
static TAGGED: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

/// A communicator of the world ranks `members` (in that order) made by a call that only the
/// members take part in (`MPI_Comm_create_group`, `MPI_Comm_create_from_group`), so no
/// parent counter is shared by all callers. Its id hashes `key` (the call's tag and parent),
/// the member list, and how many times this process has made one with the same key and
/// members: every member makes the same sequence of such calls for one (tag, group) (MPI
/// requires concurrent calls to use distinct tags), so the members agree without talking.
/// `None` when world rank `me` is not a member.
pub fn create_tagged(
    key: &[u8],
    members: &[usize],
    me: usize,
    ep: Arc<Endpoint>,
    errhandler: i32,
) -> Option<Comm> {
    let rank = members.iter().position(|&w| w == me)?;
    let mut bytes = key.to_vec();
    bytes.extend(members.iter().flat_map(|&w| (w as u64).to_le_bytes()));
    let base = hash_bytes(&bytes);
    let n = {
        let mut t = TAGGED.lock();
        match t.iter_mut().find(|(k, _)| *k == base) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                t.push((base, 0));
                0
            }
        }
    };
    let mut id = mix(base ^ mix(n.wrapping_add(0x7461_6767_6564)));
    if id == SELF_ID || id == 0 {
        id ^= 1;
    }
    Some(Comm::new(id, rank, members.to_vec(), ep, errhandler))
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

    #[test]
    fn create_and_names() {
        let ep = Arc::new(Endpoint::singleton());
        let w = Comm::new(0, 0, vec![0], ep.clone(), 0);
        assert_eq!(w.name(), "MPI_COMM_WORLD");
        assert_eq!(
            Comm::new(SELF_ID, 0, vec![0], ep, 0).name(),
            "MPI_COMM_SELF"
        );
        let c = w.create(&[0]).unwrap().unwrap();
        assert_eq!((c.rank, c.size(), c.name()), (0, 1, String::new()));
        assert_ne!(c.id, w.id);
        assert!(w.create(&[]).unwrap().is_none());
        assert_eq!(w.create(&[1]).err().map(|e| e.class), Some(Class::Group));
        c.set_name(&"é".repeat(100));
        let ep = c.ep.clone();
        let t1 = create_tagged(b"t", &[3, 0], 0, ep.clone(), 0).unwrap();
        let t2 = create_tagged(b"t", &[3, 0], 0, ep.clone(), 0).unwrap();
        let t3 = create_tagged(b"u", &[3, 0], 0, ep.clone(), 0).unwrap();
        assert_eq!((t1.rank, t1.world.clone()), (1, vec![3, 0]));
        assert!(t1.id != t2.id && t1.id != t3.id && t2.id != t3.id);
        assert!(create_tagged(b"t", &[3, 1], 0, ep, 0).is_none());
        assert_eq!(c.name().len(), 126);
    }
}
