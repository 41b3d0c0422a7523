//! Synchronous mode: `MPI_Ssend`, `MPI_Issend` (and their `_c` forms). The send completes only
//! once the receiver has matched the message (see [`crate::frame`]: the receiver acknowledges
//! a message flagged synchronous when a receive or matched probe claims it).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::nb::isend_in_mode;
use super::p2p::send_in_mode;
use super::Count;
use crate::p2p::Mode;

pub unsafe fn ssend(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
) -> c_int {
    send_in_mode(
        name,
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        Mode::Synchronous,
    )
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn issend(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    request: *mut c_int,
) -> c_int {
    isend_in_mode(
        name,
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        request,
        Mode::Synchronous,
    )
}
