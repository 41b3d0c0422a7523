//! Test data for `hcomm bench --check`: the values each rank puts into its input buffers and
//! what every element of a result must then be, for each datatype and reduction op.
//!
//! # Why the results are exact
//!
//! Every value is a small non-negative integer, so every supported datatype holds it exactly
//! and every reduction of such values is exact whatever order the library combines them in:
//! element `k` of rank `r`'s input is `v(r, k) = (3k + 5r + 1) mod 11` (0..=10); for `prod` it
//! is 2 when `(k + r) mod 16 == 0` and 1 otherwise, so an element's product is at most
//! `2^ceil(n/16)`. The expected value is computed in `i64` and then stored in the datatype:
//! integer types wrap exactly as MPI's integer arithmetic does (`as` truncates), floating
//! types hold sums up to 2^24 (`float`), 2^53 (`double`), 2048 (`half`: 204 ranks) and 256
//! (`bfloat16`: 25 ranks) exactly. Logical ops treat non-zero as true and give 0 or 1.
//!
//! Both `v` and the expected values repeat with period [`PERIOD`] in `k` (11 × 16), so a buffer
//! is filled and checked against a table of `PERIOD` encoded elements, not element by element
//! through the datatype conversion.

/// `v(r, k)` and every expected value depend on `k` only modulo this (lcm of 11 and 16).
pub const PERIOD: usize = 176;

/// How an integer value is stored in a datatype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repr {
    /// Two's complement, the low `size` bytes (signedness does not change the bytes).
    Int,
    F16,
    BF16,
    F32,
    F64,
}

/// A datatype the benchmark can move and check.
#[derive(Debug)]
pub struct Dtype {
    pub name: &'static str,
    /// Other accepted spellings.
    pub aliases: &'static [&'static str],
    /// The MPICH-ABI handle.
    pub handle: i32,
    pub size: usize,
    pub repr: Repr,
}

/// The datatypes of nccl-tests (`-d`), as MPI's fixed-width and floating types.
pub const DTYPES: &[Dtype] = &[
    Dtype {
        name: "int8",
        aliases: &["char", "i8"],
        handle: 0x4c00_0137,
        size: 1,
        repr: Repr::Int,
    },
    Dtype {
        name: "uint8",
        aliases: &["u8"],
        handle: 0x4c00_013b,
        size: 1,
        repr: Repr::Int,
    },
    Dtype {
        name: "int16",
        aliases: &["i16"],
        handle: 0x4c00_0238,
        size: 2,
        repr: Repr::Int,
    },
    Dtype {
        name: "uint16",
        aliases: &["u16"],
        handle: 0x4c00_023c,
        size: 2,
        repr: Repr::Int,
    },
    Dtype {
        name: "int32",
        aliases: &["int", "i32"],
        handle: 0x4c00_0439,
        size: 4,
        repr: Repr::Int,
    },
    Dtype {
        name: "uint32",
        aliases: &["u32"],
        handle: 0x4c00_043d,
        size: 4,
        repr: Repr::Int,
    },
    Dtype {
        name: "int64",
        aliases: &["i64"],
        handle: 0x4c00_083a,
        size: 8,
        repr: Repr::Int,
    },
    Dtype {
        name: "uint64",
        aliases: &["u64"],
        handle: 0x4c00_083e,
        size: 8,
        repr: Repr::Int,
    },
    Dtype {
        name: "half",
        aliases: &["f16", "float16"],
        handle: 0x4c00_0246,
        size: 2,
        repr: Repr::F16,
    },
    Dtype {
        name: "bfloat16",
        aliases: &["bf16"],
        handle: 0x4c00_024c,
        size: 2,
        repr: Repr::BF16,
    },
    Dtype {
        name: "float",
        aliases: &["f32", "float32"],
        handle: 0x4c00_040a,
        size: 4,
        repr: Repr::F32,
    },
    Dtype {
        name: "double",
        aliases: &["f64", "float64"],
        handle: 0x4c00_080b,
        size: 8,
        repr: Repr::F64,
    },
];

/// A reduction op the benchmark can check.
#[derive(Debug)]
pub struct Op {
    pub name: &'static str,
    /// The MPICH-ABI handle.
    pub handle: i32,
    /// MPI allows it on integer types only (logical and bitwise ops).
    pub int_only: bool,
    combine: fn(i64, i64) -> i64,
}

fn truth(a: i64) -> bool {
    a != 0
}

pub const OPS: &[Op] = &[
    Op {
        name: "sum",
        handle: 0x5800_0003,
        int_only: false,
        combine: i64::wrapping_add,
    },
    Op {
        name: "prod",
        handle: 0x5800_0004,
        int_only: false,
        combine: i64::wrapping_mul,
    },
    Op {
        name: "max",
        handle: 0x5800_0001,
        int_only: false,
        combine: std::cmp::max,
    },
    Op {
        name: "min",
        handle: 0x5800_0002,
        int_only: false,
        combine: std::cmp::min,
    },
    Op {
        name: "land",
        handle: 0x5800_0005,
        int_only: true,
        combine: |a, b| (truth(a) && truth(b)) as i64,
    },
    Op {
        name: "lor",
        handle: 0x5800_0007,
        int_only: true,
        combine: |a, b| (truth(a) || truth(b)) as i64,
    },
    Op {
        name: "lxor",
        handle: 0x5800_0009,
        int_only: true,
        combine: |a, b| (truth(a) != truth(b)) as i64,
    },
    Op {
        name: "band",
        handle: 0x5800_0006,
        int_only: true,
        combine: |a, b| a & b,
    },
    Op {
        name: "bor",
        handle: 0x5800_0008,
        int_only: true,
        combine: |a, b| a | b,
    },
    Op {
        name: "bxor",
        handle: 0x5800_000a,
        int_only: true,
        combine: |a, b| a ^ b,
    },
];

/// Looks a datatype up by name or alias (case-insensitive).
pub fn dtype(name: &str) -> Option<&'static Dtype> {
    let n = name.to_ascii_lowercase();
    DTYPES
        .iter()
        .find(|d| d.name == n || d.aliases.contains(&n.as_str()))
}

/// Looks an op up by name (case-insensitive, `MPI_` prefix optional).
pub fn op(name: &str) -> Option<&'static Op> {
    let n = name.to_ascii_lowercase();
    let n = n.strip_prefix("mpi_").unwrap_or(&n);
    OPS.iter().find(|o| o.name == n)
}

/// Stores the integer `v` in `out` (`dt.size` bytes) as datatype `dt` would hold it.
fn encode(dt: &Dtype, v: i64, out: &mut [u8]) {
    match dt.repr {
        Repr::Int => out.copy_from_slice(&v.to_le_bytes()[..dt.size]),
        Repr::F32 => out.copy_from_slice(&(v as f32).to_le_bytes()),
        Repr::F64 => out.copy_from_slice(&(v as f64).to_le_bytes()),
        Repr::BF16 => out.copy_from_slice(&(((v as f32).to_bits() >> 16) as u16).to_le_bytes()),
        Repr::F16 => out.copy_from_slice(&f16_bits(v as f32).to_le_bytes()),
    }
    if cfg!(target_endian = "big") {
        out.reverse();
    }
}

/// IEEE half precision of a float that is an integer (or infinite); values too large become
/// infinity. Exact for every integer half can hold, which is all the checker needs.
fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    if exp == 0 {
        return sign; // zero (integers have no subnormals)
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    sign | ((e as u16) << 10) | ((b >> 13) & 0x3ff) as u16
}

/// The values and expected results of one run: a datatype, an op and a communicator size.
pub struct Pattern {
    pub dt: &'static Dtype,
    op: &'static Op,
    nranks: usize,
}

/// `PERIOD` encoded elements, element `j` being the value for every `k ≡ j (mod PERIOD)`.
pub struct Table {
    bytes: Vec<u8>,
    size: usize,
}

impl Table {
    fn element(&self, k: usize) -> &[u8] {
        let j = k % PERIOD;
        &self.bytes[j * self.size..(j + 1) * self.size]
    }

    /// Fills `buf` (whole elements) with the elements `first_k, first_k + 1, ...`.
    pub fn fill(&self, buf: &mut [u8], first_k: usize) {
        for (e, chunk) in buf.chunks_exact_mut(self.size).enumerate() {
            chunk.copy_from_slice(self.element(first_k + e));
        }
    }

    /// How many elements of `buf` differ from the elements `first_k, first_k + 1, ...`.
    pub fn count_wrong(&self, buf: &[u8], first_k: usize) -> u64 {
        buf.chunks_exact(self.size)
            .enumerate()
            .filter(|(e, chunk)| *chunk != self.element(first_k + e))
            .count() as u64
    }
}

impl Pattern {
    pub fn new(dt: &'static Dtype, op: &'static Op, nranks: usize) -> Pattern {
        Pattern { dt, op, nranks }
    }

    fn value(&self, r: usize, k: usize) -> i64 {
        if self.op.name == "prod" {
            if (k + r) % 16 == 0 {
                2
            } else {
                1
            }
        } else {
            ((3 * k + 5 * r + 1) % 11) as i64
        }
    }

    fn table(&self, f: impl Fn(usize) -> i64) -> Table {
        let size = self.dt.size;
        let mut bytes = vec![0u8; PERIOD * size];
        for (j, chunk) in bytes.chunks_exact_mut(size).enumerate() {
            encode(self.dt, f(j), chunk);
        }
        Table { bytes, size }
    }

    /// Rank `r`'s input: element `k` is `v(r, k)`.
    pub fn input(&self, r: usize) -> Table {
        self.table(|k| self.value(r, k))
    }

    /// The reduction over all ranks of element `k`.
    pub fn reduced(&self) -> Table {
        self.table(|k| {
            (1..self.nranks).fold(self.value(0, k), |acc, r| {
                (self.op.combine)(acc, self.value(r, k))
            })
        })
    }
}

/// Bytes that no input or result holds in any datatype (-1 as an integer, NaN as a float):
/// an output buffer is filled with them before the checked call, so an element the library
/// never writes is counted as wrong.
pub const POISON: u8 = 0xff;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_are_exact() {
        let mut b = [0u8; 2];
        encode(dtype("half").unwrap(), 2048, &mut b);
        assert_eq!(u16::from_le_bytes(b), 0x6800);
        encode(dtype("half").unwrap(), 3, &mut b);
        assert_eq!(u16::from_le_bytes(b), 0x4200);
        encode(dtype("bf16").unwrap(), 10, &mut b);
        assert_eq!(u16::from_le_bytes(b), 0x4120);
        encode(dtype("int16").unwrap(), -1, &mut b);
        assert_eq!(b, [0xff, 0xff]);
        let mut b1 = [0u8; 1];
        encode(dtype("int8").unwrap(), 300, &mut b1);
        assert_eq!(b1, [44]); // 300 wraps to 44
    }

    #[test]
    fn reduced_matches_a_direct_sum() {
        let p = Pattern::new(dtype("int32").unwrap(), op("sum").unwrap(), 3);
        let t = p.reduced();
        for k in [0, 1, 10, 175, 176, 1000] {
            let want: i64 = (0..3).map(|r| ((3 * k + 5 * r + 1) % 11) as i64).sum();
            assert_eq!(t.element(k), &(want as i32).to_le_bytes());
        }
        let p = Pattern::new(dtype("float").unwrap(), op("MPI_PROD").unwrap(), 17);
        // k = 0: ranks 0 and 16 contribute a 2.
        assert_eq!(p.reduced().element(0), &4f32.to_le_bytes());
    }

    #[test]
    fn fill_and_count_wrong() {
        let p = Pattern::new(dtype("double").unwrap(), op("max").unwrap(), 2);
        let t = p.input(1);
        let mut buf = vec![0u8; 8 * 500];
        t.fill(&mut buf, 7);
        assert_eq!(t.count_wrong(&buf, 7), 0);
        buf[8 * 300] ^= 1;
        buf[8 * 499 + 7] = POISON;
        assert_eq!(t.count_wrong(&buf, 7), 2);
        assert_eq!(
            f64::from_le_bytes(buf[..8].try_into().unwrap()),
            ((3 * 7 + 5 + 1) % 11) as f64
        );
    }
}
