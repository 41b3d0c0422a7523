//! `MPI_Isendrecv` / `MPI_Isendrecv_replace`: a receive and a send under one request.
//!
//! Both halves start at once (the receive first, so a message to oneself finds it posted);
//! the request completes when both have, and reports the receive's status.

use crate::engine::{Step, Wait};
use crate::error::Result;
use crate::request::{Completion, Op};

use super::{IrecvOp, IsendOp};

/// The operation of an `MPI_Isendrecv(_replace)` request; `None` halves are `MPI_PROC_NULL`
/// (or done).
pub struct SendrecvOp {
    recv: Option<IrecvOp>,
    send: Option<IsendOp>,
    /// The receive's outcome once it completed (its operation is dropped then).
    received: Option<Completion>,
    /// What the receive from `MPI_PROC_NULL` reports.
    proc_null: Completion,
}

impl SendrecvOp {
    /// `recv`, `send`: the started halves; `proc_null`: the status when there is no receive.
    pub fn new(recv: Option<IrecvOp>, send: Option<IsendOp>, proc_null: Completion) -> Self {
        SendrecvOp {
            recv,
            send,
            received: None,
            proc_null,
        }
    }
}

impl Wait for SendrecvOp {
    fn poll(&mut self, last: bool) -> Result<Step> {
        let mut moved = false;
        if let Some(s) = self.send.as_mut() {
            match s.poll(last)? {
                Step::Done => {
                    s.complete()?;
                    self.send = None;
                    moved = true;
                }
                Step::Moved => moved = true,
                Step::Idle => {}
            }
        }
        if let Some(r) = self.recv.as_mut() {
            match r.poll(last)? {
                Step::Done => {
                    self.received = Some(r.complete()?);
                    self.recv = None;
                    moved = true;
                }
                Step::Moved => moved = true,
                Step::Idle => {}
            }
        }
        Ok(if self.send.is_none() && self.recv.is_none() {
            Step::Done
        } else if moved {
            Step::Moved
        } else {
            Step::Idle
        })
    }
    fn describe(&self) -> String {
        let halves: Vec<String> = [
            self.send.as_ref().map(|s| s.describe()),
            self.recv.as_ref().map(|r| r.describe()),
        ]
        .into_iter()
        .flatten()
        .collect();
        format!("MPI_Isendrecv: {}", halves.join("; "))
    }
    fn blocked_on(&self, out: &mut Vec<usize>) {
        if let Some(s) = &self.send {
            s.blocked_on(out);
        }
        if let Some(r) = &self.recv {
            r.blocked_on(out);
        }
    }
}

impl Op for SendrecvOp {
    fn complete(&mut self) -> Result<Completion> {
        Ok(self.received.unwrap_or(self.proc_null))
    }
}
