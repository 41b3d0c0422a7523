//! Working in the buffer's own context, and leaving the caller's current context as it was.
//!
//! A device collective binds the context that owns its buffers (the pointer's
//! `CU_POINTER_ATTRIBUTE_CONTEXT`, else the device's primary context, retained once and
//! kept) for as long as a [`Bound`] lives; dropping it restores whatever was current before
//! (nothing, another device's context, a user context). hcomm's per-context resources
//! (streams, events, staging buffers, the kernel module, peers' mappings) are kept per
//! context, keyed by the driver's context id (`cuCtxGetId`: never reused within a process, so
//! a destroyed context's resources are never handed to a new one at the same address). A
//! driver older than 525 lacks `cuCtxGetId`: the context's handle is the key there, which is
//! only wrong for a program that destroys a context and gets a new one at the same address.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use parking_lot::Mutex;

use super::classify::Dev;
use super::drv::{check, sys};
use super::ipc::Imports;
use super::kernels::Module;
use super::staging::Slot;
use crate::error::Result;

/// Whether the driver has `cuCtxGetId` (set once at the first touch).
pub(crate) static CTX_ID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// hcomm's resources in one context.
pub(crate) struct CtxRes {
    /// Idle per-call resources (see [`CtxRes::lease`]).
    slots: Mutex<Vec<Slot>>,
    pub module: Mutex<Module>,
    pub imports: Mutex<Imports>,
}

/// A [`Slot`] borrowed for one call; back to the pool when dropped. Concurrent calls (from
/// several threads) each get their own, so they never share a stream or a staging buffer.
pub(crate) struct Lease<'a> {
    res: &'a CtxRes,
    slot: Option<Slot>,
}

impl std::ops::Deref for Lease<'_> {
    type Target = Slot;
    fn deref(&self) -> &Slot {
        self.slot.as_ref().expect("slot held until drop")
    }
}

impl std::ops::DerefMut for Lease<'_> {
    fn deref_mut(&mut self) -> &mut Slot {
        self.slot.as_mut().expect("slot held until drop")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.slot.take() {
            self.res.slots.lock().push(s);
        }
    }
}

impl CtxRes {
    /// A slot for one call (the context must be current: a new slot creates a stream).
    pub fn lease(&self) -> Result<Lease<'_>> {
        let slot = match self.slots.lock().pop() {
            Some(s) => s,
            None => Slot::new()?,
        };
        Ok(Lease {
            res: self,
            slot: Some(slot),
        })
    }
}

/// Every context hcomm has worked in.
#[derive(Default)]
pub(crate) struct Contexts {
    by_id: Mutex<HashMap<u64, Arc<CtxRes>>>,
    /// Device ordinal → its primary context, retained once for the life of the process.
    primary: Mutex<HashMap<i32, usize>>,
}

/// The buffer's context is current while this lives; the previous one comes back on drop.
/// Not `Send`: the current context belongs to the thread.
pub(crate) struct Bound {
    pub res: Arc<CtxRes>,
    prev: usize,
    switched: bool,
    _thread: PhantomData<*const ()>,
}

impl Drop for Bound {
    fn drop(&mut self) {
        if self.switched {
            // SAFETY: `prev` was current on this thread when we switched (or null, which
            // unbinds); restoring it cannot invalidate anything of ours.
            let r = unsafe { sys::cuCtxSetCurrent(self.prev as sys::CUcontext) };
            if let Err(e) = check(r, "cuCtxSetCurrent (restoring the caller's context)") {
                crate::warn!("{e}");
            }
        }
    }
}

impl Contexts {
    /// Makes the context of device buffer `dev` current on this thread.
    pub fn bind(&self, dev: &Dev) -> Result<Bound> {
        let ctx = if dev.ctx != 0 {
            dev.ctx
        } else {
            self.primary(dev.ordinal)?
        };
        let mut prev: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: writes the thread's current context (or null) into `prev`.
        check(
            unsafe { sys::cuCtxGetCurrent(&mut prev) },
            "cuCtxGetCurrent",
        )?;
        let switched = prev as usize != ctx;
        if switched {
            // SAFETY: `ctx` is a live context: it owns a buffer the caller passed us (or is
            // a primary context we retained).
            check(
                unsafe { sys::cuCtxSetCurrent(ctx as sys::CUcontext) },
                "cuCtxSetCurrent",
            )?;
        }
        // From here on `Bound`'s drop restores `prev`, even if the lookup below fails.
        let mut b = Bound {
            res: Arc::new(CtxRes::placeholder()),
            prev: prev as usize,
            switched,
            _thread: PhantomData,
        };
        b.res = self.resources(ctx)?;
        Ok(b)
    }

    pub fn primary(&self, ordinal: i32) -> Result<usize> {
        let mut map = self.primary.lock();
        if let Some(&c) = map.get(&ordinal) {
            return Ok(c);
        }
        let mut dev: sys::CUdevice = 0;
        // SAFETY: writes the device handle of `ordinal`.
        check(
            unsafe { sys::cuDeviceGet(&mut dev, ordinal) },
            "cuDeviceGet",
        )?;
        let mut c: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: retains (creating if needed) the device's primary context; never released,
        // so it stays valid for the process.
        check(
            unsafe { sys::cuDevicePrimaryCtxRetain(&mut c, dev) },
            "cuDevicePrimaryCtxRetain",
        )?;
        map.insert(ordinal, c as usize);
        Ok(c as usize)
    }

    fn resources(&self, ctx: usize) -> Result<Arc<CtxRes>> {
        let mut id = ctx as std::ffi::c_ulonglong;
        if CTX_ID.load(std::sync::atomic::Ordering::Relaxed) {
            // SAFETY: `ctx` is live (see `bind`); writes its id. The symbol exists (preflight).
            check(
                unsafe { sys::cuCtxGetId(ctx as sys::CUcontext, &mut id) },
                "cuCtxGetId",
            )?;
        }
        let mut map = self.by_id.lock();
        Ok(map
            .entry(id)
            .or_insert_with(|| {
                Arc::new(CtxRes {
                    slots: Mutex::new(Vec::new()),
                    module: Mutex::new(Module::default()),
                    imports: Mutex::new(Imports::default()),
                })
            })
            .clone())
    }
}

impl CtxRes {
    /// Stands in until the real resources are looked up (never used for work).
    fn placeholder() -> CtxRes {
        CtxRes {
            slots: Mutex::new(Vec::new()),
            module: Mutex::new(Module::default()),
            imports: Mutex::new(Imports::default()),
        }
    }
}
