//! hcomm state for the host's communicators other than `MPI_COMM_WORLD`.
//!
//! A host communicator gets an hcomm communicator (same members, same rank order, over
//! hcomm's world endpoint) the first time a collective hcomm could take is called on it. The
//! state lives in an attribute of the host communicator under a keyval created at init: its
//! delete callback frees the hcomm communicator when the program frees the host's, and its
//! copy callback copies nothing (a dup gets its own state on first use). State keyed by the
//! handle value alone would go stale: MPICH hands out a freed communicator's integer handle
//! again to the next one.
//!
//! First use is collective: MPI requires every member to call collectives on a communicator in
//! the same order, so every member sets the state up in the same call. Setting up:
//! 1. locally: intercommunicators are forwarded (a decision every member makes alike); the
//!    members' world ranks come from `PMPI_Group_translate_ranks` (no communication);
//! 2. one host `PMPI_Allreduce(MAX)` over the communicator of (local failure, a proposal for
//!    the id): any failure means every member forwards this communicator; otherwise the id is
//!    a hash of the largest proposal and the member list, the same on every member;
//! 3. each member registers the id in its set of live ids, and a second host allreduce tells
//!    whether the id was already live on any member (two communicators first used at once by
//!    two threads can meet on the same proposal): then every member retries with a larger
//!    proposal. Ids therefore never repeat among the communicators one process holds, which is
//!    what keeps their frames apart.
//!
//! The attribute value is [`FORWARD`] for a communicator hcomm leaves to the host, else the
//! hcomm communicator handle.

use std::collections::HashSet;
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use hcomm_core::abi::handles as h;
use hcomm_core::comm::Comm;
use hcomm_core::error::{Error, Result};
use parking_lot::Mutex;

use crate::real::Sym;
use crate::world::{host_handle, host_rc, sym};
use crate::xlate::Tables;

/// Attribute value of a communicator whose collectives go to the host.
const FORWARD: usize = 1;

/// The keyval, once created (before, nothing but the world is taken). MPICH's keyvals are
/// negative as `int`s, so no value can mean "none".
static KEYVAL: OnceLock<c_int> = OnceLock::new();
/// The host's group of `MPI_COMM_WORLD` (a pointer-sized handle).
static WORLD_GROUP: AtomicUsize = AtomicUsize::new(0);
/// The next id proposal of this process: each proposal is used once.
static NEXT_PROPOSAL: AtomicI64 = AtomicI64::new(1);
/// Ids of the live hcomm communicators of this process.
static LIVE_IDS: Mutex<Option<HashSet<u64>>> = Mutex::new(None);

static PMPI_COMM_CREATE_KEYVAL: Sym = Sym::new(c"PMPI_Comm_create_keyval");
static PMPI_COMM_GET_ATTR: Sym = Sym::new(c"PMPI_Comm_get_attr");
static PMPI_COMM_SET_ATTR: Sym = Sym::new(c"PMPI_Comm_set_attr");
static PMPI_COMM_TEST_INTER: Sym = Sym::new(c"PMPI_Comm_test_inter");
static PMPI_COMM_GROUP: Sym = Sym::new(c"PMPI_Comm_group");
static PMPI_GROUP_TRANSLATE_RANKS: Sym = Sym::new(c"PMPI_Group_translate_ranks");
static PMPI_GROUP_FREE: Sym = Sym::new(c"PMPI_Group_free");
static PMPI_COMM_SIZE: Sym = Sym::new(c"PMPI_Comm_size");
static PMPI_COMM_RANK: Sym = Sym::new(c"PMPI_Comm_rank");
static PMPI_ALLREDUCE: Sym = Sym::new(c"PMPI_Allreduce");

/// The host functions this module calls; setup checks they exist.
pub const NEEDED: [&std::ffi::CStr; 7] = [
    c"PMPI_Comm_create_keyval",
    c"PMPI_Comm_get_attr",
    c"PMPI_Comm_set_attr",
    c"PMPI_Comm_test_inter",
    c"PMPI_Comm_group",
    c"PMPI_Group_translate_ranks",
    c"PMPI_Group_free",
];

type CopyFn =
    unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
type DeleteFn = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void) -> c_int;
type CreateKeyvalFn = unsafe extern "C" fn(CopyFn, DeleteFn, *mut c_int, *mut c_void) -> c_int;
type GetAttrFn = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_int) -> c_int;
type SetAttrFn = unsafe extern "C" fn(usize, c_int, *mut c_void) -> c_int;
type CommIntFn = unsafe extern "C" fn(usize, *mut c_int) -> c_int;
type CommGroupFn = unsafe extern "C" fn(usize, *mut usize) -> c_int;
type TranslateFn = unsafe extern "C" fn(usize, c_int, *const c_int, usize, *mut c_int) -> c_int;
type GroupFreeFn = unsafe extern "C" fn(*mut usize) -> c_int;
type AllreduceFn =
    unsafe extern "C" fn(*const c_void, *mut c_void, c_int, usize, usize, usize) -> c_int;

/// Copy callback: a duplicate does not inherit the state (it sets up its own on first use).
unsafe extern "C" fn copy_none(
    _old: usize,
    _keyval: c_int,
    _extra: *mut c_void,
    _in: *mut c_void,
    _out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    if !flag.is_null() {
        // SAFETY: the host passes a valid `int *flag` to copy callbacks.
        unsafe { *flag = 0 };
    }
    0
}

/// Delete callback (the host frees the communicator, or finalizes `MPI_COMM_SELF`): frees the
/// hcomm communicator. Never unwinds into the host.
unsafe extern "C" fn delete_state(
    _comm: usize,
    _keyval: c_int,
    value: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    let value = value as usize;
    if value == FORWARD || value == 0 {
        return 0;
    }
    let r = catch_unwind(|| {
        let handle = value as u32 as i32;
        if let Ok(rt) = hcomm_core::runtime::get() {
            if let Ok(c) = rt.comm(handle) {
                if let Some(ids) = LIVE_IDS.lock().as_mut() {
                    ids.remove(&c.id);
                }
            }
            let _ = rt.free_comm(handle);
        }
    });
    if r.is_err() {
        hcomm_core::warn!("preload: internal error freeing a communicator's state");
    }
    0
}

/// At init, before the agreement on setup (so a failure here makes every rank forward
/// everything): the keyval and the world's group.
pub fn setup(t: &Tables) -> Result<()> {
    let create: CreateKeyvalFn = sym(&PMPI_COMM_CREATE_KEYVAL)?;
    let group: CommGroupFn = sym(&PMPI_COMM_GROUP)?;
    let mut keyval: c_int = -1;
    // SAFETY: two callbacks with the host's C signatures (handles pointer-sized), a valid
    // output location, no extra state.
    host_rc("PMPI_Comm_create_keyval", unsafe {
        create(copy_none, delete_state, &mut keyval, std::ptr::null_mut())
    })?;
    let mut g: usize = 0;
    // SAFETY: `g` is pointer-sized and zeroed: MPICH writes an int into its low half
    // (little-endian), Open MPI a pointer.
    host_rc("PMPI_Comm_group", unsafe { group(t.world, &mut g) })?;
    WORLD_GROUP.store(g, Ordering::Relaxed);
    *LIVE_IDS.lock() = Some(HashSet::new());
    let _ = KEYVAL.set(keyval);
    Ok(())
}

/// The hcomm handle for host communicator `comm`, setting its state up on first use; `None`
/// when the call is to be forwarded (the same answer on every member).
pub fn resolve(t: &Tables, comm: usize) -> Option<i32> {
    if t.is_world(comm) {
        return Some(h::COMM_WORLD);
    }
    if t.is_comm_null(comm) {
        return None;
    }
    let keyval = *KEYVAL.get()?;
    let value = match attached(comm, keyval) {
        Ok(Some(v)) => v,
        Ok(None) => set_up(t, comm, keyval),
        // The host rejected the communicator: forward, so the host reports it the host's way.
        Err(e) => {
            hcomm_core::trace!("preload: communicator {comm:#x}: {e}; forwarding the call");
            return None;
        }
    };
    hcomm_core::trace!("preload: communicator {comm:#x}: state {value:#x}");
    (value != FORWARD).then_some(value as u32 as i32)
}

/// The state attached to `comm`, if any.
fn attached(comm: usize, keyval: c_int) -> Result<Option<usize>> {
    let get: GetAttrFn = sym(&PMPI_COMM_GET_ATTR)?;
    let mut value: usize = 0;
    let mut flag: c_int = 0;
    // SAFETY: for a communicator attribute the host stores the `void *` attribute value at
    // the address passed; `value` is pointer-sized.
    host_rc("PMPI_Comm_get_attr", unsafe {
        get(comm, keyval, (&mut value as *mut usize).cast(), &mut flag)
    })?;
    Ok((flag != 0).then_some(value))
}

/// First use of `comm`: sets up and attaches its state; returns the attribute value.
fn set_up(t: &Tables, comm: usize, keyval: c_int) -> usize {
    let value = catch_unwind(AssertUnwindSafe(|| match new_state(t, comm) {
        Ok(v) => v,
        Err(e) => {
            hcomm_core::warn!("preload: forwarding a communicator's collectives: {e}");
            FORWARD
        }
    }))
    .unwrap_or_else(|_| {
        hcomm_core::warn!("preload: internal error setting up a communicator; forwarding it");
        FORWARD
    });
    let set: Result<SetAttrFn> = sym(&PMPI_COMM_SET_ATTR);
    // SAFETY: the attribute value is a plain integer stored in the `void *`.
    let rc = set.map(|f| unsafe { f(comm, keyval, value as *mut c_void) });
    if !matches!(rc, Ok(0)) {
        // Not attached: the next call sets up again, collectively, on every member alike only
        // if the failure is the same everywhere; nothing better is possible here.
        hcomm_core::warn!("preload: PMPI_Comm_set_attr failed; state not kept");
    }
    value
}

/// The local part that can fail, then the agreement. `Ok(FORWARD)` when any member cannot
/// take part; `Err` only when the host's own allreduce fails.
fn new_state(t: &Tables, comm: usize) -> Result<usize> {
    let inter: CommIntFn = sym(&PMPI_COMM_TEST_INTER)?;
    let mut is_inter: c_int = 0;
    // SAFETY: valid output location.
    host_rc("PMPI_Comm_test_inter", unsafe {
        inter(comm, &mut is_inter)
    })?;
    if is_inter != 0 {
        // The same on every member of both groups, so no agreement is needed.
        return Ok(FORWARD);
    }
    let local = members(comm);
    let ok = local.is_ok();
    if let Err(e) = &local {
        hcomm_core::warn!("preload: cannot map a communicator's members: {e}");
    }
    loop {
        let proposal = NEXT_PROPOSAL.fetch_add(1, Ordering::Relaxed);
        let [failed, best] = host_max(t, comm, [i64::from(!ok), proposal])?;
        NEXT_PROPOSAL.fetch_max(best + 1, Ordering::Relaxed);
        if failed != 0 {
            return Ok(FORWARD);
        }
        let (rank, world) = local.as_ref().map_err(|e| Error::other(e.to_string()))?;
        let id = comm_id(best, world);
        let fresh = LIVE_IDS.lock().as_mut().map(|s| s.insert(id)) == Some(true);
        // Registered before the second agreement, so that nothing can fail after it.
        let handle = if fresh {
            register(id, *rank, world.clone())
                .map_err(|e| hcomm_core::warn!("preload: {e}"))
                .ok()
        } else {
            None
        };
        let [clash, unregistered] = host_max(
            t,
            comm,
            [i64::from(!fresh), i64::from(fresh && handle.is_none())],
        )?;
        if clash == 0 && unregistered == 0 {
            return Ok(handle.expect("registered when fresh") as u32 as usize);
        }
        // Undo this attempt: a clash is retried with a larger proposal, a failure to register
        // (only past 67 million live communicators) forwards.
        if let Some(hd) = handle {
            if let Ok(rt) = hcomm_core::runtime::get() {
                let _ = rt.free_comm(hd);
            }
        }
        if fresh {
            if let Some(s) = LIVE_IDS.lock().as_mut() {
                s.remove(&id);
            }
        }
        if unregistered != 0 {
            return Ok(FORWARD);
        }
    }
}

/// This process's rank in `comm` and the world ranks of its members in `comm`'s rank order.
fn members(comm: usize) -> Result<(usize, Vec<usize>)> {
    let size_f: CommIntFn = sym(&PMPI_COMM_SIZE)?;
    let rank_f: CommIntFn = sym(&PMPI_COMM_RANK)?;
    let group_f: CommGroupFn = sym(&PMPI_COMM_GROUP)?;
    let translate: TranslateFn = sym(&PMPI_GROUP_TRANSLATE_RANKS)?;
    let free: GroupFreeFn = sym(&PMPI_GROUP_FREE)?;
    let (mut size, mut rank) = (0, 0);
    // SAFETY: valid output locations.
    host_rc("PMPI_Comm_size", unsafe { size_f(comm, &mut size) })?;
    // SAFETY: as above.
    host_rc("PMPI_Comm_rank", unsafe { rank_f(comm, &mut rank) })?;
    let mut g: usize = 0;
    // SAFETY: pointer-sized zeroed output (see `setup`).
    host_rc("PMPI_Comm_group", unsafe { group_f(comm, &mut g) })?;
    let ranks: Vec<c_int> = (0..size).collect();
    let mut world = vec![-1 as c_int; size as usize];
    // SAFETY: `ranks` and `world` hold `size` ints each.
    let rc = unsafe {
        translate(
            g,
            size,
            ranks.as_ptr(),
            WORLD_GROUP.load(Ordering::Relaxed),
            world.as_mut_ptr(),
        )
    };
    // SAFETY: `g` is the group the host just created for us.
    let _ = unsafe { free(&mut g) };
    host_rc("PMPI_Group_translate_ranks", rc)?;
    if world.iter().any(|&w| w < 0) {
        // A member outside the world (dynamic processes): hcomm has no link to it.
        return Err(Error::other("a member is not in MPI_COMM_WORLD"));
    }
    Ok((
        rank as usize,
        world.into_iter().map(|w| w as usize).collect(),
    ))
}

/// Element-wise `MPI_MAX` of two `i64`s over the host communicator (as four `MPI_INT`s would
/// not order correctly, `MPI_LONG_LONG`/`ompi_mpi_long_long_int`).
fn host_max(t: &Tables, comm: usize, v: [i64; 2]) -> Result<[i64; 2]> {
    let ar: AllreduceFn = sym(&PMPI_ALLREDUCE)?;
    let ll = host_handle(t.abi, 0x4c000809, c"ompi_mpi_long_long_int")?;
    let max = host_handle(t.abi, 0x5800_0001, c"ompi_mpi_op_max")?;
    let mut out = [0i64; 2];
    // SAFETY: two long longs in, two out.
    host_rc("PMPI_Allreduce", unsafe {
        ar(v.as_ptr().cast(), out.as_mut_ptr().cast(), 2, ll, max, comm)
    })?;
    Ok(out)
}

/// The id every member derives from the agreed proposal and the member list.
fn comm_id(proposal: i64, world: &[usize]) -> u64 {
    let mut x = mix(0x6863_6f6d_6d5f_7072 ^ proposal as u64);
    for &w in world {
        x = mix(x ^ w as u64);
    }
    // 0 is the world's id and u64::MAX MPI_COMM_SELF's.
    if x == 0 || x == u64::MAX {
        x ^ 2
    } else {
        x
    }
}

/// splitmix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Registers an hcomm communicator over hcomm's world endpoint; its error handler returns
/// (errors are raised through the host's handler on the host's communicator).
fn register(id: u64, rank: usize, world: Vec<usize>) -> Result<i32> {
    let rt = hcomm_core::runtime::get()?;
    let ep = Arc::clone(&rt.world.ep);
    rt.add_comm(Comm::new(id, rank, world, ep, h::ERRORS_RETURN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_depend_on_proposal_and_members() {
        let a = comm_id(7, &[0, 1, 2]);
        assert_eq!(a, comm_id(7, &[0, 1, 2]));
        assert_ne!(a, comm_id(8, &[0, 1, 2]));
        assert_ne!(a, comm_id(7, &[0, 2, 1]));
        assert_ne!(a, comm_id(7, &[0, 1]));
        assert!(a != 0 && a != u64::MAX);
    }
}
