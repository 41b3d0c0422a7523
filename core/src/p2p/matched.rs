//! Matched probe: `MPI_Mprobe`/`MPI_Improbe` claim a message, `MPI_Mrecv`/`MPI_Imrecv`
//! receive exactly that one.
//!
//! A matched probe takes part in matching as a receive posted now (after the posted
//! `MPI_Irecv`s, as a blocking receive does), so it claims the message that receive would
//! get, and the claim takes the message out of matching: no other receive or probe, of any
//! thread, can see it. Having no buffer yet, the probe keeps the first fragment's payload;
//! the later fragments stay on the link or in the source's queue, where only the claim's
//! `seq` finds them.

use std::sync::Arc;

use crate::comm::Comm;
use crate::engine::{drive, Step, Wait};
use crate::error::Result;
use crate::request::{Completion, Op};

use super::{
    step_of, store, wait_for, Claim, Envelope, Incoming, Received, RecvFinish, RecvOp, Source,
};

/// A message claimed by a matched probe (what an `MPI_Message` handle stands for).
pub struct Matched {
    pub comm: Arc<Comm>,
    claim: Claim,
}

impl Matched {
    pub fn envelope(&self) -> Envelope {
        self.claim.env
    }
}

/// `MPI_Mprobe` (`blocking`) / `MPI_Improbe`: claims the message a receive with the same
/// arguments would take next. `None`: nothing yet (only when not blocking).
pub fn mprobe(
    comm: &Arc<Comm>,
    source: Source,
    tag: Option<u32>,
    blocking: bool,
) -> Result<Option<Matched>> {
    let none = Incoming {
        buf: std::ptr::null_mut(),
        cap: 0,
        dt: crate::datatype::Datatype::new(crate::datatype::ElemType::Byte, 1, 1),
    };
    let mut op = RecvOp::new(comm, source, tag, &none);
    op.probe = true;
    if blocking {
        drive(
            &comm.ep,
            &mut wait_for(comm, "MPI_Mprobe", None, Some(source), |_| {
                let moved = op.advance()?;
                Ok(step_of(op.claim.is_some(), moved))
            }),
        )?;
    } else {
        op.advance()?;
    }
    Ok(op.claim.take().map(|claim| Matched {
        comm: comm.clone(),
        claim,
    }))
}

/// The receive of a claimed message into `into`: the kept first fragment is stored now.
fn claimed<'c>(comm: &'c Comm, mut claim: Claim, into: &Incoming) -> RecvOp<'c> {
    if let Some(head) = claim.head.take() {
        store(into, 0, &head);
    }
    let mut op = RecvOp::new(comm, Source::Rank(0), None, into);
    op.claim = Some(claim);
    op
}

/// `MPI_Mrecv`.
pub fn mrecv(m: Matched, into: &Incoming) -> Result<Received> {
    let comm = m.comm;
    let mut op = claimed(&comm, m.claim, into);
    let source = Source::Rank(op.claim.as_ref().map_or(0, |c| c.env.source as usize));
    drive(
        &comm.ep,
        &mut wait_for(&comm, "MPI_Mrecv", None, Some(source), |_| {
            let moved = op.advance()?;
            Ok(step_of(op.result.is_some(), moved))
        }),
    )?;
    Ok(op.result.expect("finished"))
}

/// The operation of an `MPI_Imrecv` request.
pub struct MrecvOp {
    // Field order matters: the receive borrows from `comm` and drops first.
    op: RecvOp<'static>,
    source: usize,
    finish: Option<RecvFinish>,
    comm: Arc<Comm>,
}

// SAFETY: `RecvOp` holds the caller's receive buffer (MPI forbids the caller to touch it until
// the request completes) and borrows the communicator kept alive in `comm`; the request's lock
// makes sure one thread at a time steps it.
unsafe impl Send for MrecvOp {}

/// `MPI_Imrecv`: the receive of a claimed message, completed as the request is stepped.
pub fn imrecv(m: Matched, into: &Incoming, finish: Option<RecvFinish>) -> MrecvOp {
    let comm = m.comm;
    // SAFETY: the `Comm` lives in the `Arc`'s heap block, which does not move; `MrecvOp`
    // stores the `Arc` next to the receive, which drops first.
    let c: &'static Comm = unsafe { &*Arc::as_ptr(&comm) };
    let source = m.claim.env.source as usize;
    MrecvOp {
        op: claimed(c, m.claim, into),
        source,
        finish,
        comm,
    }
}

impl Wait for MrecvOp {
    fn poll(&mut self, _last: bool) -> Result<Step> {
        let moved = self.op.advance()?;
        Ok(step_of(self.op.result.is_some(), moved))
    }
    fn describe(&self) -> String {
        format!(
            "MPI_Imrecv on {}, receiving from rank {}",
            crate::health::comm_label(self.comm.id),
            self.source
        )
    }
    fn blocked_on(&self, out: &mut Vec<usize>) {
        out.extend(self.comm.world.get(self.source).copied());
    }
}

impl Op for MrecvOp {
    fn complete(&mut self) -> Result<Completion> {
        let r = self.op.result.expect("finished");
        if let Some(f) = self.finish.take() {
            f(&r);
        }
        Ok(Completion {
            source: r.env.source,
            tag: r.env.tag,
            bytes: r.bytes,
            cancelled: false,
            truncated: r.truncated,
        })
    }
}
