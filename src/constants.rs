//! The data symbols of MPICH's `mpi.h` (`MPI_UNWEIGHTED`, `MPI_F_STATUS_IGNORE`, ...), the
//! function behind `MPI_DUP_FN` (`MPIR_Dup_fn`), and the few functions whose results are
//! values rather than error codes: address arithmetic and `MPI_File`'s Fortran conversion.
//!
//! Data symbols cannot be bound lazily: a program (mpi4py's MPICH-ABI build, for one) that
//! refers to one fails to load when the library lacks it, so they are all here even where
//! hcomm implements none of the calls that take them.

use std::ffi::{c_int, c_void};

use hcomm_core::export_mpi_functions;

/// A pointer constant exported as data (`int * const MPI_UNWEIGHTED`): its value is the
/// address of a private sentinel, distinct from NULL and from every user buffer.
#[repr(transparent)]
pub struct Sentinel(*const c_void);

// SAFETY: the pointer is never dereferenced by hcomm or (per MPI) by programs; it is compared
// by address only, so sharing it between threads is sound.
unsafe impl Sync for Sentinel {}

static F_STATUS_IGNORE_OBJ: [c_int; 5] = [0; 5];
static F_STATUSES_IGNORE_OBJ: [c_int; 5] = [0; 5];
static F08_STATUS_IGNORE_OBJ: [c_int; 5] = [0; 5];
static F08_STATUSES_IGNORE_OBJ: [c_int; 5] = [0; 5];
static PVAR_ALL_HANDLES_OBJ: c_int = 0;

macro_rules! sentinel {
    ($name:ident, $obj:path) => {
        #[no_mangle]
        pub static $name: Sentinel = Sentinel(std::ptr::addr_of!($obj).cast());
    };
}

// The topology calls in hcomm_core compare weights arguments with these two addresses.
sentinel!(MPI_UNWEIGHTED, hcomm_core::abi::handles::UNWEIGHTED_OBJ);
sentinel!(
    MPI_WEIGHTS_EMPTY,
    hcomm_core::abi::handles::WEIGHTS_EMPTY_OBJ
);
sentinel!(MPI_F_STATUS_IGNORE, F_STATUS_IGNORE_OBJ);
sentinel!(MPI_F_STATUSES_IGNORE, F_STATUSES_IGNORE_OBJ);
sentinel!(MPI_F08_STATUS_IGNORE, F08_STATUS_IGNORE_OBJ);
sentinel!(MPI_F08_STATUSES_IGNORE, F08_STATUSES_IGNORE_OBJ);
sentinel!(MPI_T_PVAR_ALL_HANDLES, PVAR_ALL_HANDLES_OBJ);

/// `MPI_DUP_FN` (and `MPI_COMM_DUP_FN`, `MPI_TYPE_DUP_FN`, `MPI_WIN_DUP_FN`): the copy of an
/// attribute is the same value.
///
/// # Safety
/// `attribute_val_out` and `flag` point to writable memory, as MPI's copy callback contract
/// says.
#[no_mangle]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _obj: c_int,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    if attribute_val_out.is_null() || flag.is_null() {
        return hcomm_core::error::Class::Arg as c_int;
    }
    // SAFETY: both are non-null output pointers supplied by the attribute machinery; the
    // out-value is a `void *` slot.
    unsafe {
        attribute_val_out
            .cast::<*mut c_void>()
            .write(attribute_val_in);
        flag.write(1);
    }
    0
}

unsafe fn aint_add(base: i64, disp: i64) -> i64 {
    base.wrapping_add(disp)
}
unsafe fn aint_diff(addr1: i64, addr2: i64) -> i64 {
    addr1.wrapping_sub(addr2)
}
/// hcomm opens no files, so every `MPI_File` is `MPI_FILE_NULL`, whose Fortran handle is 0.
unsafe fn file_c2f(_file: *mut c_void) -> c_int {
    0
}
unsafe fn file_f2c(_file: c_int) -> *mut c_void {
    std::ptr::null_mut()
}

export_mpi_functions! {
    fn MPI_Aint_add / PMPI_Aint_add(base: i64, disp: i64) -> i64 => aint_add;
    fn MPI_Aint_diff / PMPI_Aint_diff(addr1: i64, addr2: i64) -> i64 => aint_diff;
    fn MPI_File_c2f / PMPI_File_c2f(file: *mut c_void) -> c_int => file_c2f;
    fn MPI_File_f2c / PMPI_File_f2c(file: c_int) -> *mut c_void => file_f2c;
}
