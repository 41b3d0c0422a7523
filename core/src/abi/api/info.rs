//! `MPI_Info` objects: ordered (key, value) string pairs. hcomm reads no hint yet, so an info
//! given to a call is checked and otherwise ignored; programs (and mpi4py) still create,
//! fill, query and free them. `MPI_INFO_ENV` exists and is empty.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, CStr};

use parking_lot::Mutex;

use super::any_comm_of;
use crate::abi::{guard, out};
use crate::error::{Class, Error, Result};
use crate::runtime;

pub const INFO_NULL: c_int = 0x1c00_0000;
pub const INFO_ENV: c_int = 0x5c00_0001;
/// User info handles: `INFO_BASE + n` (MPICH's info kind, distinct from the predefined ones).
const INFO_BASE: c_int = 0x9c00_0000_u32 as c_int;
/// `MPI_MAX_INFO_KEY`, `MPI_MAX_INFO_VAL` (MPICH).
const MAX_KEY: usize = 255;
const MAX_VAL: usize = 1024;

#[derive(Default)]
struct Table {
    infos: HashMap<c_int, Vec<(String, String)>>,
    next: c_int,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut Table) -> T) -> T {
    let mut g = TABLE.lock();
    let t = g.get_or_insert_with(|| {
        let mut t = Table::default();
        t.infos.insert(INFO_ENV, Vec::new());
        t
    });
    f(t)
}

fn new_info(t: &mut Table, pairs: Vec<(String, String)>) -> c_int {
    let h = INFO_BASE + t.next;
    t.next += 1;
    t.infos.insert(h, pairs);
    h
}

fn bad(info: c_int) -> Error {
    Error::new(
        Class::Info,
        format!("info 0x{info:x} is not a valid info object"),
    )
}

/// Checks an info argument of any call (MPI_INFO_NULL allowed).
pub fn info_arg(info: c_int) -> Result<()> {
    if info == INFO_NULL || with(|t| t.infos.contains_key(&info)) {
        Ok(())
    } else {
        Err(bad(info))
    }
}

fn c_string(p: *const c_char, what: &str, max: usize, class: Class) -> Result<String> {
    if p.is_null() {
        return Err(Error::new(Class::Arg, format!("{what} is NULL")));
    }
    // SAFETY: non-null; MPI's contract: a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    if s.is_empty() || s.len() > max {
        return Err(Error::new(
            class,
            format!("{what} must have 1 to {max} characters (has {})", s.len()),
        ));
    }
    Ok(s)
}

fn key_arg(key: *const c_char) -> Result<String> {
    c_string(key, "key", MAX_KEY, Class::InfoKey)
}

/// Copies `s` into `buf` (room for `room` characters plus the NUL).
fn copy_out(buf: *mut c_char, room: usize, s: &str) -> Result<()> {
    if buf.is_null() {
        return Err(Error::new(Class::Arg, "value buffer is NULL"));
    }
    let b = &s.as_bytes()[..s.len().min(room)];
    // SAFETY: the caller's buffer holds room + 1 bytes (MPI's contract for this argument).
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), buf.cast::<u8>(), b.len());
        *buf.add(b.len()) = 0;
    }
    Ok(())
}

fn lookup(info: c_int, key: &str) -> Result<Option<String>> {
    with(|t| {
        let v = t.infos.get(&info).ok_or_else(|| bad(info))?;
        Ok(v.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()))
    })
}

/// A new info object holding `pairs` (for calls that hand one out: `MPI_Session_get_info`,
/// `MPI_Session_get_pset_info`).
pub(crate) fn new_info_with(pairs: Vec<(String, String)>) -> c_int {
    with(|t| new_info(t, pairs))
}

/// The value of `key` in `info` (`MPI_INFO_NULL`: none).
pub(crate) fn info_value(info: c_int, key: &str) -> Result<Option<String>> {
    if info == INFO_NULL {
        return Ok(None);
    }
    lookup(info, key)
}

pub unsafe fn info_create(info: *mut c_int) -> c_int {
    guard("MPI_Info_create", None, || {
        let h = with(|t| new_info(t, Vec::new()));
        out(info, "info", h)
    })
}

/// `MPI_Info_create_env`: a new info built as `MPI_INFO_ENV` is (empty here).
pub unsafe fn info_create_env(_argc: c_int, _argv: *mut *mut c_char, info: *mut c_int) -> c_int {
    guard("MPI_Info_create_env", None, || {
        let h = with(|t| {
            let env = t.infos.get(&INFO_ENV).cloned().unwrap_or_default();
            new_info(t, env)
        });
        out(info, "info", h)
    })
}

pub unsafe fn info_dup(info: c_int, newinfo: *mut c_int) -> c_int {
    guard("MPI_Info_dup", None, || {
        let h = with(|t| {
            let v = t.infos.get(&info).cloned().ok_or_else(|| bad(info))?;
            Ok::<_, Error>(new_info(t, v))
        })?;
        out(newinfo, "newinfo", h)
    })
}

pub unsafe fn info_free(info: *mut c_int) -> c_int {
    guard("MPI_Info_free", None, || {
        if info.is_null() {
            return Err(Error::new(Class::Arg, "info is NULL"));
        }
        // SAFETY: non-null, the caller's handle variable.
        let h = unsafe { info.read() };
        if h == INFO_ENV || with(|t| t.infos.remove(&h)).is_none() {
            return Err(bad(h));
        }
        out(info, "info", INFO_NULL)
    })
}

pub unsafe fn info_set(info: c_int, key: *const c_char, value: *const c_char) -> c_int {
    guard("MPI_Info_set", None, || {
        let k = key_arg(key)?;
        let v = c_string(value, "value", MAX_VAL, Class::InfoValue)?;
        with(|t| {
            let pairs = t.infos.get_mut(&info).ok_or_else(|| bad(info))?;
            match pairs.iter_mut().find(|(pk, _)| *pk == k) {
                Some(p) => p.1 = v,
                None => pairs.push((k, v)),
            }
            Ok(())
        })
    })
}

pub unsafe fn info_delete(info: c_int, key: *const c_char) -> c_int {
    guard("MPI_Info_delete", None, || {
        let k = key_arg(key)?;
        with(|t| {
            let pairs = t.infos.get_mut(&info).ok_or_else(|| bad(info))?;
            let at = pairs.iter().position(|(pk, _)| *pk == k).ok_or_else(|| {
                Error::new(
                    Class::InfoNokey,
                    format!("info 0x{info:x} has no key {k:?}"),
                )
            })?;
            pairs.remove(at);
            Ok(())
        })
    })
}

/// `MPI_Info_get` (deprecated in MPI-4.0): at most `valuelen` characters of the value.
pub unsafe fn info_get(
    info: c_int,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    guard("MPI_Info_get", None, || {
        let k = key_arg(key)?;
        let room = usize::try_from(valuelen)
            .map_err(|_| Error::new(Class::Arg, format!("valuelen is negative ({valuelen})")))?;
        match lookup(info, &k)? {
            Some(v) => {
                copy_out(value, room, &v)?;
                out(flag, "flag", 1)
            }
            None => out(flag, "flag", 0),
        }
    })
}

pub unsafe fn info_get_valuelen(
    info: c_int,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    guard("MPI_Info_get_valuelen", None, || {
        let k = key_arg(key)?;
        match lookup(info, &k)? {
            Some(v) => {
                out(valuelen, "valuelen", v.len() as c_int)?;
                out(flag, "flag", 1)
            }
            None => out(flag, "flag", 0),
        }
    })
}

/// `MPI_Info_get_string` (MPI-4.0): `buflen` in: the buffer's size; out: the value's length
/// plus one. A value longer than the buffer is cut to fit.
pub unsafe fn info_get_string(
    info: c_int,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    guard("MPI_Info_get_string", None, || {
        let k = key_arg(key)?;
        if buflen.is_null() {
            return Err(Error::new(Class::Arg, "buflen is NULL"));
        }
        // SAFETY: non-null, the caller's in/out length.
        let cap = unsafe { buflen.read() };
        match lookup(info, &k)? {
            Some(v) => {
                if cap > 0 {
                    copy_out(value, cap as usize - 1, &v)?;
                }
                out(buflen, "buflen", v.len() as c_int + 1)?;
                out(flag, "flag", 1)
            }
            None => out(flag, "flag", 0),
        }
    })
}

pub unsafe fn info_get_nkeys(info: c_int, nkeys: *mut c_int) -> c_int {
    guard("MPI_Info_get_nkeys", None, || {
        let n = with(|t| t.infos.get(&info).map(|v| v.len()).ok_or_else(|| bad(info)))?;
        out(nkeys, "nkeys", n as c_int)
    })
}

pub unsafe fn info_get_nthkey(info: c_int, n: c_int, key: *mut c_char) -> c_int {
    guard("MPI_Info_get_nthkey", None, || {
        let k = with(|t| {
            let v = t.infos.get(&info).ok_or_else(|| bad(info))?;
            usize::try_from(n)
                .ok()
                .and_then(|i| v.get(i))
                .map(|(k, _)| k.clone())
                .ok_or_else(|| {
                    Error::new(
                        Class::Arg,
                        format!("n {n} is not below the number of keys ({})", v.len()),
                    )
                })
        })?;
        copy_out(key, MAX_KEY, &k)
    })
}

/// `MPI_Comm_set_info`: the hints are checked and ignored (hcomm reads none).
pub unsafe fn comm_set_info(comm: c_int, info: c_int) -> c_int {
    guard("MPI_Comm_set_info", Some(comm), || {
        any_comm_of(runtime::get()?, comm)?;
        info_arg(info)
    })
}

/// `MPI_Comm_get_info`: a new, empty info (no hint is in use).
pub unsafe fn comm_get_info(comm: c_int, info_used: *mut c_int) -> c_int {
    guard("MPI_Comm_get_info", Some(comm), || {
        any_comm_of(runtime::get()?, comm)?;
        let h = with(|t| new_info(t, Vec::new()));
        out(info_used, "info_used", h)
    })
}

/// `MPI_Get_hw_resource_info` (MPI 4.1): the hardware resources hcomm can split along, as
/// `mpi_hw_resource_type` (the key `MPI_Comm_split_type(MPI_COMM_TYPE_HW_GUIDED)` reads): the
/// host's shared memory, the one level it knows. The keys are the implementation's choice
/// (Open MPI returns none).
pub unsafe fn get_hw_resource_info(name: &'static str, hw_info: *mut c_int) -> c_int {
    guard(name, None, || {
        if hw_info.is_null() {
            return Err(Error::new(Class::Arg, "hw_info is NULL"));
        }
        let h = new_info_with(vec![(
            "mpi_hw_resource_type".into(),
            "mpi_shared_memory".into(),
        )]);
        out(hw_info, "hw_info", h)
    })
}
