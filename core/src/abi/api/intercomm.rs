//! `MPI_Intercomm_create` and `MPI_Intercomm_merge` (the communicators: `crate::intercomm`).
#![allow(clippy::missing_safety_doc)]

use std::ffi::c_int;

use super::p2p::send_tag_arg;
use super::{any_comm_of, comm_of};
use crate::abi::{guard, out};
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
