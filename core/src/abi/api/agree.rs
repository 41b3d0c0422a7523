//! ULFM's agreement, as MPICH exports it: `MPIX_Comm_agree` and `MPIX_Comm_iagree`.
//!
//! `*flag` becomes the bitwise AND of every process's `*flag` — over both groups of an
//! intercommunicator. hcomm has no fault-tolerant recovery, so with every process alive this
//! is all the agreement has to do; a process that died fails the call as a lost peer fails any
//! collective (the liveness checks name it). What makes it more than `MPI_Allreduce` with
//! `MPI_BAND`: it runs on the communicator's own agreement channel ([`Comm::agreement`]), so
//! it does not take a place in the sequence of the communicator's collectives — mpi4py's ULFM
//! tests start an `Iagree` on one process while the others are still in an `MPI_Barrier`.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::nb::{req_arg, start_coll};
use super::*;
use crate::abi::guard;
use crate::runtime;

const INT: c_int = 0x4c00_0405;
const BAND: c_int = 0x5800_0006;

/// The agreement's plan: an in-place bitwise AND of one `int` over the agreement channel.
unsafe fn plan(flag: *mut c_int, c: &Comm) -> Result<super::plan::Plan> {
    if flag.is_null() {
        return Err(Error::new(Class::Arg, "flag is NULL"));
    }
    let in_place = h::IN_PLACE as *const c_void;
    // SAFETY: `flag` is a non-NULL int the caller owns for the call (or until completion).
    unsafe { super::plan::allreduce(in_place, flag.cast(), 1, INT, BAND, c) }
}

pub unsafe fn comm_agree(comm: c_int, flag: *mut c_int) -> c_int {
    guard("MPIX_Comm_agree", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        let ch = c.agreement().clone();
        // SAFETY: the caller's contract for `flag`, checked inside.
        unsafe { plan(flag, &ch) }?.run(&ch)
    })
}

pub unsafe fn comm_iagree(comm: c_int, flag: *mut c_int, request: *mut c_int) -> c_int {
    guard("MPIX_Comm_iagree", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        let ch = c.agreement().clone();
        // SAFETY: the caller's contract for `flag`, checked inside.
        let plan = unsafe { plan(flag, &ch) }?;
        req_arg(request)?;
        start_coll("MPIX_Comm_iagree", comm, ch, request, plan)
    })
}
