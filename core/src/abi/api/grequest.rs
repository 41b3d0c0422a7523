//! Generalized requests (`MPI_Grequest_start`, `MPI_Grequest_complete`): a request whose
//! operation the program runs itself. hcomm waits for it like any other request; the
//! program's functions fill its status (`query_fn`, at completion), release its state
//! (`free_fn`, right after) and hear of `MPI_Cancel` (`cancel_fn`). They run in the program's
//! own `MPI_Wait*`/`MPI_Test*` calls, never on hcomm's progress thread.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::nb::{publish, req_arg};
use super::p2p::Status;
use crate::abi::{guard, handles as h};
use crate::engine::{Step, Wait};
use crate::error::{Class, Error, Result};
use crate::request::{Completion, Op, Request};
use crate::runtime;

/// `MPI_Grequest_query_function`.
pub type GreqQueryFn = unsafe extern "C" fn(*mut c_void, *mut Status) -> c_int;
/// `MPI_Grequest_free_function`.
pub type GreqFreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `MPI_Grequest_cancel_function`.
pub type GreqCancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

struct Generalized {
    query: GreqQueryFn,
    free: GreqFreeFn,
    cancel: GreqCancelFn,
    extra_state: *mut c_void,
    /// Set by `MPI_Grequest_complete`.
    completed: Arc<AtomicBool>,
}

// SAFETY: `extra_state` is the program's pointer, only handed back to the program's own
// functions; MPI lets any thread complete, wait for or free the request, so the program
// already makes its state usable from those threads.
unsafe impl Send for Generalized {}

/// A live generalized request's handle and completion flag.
type Live = (c_int, Arc<AtomicBool>);

/// Every live generalized request (`MPI_Grequest_complete` finds its flag there; the request
/// itself may be in a wait on another thread).
static FLAGS: parking_lot::Mutex<Vec<Live>> = parking_lot::Mutex::new(Vec::new());

fn rc_error(what: &str, rc: c_int) -> Error {
    let class = Class::from_code(rc).unwrap_or(Class::Other);
    Error::new(class, format!("{what} returned error code {rc}"))
}

impl Wait for Generalized {
    fn poll(&mut self, _last: bool) -> Result<Step> {
        Ok(if self.completed.load(Ordering::Acquire) {
            Step::Done
        } else {
            Step::Idle
        })
    }
    fn describe(&self) -> String {
        "a generalized request (MPI_Grequest_start), until MPI_Grequest_complete".into()
    }
    fn blocked_on(&self, _out: &mut Vec<usize>) {}
}

impl Op for Generalized {
    fn complete(&mut self) -> Result<Completion> {
        // MPI's empty status as the starting point; the query function sets what it knows.
        let mut st = Status {
            source: h::ANY_SOURCE,
            tag: -1,
            ..Status::default()
        };
        // The call that completes the request runs query_fn, then free_fn (MPI 4.1 §13.2:
        // the request is freed by that call; with MPI_Request_free, by the first call of this
        // process that finds it complete). An error of either is the call's error.
        // SAFETY: the program's functions, given their own state and a status to fill; each
        // is called once, as `complete` is.
        let (rc, rc_free) = unsafe {
            let rc = (self.query)(self.extra_state, &mut st);
            (rc, (self.free)(self.extra_state))
        };
        if rc != 0 {
            return Err(rc_error("the generalized request's query_fn", rc));
        }
        if rc_free != 0 {
            return Err(rc_error("the generalized request's free_fn", rc_free));
        }
        Ok(Completion {
            source: st.source,
            tag: st.tag,
            bytes: st.bytes(),
            cancelled: st.count_hi_and_cancelled & 1 != 0,
            truncated: false,
        })
    }

    fn cancel(&mut self) -> Result<Option<Completion>> {
        let done = self.completed.load(Ordering::Acquire);
        // SAFETY: the program's function and state.
        let rc = unsafe { (self.cancel)(self.extra_state, c_int::from(done)) };
        if rc != 0 {
            return Err(rc_error("the generalized request's cancel_fn", rc));
        }
        // Completes only through MPI_Grequest_complete, cancelled or not.
        Ok(None)
    }
}

pub unsafe fn grequest_start(
    query_fn: Option<GreqQueryFn>,
    free_fn: Option<GreqFreeFn>,
    cancel_fn: Option<GreqCancelFn>,
    extra_state: *mut c_void,
    request: *mut c_int,
) -> c_int {
    guard("MPI_Grequest_start", None, || {
        let rt = runtime::get()?;
        let (Some(query), Some(free), Some(cancel)) = (query_fn, free_fn, cancel_fn) else {
            return Err(Error::new(
                Class::Arg,
                "query_fn, free_fn and cancel_fn must all be given",
            ));
        };
        req_arg(request)?;
        let completed = Arc::new(AtomicBool::new(false));
        let op = Generalized {
            query,
            free,
            cancel,
            extra_state,
            completed: completed.clone(),
        };
        let r = Request::new(
            "MPI_Grequest_start",
            h::COMM_SELF,
            false,
            rt.world.ep.clone(),
            Box::new(op),
        )
        .caller_only();
        publish(Arc::new(r), request)?;
        // SAFETY: written by `publish` just above.
        let handle = unsafe { *request };
        let mut flags = FLAGS.lock();
        flags.retain(|(_, f)| Arc::strong_count(f) > 1);
        flags.push((handle, completed));
        Ok(())
    })
}

pub unsafe fn grequest_complete(request: c_int) -> c_int {
    guard("MPI_Grequest_complete", None, || {
        // A live generalized request still holds its flag (the count is above one).
        let found = FLAGS
            .lock()
            .iter()
            .find(|(hd, f)| *hd == request && Arc::strong_count(f) > 1)
            .map(|(_, f)| f.clone());
        let Some(flag) = found else {
            return Err(Error::new(
                Class::Request,
                format!("request 0x{request:x} is not an active generalized request"),
            ));
        };
        flag.store(true, Ordering::Release);
        // A thread asleep in MPI_Wait on it wakes (its request waits on the world's endpoint).
        runtime::get()?.world.ep.bell().ring();
        Ok(())
    })
}
