//! `MPI_Intercomm_create` and `MPI_Intercomm_merge` (the communicators: `crate::intercomm`).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};

use super::comm_create::{errhandler_arg, handler_or_fatal, string_arg, MAX_STRINGTAG};
use super::info::info_arg;
use super::p2p::send_tag_arg;
use super::{any_comm_of, comm_of};
use crate::abi::{guard, guard_on, objects, out};
use crate::error::{Class, Error};
use crate::runtime;

/// `MPI_Intercomm_create`: collective over `local_comm`; `peer_comm` and `remote_leader` are
/// significant at the local leader only.
pub unsafe fn intercomm_create(
    name: &'static str,
    local_comm: c_int,
    local_leader: c_int,
    peer_comm: c_int,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut c_int,
) -> c_int {
    guard(name, Some(local_comm), || {
        let rt = runtime::get()?;
        let local = comm_of(rt, local_comm)?;
        if newintercomm.is_null() {
            return Err(Error::new(Class::Arg, "newintercomm is NULL"));
        }
        let leader = usize::try_from(local_leader)
            .ok()
            .filter(|&l| l < local.size())
            .ok_or_else(|| {
                Error::new(
                    Class::Rank,
                    format!(
                        "local_leader {local_leader} is not a rank of local_comm (size {})",
                        local.size()
                    ),
                )
            })?;
        let tag = send_tag_arg(tag, "tag")?;
        let peer = if local.rank == leader {
            let p = comm_of(rt, peer_comm)?;
            let r = usize::try_from(remote_leader)
                .ok()
                .filter(|&r| r < p.size() && r != p.rank)
                .ok_or_else(|| {
                    Error::new(
                        Class::Rank,
                        format!(
                            "remote_leader {remote_leader} is not another rank of peer_comm (size {}, this rank {})",
                            p.size(),
                            p.rank
                        ),
                    )
                })?;
            Some((p, r))
        } else {
            None
        };
        let c =
            crate::intercomm::create(&local, leader, peer.as_ref().map(|(p, r)| (&**p, *r)), tag)?;
        out(newintercomm, "newintercomm", rt.add_comm(c)?)
    })
}

/// `MPI_Intercomm_merge`: collective over both groups of `intercomm`.
pub unsafe fn intercomm_merge(
    name: &'static str,
    intercomm: c_int,
    high: c_int,
    newintracomm: *mut c_int,
) -> c_int {
    guard(name, Some(intercomm), || {
        let rt = runtime::get()?;
        let c = any_comm_of(rt, intercomm)?;
        let inter = c.inter().ok_or_else(|| {
            Error::new(
                Class::Comm,
                format!("intercomm 0x{intercomm:x} is an intracommunicator"),
            )
        })?;
        if newintracomm.is_null() {
            return Err(Error::new(Class::Arg, "newintracomm is NULL"));
        }
        let merged = crate::intercomm::merge(&c, inter, high != 0)?;
        out(newintracomm, "newintracomm", rt.add_comm(merged)?)
    })
}

/// `MPI_Intercomm_create_from_groups` (MPI 4.0): from two disjoint groups alone, the Sessions
/// way. Each side's members make their local communicator from `local_group` and the leaders
/// a two-member communicator of their own, all told apart by `stringtag`; then it goes on as
/// `MPI_Intercomm_create`. Errors go to `errhandler` (`MPI_ERRORS_ARE_FATAL` when that is
/// not an error handler).
#[allow(clippy::too_many_arguments)]
pub unsafe fn intercomm_create_from_groups(
    name: &'static str,
    local_group: c_int,
    local_leader: c_int,
    remote_group: c_int,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: c_int,
    errhandler: c_int,
    newintercomm: *mut c_int,
) -> c_int {
    guard_on(
        name,
        || handler_or_fatal(errhandler),
        || {
            let rt = runtime::get()?;
            let lg = objects::group(local_group, "local_group")?;
            let rg = objects::group(remote_group, "remote_group")?;
            let tag = string_arg(stringtag, "stringtag", MAX_STRINGTAG)?;
            info_arg(info)?;
            errhandler_arg(errhandler)?;
            if newintercomm.is_null() {
                return Err(Error::new(Class::Arg, "newintercomm is NULL"));
            }
            let leader_of = |g: &crate::group::Group, r: c_int, what: &str| {
                usize::try_from(r)
                    .ok()
                    .filter(|&r| r < g.world.len())
                    .ok_or_else(|| {
                        Error::new(
                            Class::Rank,
                            format!(
                                "{what} {r} is not a rank of a group of size {}",
                                g.world.len()
                            ),
                        )
                    })
            };
            let ll = leader_of(&lg, local_leader, "local_leader")?;
            let rl = leader_of(&rg, remote_leader, "remote_leader")?;
            let me = rt.world.rank;
            let mut key = b"intercomm_from_groups".to_vec();
            key.extend(tag.as_bytes());
            let local =
                crate::comm::create_tagged(&key, &lg.world, me, rt.world.ep.clone(), errhandler)
                    .ok_or_else(|| {
                        Error::new(
                            Class::Group,
                            format!(
                                "this process (world rank {me}) is not a member of local_group"
                            ),
                        )
                    })?;
            let (lw, rw) = (lg.world[ll], rg.world[rl]);
            if lw == rw {
                return Err(Error::new(
                    Class::Group,
                    format!("the two leaders are the same process (world rank {lw})"),
                ));
            }
            let peer = if local.rank == ll {
                key.extend(b"/leaders");
                let pair = [lw.min(rw), lw.max(rw)];
                let p =
                    crate::comm::create_tagged(&key, &pair, me, rt.world.ep.clone(), errhandler)
                        .ok_or_else(|| {
                            Error::new(Class::Intern, "the leader is not in its pair")
                        })?;
                Some((p, usize::from(lw < rw)))
            } else {
                None
            };
            let c = crate::intercomm::create(&local, ll, peer.as_ref().map(|(p, r)| (p, *r)), 0)?;
            out(newintercomm, "newintercomm", rt.add_comm(c)?)
        },
    )
}
