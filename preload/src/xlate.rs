//! Translating the host's handles into hcomm's (MPICH-ABI) ones, and hcomm's error classes
//! back into the host's.
//!
//! MPICH ABI: handles are `int`s with the values hcomm itself uses, so only the narrowing of
//! the pointer-sized argument is needed. Open MPI: handles are addresses of predefined objects
//! (`ompi_mpi_float`, `ompi_mpi_op_sum`, …), resolved once with [`host::ompi_object`] into a
//! table of (address, MPICH handle). Only predefined datatypes and ops are translated: anything
//! else (user types and ops, other communicators) has no translation and is forwarded.

use std::ffi::{c_int, c_void, CStr};
use std::sync::OnceLock;

use hcomm_core::abi::handles as h;

use crate::host::{self, Abi};

/// Open MPI's predefined datatypes hcomm takes, with the MPICH handle of the same type.
const OMPI_TYPES: &[(&CStr, i32)] = &[
    (c"ompi_mpi_char", 0x4c000101),
    (c"ompi_mpi_signed_char", 0x4c000118),
    (c"ompi_mpi_unsigned_char", 0x4c000102),
    (c"ompi_mpi_byte", 0x4c00010d),
    (c"ompi_mpi_short", 0x4c000203),
    (c"ompi_mpi_unsigned_short", 0x4c000204),
    (c"ompi_mpi_int", 0x4c000405),
    (c"ompi_mpi_unsigned", 0x4c000406),
    (c"ompi_mpi_long", 0x4c000807),
    (c"ompi_mpi_unsigned_long", 0x4c000808),
    (c"ompi_mpi_float", 0x4c00040a),
    (c"ompi_mpi_double", 0x4c00080b),
    (c"ompi_mpi_long_long_int", 0x4c000809),
    (c"ompi_mpi_unsigned_long_long", 0x4c000819),
    (c"ompi_mpi_float_int", 0x8c000000_u32 as i32),
    (c"ompi_mpi_double_int", 0x8c000001_u32 as i32),
    (c"ompi_mpi_long_int", 0x8c000002_u32 as i32),
    (c"ompi_mpi_short_int", 0x8c000003_u32 as i32),
    (c"ompi_mpi_2int", 0x4c000816),
    (c"ompi_mpi_int8_t", 0x4c000137),
    (c"ompi_mpi_int16_t", 0x4c000238),
    (c"ompi_mpi_int32_t", 0x4c000439),
    (c"ompi_mpi_int64_t", 0x4c00083a),
    (c"ompi_mpi_uint8_t", 0x4c00013b),
    (c"ompi_mpi_uint16_t", 0x4c00023c),
    (c"ompi_mpi_uint32_t", 0x4c00043d),
    (c"ompi_mpi_uint64_t", 0x4c00083e),
    (c"ompi_mpi_c_bool", 0x4c00013f),
    (c"ompi_mpi_aint", 0x4c000843),
    (c"ompi_mpi_offset", 0x4c000844),
    (c"ompi_mpi_count", 0x4c000845),
    (c"ompi_mpi_c_float_complex", 0x4c000840),
    (c"ompi_mpi_c_double_complex", 0x4c001041),
    (c"ompi_mpi_c_complex", 0x4c000840),
    (c"ompi_mpi_c_long_double_complex", 0x4c002042),
    (c"ompi_mpi_cxx_cplex", 0x4c000834),
    (c"ompi_mpi_cxx_dblcplex", 0x4c001035),
    (c"ompi_mpi_cxx_ldblcplex", 0x4c002036),
    (c"ompi_mpi_cplex", 0x4c00081e),
    (c"ompi_mpi_dblcplex", 0x4c001022),
    (c"ompi_mpi_complex8", 0x4c000828),
    (c"ompi_mpi_complex16", 0x4c00102a),
    (c"ompi_mpi_long_double", 0x4c00100c),
    (c"ompi_mpi_longdbl_int", 0x8c000004_u32 as i32),
    (c"ompi_mpi_2integer", 0x4c000820),
    // Fortran types as C programs (and mpi4py) pass them. REAL16 / COMPLEX32 are not taken:
    // Open MPI's REAL16 is gfortran's binary128, hcomm's (MPICH's) is C long double.
    (c"ompi_mpi_integer", 0x4c00041b),
    (c"ompi_mpi_integer1", 0x4c00012d),
    (c"ompi_mpi_integer2", 0x4c00022f),
    (c"ompi_mpi_integer4", 0x4c000430),
    (c"ompi_mpi_integer8", 0x4c000831),
    (c"ompi_mpi_real", 0x4c00041c),
    (c"ompi_mpi_dblprec", 0x4c00081f),
    (c"ompi_mpi_real4", 0x4c000427),
    (c"ompi_mpi_real8", 0x4c000829),
    (c"ompi_mpi_logical", 0x4c00041d),
    (c"ompi_mpi_2real", 0x4c000821),
    (c"ompi_mpi_2dblprec", 0x4c001023),
];

/// Open MPI's predefined reduction ops, with MPICH's handles.
const OMPI_OPS: &[(&CStr, i32)] = &[
    (c"ompi_mpi_op_max", 0x5800_0001),
    (c"ompi_mpi_op_min", 0x5800_0002),
    (c"ompi_mpi_op_sum", 0x5800_0003),
    (c"ompi_mpi_op_prod", 0x5800_0004),
    (c"ompi_mpi_op_land", 0x5800_0005),
    (c"ompi_mpi_op_band", 0x5800_0006),
    (c"ompi_mpi_op_lor", 0x5800_0007),
    (c"ompi_mpi_op_bor", 0x5800_0008),
    (c"ompi_mpi_op_lxor", 0x5800_0009),
    (c"ompi_mpi_op_bxor", 0x5800_000a),
    (c"ompi_mpi_op_minloc", 0x5800_000b),
    (c"ompi_mpi_op_maxloc", 0x5800_000c),
];

/// The host's handles hcomm needs, resolved once.
pub struct Tables {
    pub abi: Abi,
    /// The host's `MPI_COMM_WORLD`.
    pub world: usize,
    /// The host's `MPI_COMM_NULL` (0 when Open MPI's object is not found).
    comm_null: usize,
    /// Open MPI only: (object address, MPICH handle).
    types: Vec<(usize, i32)>,
    ops: Vec<(usize, i32)>,
}

fn resolve(list: &[(&CStr, i32)]) -> Vec<(usize, i32)> {
    list.iter()
        .filter_map(|&(name, v)| host::ompi_object(name).map(|a| (a, v)))
        .collect()
}

/// The tables for the detected host; `None` for hosts whose collectives are never taken.
pub fn tables() -> Option<&'static Tables> {
    static T: OnceLock<Option<Tables>> = OnceLock::new();
    T.get_or_init(|| {
        let abi = host::host().abi;
        let world = host::comm_world(abi)?;
        match abi {
            Abi::Mpich => Some(Tables {
                abi,
                world,
                comm_null: h::COMM_NULL as u32 as usize,
                types: Vec::new(),
                ops: Vec::new(),
            }),
            Abi::OpenMpi => Some(Tables {
                abi,
                world,
                comm_null: host::ompi_object(c"ompi_mpi_comm_null").unwrap_or(0),
                types: resolve(OMPI_TYPES),
                ops: resolve(OMPI_OPS),
            }),
            Abi::Mpi5 | Abi::Unknown => None,
        }
    })
    .as_ref()
}

impl Tables {
    /// Whether `comm` is the host's `MPI_COMM_WORLD`.
    pub fn is_world(&self, comm: usize) -> bool {
        match self.abi {
            // The upper half of an `int` argument register is undefined: compare the low half.
            Abi::Mpich => comm as u32 == self.world as u32,
            _ => comm == self.world,
        }
    }

    /// Whether `comm` is the host's `MPI_COMM_NULL` (or Open MPI's NULL pointer).
    pub fn is_comm_null(&self, comm: usize) -> bool {
        match self.abi {
            Abi::Mpich => comm as u32 == self.comm_null as u32,
            _ => comm == self.comm_null || comm == 0,
        }
    }

    /// The MPICH handle of a predefined datatype, or `None` (forward).
    pub fn datatype(&self, dt: usize) -> Option<i32> {
        let v = match self.abi {
            Abi::Mpich => dt as u32 as i32,
            _ => self.types.iter().find(|t| t.0 == dt)?.1,
        };
        h::datatype(v).is_some().then_some(v)
    }

    /// The MPICH handle of a predefined reduction op, or `None` (forward).
    pub fn op(&self, op: usize) -> Option<i32> {
        let v = match self.abi {
            Abi::Mpich => op as u32 as i32,
            _ => self.ops.iter().find(|t| t.0 == op)?.1,
        };
        h::op(v).is_some().then_some(v)
    }

    /// A send buffer argument: the host's `MPI_IN_PLACE` becomes hcomm's `(void *)-1`.
    pub fn send_buf(&self, p: *const c_void) -> *const c_void {
        match self.abi {
            Abi::OpenMpi if p as usize == 1 => h::IN_PLACE as *const c_void,
            _ => p,
        }
    }

    /// Whether `p` is the host's `MPI_IN_PLACE`.
    pub fn is_in_place(&self, p: *const c_void) -> bool {
        self.send_buf(p) as usize == h::IN_PLACE
    }

    /// hcomm's error class (MPICH numbering) as the host's.
    pub fn error_class(&self, c: c_int) -> c_int {
        match self.abi {
            Abi::OpenMpi => mpich_to_ompi_class(c),
            _ => c,
        }
    }
}

/// MPICH's error-class numbering to Open MPI's (the standard's order; MPICH moved `REQUEST`).
pub fn mpich_to_ompi_class(c: c_int) -> c_int {
    match c {
        0..=6 => c,
        7..=16 => c + 1, // ROOT 7->8 … INTERN 16->17
        17 => 18,        // IN_STATUS
        18 => 19,        // PENDING
        19 => 7,         // REQUEST
        _ => 16,         // OTHER
    }
}

/// `MPI_REAL16` and `MPI_COMPLEX32`: hcomm reduces them as C `long double` (upstream MPICH's
/// definition), but what the host means by them varies (Debian's MPICH 4.0.2 returns NaN for
/// any REAL16 sum; Open MPI's is binary128), so the preload leaves them to the host.
const HOST_DEFINED: [i32; 2] = [0x4c00102b, 0x4c00202c];

/// Whether hcomm can reduce datatype `dt` with op `op` (both MPICH handles, predefined) the way
/// the host would.
pub fn reducible(dt: i32, op: i32) -> bool {
    if HOST_DEFINED.contains(&dt) {
        return false;
    }
    match (h::datatype(dt), h::op(op)) {
        (Some((d, _)), Some((o, _))) => hcomm_core::reduce::is_supported(d.elem, o),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_classes() {
        assert_eq!(mpich_to_ompi_class(0), 0);
        assert_eq!(mpich_to_ompi_class(12), 13); // ARG
        assert_eq!(mpich_to_ompi_class(14), 15); // TRUNCATE
        assert_eq!(mpich_to_ompi_class(15), 16); // OTHER
        assert_eq!(mpich_to_ompi_class(16), 17); // INTERN
    }

    #[test]
    fn reducible_pairs() {
        assert!(reducible(0x4c00040a, 0x5800_0003)); // FLOAT SUM
        assert!(!reducible(0x4c00040a, 0x5800_0006)); // FLOAT BAND
        assert!(reducible(0x4c001022, 0x5800_0003)); // DOUBLE_COMPLEX SUM: taken (exact)
        assert!(!reducible(0x4c001022, 0x5800_0001)); // DOUBLE_COMPLEX MAX: not an MPI pair
        assert!(!reducible(0x4c00040e, 0x5800_0003)); // WCHAR SUM: forwarded
        assert!(!reducible(0x4c00102b, 0x5800_0003)); // REAL16 SUM: the host's own meaning
        assert!(reducible(0x4c00041d, 0x5800_0005)); // LOGICAL LAND: taken
        assert!(reducible(0x4c000821, 0x5800_000b)); // 2REAL MINLOC: taken
    }
}
