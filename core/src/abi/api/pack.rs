//! `MPI_Pack`, `MPI_Unpack`, `MPI_Pack_size` and their "external32" forms.
//!
//! `MPI_Pack` writes hcomm's wire format of the type (`typemap::Layout::pack`): the same
//! bytes a send of that type puts on the wire, so a buffer packed here and sent as
//! `MPI_PACKED` is received correctly with the original type, and the reverse. The external32
//! forms write the portable big-endian representation (`typemap::external32`).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Arc;

use super::{comm_of, count_arg, packing_type_arg, Count};
use crate::abi::{guard, handles as h, out};
use crate::error::{Class, Error, Result};
use crate::runtime;
use crate::typemap::Layout;

/// The layout of a committed datatype argument (packing needs a committed type).
fn packable(dt: c_int) -> Result<Arc<Layout>> {
    let t = packing_type_arg(dt, "datatype")?;
    h::layout(t.handle).ok_or_else(|| Error::intern("a valid datatype has no layout"))
}

/// Bytes of `count` items of `per` bytes each, or `MPI_ERR_COUNT`.
fn total(count: usize, per: usize) -> Result<usize> {
    count
        .checked_mul(per)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            Error::new(
                Class::Count,
                format!("count {count} is too large for the datatype"),
            )
        })
}

/// Reads `*position` and checks that `need` bytes from it fit in a buffer of `size` bytes.
fn position_in<P: Copy + Into<i64>>(
    position: *mut P,
    size: Count,
    need: usize,
    what: &str,
) -> Result<usize> {
    if position.is_null() {
        return Err(Error::new(Class::Arg, "position is NULL"));
    }
    // SAFETY: a non-NULL pointer to the caller's position.
    let pos: i64 = unsafe { *position }.into();
    let size = usize::try_from(size)
        .map_err(|_| Error::new(Class::Arg, format!("{what} is negative ({size})")))?;
    let pos = usize::try_from(pos)
        .ok()
        .filter(|&p| p <= size)
        .ok_or_else(|| {
            Error::new(
                Class::Arg,
                format!("position ({pos}) is outside the buffer of {size} bytes"),
            )
        })?;
    if size - pos < need {
        return Err(Error::new(
            Class::Truncate,
            format!(
                "the data needs {need} bytes but only {} are left after position {pos} ({what} {size})",
                size - pos
            ),
        ));
    }
    Ok(pos)
}

/// Writes the advanced position back in the caller's type.
fn advance<P: TryFrom<i64>>(position: *mut P, to: usize) -> Result<()> {
    let v = P::try_from(to as i64).map_err(|_| {
        Error::new(
            Class::Count,
            "the new position does not fit the position argument",
        )
    })?;
    out(position, "position", v)
}

fn buffer(p: *const c_void, len: usize, what: &str) -> Result<()> {
    if len > 0 && p.is_null() {
        return Err(Error::new(
            Class::Buffer,
            format!("{what} is NULL but the data is not empty"),
        ));
    }
    Ok(())
}

/// The representation a call packs to.
#[derive(Clone, Copy)]
enum Rep {
    Native,
    External32,
}

impl Rep {
    fn size(self, l: &Layout) -> usize {
        match self {
            Rep::Native => l.wire,
            Rep::External32 => l.external32_size(),
        }
    }
}

/// `datarep` of the external forms: only "external32" exists.
fn datarep_arg(datarep: *const c_char) -> Result<Rep> {
    if datarep.is_null() {
        return Err(Error::new(Class::Arg, "datarep is NULL"));
    }
    // SAFETY: a NUL-terminated string from the caller (checked non-NULL).
    let s = unsafe { CStr::from_ptr(datarep) };
    if s.to_bytes() != b"external32" {
        return Err(Error::new(
            Class::Arg,
            format!("datarep \"{}\" is not \"external32\"", s.to_string_lossy()),
        ));
    }
    Ok(Rep::External32)
}

/// The body of the pack calls (`comm` checked by the caller).
#[allow(clippy::too_many_arguments)]
unsafe fn do_pack<P: Copy + Into<i64> + TryFrom<i64>>(
    rep: Rep,
    inbuf: *const c_void,
    incount: Count,
    datatype: c_int,
    outbuf: *mut c_void,
    outsize: Count,
    position: *mut P,
) -> Result<()> {
    let n = count_arg(incount, "incount")?;
    let l = packable(datatype)?;
    let need = total(n, rep.size(&l))?;
    buffer(inbuf, need, "inbuf")?;
    buffer(outbuf, need, "outbuf")?;
    let pos = position_in(position, outsize, need, "outsize")?;
    if need > 0 {
        let dst = outbuf.cast::<u8>().wrapping_add(pos);
        // SAFETY: MPI: `inbuf` holds `incount` items of the type; `outbuf` has `outsize`
        // bytes, of which `need` are left after `pos` (checked).
        unsafe {
            match rep {
                Rep::Native => l.pack(inbuf.cast(), n, dst),
                Rep::External32 => l.pack_external32(inbuf.cast(), n, dst),
            }
        }
    }
    advance(position, pos + need)
}

#[allow(clippy::too_many_arguments)]
unsafe fn do_unpack<P: Copy + Into<i64> + TryFrom<i64>>(
    rep: Rep,
    inbuf: *const c_void,
    insize: Count,
    position: *mut P,
    outbuf: *mut c_void,
    outcount: Count,
    datatype: c_int,
) -> Result<()> {
    let n = count_arg(outcount, "outcount")?;
    let l = packable(datatype)?;
    let need = total(n, rep.size(&l))?;
    buffer(inbuf, need, "inbuf")?;
    buffer(outbuf, need, "outbuf")?;
    let pos = position_in(position, insize, need, "insize")?;
    if need > 0 {
        let src = inbuf.cast::<u8>().wrapping_add(pos);
        // SAFETY: MPI: `outbuf` holds `outcount` items of the type; `inbuf` has `insize`
        // bytes, of which `need` are left after `pos` (checked).
        unsafe {
            match rep {
                Rep::Native => l.unpack(src, n, outbuf.cast()),
                Rep::External32 => l.unpack_external32(src, n, outbuf.cast()),
            }
        }
    }
    advance(position, pos + need)
}

/// `MPI_Pack(_c)`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn pack<P: Copy + Into<i64> + TryFrom<i64>>(
    name: &'static str,
    inbuf: *const c_void,
    incount: Count,
    datatype: c_int,
    outbuf: *mut c_void,
    outsize: Count,
    position: *mut P,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        comm_of(runtime::get()?, comm)?;
        // SAFETY: forwarded contract.
        unsafe {
            do_pack(
                Rep::Native,
                inbuf,
                incount,
                datatype,
                outbuf,
                outsize,
                position,
            )
        }
    })
}

/// `MPI_Unpack(_c)`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn unpack<P: Copy + Into<i64> + TryFrom<i64>>(
    name: &'static str,
    inbuf: *const c_void,
    insize: Count,
    position: *mut P,
    outbuf: *mut c_void,
    outcount: Count,
    datatype: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        comm_of(runtime::get()?, comm)?;
        // SAFETY: forwarded contract.
        unsafe {
            do_unpack(
                Rep::Native,
                inbuf,
                insize,
                position,
                outbuf,
                outcount,
                datatype,
            )
        }
    })
}

/// `MPI_Pack_size(_c)`: the bytes `MPI_Pack` writes for `incount` items.
pub unsafe fn pack_size<T: TryFrom<i64>>(
    name: &'static str,
    incount: Count,
    datatype: c_int,
    comm: c_int,
    size: *mut T,
) -> c_int {
    guard(name, Some(comm), || {
        comm_of(runtime::get()?, comm)?;
        let n = count_arg(incount, "incount")?;
        let l = h::layout(datatype).ok_or_else(|| super::types::bad_type(datatype))?;
        let b = total(n, l.wire)?;
        let v = T::try_from(b as i64).map_err(|_| {
            Error::new(
                Class::Count,
                format!("the size ({b}) does not fit (use {name}_c)"),
            )
        })?;
        out(size, "size", v)
    })
}

/// `MPI_Pack_external(_c)`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn pack_external(
    name: &'static str,
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: Count,
    datatype: c_int,
    outbuf: *mut c_void,
    outsize: Count,
    position: *mut Count,
) -> c_int {
    guard(name, None, || {
        let rep = datarep_arg(datarep)?;
        // SAFETY: forwarded contract.
        unsafe { do_pack(rep, inbuf, incount, datatype, outbuf, outsize, position) }
    })
}

/// `MPI_Unpack_external(_c)`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn unpack_external(
    name: &'static str,
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: Count,
    position: *mut Count,
    outbuf: *mut c_void,
    outcount: Count,
    datatype: c_int,
) -> c_int {
    guard(name, None, || {
        let rep = datarep_arg(datarep)?;
        // SAFETY: forwarded contract.
        unsafe { do_unpack(rep, inbuf, insize, position, outbuf, outcount, datatype) }
    })
}

/// `MPI_Pack_external_size(_c)`.
pub unsafe fn pack_external_size(
    name: &'static str,
    datarep: *const c_char,
    incount: Count,
    datatype: c_int,
    size: *mut Count,
) -> c_int {
    guard(name, None, || {
        let rep = datarep_arg(datarep)?;
        let n = count_arg(incount, "incount")?;
        let l = h::layout(datatype).ok_or_else(|| super::types::bad_type(datatype))?;
        out(size, "size", total(n, rep.size(&l))? as Count)
    })
}
