//! Intercommunicators (`MPI_Intercomm_create`, `MPI_Intercomm_merge`): two disjoint groups
//! that talk to each other.
//!
//! An intercommunicator is a [`Comm`] whose `world` is the *remote* group and whose `rank` is
//! this process's rank in the *local* group, with an [`Inter`] beside it. Point-to-point code
//! then needs nothing new: a destination or source rank names a process of the remote group,
//! and a message's source is the sender's rank in its own (local) group — exactly what MPI
//! reports on an intercommunicator. The `Inter` holds the local group, an internal
//! intracommunicator over it (what is collective over one side: the broadcast of what the
//! leaders agreed, barriers) and a twin of the intercommunicator with its own id for the
//! leaders' internal messages, so that no user receive (`MPI_ANY_TAG`) can take them.
//!
//! Ids are derived as everywhere else ([`crate::comm`]): each side proposes a child id of its
//! local communicator, the leaders swap proposals, and the intercommunicator's id mixes the two
//! in an order both sides agree on.
//!
//! The collectives (blocking, nonblocking and persistent alike) are built in [`coll`];
//! `MPI_Comm_create` of an intercommunicator is a [`split`] with one color for the group's
//! members. What MPI defines on intracommunicators only (the neighbor collectives, Scan,
//! Exscan, `MPI_Comm_create_group`, topologies) is refused by the api layer with an error
//! naming the call.

pub mod coll;

use crate::comm::{Comm, Inter};
use crate::datatype::{Datatype, ElemType};
use crate::error::{Class, Error, Result};
use crate::frame::{Kind, Signature};
use crate::p2p::{self, Incoming, Outgoing, Source};

/// Internal tag of the leaders' exchanges on the bridge (no user message travels there).
const BRIDGE_TAG: u32 = 1;

pub(crate) fn bytes_dt() -> Datatype {
    Datatype::new(ElemType::Byte, 1, 1)
}

fn internal_sig(count: usize, root: usize) -> Signature {
    Signature {
        kind: Kind::Internal,
        count: count as u64,
        dtype: 0,
        op: 0,
        root: root as i32,
    }
}

/// Broadcasts `buf` over `comm` from `root` (an internal collective).
fn bcast_bytes(comm: &Comm, buf: &mut [u8], root: usize) -> Result<()> {
    crate::coll::bcast(
        comm,
        buf.as_mut_ptr(),
        buf.len(),
        &bytes_dt(),
        root,
        internal_sig(buf.len(), root),
    )
}

fn outgoing(b: &[u8]) -> Outgoing {
    Outgoing {
        buf: b.as_ptr(),
        len: b.len(),
        mpi_bytes: b.len() as u64,
        dtype: 0,
    }
}

fn incoming(b: &mut [u8]) -> Incoming {
    Incoming {
        buf: b.as_mut_ptr(),
        cap: b.len(),
        dt: bytes_dt(),
    }
}

/// Swaps `mine` for the peer's message of the same length: one send and one receive that
/// progress together.
fn swap(comm: &Comm, peer: usize, tag: u32, mine: &[u8]) -> Result<Vec<u8>> {
    let mut theirs = vec![0u8; mine.len()];
    p2p::sendrecv(
        comm,
        Some((peer, tag, &outgoing(mine))),
        Some((Source::Rank(peer), Some(tag), &incoming(&mut theirs))),
    )?;
    Ok(theirs)
}

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_u64s(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `MPI_Intercomm_create`, called by every member of `local`. `peer` is the peer communicator
/// with the remote leader's rank in it (significant at the local leader only: `None`
/// elsewhere); `tag` is the user's tag for the leaders' messages on it.
pub fn create(
    local: &Comm,
    local_leader: usize,
    peer: Option<(&Comm, usize)>,
    tag: u32,
) -> Result<Comm> {
    // Every member derives the proposal, so the local communicator's children stay in step.
    let proposal = local.next_child_id(0x001c_01c0);
    let leader = local.rank == local_leader;
    // The leaders swap (proposal, size) and then their groups' world ranks; each leader
    // broadcasts what it got to its group.
    let mut head = [0u8; 16];
    if leader {
        let (pc, remote_leader) = peer.expect("the leader has the peer communicator");
        let mine = u64s(&[proposal, local.size() as u64]);
        head.copy_from_slice(&swap(pc, remote_leader, tag, &mine)?);
    }
    bcast_bytes(local, &mut head, local_leader)?;
    let h = from_u64s(&head);
    let (remote_proposal, remote_size) = (h[0], h[1] as usize);
    let mut list = vec![0u8; 8 * remote_size];
    if leader {
        let (pc, remote_leader) = peer.expect("the leader has the peer communicator");
        let mine: Vec<u64> = local.world.iter().map(|&w| w as u64).collect();
        // Sizes differ between the sides: a send and a receive of their own lengths.
        let out = u64s(&mine);
        p2p::sendrecv(
            pc,
            Some((remote_leader, tag, &outgoing(&out))),
            Some((Source::Rank(remote_leader), Some(tag), &incoming(&mut list))),
        )?;
    }
    bcast_bytes(local, &mut list, local_leader)?;
    let remote: Vec<usize> = from_u64s(&list).into_iter().map(|w| w as usize).collect();
    if let Some(w) = remote.iter().find(|w| local.world.contains(w)) {
        return Err(Error::new(
            Class::Comm,
            format!("the local and remote groups overlap (world rank {w} is in both)"),
        ));
    }
    // Complementary on the two sides: the groups are disjoint.
    let first = local.world.iter().min() < remote.iter().min();
    build(local, remote, proposal, remote_proposal, first)
}

fn build(local: &Comm, remote: Vec<usize>, mine: u64, theirs: u64, first: bool) -> Result<Comm> {
    let (a, b) = if first {
        (mine, theirs)
    } else {
        (theirs, mine)
    };
    let id = mix(mix(a) ^ b.rotate_left(17));
    let errh = local.errhandler.load(std::sync::atomic::Ordering::Relaxed);
    let groups = (local.world.clone(), remote);
    Ok(assemble(id, local.rank, groups, first, &local.ep, errh))
}

/// An intercommunicator of id `id` between `local` (this process is its rank `rank`) and
/// `remote`, with its local intracommunicator and its bridge (ids derived from `id`, the
/// local one differently on the two sides).
fn assemble(
    id: u64,
    rank: usize,
    (local, remote): (Vec<usize>, Vec<usize>),
    first: bool,
    ep: &std::sync::Arc<crate::endpoint::Endpoint>,
    errh: i32,
) -> Comm {
    let local_id = mix(id ^ if first { 0x0005_1dea } else { 0x0005_1deb });
    let local_comm = Comm::new(local_id, rank, local.clone(), ep.clone(), errh);
    let bridge = Comm::new(
        mix(id ^ 0x00b4_1d9e),
        rank,
        remote.clone(),
        ep.clone(),
        errh,
    );
    let c = Comm::new(id, rank, remote, ep.clone(), errh);
    c.set_inter(Inter {
        local,
        local_comm,
        bridge,
        first,
    });
    c
}

/// `MPI_Comm_dup` of an intercommunicator: the same groups, new ids (both sides derive them
/// alike: creation calls on an intercommunicator are collective over both groups).
pub fn dup(c: &Comm, inter: &Inter) -> Result<Comm> {
    let id = c.next_child_id(0x000d_0b1e);
    let errh = c.errhandler.load(std::sync::atomic::Ordering::Relaxed);
    let n = Comm::new(id, c.rank, c.world.clone(), c.ep.clone(), errh);
    n.set_inter(Inter {
        local: inter.local.clone(),
        local_comm: inter.local_comm.dup(),
        bridge: Comm::new(
            mix(id ^ 0x00b4_1d9e),
            c.rank,
            c.world.clone(),
            c.ep.clone(),
            errh,
        ),
        first: inter.first,
    });
    Ok(n)
}

/// Swaps one word between the leaders (rank 0 of each side) and broadcasts the remote
/// side's word to this side.
fn leaders_swap(inter: &Inter, mine: u64) -> Result<u64> {
    let mut got = [0u8; 8];
    if inter.local_comm.rank == 0 {
        got.copy_from_slice(&swap(&inter.bridge, 0, BRIDGE_TAG, &mine.to_le_bytes())?);
    }
    bcast_bytes(&inter.local_comm, &mut got, 0)?;
    Ok(u64::from_le_bytes(got))
}

/// `MPI_Intercomm_merge`: an intracommunicator of both groups, the side that passed `high =
/// false` first (when both pass the same, the side whose leader has the lower world rank).
pub fn merge(c: &Comm, inter: &Inter, high: bool) -> Result<Comm> {
    let remote_high = leaders_swap(inter, high as u64)? != 0;
    let local_first = if high == remote_high {
        inter.first
    } else {
        !high
    };
    let id = c.next_child_id(0x0003_e49e);
    let (world, rank) = if local_first {
        let w: Vec<usize> = inter.local.iter().chain(&c.world).copied().collect();
        (w, c.rank)
    } else {
        let w: Vec<usize> = c.world.iter().chain(&inter.local).copied().collect();
        (w, c.world.len() + c.rank)
    };
    Ok(Comm::new(
        id,
        rank,
        world,
        c.ep.clone(),
        c.errhandler.load(std::sync::atomic::Ordering::Relaxed),
    ))
}

/// One process's part in a split: color (`None`: `MPI_UNDEFINED`) and key, 16 bytes.
fn split_entry(color: Option<u64>, key: i32) -> [u8; 16] {
    let mut e = [0u8; 16];
    e[..8].copy_from_slice(&color.unwrap_or(0).to_le_bytes());
    e[8..12].copy_from_slice(&key.to_le_bytes());
    e[12..].copy_from_slice(&u32::from(color.is_some()).to_le_bytes());
    e
}

/// The world ranks of `group` whose entry in `table` has `color`, ordered by key, ties by
/// rank in the group.
fn members_of(table: &[u8], group: &[usize], color: u64) -> Vec<usize> {
    let mut m: Vec<(i32, usize)> = table
        .chunks_exact(16)
        .enumerate()
        .filter_map(|(r, b)| {
            let c = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
            let k = i32::from_le_bytes(b[8..12].try_into().expect("4 bytes"));
            let has = u32::from_le_bytes(b[12..].try_into().expect("4 bytes")) != 0;
            (has && c == color).then_some((k, r))
        })
        .collect();
    m.sort_unstable();
    m.into_iter().map(|(_, r)| group[r]).collect()
}

/// `MPI_Comm_split` (and `_split_type`) of an intercommunicator, collective over both groups:
/// each side gathers its (color, key) pairs, the leaders swap the tables, and a process gets
/// an intercommunicator between the processes of its color on its side and those of the same
/// color on the other — `None` when its color is `MPI_UNDEFINED` or the other side has none
/// of it (MPI 4.1 §7.4.2). Both sides derive the same id from the parent's (creation calls
/// on an intercommunicator run in the same order on both sides) and the color.
pub fn split(c: &Comm, inter: &Inter, color: Option<u64>, key: i32) -> Result<Option<Comm>> {
    let lc = &inter.local_comm;
    let mut local = vec![0u8; 16 * lc.size()];
    crate::coll::allgather_internal(lc, &split_entry(color, key), &mut local)?;
    let mut remote = vec![0u8; 16 * c.world.len()];
    if lc.rank == 0 {
        p2p::sendrecv(
            &inter.bridge,
            Some((0, BRIDGE_TAG, &outgoing(&local))),
            Some((Source::Rank(0), Some(BRIDGE_TAG), &incoming(&mut remote))),
        )?;
    }
    bcast_bytes(lc, &mut remote, 0)?;
    // Every process derives the child id, so the parent's counters stay in step.
    let base = c.next_child_id(0x5b11_7000);
    let Some(color) = color else {
        return Ok(None);
    };
    let mine = members_of(&local, &inter.local, color);
    let theirs = members_of(&remote, &c.world, color);
    if theirs.is_empty() {
        return Ok(None);
    }
    let me = inter.local[lc.rank];
    let rank = mine
        .iter()
        .position(|&w| w == me)
        .expect("this process has its own color");
    let first = mine.iter().min() < theirs.iter().min();
    let id = mix(base ^ mix(color));
    let errh = c.errhandler.load(std::sync::atomic::Ordering::Relaxed);
    Ok(Some(assemble(id, rank, (mine, theirs), first, &c.ep, errh)))
}
