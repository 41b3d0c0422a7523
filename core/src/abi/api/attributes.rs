//! Attribute caching on communicators and datatypes: keyvals with copy and delete callbacks
//! (`MPI_Comm_create_keyval`, `MPI_Comm_set_attr`, ..., their MPI-1 names and the datatype
//! forms). Values are kept here by (object handle, keyval), not in the objects themselves,
//! so the communicator layer knows nothing about them; `MPI_Comm_dup` copies them
//! ([`copy_comm_attrs`]), `MPI_Comm_free` deletes them ([`delete_all`]), and `MPI_Finalize`
//! deletes `MPI_COMM_SELF`'s first, as MPI requires (programs and mpi4py hang clean-up on it).
//!
//! Callbacks are always called with no lock held: they may call MPI, attributes included.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use parking_lot::Mutex;

use super::any_comm_of;
use crate::abi::{guard, handles as h, out};
use crate::error::{Class, Error, Result};
use crate::runtime;

/// `MPI_Comm_copy_attr_function` / `MPI_Type_copy_attr_function` (and MPI-1's
/// `MPI_Copy_function`): `(object, keyval, extra_state, value_in, &value_out, &flag)`.
pub type CopyFn =
    unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function` and friends: `(object, keyval, value, extra_state)`.
pub type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

/// What a keyval is attached to (a communicator keyval cannot be used on a datatype).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Comm,
    Type,
}

#[derive(Clone, Copy)]
struct Keyval {
    kind: Kind,
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    extra: usize,
    /// Freed by the program, but still attached somewhere: MPI keeps it alive until the last
    /// attribute using it is deleted.
    freed: bool,
}

#[derive(Default)]
struct Table {
    keyvals: HashMap<c_int, Keyval>,
    /// (object handle, keyval) → value, with the order of setting (deletion runs in reverse).
    attrs: HashMap<(c_int, c_int), (usize, u64)>,
    next_keyval: c_int,
    next_order: u64,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut Table) -> T) -> T {
    let mut g = TABLE.lock();
    f(g.get_or_insert_with(Table::default))
}

/// User keyvals are `KEYVAL_BASE + n`: apart from MPICH's predefined keyvals (0x644000xx)
/// and from `MPI_KEYVAL_INVALID` (0x24000000).
const KEYVAL_BASE: c_int = 0x2480_0000;

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Comm => "communicator",
        Kind::Type => "datatype",
    }
}

fn keyval_of(t: &Table, keyval: c_int, kind: Kind) -> Result<Keyval> {
    match t.keyvals.get(&keyval) {
        Some(k) if k.kind == kind && !k.freed => Ok(*k),
        Some(k) if k.kind != kind => Err(Error::new(
            Class::Keyval,
            format!(
                "keyval 0x{keyval:x} is a {} keyval, not a {} one",
                kind_name(k.kind),
                kind_name(kind)
            ),
        )),
        _ => Err(Error::new(
            Class::Keyval,
            format!(
                "keyval 0x{keyval:x} is not a valid {} keyval",
                kind_name(kind)
            ),
        )),
    }
}

/// `MPI_Comm_create_keyval` / `MPI_Type_create_keyval` / `MPI_Keyval_create`.
pub unsafe fn create_keyval(
    name: &'static str,
    kind: Kind,
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    guard(name, None, || {
        runtime::get()?;
        let k = with(|t| {
            let k = KEYVAL_BASE + t.next_keyval;
            t.next_keyval += 1;
            t.keyvals.insert(
                k,
                Keyval {
                    kind,
                    copy,
                    delete,
                    extra: extra_state as usize,
                    freed: false,
                },
            );
            k
        });
        out(keyval, "keyval", k)
    })
}

/// `MPI_Comm_free_keyval` / `MPI_Type_free_keyval` / `MPI_Keyval_free`.
pub unsafe fn free_keyval(name: &'static str, kind: Kind, keyval: *mut c_int) -> c_int {
    guard(name, None, || {
        if keyval.is_null() {
            return Err(Error::new(Class::Arg, "keyval is NULL"));
        }
        // SAFETY: non-null, the caller's keyval variable.
        let k = unsafe { keyval.read() };
        with(|t| {
            keyval_of(t, k, kind)?;
            if t.attrs.keys().any(|&(_, kv)| kv == k) {
                t.keyvals.get_mut(&k).expect("checked").freed = true;
            } else {
                t.keyvals.remove(&k);
            }
            Ok::<(), Error>(())
        })?;
        out(keyval, "keyval", h::KEYVAL_INVALID)
    })
}

/// Checks the object handle of an attribute call.
fn object_arg(kind: Kind, obj: c_int) -> Result<()> {
    match kind {
        Kind::Comm => any_comm_of(runtime::get()?, obj).map(|_| ()),
        Kind::Type => super::datatype_arg(obj, "datatype").map(|_| ()),
    }
}

/// Runs the delete callback of an attribute that was just removed from the table.
fn run_delete(kind: Kind, obj: c_int, keyval: c_int, k: &Keyval, value: usize) -> Result<()> {
    if let Some(d) = k.delete {
        // SAFETY: a callback the program registered for this keyval, called as MPI specifies
        // with the object, the keyval, the value and the extra state it gave.
        let rc = unsafe { d(obj, keyval, value as *mut c_void, k.extra as *mut c_void) };
        if rc != 0 {
            return Err(Error::new(
                Class::from_code(rc).unwrap_or(Class::Other),
                format!(
                    "the delete callback of keyval 0x{keyval:x} on {} 0x{obj:x} returned {rc}",
                    kind_name(kind)
                ),
            ));
        }
    }
    with(|t| {
        if t.keyvals.get(&keyval).is_some_and(|k| k.freed)
            && !t.attrs.keys().any(|&(_, kv)| kv == keyval)
        {
            t.keyvals.remove(&keyval);
        }
    });
    Ok(())
}

/// Removes attribute (obj, keyval) and runs its delete callback; `false` when absent.
fn remove(kind: Kind, obj: c_int, keyval: c_int) -> Result<bool> {
    let found = with(|t| {
        let k = *t.keyvals.get(&keyval)?;
        t.attrs.remove(&(obj, keyval)).map(|(v, _)| (k, v))
    });
    match found {
        Some((k, v)) => run_delete(kind, obj, keyval, &k, v).map(|_| true),
        None => Ok(false),
    }
}

/// `MPI_Comm_set_attr` / `MPI_Type_set_attr` / `MPI_Attr_put`: a value already there is
/// deleted first (its delete callback runs).
pub unsafe fn set_attr(
    name: &'static str,
    kind: Kind,
    obj: c_int,
    keyval: c_int,
    value: *mut c_void,
) -> c_int {
    let on = (kind == Kind::Comm).then_some(obj);
    guard(name, on, || {
        object_arg(kind, obj)?;
        with(|t| keyval_of(t, keyval, kind))?;
        remove(kind, obj, keyval)?;
        with(|t| {
            t.next_order += 1;
            let order = t.next_order;
            t.attrs.insert((obj, keyval), (value as usize, order));
        });
        Ok(())
    })
}

/// The value of a user attribute, for `MPI_Comm_get_attr` (predefined keyvals are answered
/// there): `Ok(None)` when the object has none for this keyval.
pub fn get_user_attr(kind: Kind, obj: c_int, keyval: c_int) -> Result<Option<usize>> {
    with(|t| {
        keyval_of(t, keyval, kind)?;
        Ok(t.attrs.get(&(obj, keyval)).map(|&(v, _)| v))
    })
}

/// `MPI_Type_get_attr`.
pub unsafe fn type_get_attr(
    obj: c_int,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    guard("MPI_Type_get_attr", None, || {
        object_arg(Kind::Type, obj)?;
        write_attr(get_user_attr(Kind::Type, obj, keyval)?, value, flag)
    })
}

/// Writes a looked-up attribute through MPI's `void *attribute_val` (really a `void **`).
pub fn write_attr(v: Option<usize>, value: *mut c_void, flag: *mut c_int) -> Result<()> {
    if value.is_null() || flag.is_null() {
        return Err(Error::new(Class::Arg, "attribute_val or flag is NULL"));
    }
    if let Some(v) = v {
        out(
            value.cast::<*mut c_void>(),
            "attribute_val",
            v as *mut c_void,
        )?;
    }
    out(flag, "flag", v.is_some() as c_int)
}

/// `MPI_Comm_delete_attr` / `MPI_Type_delete_attr` / `MPI_Attr_delete`.
pub unsafe fn delete_attr(name: &'static str, kind: Kind, obj: c_int, keyval: c_int) -> c_int {
    let on = (kind == Kind::Comm).then_some(obj);
    guard(name, on, || {
        object_arg(kind, obj)?;
        with(|t| keyval_of(t, keyval, kind))?;
        if !remove(kind, obj, keyval)? {
            return Err(Error::new(
                Class::Keyval,
                format!(
                    "{} 0x{obj:x} has no attribute for keyval 0x{keyval:x}",
                    kind_name(kind)
                ),
            ));
        }
        Ok(())
    })
}

/// Deletes every attribute of `obj` (last set first), running the delete callbacks: before
/// `MPI_Comm_free` / `MPI_Type_free`, and for `MPI_COMM_SELF` at `MPI_Finalize`.
pub fn delete_all(kind: Kind, obj: c_int) -> Result<()> {
    let mut keys: Vec<(u64, c_int)> = with(|t| {
        t.attrs
            .iter()
            .filter(|((o, kv), _)| *o == obj && t.keyvals.get(kv).is_some_and(|k| k.kind == kind))
            .map(|((_, kv), (_, order))| (*order, *kv))
            .collect()
    });
    keys.sort_unstable_by(|a, b| b.cmp(a));
    for (_, kv) in keys {
        remove(kind, obj, kv)?;
    }
    Ok(())
}

/// `MPI_Comm_dup`: each attribute of `old` whose copy callback says so is attached to `new`.
pub fn copy_comm_attrs(old: c_int, new: c_int) -> Result<()> {
    copy_attrs(Kind::Comm, old, new)
}

/// `MPI_Comm_dup` / `MPI_Type_dup`: copies the attributes of object `old` of `kind` to `new`.
pub fn copy_attrs(kind: Kind, old: c_int, new: c_int) -> Result<()> {
    let mut items: Vec<(u64, c_int, Keyval, usize)> = with(|t| {
        t.attrs
            .iter()
            .filter(|((o, _), _)| *o == old)
            .filter_map(|(&(_, kv), &(v, order))| {
                let k = *t.keyvals.get(&kv)?;
                (k.kind == kind).then_some((order, kv, k, v))
            })
            .collect()
    });
    items.sort_unstable_by_key(|i| i.0);
    for (_, kv, k, v) in items {
        let Some(copy) = k.copy else { continue };
        let (mut outv, mut flag): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
        // SAFETY: the program's copy callback for this keyval, called as MPI specifies; the
        // out-pointers are valid locals.
        let rc = unsafe {
            copy(
                old,
                kv,
                k.extra as *mut c_void,
                v as *mut c_void,
                (&mut outv as *mut *mut c_void).cast(),
                &mut flag,
            )
        };
        if rc != 0 {
            return Err(Error::new(
                Class::from_code(rc).unwrap_or(Class::Other),
                format!("the copy callback of keyval 0x{kv:x} returned {rc}"),
            ));
        }
        if flag != 0 {
            with(|t| {
                t.next_order += 1;
                let order = t.next_order;
                t.attrs.insert((new, kv), (outv as usize, order));
            });
        }
    }
    Ok(())
}
