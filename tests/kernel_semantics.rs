//! The GPU reduction kernels (`kernels/reduce.cu`) checked without a GPU.
//!
//! * The committed PTX (`kernels/hcomm_kernels.ptx`) has exactly one entry point per
//!   (op, type) pair that the CPU kernels support (`hcomm_core::reduce::is_supported`), no
//!   other, and was compiled for compute_75 with IEEE arithmetic only (no FMA, no flush to
//!   zero, no approximations: a whitelist of float instructions) and without local memory.
//! * The kernel source, compiled for the host by g++ through `kernels/host_shim.h`
//!   (`tests/kernel_semantics/driver.cpp`), runs every entry point as a grid of simulated
//!   threads, and its output is compared bit for bit with the CPU kernels folding the same
//!   sources in the same order: every pair of special values (±0, ±inf, NaNs with payloads,
//!   signaling NaNs, subnormals, 16-bit rounding ties, overflow, integer extremes), and random
//!   values with 1 to 8 sources, counts from 0 to 4099, aligned, element-misaligned and
//!   byte-misaligned buffers, in place, over several grid shapes and thread orders. Bytes
//!   around the output and the sources must be left alone, and each simulated thread must
//!   take the memory-access path (16-byte vectors, scalar, bytewise) that the pointers'
//!   alignment allows.
//!
//! The host build has `-fsanitize=undefined`, so integer overflow, bad shifts and misaligned
//! typed accesses in the kernel source fail too. Without g++ the second part is skipped with
//! a message (scripts/test.sh installs g++).

use hcomm_core::datatype::{ElemType, ReduceOp};
use hcomm_core::reduce;
use std::collections::{BTreeSet, HashMap};
use std::ffi::{c_int, c_uint, c_ulonglong, c_void, CString};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

const SOURCE: &str = env!("CARGO_MANIFEST_DIR");

/// The element types the kernels cover, with their names in the entry points.
const TYPES: [(ElemType, &str); 12] = [
    (ElemType::F32, "f32"),
    (ElemType::F64, "f64"),
    (ElemType::F16, "f16"),
    (ElemType::BF16, "bf16"),
    (ElemType::I8, "i8"),
    (ElemType::I16, "i16"),
    (ElemType::I32, "i32"),
    (ElemType::I64, "i64"),
    (ElemType::U8, "u8"),
    (ElemType::U16, "u16"),
    (ElemType::U32, "u32"),
    (ElemType::U64, "u64"),
];

/// The operations the kernels cover, with their names in the entry points.
const OPS: [(ReduceOp, &str); 10] = [
    (ReduceOp::Sum, "sum"),
    (ReduceOp::Prod, "prod"),
    (ReduceOp::Min, "min"),
    (ReduceOp::Max, "max"),
    (ReduceOp::Band, "band"),
    (ReduceOp::Bor, "bor"),
    (ReduceOp::Bxor, "bxor"),
    (ReduceOp::Land, "land"),
    (ReduceOp::Lor, "lor"),
    (ReduceOp::Lxor, "lxor"),
];

/// Every (type, op, entry point) the kernels must provide: what the CPU kernels support.
fn expected_entries() -> Vec<(ElemType, ReduceOp, String)> {
    let mut v = Vec::new();
    for (op, on) in OPS {
        for (ty, tn) in TYPES {
            if reduce::is_supported(ty, op) {
                v.push((ty, op, format!("hcomm_reduce_{on}_{tn}")));
            }
        }
    }
    v
}

fn esize(ty: ElemType) -> usize {
    ty.extent().expect("fixed-size type")
}

fn is_float(ty: ElemType) -> bool {
    matches!(
        ty,
        ElemType::F16 | ElemType::BF16 | ElemType::F32 | ElemType::F64
    )
}

fn read_ptx() -> String {
    let path = format!("{SOURCE}/kernels/hcomm_kernels.ptx");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (generate it with scripts/gen-ptx.sh)"))
}

// ---------------------------------------------------------------------------------------
// The committed PTX
// ---------------------------------------------------------------------------------------

#[test]
fn ptx_has_exactly_the_cpu_supported_entry_points() {
    let ptx = read_ptx();
    let found: BTreeSet<String> = ptx
        .lines()
        .filter_map(|l| {
            let rest = &l[l.find(".entry ")? + ".entry ".len()..];
            Some(rest.split('(').next()?.trim().to_string())
        })
        .collect();
    let expected: BTreeSet<String> = expected_entries().into_iter().map(|e| e.2).collect();
    let missing: Vec<_> = expected.difference(&found).collect();
    let extra: Vec<_> = found.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "kernels/hcomm_kernels.ptx: missing entry points {missing:?}, unexpected {extra:?}"
    );
    // Integer-only ops exist for integers only, arithmetic for every type.
    assert!(
        expected.contains("hcomm_reduce_bxor_u8") && expected.contains("hcomm_reduce_sum_bf16")
    );
    assert!(!expected.contains("hcomm_reduce_band_f32"));
}

#[test]
fn ptx_targets_compute_75_with_ieee_arithmetic() {
    let ptx = read_ptx();
    let directive = |name: &str| {
        ptx.lines()
            .find_map(|l| l.strip_prefix(name).map(str::trim))
            .unwrap_or_else(|| panic!("no {name} directive in the PTX"))
    };
    assert_eq!(directive(".target"), "sm_75");
    assert_eq!(directive(".address_size"), "64");
    // PTX ISA 9.0 (CUDA 13.0): what drivers >= 580 load; kernels/README.md documents it.
    assert_eq!(directive(".version"), "9.0");
    let code: Vec<&str> = ptx
        .lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .collect();
    for l in &code {
        let op = l.split_whitespace().next().unwrap_or("");
        // Floating-point instructions: only those whose IEEE semantics reduce.rs assumes
        // (round to nearest even, subnormals kept, ordered comparisons, exact int-to-float).
        // Contraction (fma/mad) would round SUM/PROD differently from the CPU; .ftz or
        // .approx would change subnormal and general results.
        let parts: Vec<&str> = op.split('.').collect();
        if parts
            .iter()
            .any(|p| matches!(*p, "f16" | "f16x2" | "bf16" | "bf16x2" | "f32" | "f64"))
        {
            let ieee = matches!(
                parts.as_slice(),
                ["add" | "mul", "rn", "f32" | "f64"]
                    | ["setp", "eq" | "lt" | "gt" | "le" | "ge", "f32" | "f64"]
                    | ["cvt", "rn", "f32", "u32" | "u16" | "s32"]
            );
            assert!(
                ieee,
                "a floating-point instruction outside the IEEE set the tests assume: {l}"
            );
        }
        assert!(!op.contains(".ftz"), "flush-to-zero in the PTX: {l}");
        // A variable index into the by-value `srcs` (or any array) spills to local memory.
        assert!(!l.contains("__local_depot"), "local memory in the PTX: {l}");
    }
    assert!(
        code.iter().any(|l| l.starts_with("ld.global.v2.u64")),
        "no 16-byte vector loads in the PTX"
    );
}

// ---------------------------------------------------------------------------------------
// The host build of the kernels
// ---------------------------------------------------------------------------------------

type LaunchFn = unsafe extern "C" fn(
    kernel: *const c_void,
    grid: c_uint,
    block: c_uint,
    reverse: c_int,
    srcs: *const *const c_void,
    nsrc: c_int,
    dst: *mut c_void,
    count: c_ulonglong,
    poison: *const c_void,
);

/// The kernels compiled for the host and loaded.
struct Host {
    launch: LaunchFn,
    /// `hcomm_test_path_hits`: simulated threads per memory-access path.
    hits: *mut [u64; 3],
    kernels: HashMap<String, *const c_void>,
}

// SAFETY: the pointers are into a library that stays loaded for the whole process; the
// library's globals (launch shape, counters) are only touched while the `Mutex` that wraps
// the `Host` is held.
unsafe impl Send for Host {}

const PATH_VEC: usize = 0;
const PATH_SCALAR: usize = 1;
const PATH_BYTES: usize = 2;
const PATH_NAMES: [&str; 3] = ["16-byte vector", "scalar", "bytewise"];

/// The host build, compiled and loaded on first use; `None` (after saying why) when there
/// is no g++.
fn host() -> Option<MutexGuard<'static, Host>> {
    static HOST: OnceLock<Option<Mutex<Host>>> = OnceLock::new();
    HOST.get_or_init(|| build_host().map(Mutex::new))
        .as_ref()
        .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()))
}

fn build_host() -> Option<Host> {
    match Command::new("g++").arg("--version").output() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "SKIP kernel semantics on the host: g++ not found (scripts/test.sh installs it)"
            );
            return None;
        }
        Err(e) => panic!("g++ --version: {e}"),
        Ok(_) => {}
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let lib = dir.join(format!("hcomm-kernels-host-{}.so", std::process::id()));
    // The flags keep the host's float arithmetic IEEE (no contraction, no fast math), as
    // the NVRTC flags in scripts/gen-ptx.sh keep the GPU's.
    let out = Command::new("g++")
        .args([
            "-std=c++17",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-Wno-unknown-pragmas",
        ])
        .args(["-ffp-contract=off", "-fno-fast-math"])
        .args(["-fsanitize=undefined", "-fno-sanitize-recover=all"])
        .args(["-fPIC", "-shared", "-include"])
        .arg(format!("{SOURCE}/kernels/host_shim.h"))
        .arg(format!("-I{SOURCE}/kernels"))
        .arg(format!("{SOURCE}/tests/kernel_semantics/driver.cpp"))
        .arg("-o")
        .arg(&lib)
        .output()
        .expect("running g++");
    assert!(
        out.status.success(),
        "g++ failed to compile kernels/reduce.cu for the host:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = CString::new(lib.to_str().expect("utf-8 path")).expect("no NUL");
    // SAFETY: a library just built from our own sources; its initializers are UBSan's.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null(), "dlopen {}", lib.display());
    // The mapping outlives the file: nothing accumulates in the target directory.
    let _ = std::fs::remove_file(&lib);
    let sym = |name: &str| -> *mut c_void {
        let c = CString::new(name).expect("no NUL");
        // SAFETY: `handle` is a live library handle and `c` a C string.
        let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
        assert!(!p.is_null(), "{name} is missing from the host build");
        p
    };
    // SAFETY: `hcomm_test_launch` is defined in driver.cpp with exactly `LaunchFn`'s
    // signature.
    let launch = unsafe { std::mem::transmute::<*mut c_void, LaunchFn>(sym("hcomm_test_launch")) };
    let hits = sym("hcomm_test_path_hits").cast::<[u64; 3]>();
    let kernels = expected_entries()
        .into_iter()
        .map(|(_, _, name)| {
            let p = sym(&name).cast_const();
            (name, p)
        })
        .collect();
    Some(Host {
        launch,
        hits,
        kernels,
    })
}

// ---------------------------------------------------------------------------------------
// Buffers and inputs
// ---------------------------------------------------------------------------------------

const GUARD: usize = 64;
const GUARD_BYTE: u8 = 0xa5;

/// A buffer whose data starts `offset` bytes after a 64-byte boundary, between guard bytes.
struct Buf {
    mem: Vec<u8>,
    start: usize,
    len: usize,
}

impl Buf {
    fn new(data: &[u8], offset: usize) -> Buf {
        let mut mem = vec![GUARD_BYTE; data.len() + offset + 2 * GUARD + 64];
        let pad = mem.as_ptr().align_offset(64);
        let start = pad + GUARD + offset;
        mem[start..start + data.len()].copy_from_slice(data);
        Buf {
            mem,
            start,
            len: data.len(),
        }
    }
    fn ptr(&mut self) -> *mut u8 {
        self.mem[self.start..].as_mut_ptr()
    }
    fn data(&self) -> &[u8] {
        &self.mem[self.start..self.start + self.len]
    }
    fn guards_intact(&self) -> bool {
        let (before, rest) = self.mem.split_at(self.start);
        before
            .iter()
            .chain(&rest[self.len..])
            .all(|&b| b == GUARD_BYTE)
    }
}

/// xorshift64*: deterministic, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Values (as bits) where the rules are decided: zeros, infinities, quiet and signaling NaNs
/// of both signs with payloads, subnormals, extremes, values whose sums and products are
/// rounding ties or overflow; for integers the extremes and bit patterns.
fn specials(ty: ElemType) -> Vec<u64> {
    match ty {
        ElemType::F32 => vec![
            0x0000_0000,
            0x8000_0000,
            0x7f80_0000,
            0xff80_0000, // ±0, ±inf
            0x7fc0_0000,
            0xffc0_0000,
            0x7fc1_2345,
            0xffd0_0001, // quiet NaNs
            0x7f80_0001,
            0xff8a_bcde,
            0x7fbf_ffff, // signaling NaNs
            0x0000_0001,
            0x8000_0001,
            0x007f_ffff,
            0x0080_0000, // subnormals, min normal
            0x7f7f_ffff,
            0xff7f_ffff,
            0x7eff_ffff, // max finite
            0x3f80_0000,
            0xbf80_0000,
            0x3f80_0001,
            0x3380_0000,
            0x3400_0000, // 1, 1+ulp, ulp/2
            0x3f00_0000,
            0x4000_0000,
            0x5f80_0000,
            0x1f80_0000,
            0x4b80_0000, // 0.5, 2, 2^±64, 2^24
        ],
        ElemType::F64 => vec![
            0,
            0x8000_0000_0000_0000,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            0x7ff8_0000_0000_0000,
            0xfff8_0000_0000_0000,
            0x7ff8_0000_0001_2345,
            0xfffc_0000_0000_0001,
            0x7ff0_0000_0000_0001,
            0xfff4_0000_0000_abcd,
            0x0000_0000_0000_0001,
            0x8000_0000_0000_0001,
            0x000f_ffff_ffff_ffff,
            0x0010_0000_0000_0000,
            0x7fef_ffff_ffff_ffff,
            0xffef_ffff_ffff_ffff,
            0x3ff0_0000_0000_0000,
            0xbff0_0000_0000_0000,
            0x3ff0_0000_0000_0001,
            0x3ca0_0000_0000_0000,
            0x3fe0_0000_0000_0000,
            0x5ff0_0000_0000_0000,
            0x1ff0_0000_0000_0000,
        ],
        ElemType::F16 => vec![
            0x0000, 0x8000, 0x7c00, 0xfc00, // ±0, ±inf
            0x7e00, 0xfe00, 0x7fff, 0xfe3f, // quiet NaNs
            0x7d01, 0xfc01, // signaling NaNs
            0x0001, 0x8001, 0x0003, 0x0200, 0x03ff, 0x0400, // subnormals, min normal
            0x7bff, 0xfbff, 0x7800, // max finite, 32768
            0x3c00, 0xbc00, 0x3c01, 0x1000, 0x1400, // 1, 1+ulp, 2^-11 (tie with 1), 2^-10
            0x3800, 0x4c00, 0x5bff, 0x0c00, // 0.5, 16 (65504+16 ties to inf), 2^-12
        ],
        ElemType::BF16 => vec![
            0x0000, 0x8000, 0x7f80, 0xff80, // ±0, ±inf
            0x7fc0, 0xffc0, 0x7fff, 0xffe1, // quiet NaNs
            0x7f81, 0xffa5, // signaling NaNs
            0x0001, 0x8001, 0x007f, 0x0080, 0x0040, // subnormals, min normal
            0x7f7f, 0xff7f, 0x7f00, // max finite
            0x3f80, 0xbf80, 0x3f81, 0x3b80, 0x3c00, // 1, 1+ulp, 2^-8 (tie with 1), 2^-7
            0x3f00, 0x4000, 0x5f80, 0x1f80, 0x0100, // 0.5, 2, 2^±64
        ],
        _ => {
            let bits = 8 * esize(ty) as u32;
            let mask = u64::MAX >> (64 - bits);
            let top = 1u64 << (bits - 1);
            let mut v = vec![
                0,
                1,
                2,
                3,
                mask,
                mask - 1,
                top,
                top - 1,
                top + 1,
                0x5555_5555_5555_5555 & mask,
                0xaaaa_aaaa_aaaa_aaaa & mask,
                0x0123_4567_89ab_cdef & mask,
                0x80 & mask,
                0xff & mask,
                0x100 & mask,
            ];
            v.sort_unstable();
            v.dedup();
            v
        }
    }
}

/// A random element: a special value, random bits, or (the most) a value of moderate
/// magnitude, so that float sums and products round rather than saturate.
fn random_elem(ty: ElemType, pool: &[u64], rng: &mut Rng) -> u64 {
    let r = rng.next();
    match rng.below(4) {
        0 => pool[(r % pool.len() as u64) as usize],
        1 => r,
        _ => {
            let sign = r >> 63;
            let mant = r >> 11;
            let exp_delta = rng.below(21) as i64 - 10;
            match ty {
                ElemType::F32 => sign << 31 | ((127 + exp_delta) as u64) << 23 | (mant & 0x7f_ffff),
                ElemType::F64 => {
                    sign << 63 | ((1023 + 2 * exp_delta) as u64) << 52 | (mant & 0xf_ffff_ffff_ffff)
                }
                ElemType::F16 => sign << 15 | ((15 + exp_delta / 2) as u64) << 10 | (mant & 0x3ff),
                ElemType::BF16 => sign << 15 | ((127 + exp_delta) as u64) << 7 | (mant & 0x7f),
                _ => (rng.below(9) as i64 - 4) as u64, // small, both signs
            }
        }
    }
}

fn encode(ty: ElemType, vals: impl IntoIterator<Item = u64>) -> Vec<u8> {
    let e = esize(ty);
    let mut out = Vec::new();
    for v in vals {
        // Little-endian, as the GPU and the hosts this runs on are.
        out.extend_from_slice(&v.to_le_bytes()[..e]);
    }
    out
}

fn elem_hex(bytes: &[u8]) -> String {
    bytes.iter().rev().map(|b| format!("{b:02x}")).collect()
}

/// The CPU kernels folding the sources in order: `acc = s0; acc = acc op s_k`.
fn cpu_fold(ty: ElemType, op: ReduceOp, srcs: &[Vec<u8>], count: usize) -> Vec<u8> {
    let mut acc = srcs[0].clone();
    for s in &srcs[1..] {
        // SAFETY: `acc` and `s` hold `count` elements each and do not overlap.
        unsafe { reduce::reduce_inplace(ty, op, acc.as_mut_ptr(), s.as_ptr(), count) };
    }
    acc
}

/// Where the buffers start relative to a 64-byte boundary.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// Everything 64-byte aligned.
    Aligned,
    /// Everything one element past the boundary: vectors after a scalar head.
    ElemShifted,
    /// Source k at k elements past the boundary: alignments mod 16 differ.
    Staggered,
    /// The last source one byte off: not element-aligned.
    ByteOff,
    /// Everything 3 bytes past the boundary.
    AllOdd,
    /// dst is source 0 (aligned), in place.
    InPlace,
    /// dst is source 0, one element past the boundary; the other sources aligned.
    InPlaceShifted,
}

const LAYOUTS: [Layout; 7] = [
    Layout::Aligned,
    Layout::ElemShifted,
    Layout::Staggered,
    Layout::ByteOff,
    Layout::AllOdd,
    Layout::InPlace,
    Layout::InPlaceShifted,
];

impl Layout {
    /// (dst offset, source offsets, dst is source 0).
    fn offsets(self, nsrc: usize, e: usize) -> (usize, Vec<usize>, bool) {
        let src = |f: &dyn Fn(usize) -> usize| (0..nsrc).map(f).collect::<Vec<_>>();
        match self {
            Layout::Aligned => (0, src(&|_| 0), false),
            Layout::ElemShifted => (e, src(&|_| e), false),
            Layout::Staggered => (0, src(&|k| k * e), false),
            Layout::ByteOff => (0, src(&|k| usize::from(k + 1 == nsrc)), false),
            Layout::AllOdd => (3, src(&|_| 3), false),
            Layout::InPlace => (0, src(&|_| 0), true),
            Layout::InPlaceShifted => (e, src(&|k| if k == 0 { e } else { 0 }), true),
        }
    }
}

/// The path the kernels promise for these offsets (the bases are 64-byte aligned): bytewise
/// if a pointer is not element-aligned, else 16-byte vectors if all are equal mod 16, else
/// scalar.
fn expected_path(dst_off: usize, src_offs: &[usize], e: usize) -> usize {
    if src_offs.iter().chain([&dst_off]).any(|o| o % e != 0) {
        PATH_BYTES
    } else if src_offs.iter().all(|o| o % 16 == dst_off % 16) {
        PATH_VEC
    } else {
        PATH_SCALAR
    }
}

struct Case<'a> {
    ty: ElemType,
    op: ReduceOp,
    name: &'a str,
    /// The sources' data, `count` elements each.
    srcs: Vec<Vec<u8>>,
    count: usize,
    layout: Layout,
    grid: u32,
    block: u32,
    reverse: bool,
}

/// Runs one launch on the host build and compares it with the CPU; `Err` describes the
/// first differences.
fn run_case(host: &Host, c: &Case) -> Result<(), String> {
    let e = esize(c.ty);
    let nsrc = c.srcs.len();
    let (dst_off, src_offs, in_place) = c.layout.offsets(nsrc, e);
    let mut bufs: Vec<Buf> = c
        .srcs
        .iter()
        .zip(&src_offs)
        .map(|(d, &o)| Buf::new(d, o))
        .collect();
    let mut own_dst = Buf::new(&vec![0x5a; c.count * e], dst_off);
    let dst = if in_place {
        bufs[0].ptr()
    } else {
        own_dst.ptr()
    };
    let ptrs: Vec<*const c_void> = bufs
        .iter_mut()
        .map(|b| b.ptr().cast_const().cast())
        .collect();
    let kernel = host.kernels[c.name];
    let what = format!(
        "{} nsrc={nsrc} count={} layout={:?} grid={}x{}{}",
        c.name,
        c.count,
        c.layout,
        c.grid,
        c.block,
        if c.reverse { " reversed" } else { "" }
    );
    // SAFETY: the counters are the library's `unsigned long long[3]`; we hold the lock.
    unsafe { host.hits.write([0; 3]) };
    // SAFETY: `kernel` is an entry point of the host build; every source holds `count`
    // elements at its pointer and `dst` has room for them (or is source 0); the poison
    // pointer is never dereferenced by a correct kernel (slots past `nsrc` are unused).
    unsafe {
        (host.launch)(
            kernel,
            c.grid,
            c.block,
            c_int::from(c.reverse),
            ptrs.as_ptr(),
            nsrc as c_int,
            dst.cast(),
            c.count as c_ulonglong,
            std::ptr::without_provenance(1),
        )
    };
    // SAFETY: as above.
    let hits = unsafe { host.hits.read() };

    let expected = cpu_fold(c.ty, c.op, &c.srcs, c.count);
    let got = if in_place {
        bufs[0].data()
    } else {
        own_dst.data()
    };
    let lenient_nan = !cfg!(target_arch = "x86_64")
        && is_float(c.ty)
        && matches!(c.op, ReduceOp::Sum | ReduceOp::Prod);
    let mut diffs = Vec::new();
    for i in 0..c.count {
        let (x, y) = (&expected[i * e..(i + 1) * e], &got[i * e..(i + 1) * e]);
        // Off x86_64 the CPU's default NaN is another one; the kernels give x86_64's.
        if x != y && !(lenient_nan && is_nan(c.ty, x) && is_nan(c.ty, y)) {
            if diffs.len() < 6 {
                let ops: Vec<String> = c
                    .srcs
                    .iter()
                    .map(|s| elem_hex(&s[i * e..(i + 1) * e]))
                    .collect();
                diffs.push(format!(
                    "  [{i}] operands {} : cpu {} kernel {}",
                    ops.join(" "),
                    elem_hex(x),
                    elem_hex(y)
                ));
            } else {
                diffs.push(String::new());
            }
        }
    }
    let mut problems = Vec::new();
    if !diffs.is_empty() {
        let n = diffs.len();
        diffs.retain(|d| !d.is_empty());
        problems.push(format!("{n} elements differ:\n{}", diffs.join("\n")));
    }
    for (k, b) in bufs.iter().enumerate() {
        if !b.guards_intact() {
            problems.push(format!("bytes around source {k} were written"));
        }
        if !(in_place && k == 0) && b.data() != c.srcs[k].as_slice() {
            problems.push(format!("source {k} was modified"));
        }
    }
    if !in_place && !own_dst.guards_intact() {
        problems.push("bytes around dst were written".into());
    }
    let path = expected_path(dst_off, &src_offs, e);
    let mut want = [0u64; 3];
    want[path] = u64::from(c.grid) * u64::from(c.block);
    if hits != want {
        problems.push(format!(
            "memory paths taken {hits:?}, expected every thread on the {} path",
            PATH_NAMES[path]
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{what}: {}", problems.join("; ")))
    }
}

fn is_nan(ty: ElemType, b: &[u8]) -> bool {
    let mut v = [0u8; 8];
    v[..b.len()].copy_from_slice(b);
    let v = u64::from_le_bytes(v);
    match ty {
        ElemType::F32 => v & 0x7fff_ffff > 0x7f80_0000,
        ElemType::F64 => v & 0x7fff_ffff_ffff_ffff > 0x7ff0_0000_0000_0000,
        ElemType::F16 => v & 0x7fff > 0x7c00,
        ElemType::BF16 => v & 0x7fff > 0x7f80,
        _ => false,
    }
}

fn report(failures: Vec<String>, cases: usize) {
    if !failures.is_empty() {
        let shown: Vec<_> = failures.iter().take(12).cloned().collect();
        panic!(
            "{} of {cases} kernel launches differ from the CPU kernels:\n{}",
            failures.len(),
            shown.join("\n")
        );
    }
    eprintln!("{cases} kernel launches match the CPU kernels bit for bit");
}

// ---------------------------------------------------------------------------------------
// The tests on the host build
// ---------------------------------------------------------------------------------------

/// Every ordered pair of special values, as the only two sources, then as the first two of
/// three in place (the third a shuffle of the same values).
#[test]
fn special_value_pairs_match_the_cpu() {
    let Some(host) = host() else { return };
    let (mut failures, mut cases) = (Vec::new(), 0);
    for (ty, op, name) in expected_entries() {
        let pool = specials(ty);
        let p = pool.len();
        let s0 = encode(ty, (0..p * p).map(|i| pool[i / p]));
        let s1 = encode(ty, (0..p * p).map(|i| pool[i % p]));
        let s2 = encode(ty, (0..p * p).map(|i| pool[(i * 7 + 3) % p]));
        for (srcs, layout) in [
            (vec![s0.clone(), s1.clone()], Layout::Aligned),
            (vec![s0.clone(), s1.clone(), s2], Layout::InPlace),
            (vec![s1.clone(), s0.clone()], Layout::ByteOff),
        ] {
            let c = Case {
                ty,
                op,
                name: &name,
                srcs,
                count: p * p,
                layout,
                grid: 2,
                block: 64,
                reverse: false,
            };
            cases += 1;
            if let Err(e) = run_case(&host, &c) {
                failures.push(e);
            }
        }
    }
    report(failures, cases);
}

/// Random values over 1..8 sources, counts 0..4099, every layout and several grid shapes.
#[test]
fn random_inputs_match_the_cpu() {
    let Some(host) = host() else { return };
    const COUNTS: [usize; 7] = [0, 1, 2, 7, 33, 1000, 4099];
    const SHAPES: [(u32, u32); 5] = [(1, 1), (1, 256), (3, 256), (2, 7), (5, 32)];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut failures, mut cases) = (Vec::new(), 0);
    for (ty, op, name) in expected_entries() {
        let pool = specials(ty);
        let mut run = |nsrc: usize, count: usize, layout: Layout, shape: (u32, u32), rev: bool| {
            let srcs = (0..nsrc)
                .map(|_| encode(ty, (0..count).map(|_| random_elem(ty, &pool, &mut rng))))
                .collect();
            let c = Case {
                ty,
                op,
                name: &name,
                srcs,
                count,
                layout,
                grid: shape.0,
                block: shape.1,
                reverse: rev,
            };
            cases += 1;
            if let Err(e) = run_case(&host, &c) {
                failures.push(e);
            }
        };
        for nsrc in 1..=8 {
            for (ci, &count) in COUNTS.iter().enumerate() {
                let layout = LAYOUTS[(3 * nsrc + ci) % LAYOUTS.len()];
                let shape = SHAPES[(nsrc + 2 * ci) % SHAPES.len()];
                run(nsrc, count, layout, shape, (nsrc + ci) % 2 == 1);
            }
        }
        // Every layout with enough sources and elements for all of its paths.
        for layout in LAYOUTS {
            run(5, 333, layout, (3, 32), false);
        }
    }
    report(failures, cases);
}

/// `nsrc` outside 1..8 leaves everything alone.
#[test]
fn invalid_source_counts_do_nothing() {
    let Some(host) = host() else { return };
    let count = 40;
    let mut srcs: Vec<Buf> = (0..8)
        .map(|k| Buf::new(&vec![k as u8 + 1; count * 4], 0))
        .collect();
    let ptrs: Vec<*const c_void> = srcs
        .iter_mut()
        .map(|b| b.ptr().cast_const().cast())
        .collect();
    for nsrc in [0, -1, 9] {
        let mut dst = Buf::new(&vec![0x5a; count * 4], 0);
        // SAFETY: the counters are the library's; we hold the lock.
        unsafe { host.hits.write([0; 3]) };
        // SAFETY: as in `run_case`; 8 valid source pointers are given for nsrc = 9.
        unsafe {
            (host.launch)(
                host.kernels["hcomm_reduce_sum_f32"],
                2,
                32,
                0,
                ptrs.as_ptr(),
                nsrc,
                dst.ptr().cast(),
                count as c_ulonglong,
                std::ptr::null(),
            )
        };
        assert!(
            dst.data().iter().all(|&b| b == 0x5a) && dst.guards_intact(),
            "nsrc={nsrc}: dst written"
        );
        // SAFETY: as above.
        assert_eq!(
            unsafe { host.hits.read() },
            [0; 3],
            "nsrc={nsrc}: a thread went on"
        );
    }
}
