//! The reduction kernels (`kernels/reduce.cu`, shipped as PTX inside the library) and how
//! they are launched.
//!
//! Entry points `hcomm_reduce_<op>_<type>(struct { const void *p[8]; } srcs, int nsrc,
//! void *dst, unsigned long long count)`: `dst[i]` = the fold of `p[0][i] .. p[nsrc-1][i]`
//! in that order (rank order), with `dst` allowed to be any one of the sources exactly.
//! More than 8 sources are folded by a chain of launches whose first source is `dst` (the
//! fold so far). The PTX is JIT-compiled by the driver once per context, on first use.

use std::collections::HashMap;
use std::ffi::{c_void, CString};

use super::drv::{check, sys};
use super::staging::Slot;
use crate::datatype::{ElemType, ReduceOp};
use crate::error::{Error, Result};

/// The kernels' PTX (generated from `kernels/reduce.cu`).
pub(crate) const PTX: &str = include_str!("../../../kernels/hcomm_kernels.ptx");

/// Sources per launch (`struct hcomm_srcs`).
pub(crate) const MAX_SRCS: usize = 8;
/// Threads per block.
const BLOCK: u32 = 256;
/// Largest grid: the loops are grid-stride, so more blocks than this only add scheduling.
const MAX_GRID: u64 = 4096;

/// The kernel's name for an element type (pair types have none: their reductions take the
/// staged path and the CPU kernels).
fn type_name(t: ElemType) -> Option<&'static str> {
    use ElemType::*;
    Some(match t {
        F32 => "f32",
        F64 => "f64",
        F16 => "f16",
        BF16 => "bf16",
        // `MPI_CHAR` reduces as signed 8-bit, `MPI_BYTE` (bitwise) and `C_BOOL` (logical:
        // nonzero is true, results 0 or 1) as unsigned 8-bit, exactly as reduce.rs does.
        I8 | Char => "i8",
        I16 => "i16",
        I32 => "i32",
        I64 => "i64",
        U8 | Byte | Bool => "u8",
        U16 => "u16",
        U32 => "u32",
        U64 => "u64",
        _ => return None,
    })
}

fn op_name(o: ReduceOp) -> Option<&'static str> {
    use ReduceOp::*;
    Some(match o {
        Sum => "sum",
        Prod => "prod",
        Min => "min",
        Max => "max",
        Band => "band",
        Bor => "bor",
        Bxor => "bxor",
        Land => "land",
        Lor => "lor",
        Lxor => "lxor",
        Minloc | Maxloc => return None,
    })
}

/// The entry point for `(t, o)`, when MPI defines the pair and a kernel type exists.
pub(crate) fn kernel_name(t: ElemType, o: ReduceOp) -> Option<String> {
    if !crate::reduce::is_supported(t, o) {
        return None;
    }
    Some(format!("hcomm_reduce_{}_{}", op_name(o)?, type_name(t)?))
}

/// Whether `ptx` defines entry point `name`.
pub(crate) fn has_entry(ptx: &str, name: &str) -> bool {
    ptx.match_indices(".entry").any(|(i, _)| {
        let rest = ptx[i + ".entry".len()..].trim_start();
        rest.strip_prefix(name)
            .and_then(|r| r.chars().next())
            .is_some_and(|c| !(c.is_ascii_alphanumeric() || c == '_'))
    })
}

/// Whether the shipped PTX has the kernel for `(t, o)` (no CUDA call). The PTX is searched
/// once per process, for every pair.
pub(crate) fn available(t: ElemType, o: ReduceOp) -> bool {
    static HAVE: std::sync::OnceLock<Vec<(ElemType, ReduceOp)>> = std::sync::OnceLock::new();
    HAVE.get_or_init(|| {
        use ElemType::*;
        use ReduceOp::*;
        let types = [
            I8, U8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64, Bool, Byte, Char,
        ];
        let ops = [Max, Min, Sum, Prod, Land, Band, Lor, Bor, Lxor, Bxor];
        types
            .iter()
            .flat_map(|&t| ops.iter().map(move |&o| (t, o)))
            .filter(|&(t, o)| kernel_name(t, o).is_some_and(|n| has_entry(PTX, &n)))
            .collect()
    })
    .contains(&(t, o))
}

/// One source of a launch in a chain: the call's input `i`, or `dst` (the fold so far).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Src {
    Input(usize),
    Dst,
}

/// The launches that fold `n` inputs (n ≥ 1) into `dst` in order: the first takes inputs
/// `0..8`, each later one `dst` and the next seven.
pub(crate) fn chain(n: usize) -> Vec<Vec<Src>> {
    let mut out = vec![(0..n.min(MAX_SRCS)).map(Src::Input).collect::<Vec<_>>()];
    let mut next = n.min(MAX_SRCS);
    while next < n {
        let end = (next + MAX_SRCS - 1).min(n);
        let mut l = vec![Src::Dst];
        l.extend((next..end).map(Src::Input));
        out.push(l);
        next = end;
    }
    out
}

/// Blocks for `count` elements.
pub(crate) fn grid(count: u64) -> u32 {
    count.div_ceil(BLOCK as u64).clamp(1, MAX_GRID) as u32
}

/// The kernel module of one context, loaded on first use, and the functions looked up in it.
#[derive(Default)]
pub(crate) struct Module {
    module: usize,
    funcs: HashMap<String, usize>,
    /// Why the module could not be loaded in this context (remembered: the driver or the GPU
    /// will not change its mind, and a JIT attempt is expensive).
    failed: Option<Error>,
}

/// The driver the PTX needs at least (`cuDriverGetVersion`; see `kernels/gen-ptx.sh`).
pub(crate) const PTX_MIN_DRIVER: i32 = 13000;

impl Module {
    /// Whether kernel `name` can run in this context (the module's context must be current):
    /// loads the module (JIT-compiling the PTX) on the first question. A failure is logged
    /// once per process at WARN and remembered for the context; device reductions then stage
    /// through host memory.
    pub(crate) fn usable(&mut self, name: &str, driver: i32) -> bool {
        match self.function(name) {
            Ok(_) => true,
            Err(e) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    let hint = if driver < PTX_MIN_DRIVER {
                        format!(
                            "driver {}.{} is older than CUDA 13.0 (driver 580), which the kernels' PTX (ISA 9.0) needs",
                            driver / 1000,
                            driver % 1000 / 10
                        )
                    } else {
                        "the kernels' PTX (ISA 9.0, sm_75) needs driver >= 580 and a GPU of compute capability >= 7.5".to_string()
                    };
                    crate::warn!(
                        "GPU reduction kernels unavailable: {}; {hint}; device reductions stage through host memory",
                        e.msg
                    );
                });
                false
            }
        }
    }

    /// The function `name` (the module's context must be current).
    fn function(&mut self, name: &str) -> Result<sys::CUfunction> {
        if let Some(&f) = self.funcs.get(name) {
            return Ok(f as sys::CUfunction);
        }
        if let Some(e) = &self.failed {
            return Err(Error::new(e.class, e.msg.clone()));
        }
        if self.module == 0 {
            let image = CString::new(PTX)
                .map_err(|_| Error::intern("the embedded PTX contains a NUL byte"))?;
            let mut m: sys::CUmodule = std::ptr::null_mut();
            // SAFETY: a NUL-terminated PTX image; the driver copies what it needs.
            let r = check(
                unsafe { sys::cuModuleLoadData(&mut m, image.as_ptr().cast()) },
                "cuModuleLoadData (hcomm's reduction kernels)",
            );
            if let Err(e) = r {
                self.failed = Some(Error::new(e.class, e.msg.clone()));
                return Err(e);
            }
            self.module = m as usize;
        }
        let c = CString::new(name).map_err(|_| Error::intern("kernel name"))?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: a loaded module and a NUL-terminated name.
        check(
            unsafe { sys::cuModuleGetFunction(&mut f, self.module as sys::CUmodule, c.as_ptr()) },
            "cuModuleGetFunction",
        )
        .map_err(|e| e.context(name))?;
        self.funcs.insert(name.to_string(), f as usize);
        Ok(f)
    }
}

/// `struct hcomm_srcs`, passed by value.
#[repr(C)]
struct Srcs {
    p: [u64; MAX_SRCS],
}

/// Queues `dst[i] = fold(inputs[..][i])` for `count` elements of `elem` bytes on the slot's
/// stream. When `dst` is one of the inputs that a chain reads only after its first launch
/// (more than 8 inputs), the fold goes to the slot's scratch buffer and is copied to `dst`.
///
/// # Safety
/// Every input and `dst` is a device address (in the bound context, or mapped into it) of
/// `count` elements of the kernel's type; `dst` equals one input exactly or overlaps none.
pub(crate) unsafe fn reduce(
    module: &mut Module,
    slot: &mut Slot,
    name: &str,
    inputs: &[u64],
    dst: u64,
    count: u64,
    elem: usize,
) -> Result<()> {
    if count == 0 || inputs.is_empty() {
        return Ok(());
    }
    let f = module.function(name)?;
    let late_alias = inputs.iter().skip(MAX_SRCS).any(|&p| p == dst);
    let out = if late_alias {
        slot.scratch.ensure(count as usize * elem)?
    } else {
        dst
    };
    for launch in chain(inputs.len()) {
        let mut srcs = Srcs { p: [0; MAX_SRCS] };
        for (k, s) in launch.iter().enumerate() {
            srcs.p[k] = match *s {
                Src::Input(i) => inputs[i],
                Src::Dst => out,
            };
        }
        let mut nsrc = launch.len() as std::ffi::c_int;
        let mut d = out;
        let mut n = count as std::ffi::c_ulonglong;
        let mut params: [*mut c_void; 4] = [
            (&mut srcs as *mut Srcs).cast(),
            (&mut nsrc as *mut std::ffi::c_int).cast(),
            (&mut d as *mut u64).cast(),
            (&mut n as *mut std::ffi::c_ulonglong).cast(),
        ];
        // SAFETY: the parameters match the kernel's signature in order and size (a 64-byte
        // struct by value, int, pointer, unsigned long long); the driver copies them before
        // returning. The addresses are valid per this function's contract, and `out` is
        // either `dst` or our scratch of `count` elements.
        check(
            unsafe {
                sys::cuLaunchKernel(
                    f,
                    grid(count),
                    1,
                    1,
                    BLOCK,
                    1,
                    1,
                    0,
                    slot.stream,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            },
            "cuLaunchKernel",
        )
        .map_err(|e| e.context(name))?;
    }
    if late_alias {
        slot.d2d(dst, out, count as usize * elem)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_kernel_file() {
        assert_eq!(
            kernel_name(ElemType::F32, ReduceOp::Sum).as_deref(),
            Some("hcomm_reduce_sum_f32")
        );
        assert_eq!(
            kernel_name(ElemType::BF16, ReduceOp::Max).as_deref(),
            Some("hcomm_reduce_max_bf16")
        );
        assert_eq!(
            kernel_name(ElemType::Byte, ReduceOp::Bxor).as_deref(),
            Some("hcomm_reduce_bxor_u8")
        );
        assert_eq!(
            kernel_name(ElemType::Bool, ReduceOp::Lor).as_deref(),
            Some("hcomm_reduce_lor_u8")
        );
        assert_eq!(kernel_name(ElemType::F32, ReduceOp::Band), None, "not MPI");
        assert_eq!(kernel_name(ElemType::PairF32I32, ReduceOp::Minloc), None);
        assert_eq!(kernel_name(ElemType::Opaque, ReduceOp::Sum), None);
    }

    #[test]
    fn entry_points_are_found_exactly() {
        let ptx = ".visible .entry hcomm_reduce_sum_f32(\n .param .align 8 .b8 p[64]\n)\n\
                   .visible .entry hcomm_reduce_sum_f16 (\n";
        assert!(has_entry(ptx, "hcomm_reduce_sum_f32"));
        assert!(has_entry(ptx, "hcomm_reduce_sum_f16"));
        assert!(!has_entry(ptx, "hcomm_reduce_sum_f"));
        assert!(!has_entry(ptx, "hcomm_reduce_sum_f64"));
        assert!(!has_entry("// placeholder", "hcomm_reduce_sum_f32"));
    }

    #[test]
    fn chains_fold_in_order() {
        use Src::*;
        assert_eq!(chain(1), vec![vec![Input(0)]]);
        assert_eq!(chain(8), vec![(0..8).map(Input).collect::<Vec<_>>()]);
        let c = chain(9);
        assert_eq!(c.len(), 2);
        assert_eq!(c[1], vec![Dst, Input(8)]);
        let c = chain(22);
        assert_eq!(c.len(), 3);
        assert_eq!(c[1][0], Dst);
        // Every input exactly once, in increasing order, at most 8 sources per launch.
        let seen: Vec<usize> = c
            .iter()
            .flatten()
            .filter_map(|s| match s {
                Input(i) => Some(*i),
                Dst => None,
            })
            .collect();
        assert_eq!(seen, (0..22).collect::<Vec<_>>());
        assert!(c.iter().all(|l| l.len() <= MAX_SRCS));
        assert!(c.iter().skip(1).all(|l| l[0] == Dst));
    }

    #[test]
    fn grid_sizes() {
        assert_eq!(grid(1), 1);
        assert_eq!(grid(256), 1);
        assert_eq!(grid(257), 2);
        assert_eq!(grid(1 << 40), MAX_GRID as u32);
    }
}
