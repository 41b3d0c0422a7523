//! Local calls that move no data: intercommunicator queries,
//! `MPI_Comm_get_parent`, `MPI_Pcontrol`, addresses, `MPI_Dims_create`, the `MPI_Status`
//! field accessors and the GPU-support queries of MPICH's extensions.

use super::p2p::Status;
use std::ffi::{c_int, c_void};

use crate::abi::{guard, handles as h, out};
use crate::error::{Class, Error, Result};
use crate::runtime;

/// `MPI_Comm_test_inter`.
pub unsafe fn comm_test_inter(comm: c_int, flag: *mut c_int) -> c_int {
    guard("MPI_Comm_test_inter", Some(comm), || {
        let c = runtime::get()?.comm(comm)?;
        out(flag, "flag", c_int::from(c.inter().is_some()))
    })
}

/// `MPI_Comm_remote_size` / `MPI_Comm_remote_group`: only intercommunicators have a remote
/// group (MPI_ERR_COMM on an intracommunicator, as in MPICH). On an intercommunicator
/// `world` is the remote group (`crate::intercomm`).
pub unsafe fn comm_remote_size(comm: c_int, size: *mut c_int) -> c_int {
    guard("MPI_Comm_remote_size", Some(comm), || {
        let c = inter_arg(comm)?;
        out(size, "size", c.world.len() as c_int)
    })
}
pub unsafe fn comm_remote_group(comm: c_int, group: *mut c_int) -> c_int {
    guard("MPI_Comm_remote_group", Some(comm), || {
        let c = inter_arg(comm)?;
        if group.is_null() {
            return Err(Error::new(Class::Arg, "group is NULL"));
        }
        let g = crate::abi::objects::add_group(crate::group::Group::new(c.world.clone()))?;
        out(group, "group", g)
    })
}

fn inter_arg(comm: c_int) -> Result<std::sync::Arc<crate::comm::Comm>> {
    let c = runtime::get()?.comm(comm)?;
    if c.inter().is_none() {
        return Err(Error::new(
            Class::Comm,
            format!("communicator 0x{comm:x} is an intracommunicator: it has no remote group"),
        ));
    }
    Ok(c)
}

/// `MPI_Comm_get_parent`: hcomm's processes are never spawned by `MPI_Comm_spawn`.
pub unsafe fn comm_get_parent(parent: *mut c_int) -> c_int {
    guard("MPI_Comm_get_parent", None, || {
        runtime::get()?;
        out(parent, "parent", h::COMM_NULL)
    })
}

/// `MPI_Pcontrol`: a hint for profiling tools; the library itself does nothing with it.
pub unsafe fn pcontrol(_level: c_int) -> c_int {
    0
}

/// `MPI_Get_address` (and MPI-1's `MPI_Address`): addresses are plain byte addresses.
pub unsafe fn get_address(name: &'static str, location: *const c_void, address: *mut i64) -> c_int {
    guard(name, None, || out(address, "address", location as i64))
}

/// `MPI_Dims_create`: fills the zero entries of `dims` so that the product of all entries is
/// `nnodes`, the filled entries as close to each other as possible, in non-increasing order
/// (the standard's definition; the same result as MPICH and Open MPI).
pub unsafe fn dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    guard("MPI_Dims_create", None, || {
        let n = usize::try_from(ndims)
            .map_err(|_| Error::new(Class::Dims, format!("ndims is negative ({ndims})")))?;
        if nnodes <= 0 {
            return Err(Error::new(
                Class::Dims,
                format!("nnodes must be positive ({nnodes})"),
            ));
        }
        if n == 0 {
            return Ok(());
        }
        if dims.is_null() {
            return Err(Error::new(Class::Arg, "dims is NULL"));
        }
        // SAFETY: the caller passes an array of ndims ints (MPI's contract), checked non-null.
        let d = unsafe { std::slice::from_raw_parts_mut(dims, n) };
        let filled = fill_dims(nnodes, d)?;
        d.copy_from_slice(&filled);
        Ok(())
    })
}

/// The dims `MPI_Dims_create` returns for `dims` (entries > 0 are kept).
pub fn fill_dims(nnodes: c_int, dims: &[c_int]) -> Result<Vec<c_int>> {
    let mut fixed: i64 = 1;
    for (i, &v) in dims.iter().enumerate() {
        if v < 0 {
            return Err(Error::new(
                Class::Dims,
                format!("dims[{i}] is negative ({v})"),
            ));
        }
        if v > 0 {
            fixed *= v as i64;
        }
    }
    let nnodes = nnodes as i64;
    if nnodes % fixed != 0 {
        return Err(Error::new(
            Class::Dims,
            format!("nnodes {nnodes} is not a multiple of the product of the given dims ({fixed})"),
        ));
    }
    let free = dims.iter().filter(|&&v| v == 0).count();
    if free == 0 {
        if fixed != nnodes {
            return Err(Error::new(
                Class::Dims,
                format!("the dims multiply to {fixed}, not nnodes {nnodes}"),
            ));
        }
        return Ok(dims.to_vec());
    }
    // Prime factors, largest first, each given to the currently smallest free dimension:
    // the most balanced split (the rule MPICH and Open MPI follow).
    let mut rest = nnodes / fixed;
    let mut primes = Vec::new();
    let mut p = 2;
    while p * p <= rest {
        while rest % p == 0 {
            primes.push(p);
            rest /= p;
        }
        p += 1;
    }
    if rest > 1 {
        primes.push(rest);
    }
    let mut free_dims = vec![1i64; free];
    for &f in primes.iter().rev() {
        let smallest = (0..free).min_by_key(|&i| free_dims[i]).expect("free > 0");
        free_dims[smallest] *= f;
    }
    free_dims.sort_unstable_by(|a, b| b.cmp(a));
    let mut it = free_dims.into_iter();
    Ok(dims
        .iter()
        .map(|&v| {
            if v == 0 {
                it.next().expect("one per zero") as c_int
            } else {
                v
            }
        })
        .collect())
}

/// Index of a field of MPICH's `MPI_Status` (five ints: count_lo, count_hi_and_cancelled,
/// MPI_SOURCE, MPI_TAG, MPI_ERROR).
#[derive(Clone, Copy)]
pub enum StatusField {
    Source = 2,
    Tag = 3,
    Error = 4,
}

/// A status argument to read or write: neither NULL nor `MPI_STATUS_IGNORE` (`what` names it).
pub(super) fn status_arg<T>(status: *const T, what: &str) -> Result<()> {
    if status.is_null() || status as usize == super::p2p::STATUS_IGNORE {
        return Err(Error::new(
            Class::Arg,
            format!("{what} is NULL or MPI_STATUS_IGNORE"),
        ));
    }
    Ok(())
}

/// `MPI_Status_set_source` / `_tag` / `_error`.
pub unsafe fn status_set(
    name: &'static str,
    status: *mut c_int,
    field: StatusField,
    v: c_int,
) -> c_int {
    guard(name, None, || {
        status_arg(status, "status")?;
        // SAFETY: a non-null MPI_Status (5 ints) the caller owns.
        unsafe { status.add(field as usize).write(v) };
        Ok(())
    })
}

/// `MPI_Status_get_source` / `_tag` / `_error`.
pub unsafe fn status_get(
    name: &'static str,
    status: *const c_int,
    field: StatusField,
    v: *mut c_int,
) -> c_int {
    guard(name, None, || {
        status_arg(status, "status")?;
        // SAFETY: as in `status_set`, read only.
        out(v, "value", unsafe { status.add(field as usize).read() })
    })
}

/// `MPIX_GPU_query_support`: CUDA as `MPIX_Query_cuda_support` answers; hcomm has no HIP or
/// Level Zero support (`MPIX_GPU_SUPPORT_HIP` = 2, `_ZE` = 1).
pub unsafe fn gpu_query_support(gpu_type: c_int, is_supported: *mut c_int) -> c_int {
    guard("MPIX_GPU_query_support", None, || {
        let v = match gpu_type {
            0 => unsafe { super::query_cuda_support() },
            1 | 2 => 0,
            t => {
                return Err(Error::new(
                    Class::Arg,
                    format!("gpu_type {t} is not MPIX_GPU_SUPPORT_CUDA, _ZE or _HIP"),
                ))
            }
        };
        out(is_supported, "is_supported", v)
    })
}

/// `MPI_Alloc_mem`: ordinary heap memory (hcomm needs no registered memory); `size` 0 gives a
/// valid pointer too. `info` hints are ignored.
pub unsafe fn alloc_mem(size: i64, _info: c_int, baseptr: *mut c_void) -> c_int {
    guard("MPI_Alloc_mem", None, || {
        let n = usize::try_from(size)
            .map_err(|_| Error::new(Class::Arg, format!("size is negative ({size})")))?;
        // SAFETY: malloc of at least one byte; the result is checked for NULL.
        let p = unsafe { libc::malloc(n.max(1)) };
        if p.is_null() {
            return Err(Error::new(
                Class::Other,
                format!("MPI_ERR_NO_MEM: cannot allocate {n} bytes"),
            ));
        }
        out(baseptr.cast::<*mut c_void>(), "baseptr", p)
    })
}

/// `MPI_Free_mem`: memory from [`alloc_mem`].
pub unsafe fn free_mem(base: *mut c_void) -> c_int {
    // SAFETY: MPI's contract: `base` came from MPI_Alloc_mem (malloc) and is freed once;
    // free(NULL) does nothing.
    unsafe { libc::free(base) };
    0
}

/// `MPI_Status_set_cancelled`.
pub unsafe fn status_set_cancelled(status: *mut Status, flag: c_int) -> c_int {
    guard("MPI_Status_set_cancelled", None, || {
        status_arg(status, "status")?;
        // SAFETY: a status the caller supplied for writing (checked above).
        let s = unsafe { &mut *status };
        s.count_hi_and_cancelled = (s.count_hi_and_cancelled & !1) | c_int::from(flag != 0);
        Ok(())
    })
}

/// `MPI_Status_c2f` / `MPI_Status_f2c`: MPICH's Fortran status is the C one's five integers,
/// in the same order.
pub unsafe fn status_c2f(c_status: *const Status, f_status: *mut c_int) -> c_int {
    guard("MPI_Status_c2f", None, || {
        status_arg(c_status, "c_status")?;
        if f_status.is_null() {
            return Err(Error::new(Class::Arg, "f_status is NULL"));
        }
        // SAFETY: both point to five ints (MPI's contract; Status is repr(C), five c_ints).
        unsafe { std::ptr::copy(c_status.cast::<c_int>(), f_status, 5) };
        Ok(())
    })
}

pub unsafe fn status_f2c(f_status: *const c_int, c_status: *mut Status) -> c_int {
    guard("MPI_Status_f2c", None, || {
        if f_status.is_null() {
            return Err(Error::new(Class::Arg, "f_status is NULL"));
        }
        status_arg(c_status, "c_status")?;
        // SAFETY: as in `status_c2f`.
        unsafe { std::ptr::copy(f_status, c_status.cast::<c_int>(), 5) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::fill_dims;

    #[test]
    fn dims_create_matches_the_standard_examples() {
        // MPI-4.1 §8.5.2, Example 8.1.
        assert_eq!(fill_dims(6, &[0, 0]).unwrap(), vec![3, 2]);
        assert_eq!(fill_dims(7, &[0, 0]).unwrap(), vec![7, 1]);
        assert_eq!(fill_dims(6, &[0, 3, 0]).unwrap(), vec![2, 3, 1]);
        assert!(fill_dims(7, &[0, 3, 0]).is_err());
        assert_eq!(fill_dims(12, &[0, 0, 0]).unwrap(), vec![3, 2, 2]);
        assert_eq!(fill_dims(16, &[0, 0]).unwrap(), vec![4, 4]);
        assert_eq!(fill_dims(1, &[0, 0, 0]).unwrap(), vec![1, 1, 1]);
        assert_eq!(fill_dims(8, &[2, 4]).unwrap(), vec![2, 4]);
        assert!(fill_dims(8, &[2, 2]).is_err());
        assert!(fill_dims(8, &[-1, 0]).is_err());
    }
}
