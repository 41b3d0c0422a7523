//! The "external32" data representation (`MPI_Pack_external`): every predefined element in
//! big-endian order with the sizes the MPI standard fixes (MPI 4.0, table 13.2), which differ
//! from the native ones for `MPI_LONG`/`MPI_UNSIGNED_LONG` (4 bytes), `MPI_WCHAR` (2 bytes)
//! and `long double` (IEEE binary128 instead of x87's 80-bit format). Pair types are their two
//! components back to back, without the native padding. Narrowing keeps the low-order bytes
//! (values must fit, as the standard requires); widening back sign-extends signed types.

use super::{Atom, Layout};
use crate::datatype::ElemType;

const MPI_LONG: i32 = 0x4c00_0807;
const MPI_UNSIGNED_LONG: i32 = 0x4c00_0808;
const MPI_WCHAR: i32 = 0x4c00_040e;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Enc {
    /// An integer or IEEE float: the native little-endian bytes reversed (and narrowed or
    /// widened when the sizes differ).
    Int { signed: bool },
    /// x87 80-bit extended in a 16-byte slot, binary128 in external32.
    LongDouble,
}

/// One component of a predefined type: native offset and size, external32 size, encoding.
#[derive(Clone, Copy, Debug)]
struct Part {
    off: usize,
    native: usize,
    ext: usize,
    enc: Enc,
}

const fn int(off: usize, native: usize, ext: usize, signed: bool) -> Part {
    Part {
        off,
        native,
        ext,
        enc: Enc::Int { signed },
    }
}

const fn same(off: usize, n: usize) -> Part {
    int(off, n, n, false)
}

const fn ld(off: usize) -> Part {
    Part {
        off,
        native: 16,
        ext: 16,
        enc: Enc::LongDouble,
    }
}

/// The components of an atom (at most two).
fn parts(a: &Atom) -> ([Part; 2], usize) {
    use ElemType::*;
    let none = same(0, 0);
    let one = |p| ([p, none], 1);
    let two = |p, q| ([p, q], 2);
    match (a.handle, a.dt.elem) {
        (MPI_LONG, _) => one(int(0, 8, 4, true)),
        (MPI_UNSIGNED_LONG, _) => one(int(0, 8, 4, false)),
        (MPI_WCHAR, _) => one(int(0, 4, 2, false)),
        (_, I8 | I16 | I32 | I64) => one(int(0, a.dt.size, a.dt.size, true)),
        (_, F80) => one(ld(0)),
        (_, C32) => two(same(0, 4), same(4, 4)),
        (_, C64) => two(same(0, 8), same(8, 8)),
        (_, C80) => two(ld(0), ld(16)),
        (_, PairI32I32 | PairF32I32 | PairF32F32) => two(same(0, 4), int(4, 4, 4, true)),
        (_, PairF64I32) => two(same(0, 8), int(8, 4, 4, true)),
        // MPI_LONG_INT: its long is 4 bytes in external32, like MPI_LONG.
        (_, PairI64I32) => two(int(0, 8, 4, true), int(8, 4, 4, true)),
        (_, PairI16I32) => two(int(0, 2, 2, true), int(4, 4, 4, true)),
        (_, PairF80I32) => two(ld(0), int(16, 4, 4, true)),
        (_, PairF64F64) => two(same(0, 8), same(8, 8)),
        // Unsigned integers, floats, bytes, booleans, characters, opaque types.
        _ => one(same(0, a.dt.size)),
    }
}

/// Bytes of one atom in external32.
fn atom_size(a: &Atom) -> usize {
    let (p, n) = parts(a);
    p[..n].iter().map(|p| p.ext).sum()
}

/// x87 extended (little-endian, 10 bytes used) to binary128 (as an integer): same sign,
/// exponent and bias; the explicit integer bit is dropped, the fraction kept at the top.
fn x87_to_quad(b: &[u8]) -> u128 {
    let mant = u64::from_le_bytes(b[..8].try_into().unwrap());
    let se = u16::from_le_bytes([b[8], b[9]]);
    (u128::from(se) << 112) | (u128::from(mant & !(1 << 63)) << 49)
}

fn quad_to_x87(q: u128) -> [u8; 16] {
    let se = (q >> 112) as u16;
    let frac = ((q >> 49) as u64) & !(1 << 63);
    // The integer bit is implicit in binary128: 1 for normal numbers, inf and NaN.
    let int_bit = u64::from(se & 0x7fff != 0) << 63;
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&(frac | int_bit).to_le_bytes());
    out[8..10].copy_from_slice(&se.to_le_bytes());
    out
}

impl Layout {
    /// Bytes of one item in external32 (`MPI_Pack_external_size` of one item).
    pub fn external32_size(&self) -> usize {
        self.runs.iter().map(|r| r.n * atom_size(&r.atom)).sum()
    }

    /// Packs `count` items at `src` into external32 at `dst` (`count · external32_size()`
    /// bytes).
    ///
    /// # Safety
    /// As for [`Layout::pack`], with `dst` writable for `count · external32_size()` bytes.
    pub unsafe fn pack_external32(&self, src: *const u8, count: usize, dst: *mut u8) {
        let mut out = dst;
        self.for_each_run(count, |off, r| {
            let (ps, np) = parts(&r.atom);
            for k in 0..r.n {
                let item = src.wrapping_offset(off).wrapping_add(k * r.atom.dt.extent);
                for p in &ps[..np] {
                    // SAFETY: per the contract: the component lies within a typemap entry at
                    // `src`, and `out` within the `count · external32_size()` bytes at `dst`.
                    let (nat, ext) = unsafe {
                        (
                            std::slice::from_raw_parts(item.add(p.off), p.native),
                            std::slice::from_raw_parts_mut(out, p.ext),
                        )
                    };
                    encode(p, nat, ext);
                    out = out.wrapping_add(p.ext);
                }
            }
        });
    }

    /// Unpacks external32 at `src` into `count` items at `dst` (the inverse of
    /// [`Layout::pack_external32`]); bytes outside the typemap's data are left untouched.
    ///
    /// # Safety
    /// As for [`Layout::unpack`], with `src` readable for `count · external32_size()` bytes.
    pub unsafe fn unpack_external32(&self, src: *const u8, count: usize, dst: *mut u8) {
        let mut inp = src;
        self.for_each_run(count, |off, r| {
            let (ps, np) = parts(&r.atom);
            for k in 0..r.n {
                let item = dst.wrapping_offset(off).wrapping_add(k * r.atom.dt.extent);
                for p in &ps[..np] {
                    // SAFETY: as in `pack_external32`, with the roles swapped.
                    let (ext, nat) = unsafe {
                        (
                            std::slice::from_raw_parts(inp, p.ext),
                            std::slice::from_raw_parts_mut(item.add(p.off), p.native),
                        )
                    };
                    decode(p, ext, nat);
                    inp = inp.wrapping_add(p.ext);
                }
            }
        });
    }
}

fn encode(p: &Part, nat: &[u8], ext: &mut [u8]) {
    match p.enc {
        Enc::LongDouble => ext.copy_from_slice(&x87_to_quad(nat).to_be_bytes()),
        // The low-order `ext` bytes, most significant first.
        Enc::Int { .. } => {
            for (o, i) in ext.iter_mut().zip(nat[..p.ext.min(p.native)].iter().rev()) {
                *o = *i;
            }
        }
    }
}

fn decode(p: &Part, ext: &[u8], nat: &mut [u8]) {
    match p.enc {
        Enc::LongDouble => {
            let q = u128::from_be_bytes(ext.try_into().unwrap());
            // Only the 10 bytes of data: the rest of the slot is padding.
            nat[..10].copy_from_slice(&quad_to_x87(q)[..10]);
        }
        Enc::Int { signed } => {
            let n = p.ext.min(p.native);
            for (o, i) in nat[..n].iter_mut().zip(ext.iter().rev()) {
                *o = *i;
            }
            let negative = signed && ext.first().is_some_and(|b| b & 0x80 != 0);
            nat[n..].fill(if negative { 0xff } else { 0 });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::Datatype;

    fn atom(handle: i32, elem: ElemType, size: usize, extent: usize) -> Layout {
        Layout::atom(Atom {
            handle,
            dt: Datatype::new(elem, size, extent),
            align: size.min(8),
        })
    }

    fn round_trip(l: &Layout, native: &[u8], expect: &[u8]) -> Vec<u8> {
        assert_eq!(l.external32_size(), expect.len());
        let mut ext = vec![0u8; expect.len()];
        // SAFETY: buffers of the layout's sizes.
        unsafe { l.pack_external32(native.as_ptr(), 1, ext.as_mut_ptr()) };
        assert_eq!(ext, expect);
        let mut back = vec![0xeeu8; native.len()];
        // SAFETY: as above.
        unsafe { l.unpack_external32(ext.as_ptr(), 1, back.as_mut_ptr()) };
        back
    }

    #[test]
    fn integers_are_big_endian_and_long_is_four_bytes() {
        let i = atom(0x4c00_0405, ElemType::I32, 4, 4);
        let v = 0x0102_0304i32.to_le_bytes();
        assert_eq!(round_trip(&i, &v, &[1, 2, 3, 4]), v);
        let l = atom(MPI_LONG, ElemType::I64, 8, 8);
        let v = (-2i64).to_le_bytes();
        assert_eq!(round_trip(&l, &v, &[0xff, 0xff, 0xff, 0xfe]), v);
        let v = 7i64.to_le_bytes();
        assert_eq!(round_trip(&l, &v, &[0, 0, 0, 7]), v);
        let d = atom(0x4c00_080b, ElemType::F64, 8, 8);
        let v = 1.5f64.to_le_bytes();
        assert_eq!(round_trip(&d, &v, &1.5f64.to_be_bytes()), v);
    }

    #[test]
    fn pairs_drop_their_padding() {
        let si = atom(0x8c00_0003_u32 as i32, ElemType::PairI16I32, 6, 8);
        let mut v = [0u8; 8];
        v[..2].copy_from_slice(&(-3i16).to_le_bytes());
        v[4..].copy_from_slice(&9i32.to_le_bytes());
        let back = round_trip(&si, &v, &[0xff, 0xfd, 0, 0, 0, 9]);
        assert_eq!(
            (&back[..2], &back[2..4], &back[4..]),
            (&v[..2], &[0xee, 0xee][..], &v[4..])
        );
    }

    #[test]
    fn long_double_is_binary128() {
        let l = atom(0x4c00_100c, ElemType::F80, 16, 16);
        // 1.0 in x87: mantissa 0x8000_0000_0000_0000, exponent 0x3fff.
        let mut v = [0u8; 16];
        v[7] = 0x80;
        v[8..10].copy_from_slice(&0x3fffu16.to_le_bytes());
        let mut q = [0u8; 16];
        q[0] = 0x3f;
        q[1] = 0xff;
        let back = round_trip(&l, &v, &q);
        assert_eq!(&back[..10], &v[..10]);
        // -2.5: exponent 0x4000 with the sign, mantissa 1.01b.
        let mut v = [0u8; 16];
        v[..8].copy_from_slice(&0xa000_0000_0000_0000u64.to_le_bytes());
        v[8..10].copy_from_slice(&0xc000u16.to_le_bytes());
        let mut q = [0u8; 16];
        q[0] = 0xc0;
        q[2] = 0x40;
        assert_eq!(&round_trip(&l, &v, &q)[..10], &v[..10]);
    }
}
