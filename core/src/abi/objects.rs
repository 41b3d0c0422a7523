//! Handle tables of the user objects that live outside communicators: groups and error
//! handlers (MPICH ABI: `int` handles, "direct" kind `0x8.......|index`).
//!
//! The tables are process-wide statics rather than fields of the runtime: their objects are
//! local data that needs no world, and a static keeps them out of `Runtime`'s constructor.
//! Lookups take a short read lock and hand out an `Arc`, as the communicator table does.
//!
//! Groups are freed for real (their slot is reused). Error handlers are never destroyed:
//! a communicator keeps using its handler after the user frees the handle (MPI's reference
//! semantics), and a comm stores only the handle value, so the slot must never be reused. A
//! handler is one function pointer, and programs create a handful, so keeping them is free.

use std::ffi::c_int;
use std::sync::Arc;

use parking_lot::RwLock;

use super::handles::{self as h};
use crate::error::{Class, Error, Result};
use crate::group::Group;

/// `MPI_Comm_errhandler_function`: `void (MPI_Comm *, int *, ...)`.
pub type CommErrhandlerFn = unsafe extern "C" fn(*mut c_int, *mut c_int, ...);

/// A slot table: handle = `base | index`.
struct Table<T> {
    base: i32,
    slots: RwLock<Vec<Option<Arc<T>>>>,
}

impl<T> Table<T> {
    const fn new(base: i32) -> Table<T> {
        Table {
            base,
            slots: RwLock::new(Vec::new()),
        }
    }

    fn index(&self, handle: i32) -> Option<usize> {
        (handle & !h::USER_OBJECT_MASK == self.base)
            .then_some((handle & h::USER_OBJECT_MASK) as usize)
    }

    fn get(&self, handle: i32) -> Option<Arc<T>> {
        let i = self.index(handle)?;
        self.slots.read().get(i).and_then(|s| s.clone())
    }

    fn insert(&self, v: T, reuse: bool) -> Result<i32> {
        let mut t = self.slots.write();
        let free = if reuse {
            t.iter().position(|s| s.is_none())
        } else {
            None
        };
        let i = match free {
            Some(i) => i,
            None if t.len() > h::USER_OBJECT_MASK as usize => {
                return Err(Error::intern("too many objects of one kind"))
            }
            None => {
                t.push(None);
                t.len() - 1
            }
        };
        t[i] = Some(Arc::new(v));
        Ok(self.base | i as i32)
    }

    fn remove(&self, handle: i32) -> Option<Arc<T>> {
        let i = self.index(handle)?;
        self.slots.write().get_mut(i).and_then(|s| s.take())
    }
}

static GROUPS: Table<Group> = Table::new(h::USER_GROUP_BASE);
static ERRHANDLERS: Table<CommErrhandlerFn> = Table::new(h::USER_ERRHANDLER_BASE);

/// Resolves a group handle (`MPI_GROUP_EMPTY` included); `what` names the argument.
pub fn group(handle: i32, what: &str) -> Result<Arc<Group>> {
    match handle {
        h::GROUP_EMPTY => Ok(Arc::new(Group::empty())),
        h::GROUP_NULL => Err(Error::new(
            Class::Group,
            format!("{what} is MPI_GROUP_NULL"),
        )),
        _ => GROUPS.get(handle).ok_or_else(|| {
            Error::new(
                Class::Group,
                format!("{what} 0x{handle:x} is not a valid group (freed or never created)"),
            )
        }),
    }
}

/// Registers a group; the empty group is always `MPI_GROUP_EMPTY` (as in MPICH and Open MPI).
pub fn add_group(g: Group) -> Result<i32> {
    if g.size() == 0 {
        return Ok(h::GROUP_EMPTY);
    }
    GROUPS.insert(g, true)
}

/// Frees a group handle. `MPI_GROUP_EMPTY` may be "freed" (MPICH allows it: handles returned
/// by `MPI_Group_incl` may be it).
pub fn free_group(handle: i32) -> Result<()> {
    if handle == h::GROUP_EMPTY {
        return Ok(());
    }
    group(handle, "group")?;
    GROUPS.remove(handle);
    Ok(())
}

/// Registers a user error handler.
pub fn add_errhandler(f: CommErrhandlerFn) -> Result<i32> {
    ERRHANDLERS.insert(f, false)
}

/// The function of a user error handler handle, if it is one.
pub fn errhandler_fn(handle: i32) -> Option<CommErrhandlerFn> {
    ERRHANDLERS.get(handle).map(|f| *f)
}

/// True for the predefined handlers and every user handler ever created.
pub fn is_errhandler(handle: i32) -> bool {
    h::is_errhandler(handle) || errhandler_fn(handle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_handles() {
        let a = add_group(Group::new(vec![0, 1])).unwrap();
        assert_eq!(a & !h::USER_OBJECT_MASK, h::USER_GROUP_BASE);
        assert_eq!(group(a, "g").unwrap().world, vec![0, 1]);
        assert_eq!(add_group(Group::empty()).unwrap(), h::GROUP_EMPTY);
        assert_eq!(group(h::GROUP_EMPTY, "g").unwrap().size(), 0);
        free_group(a).unwrap();
        assert_eq!(group(a, "g").unwrap_err().class, Class::Group);
        assert_eq!(free_group(a).unwrap_err().class, Class::Group);
        assert_eq!(group(h::GROUP_NULL, "g").unwrap_err().class, Class::Group);
        assert!(free_group(h::GROUP_EMPTY).is_ok());
    }

    extern "C" fn nop(_: *mut c_int, _: *mut c_int) {}

    #[test]
    fn errhandler_handles() {
        // SAFETY: only stored and compared, never called (Rust cannot define a variadic fn).
        let nop: CommErrhandlerFn = unsafe { std::mem::transmute(nop as extern "C" fn(_, _)) };
        let a = add_errhandler(nop).unwrap();
        assert_eq!(a & !h::USER_OBJECT_MASK, h::USER_ERRHANDLER_BASE);
        assert!(is_errhandler(a));
        assert!(is_errhandler(h::ERRORS_RETURN));
        assert!(!is_errhandler(h::USER_ERRHANDLER_BASE | 0x3ff_0000));
        let b = add_errhandler(nop).unwrap();
        assert_ne!(a, b);
    }
}
