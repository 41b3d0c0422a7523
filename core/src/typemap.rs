//! Derived datatypes: layouts (typemaps) and packing.
//!
//! MPI describes a derived datatype by its *typemap*: a list of (displacement, predefined type)
//! entries in construction order, plus a lower bound `lb` and upper bound `ub` whose difference
//! is the *extent* (the stride between consecutive items of the type in a buffer). A [`Layout`]
//! stores the typemap as *runs* — `n` consecutive atoms of one predefined type, each
//! `atom.extent` bytes after the previous — so `MPI_Type_contiguous(1 << 30, MPI_INT)` is one
//! run, not a billion entries, and a vector is one run per block.
//!
//! The bounds follow MPICH (checked against MPICH 4.0.2 and Open MPI 4.1.4 with a C probe; the
//! two agree except where noted):
//! * a block of `k` copies of `old` at displacement `d` spans
//!   `[d + old.lb, d + (k-1)·old.extent + old.ub)`;
//! * contiguous, vector, indexed and struct take the min/max over their blocks; indexed and
//!   struct ignore zero-length blocks, vector (as MPICH; Open MPI differs) does not: its
//!   zero-length blocks still mark their displacement;
//! * struct pads the extent up to a multiple of the largest alignment of its non-empty members
//!   (`{double; char}` has extent 16), the C compiler's rule for structs; a type with no block
//!   has `lb = ub = 0`.
//!
//! Packing moves the typemap's bytes to and from a contiguous *wire* buffer in typemap order,
//! each atom occupying its own extent there (so a pair type keeps its C layout and reduction
//! kernels can read it); only an atom's data bytes are read or written in the user's buffer,
//! never the padding of a pair type, which may overlap another entry.

use crate::datatype::{Datatype, ElemType};

pub mod arrays;
mod external32;

/// A predefined datatype as an entry of a typemap. `handle` is the ABI's handle for it (kept
/// so a homogeneous derived type can travel, and be reduced, as its predefined type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Atom {
    pub handle: i32,
    pub dt: Datatype,
    /// Alignment in a C struct (for the struct extent rule).
    pub align: usize,
}

impl Atom {
    /// The byte ranges `(offset, len)` of one atom that hold data: everything but the padding
    /// of a pair type (`MPI_SHORT_INT` = short, 2 bytes of padding, int).
    pub(crate) fn segments(&self) -> [(usize, usize); 2] {
        match self.dt.elem {
            ElemType::PairI16I32 => [(0, 2), (4, 4)],
            // Every other predefined type holds its data from its start on.
            _ => [(0, self.dt.size), (0, 0)],
        }
    }

    /// The end of the atom's last data byte (its true upper bound from its start).
    fn data_end(&self) -> usize {
        self.segments()
            .iter()
            .map(|&(o, l)| o + l)
            .max()
            .unwrap_or(0)
    }

    /// Whether the atom's data fills its whole extent (a run of them is one block of bytes).
    fn solid(&self) -> bool {
        self.dt.size == self.dt.extent
    }
}

/// `n` atoms, the first at byte displacement `disp`, each `atom.dt.extent` after the previous.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub disp: isize,
    pub atom: Atom,
    pub n: usize,
}

/// The typemap of a datatype and its bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    runs: Vec<Run>,
    pub lb: isize,
    pub ub: isize,
    /// Bytes of data in one item (`MPI_Type_size`).
    pub size: usize,
    /// Atoms in one item.
    pub elems: usize,
    /// Bytes of one item in the wire format (each atom takes its extent).
    pub wire: usize,
    /// Alignment as a struct member.
    pub align: usize,
}

/// Typemaps larger than this many runs are refused (a sanity bound on memory).
const MAX_RUNS: usize = 1 << 24;

/// Why a constructor failed (the ABI layer maps it to an MPI error).
pub type BuildError = String;

fn ovf() -> BuildError {
    "the datatype's displacements or size overflow the address space".into()
}

impl Layout {
    /// The layout of a predefined type.
    pub fn atom(a: Atom) -> Layout {
        Layout {
            runs: vec![Run {
                disp: 0,
                atom: a,
                n: 1,
            }],
            lb: 0,
            ub: a.dt.extent as isize,
            size: a.dt.size,
            elems: 1,
            wire: a.dt.extent,
            align: a.align,
        }
    }

    /// The extent of a type whose extent is not negative (communication refuses the others,
    /// see `typearg.rs`); 0 for a negative one.
    pub fn extent(&self) -> usize {
        self.extent_signed().max(0) as usize
    }

    /// `ub - lb`, negative for a type resized so (`MPI_Type_create_resized` allows it).
    pub fn extent_signed(&self) -> isize {
        self.ub - self.lb
    }

    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// The single predefined type every entry has, if there is one.
    pub fn homogeneous(&self) -> Option<Atom> {
        let first = self.runs.first()?.atom;
        self.runs.iter().all(|r| r.atom == first).then_some(first)
    }

    /// `Some((disp, atom, n))` when items of this type are `n` atoms back to back starting at
    /// `disp` and consecutive items tile memory exactly: a buffer of `count` items is then the
    /// plain array of `count·n` atoms at `buf + disp` (no packing needed).
    pub fn dense(&self) -> Option<(isize, Atom, usize)> {
        match self.runs.as_slice() {
            [r] if (r.n * r.atom.dt.extent) as isize == self.extent_signed()
                && r.disp == self.lb =>
            {
                Some((r.disp, r.atom, r.n))
            }
            _ => None,
        }
    }

    /// `MPI_Type_contiguous`.
    pub fn contiguous(count: usize, old: &Layout) -> Result<Layout, BuildError> {
        let mut b = Builder::default();
        b.block(0, count, old)?;
        b.finish(old.align, false)
    }

    /// `MPI_Type_vector` (`stride` in items of `old`).
    pub fn vector(
        count: usize,
        blocklen: usize,
        stride: isize,
        old: &Layout,
    ) -> Result<Layout, BuildError> {
        let bytes = stride.checked_mul(old.extent_signed()).ok_or_else(ovf)?;
        Layout::hvector(count, blocklen, bytes, old)
    }

    /// `MPI_Type_create_hvector` (`stride` in bytes).
    pub fn hvector(
        count: usize,
        blocklen: usize,
        stride: isize,
        old: &Layout,
    ) -> Result<Layout, BuildError> {
        let mut b = Builder::default();
        for i in 0..count {
            let d = (i as isize).checked_mul(stride).ok_or_else(ovf)?;
            if blocklen == 0 {
                // MPICH: an empty block still marks its displacement.
                b.mark(d);
            } else {
                b.block(d, blocklen, old)?;
            }
        }
        b.finish(old.align, false)
    }

    /// `MPI_Type_indexed` (`blocks` are (length, displacement in items of `old`)) and, with
    /// `unit = 1`, displacements in bytes.
    pub fn indexed(
        blocks: impl Iterator<Item = (usize, isize)>,
        unit: isize,
        old: &Layout,
    ) -> Result<Layout, BuildError> {
        let mut b = Builder::default();
        for (len, disp) in blocks {
            let d = disp.checked_mul(unit).ok_or_else(ovf)?;
            if len > 0 {
                b.block(d, len, old)?;
            }
        }
        b.finish(old.align, false)
    }

    /// `MPI_Type_create_struct`: blocks of (length, byte displacement, type).
    pub fn create_struct<'a>(
        blocks: impl Iterator<Item = (usize, isize, &'a Layout)>,
    ) -> Result<Layout, BuildError> {
        let mut b = Builder::default();
        let mut align = 1;
        for (len, d, old) in blocks {
            if len > 0 {
                align = align.max(old.align);
                b.block(d, len, old)?;
            }
        }
        b.finish(align, true)
    }

    /// `MPI_Type_create_resized`: the same typemap with new bounds. A negative extent is
    /// allowed here (and in packing and further constructors); communication refuses it.
    pub fn resized(old: &Layout, lb: isize, extent: isize) -> Result<Layout, BuildError> {
        let ub = lb.checked_add(extent).ok_or_else(ovf)?;
        Ok(Layout {
            lb,
            ub,
            ..old.clone()
        })
    }

    /// `(true_lb, true_ub)`: the bounds of the data bytes alone, ignoring `lb`/`ub` set by
    /// resizing or padding; `(0, 0)` for a type without data.
    pub fn true_bounds(&self) -> (isize, isize) {
        let mut b: Option<(isize, isize)> = None;
        for r in self.runs.iter().filter(|r| r.n > 0) {
            let lo = r.disp;
            let hi = r.disp + ((r.n - 1) * r.atom.dt.extent + r.atom.data_end()) as isize;
            b = Some(b.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi))));
        }
        b.unwrap_or((0, 0))
    }

    /// `MPI_Get_elements`: the predefined elements in the first `bytes` bytes of data of a
    /// sequence of items (whole items, then the entries of a partial one in typemap order);
    /// `None` (`MPI_UNDEFINED`) when `bytes` ends inside an element.
    pub fn elements_in(&self, bytes: usize) -> Option<usize> {
        if self.size == 0 {
            return (bytes == 0).then_some(0);
        }
        let mut n = (bytes / self.size).checked_mul(self.elems)?;
        let mut rest = bytes % self.size;
        for r in &self.runs {
            if rest == 0 {
                break;
            }
            let s = r.atom.dt.size;
            let k = (rest / s).min(r.n);
            n += k;
            rest -= k * s;
            if k < r.n && rest > 0 {
                return None;
            }
        }
        (rest == 0).then_some(n)
    }

    /// The bytes of data holding exactly `elements` predefined elements (whole items, then the
    /// first entries of one more in typemap order): the inverse of [`Layout::elements_in`],
    /// for `MPI_Status_set_elements`. `None` when the type has no elements but some are asked
    /// for, or the byte count overflows.
    pub fn bytes_for_elements(&self, elements: usize) -> Option<usize> {
        if self.elems == 0 {
            return (elements == 0).then_some(0);
        }
        let mut bytes = (elements / self.elems).checked_mul(self.size)?;
        let mut rest = elements % self.elems;
        for r in &self.runs {
            if rest == 0 {
                break;
            }
            let k = rest.min(r.n);
            bytes = bytes.checked_add(k * r.atom.dt.size)?;
            rest -= k;
        }
        Some(bytes)
    }

    /// Visits the runs of `count` items, with each item's byte offset from the buffer.
    pub(crate) fn for_each_run(&self, count: usize, mut f: impl FnMut(isize, &Run)) {
        let ext = self.extent_signed();
        for i in 0..count {
            let base = (i as isize).wrapping_mul(ext);
            for r in &self.runs {
                f(base.wrapping_add(r.disp), r);
            }
        }
    }

    /// Packs `count` items at `src` into the wire format at `dst` (`count · wire` bytes).
    ///
    /// # Safety
    /// Every typemap entry of the `count` items at `src` is readable; `dst` is writable for
    /// `count · self.wire` bytes and does not overlap them.
    pub unsafe fn pack(&self, src: *const u8, count: usize, dst: *mut u8) {
        let mut out = dst;
        self.for_each_run(count, |off, r| {
            let s = src.wrapping_offset(off);
            let len = r.n * r.atom.dt.extent;
            // SAFETY: per the contract; `out` stays within the `count · wire` bytes.
            unsafe { move_run(r, s, out) };
            out = out.wrapping_add(len);
        });
    }

    /// Unpacks the wire format at `src` into `count` items at `dst` (the inverse of
    /// [`Layout::pack`]); bytes of `dst` outside the typemap are left untouched.
    ///
    /// # Safety
    /// As for [`Layout::pack`], with the roles of the buffers swapped.
    pub unsafe fn unpack(&self, src: *const u8, count: usize, dst: *mut u8) {
        let mut inp = src;
        self.for_each_run(count, |off, r| {
            let d = dst.wrapping_offset(off);
            let len = r.n * r.atom.dt.extent;
            // SAFETY: per the contract.
            unsafe { move_run(r, inp, d) };
            inp = inp.wrapping_add(len);
        });
    }

    /// Unpacks the first `bytes` bytes of wire data into the items at `dst`: whole items, then
    /// the whole elements of a partial one (what a receive of a shorter message stores; MPI
    /// leaves the rest of the buffer untouched).
    ///
    /// # Safety
    /// As for [`Layout::unpack`] with `bytes.div_ceil(wire)` items; `src` holds `bytes` bytes.
    pub unsafe fn unpack_prefix(&self, src: *const u8, bytes: usize, dst: *mut u8) {
        if self.wire == 0 {
            return;
        }
        let items = bytes.div_ceil(self.wire);
        let mut at = 0usize;
        self.for_each_run(items, |off, r| {
            let ext = r.atom.dt.extent;
            let n = r.n.min(bytes.saturating_sub(at) / ext);
            if n > 0 {
                let part = Run { n, ..*r };
                // SAFETY: per the contract: `n` whole atoms of data in `src` from `at`, and
                // their typemap entries in `dst`.
                unsafe { move_run(&part, src.add(at), dst.wrapping_offset(off)) };
            }
            at += r.n * ext;
        });
    }

    /// Copies the typemap's bytes of `count` items from `src` to the same offsets from `dst`
    /// (used to give a user-defined op the items in their own layout).
    ///
    /// # Safety
    /// Every typemap entry of the items is readable at `src` and writable at `dst`; the two
    /// do not overlap.
    pub unsafe fn copy_typemap(&self, src: *const u8, dst: *mut u8, count: usize) {
        self.for_each_run(count, |off, r| {
            let (s, d) = (src.wrapping_offset(off), dst.wrapping_offset(off));
            for k in 0..r.n {
                let o = k * r.atom.dt.extent;
                for (so, sl) in r.atom.segments() {
                    // SAFETY: per the contract: data bytes of one entry.
                    unsafe { std::ptr::copy_nonoverlapping(s.add(o + so), d.add(o + so), sl) };
                }
            }
        });
    }
}

/// Copies the data of one run from `src` to `dst` (user buffer to wire or back: an atom's
/// data bytes sit at the same offsets on both sides).
unsafe fn move_run(r: &Run, src: *const u8, dst: *mut u8) {
    let ext = r.atom.dt.extent;
    if r.atom.solid() {
        // SAFETY: caller's contract: n atoms of data on both sides.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, r.n * ext) };
        return;
    }
    for k in 0..r.n {
        for (so, sl) in r.atom.segments() {
            // SAFETY: as above, only the atom's data bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(src.add(k * ext + so), dst.add(k * ext + so), sl)
            };
        }
    }
}

/// Accumulates blocks into a layout.
#[derive(Default)]
struct Builder {
    runs: Vec<Run>,
    bounds: Option<(isize, isize)>,
    size: usize,
    elems: usize,
    wire: usize,
}

impl Builder {
    fn mark(&mut self, d: isize) {
        self.widen(d, d);
    }

    fn widen(&mut self, lo: isize, hi: isize) {
        self.bounds = Some(match self.bounds {
            None => (lo, hi),
            Some((l, h)) => (l.min(lo), h.max(hi)),
        });
    }

    fn push(&mut self, r: Run) -> Result<(), BuildError> {
        if r.n == 0 {
            return Ok(());
        }
        if let Some(last) = self.runs.last_mut() {
            let next = (last.n * last.atom.dt.extent) as isize;
            if last.atom == r.atom && last.disp.checked_add(next) == Some(r.disp) {
                last.n += r.n;
                return Ok(());
            }
        }
        if self.runs.len() >= MAX_RUNS {
            return Err(format!(
                "the datatype has more than {MAX_RUNS} separate pieces (hcomm's limit)"
            ));
        }
        self.runs.push(r);
        Ok(())
    }

    /// `copies` items of `old`, the first at byte displacement `d`.
    fn block(&mut self, d: isize, copies: usize, old: &Layout) -> Result<(), BuildError> {
        if copies == 0 {
            return Ok(());
        }
        let ext = old.extent_signed();
        let last = isize::try_from(copies - 1)
            .ok()
            .and_then(|c| c.checked_mul(ext))
            .ok_or_else(ovf)?;
        // With a negative extent the copies go down: the last one gives the lower bound
        // (MPICH's rule).
        let lo = d
            .checked_add(old.lb)
            .and_then(|x| x.checked_add(last.min(0)))
            .ok_or_else(ovf)?;
        let hi = d
            .checked_add(last.max(0))
            .and_then(|x| x.checked_add(old.ub))
            .ok_or_else(ovf)?;
        self.widen(lo, hi);
        self.size = copies
            .checked_mul(old.size)
            .and_then(|s| s.checked_add(self.size))
            .ok_or_else(ovf)?;
        self.elems = copies
            .checked_mul(old.elems)
            .and_then(|s| s.checked_add(self.elems))
            .ok_or_else(ovf)?;
        self.wire = copies
            .checked_mul(old.wire)
            .and_then(|s| s.checked_add(self.wire))
            .filter(|&w| w <= isize::MAX as usize)
            .ok_or_else(ovf)?;
        if let Some((od, atom, n)) = old.dense() {
            // Copies of a dense type are one run: no loop over `copies`.
            return self.push(Run {
                disp: d + od,
                atom,
                n: n * copies,
            });
        }
        for k in 0..copies {
            let base = d + k as isize * ext;
            for r in &old.runs {
                self.push(Run {
                    disp: base.checked_add(r.disp).ok_or_else(ovf)?,
                    ..*r
                })?;
            }
        }
        Ok(())
    }

    fn finish(self, align: usize, pad: bool) -> Result<Layout, BuildError> {
        let (lb, mut ub) = self.bounds.unwrap_or((0, 0));
        if pad {
            let ext = ub.checked_sub(lb).ok_or_else(ovf)?;
            let rem = ext.rem_euclid(align as isize);
            if rem != 0 {
                ub = ub.checked_add(align as isize - rem).ok_or_else(ovf)?;
            }
        }
        ub.checked_sub(lb).ok_or_else(ovf)?;
        Ok(Layout {
            runs: self.runs,
            lb,
            ub,
            size: self.size,
            elems: self.elems,
            wire: self.wire,
            align,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(handle: i32, elem: ElemType, size: usize, extent: usize, align: usize) -> Layout {
        Layout::atom(Atom {
            handle,
            dt: Datatype::new(elem, size, extent),
            align,
        })
    }
    fn int() -> Layout {
        at(1, ElemType::I32, 4, 4, 4)
    }
    fn dbl() -> Layout {
        at(2, ElemType::F64, 8, 8, 8)
    }
    fn chr() -> Layout {
        at(3, ElemType::Char, 1, 1, 1)
    }
    fn short() -> Layout {
        at(4, ElemType::I16, 2, 2, 2)
    }
    fn short_int() -> Layout {
        at(5, ElemType::PairI16I32, 6, 8, 4)
    }
    fn double_int() -> Layout {
        at(6, ElemType::PairF64I32, 12, 16, 8)
    }
    /// (size, lb, extent)
    fn sle(l: &Layout) -> (usize, isize, usize) {
        (l.size, l.lb, l.extent())
    }
    fn st(blocks: &[(usize, isize, &Layout)]) -> Layout {
        Layout::create_struct(blocks.iter().copied()).unwrap()
    }

    /// The values MPICH 4.0.2 and Open MPI 4.1.4 report for the same constructors.
    #[test]
    fn bounds_match_mpich() {
        assert_eq!(sle(&Layout::contiguous(0, &int()).unwrap()), (0, 0, 0));
        assert_eq!(
            sle(&Layout::contiguous(3, &double_int()).unwrap()),
            (36, 0, 48)
        );
        assert_eq!(
            sle(&Layout::contiguous(3, &short_int()).unwrap()),
            (18, 0, 24)
        );
        assert_eq!(sle(&Layout::vector(3, 2, 4, &int()).unwrap()), (24, 0, 40));
        assert_eq!(
            sle(&Layout::vector(3, 2, -4, &int()).unwrap()),
            (24, -32, 40)
        );
        assert_eq!(sle(&Layout::vector(0, 2, 4, &int()).unwrap()), (0, 0, 0));
        assert_eq!(sle(&Layout::vector(3, 0, 4, &int()).unwrap()), (0, 0, 32)); // MPICH
        assert_eq!(sle(&Layout::vector(2, 3, 1, &int()).unwrap()), (24, 0, 16));
        let idx = |b: &[(usize, isize)], old: &Layout| {
            Layout::indexed(b.iter().copied(), old.extent() as isize, old).unwrap()
        };
        assert_eq!(sle(&idx(&[(2, 5), (0, -7), (1, 1)], &dbl())), (24, 8, 48));
        assert_eq!(
            sle(&idx(&[(1, 3), (1, 1)], &at(7, ElemType::F32, 4, 4, 4))),
            (8, 4, 12)
        );
        assert_eq!(sle(&st(&[(1, 0, &dbl()), (1, 8, &chr())])), (9, 0, 16));
        assert_eq!(sle(&st(&[(1, 0, &int()), (1, 4, &chr())])), (5, 0, 8));
        assert_eq!(sle(&st(&[(1, 0, &short()), (3, 2, &chr())])), (5, 0, 6));
        assert_eq!(sle(&st(&[(1, 4, &int()), (1, -8, &dbl())])), (12, -8, 16));
        let ld = at(8, ElemType::Opaque, 16, 16, 16);
        assert_eq!(sle(&st(&[(1, 0, &ld), (1, 8, &chr())])), (17, 0, 16));
        assert_eq!(
            sle(&st(&[(1, 0, &double_int()), (1, 16, &chr())])),
            (13, 0, 24)
        );
        assert_eq!(sle(&st(&[(1, 0, &short_int())])), (6, 0, 8));
        assert_eq!(sle(&st(&[(1, 0, &chr()), (1, 1, &chr())])), (2, 0, 2));
        assert_eq!(sle(&st(&[(1, 0, &chr()), (0, 8, &dbl())])), (1, 0, 1));
        let v = Layout::vector(2, 1, 2, &chr()).unwrap();
        assert_eq!(sle(&v), (2, 0, 3));
        let s = st(&[(1, 0, &v), (1, 8, &int())]);
        assert_eq!(sle(&s), (6, 0, 12));
        assert_eq!(sle(&Layout::contiguous(2, &s).unwrap()), (12, 0, 24));
        let s = st(&[(1, 0, &int()), (1, 4, &chr())]);
        assert_eq!(sle(&Layout::vector(2, 1, 2, &s).unwrap()), (10, 0, 24));
        assert_eq!(sle(&st(&[(1, 1, &s)])), (5, 1, 8));
        let v = Layout::vector(2, 1, 3, &int()).unwrap();
        assert_eq!(sle(&Layout::contiguous(2, &v).unwrap()), (16, 0, 32));
        let v = Layout::vector(2, 1, 3, &short()).unwrap();
        assert_eq!(sle(&st(&[(1, 0, &v), (1, 8, &chr())])), (5, 0, 10));
        assert_eq!(sle(&st(&[(1, 3, &int())])), (4, 3, 4));
    }

    #[test]
    fn resized_true_bounds_and_hvector() {
        let r = Layout::resized(&int(), -4, 16).unwrap();
        assert_eq!((r.lb, r.extent(), r.true_bounds()), (-4, 16, (0, 4)));
        assert!(r.dense().is_none());
        let n = Layout::resized(&int(), 0, -4).unwrap();
        assert_eq!((n.lb, n.extent_signed(), n.extent()), (0, -4, 0));
        // Copies of a negative-extent type go down: ints at 0, -4, -8.
        let c = Layout::contiguous(3, &n).unwrap();
        assert_eq!((c.lb, c.ub, c.true_bounds(), c.size), (-8, -4, (-8, 4), 12));
        // Two items of the resized type: ints 16 bytes apart.
        let c = Layout::contiguous(2, &r).unwrap();
        assert_eq!((c.lb, c.extent(), c.true_bounds()), (-4, 32, (0, 20)));
        // True bounds ignore a pair's trailing padding but not its inner one.
        assert_eq!(short_int().true_bounds(), (0, 8));
        assert_eq!(double_int().true_bounds(), (0, 12));
        let h = Layout::hvector(2, 1, -16, &dbl()).unwrap();
        assert_eq!((h.lb, h.extent(), h.true_bounds()), (-16, 24, (-16, 8)));
        assert_eq!(Layout::contiguous(0, &int()).unwrap().true_bounds(), (0, 0));
    }

    #[test]
    fn elements_of_partial_items() {
        // {int, double, 2 ints}: 20 bytes of data, 4 elements.
        let s = st(&[(1, 0, &int()), (1, 8, &dbl()), (2, 16, &int())]);
        assert_eq!(s.elements_in(0), Some(0));
        assert_eq!(s.elements_in(20), Some(4));
        assert_eq!(s.elements_in(24), Some(5));
        assert_eq!(s.elements_in(32), Some(6));
        assert_eq!(s.elements_in(36), Some(7));
        assert_eq!(s.elements_in(26), None); // inside the double
        assert_eq!(s.elements_in(22), None);
        assert_eq!(
            Layout::contiguous(0, &int()).unwrap().elements_in(0),
            Some(0)
        );
        assert_eq!(Layout::contiguous(0, &int()).unwrap().elements_in(4), None);
    }

    #[test]
    fn bytes_for_elements_inverts_elements_in() {
        let s = st(&[(1, 0, &int()), (1, 8, &dbl()), (2, 16, &int())]);
        for n in 0..12 {
            let b = s.bytes_for_elements(n).unwrap();
            assert_eq!(s.elements_in(b), Some(n), "{n} elements in {b} bytes");
        }
        assert_eq!(s.bytes_for_elements(5), Some(24)); // a whole item, then the int
        let empty = Layout::contiguous(0, &int()).unwrap();
        assert_eq!(empty.bytes_for_elements(0), Some(0));
        assert_eq!(empty.bytes_for_elements(1), None);
    }

    #[test]
    fn unpack_prefix_stores_whole_elements_only() {
        // vector(2, 2, 3) of ints: ints 0 1 3 4 of an item of extent 5 ints.
        let v = Layout::vector(2, 2, 3, &int()).unwrap();
        let wire: Vec<u8> = (1..=7i32).flat_map(|i| i.to_le_bytes()).collect();
        let mut dst = vec![-1i32; 10];
        // SAFETY: 2 items fit in 10 ints; the wire holds 28 bytes, 2 more are ignored.
        unsafe { v.unpack_prefix(wire.as_ptr(), 26, dst.as_mut_ptr().cast()) };
        assert_eq!(dst, vec![1, 2, -1, 3, 4, 5, 6, -1, -1, -1]);
    }

    #[test]
    fn dense_and_homogeneous() {
        let c = Layout::contiguous(1 << 40, &int()).unwrap();
        assert_eq!(c.runs().len(), 1);
        assert_eq!(c.dense().map(|d| (d.0, d.2)), Some((0, 1 << 40)));
        let v = Layout::vector(3, 2, 4, &int()).unwrap();
        assert!(v.dense().is_none());
        assert_eq!(v.runs().len(), 3);
        assert_eq!(v.homogeneous().unwrap().handle, 1);
        // A vector whose blocks touch is one run, and dense.
        let v = Layout::vector(3, 2, 2, &int()).unwrap();
        assert_eq!(v.dense().map(|d| d.2), Some(6));
        let s = st(&[(1, 0, &int()), (1, 4, &chr())]);
        assert!(s.homogeneous().is_none() && s.dense().is_none());
        // Struct padding breaks density; an offset single entry does not.
        assert!(st(&[(1, 0, &dbl())]).dense().is_some());
        assert_eq!(st(&[(1, 3, &int())]).dense().map(|d| d.0), Some(3));
        // Swapped order is not dense even though it covers the same bytes.
        let p = Layout::indexed([(1, 1), (1, 0)].into_iter(), 4, &int()).unwrap();
        assert!(p.dense().is_none());
        assert_eq!(Layout::contiguous(0, &int()).unwrap().elems, 0);
    }

    #[test]
    fn pack_unpack_round_trip_leaves_gaps() {
        // {short_int at 0, int at 8, 2 doubles at 16} × 2 items, with a vector inside.
        let v = Layout::vector(2, 1, -2, &dbl()).unwrap(); // doubles at 0 and -16: lb -16
        let s = st(&[(1, 0, &short_int()), (1, 8, &int()), (1, 40, &v)]);
        assert_eq!((s.lb, s.extent()), (0, 48));
        assert_eq!(s.wire, 8 + 4 + 16);
        let count = 2;
        let src: Vec<u8> = (0..96u8).collect();
        let mut wire = vec![0u8; s.wire * count];
        // SAFETY: buffers sized for the layout's span (0..96).
        unsafe { s.pack(src.as_ptr(), count, wire.as_mut_ptr()) };
        let mut exp = vec![];
        for i in 0..count {
            let b = 48 * i;
            exp.extend_from_slice(&src[b..b + 2]);
            exp.extend_from_slice(&[0, 0]); // padding of the pair stays zero on the wire
            exp.extend_from_slice(&src[b + 4..b + 12]);
            exp.extend_from_slice(&src[b + 40..b + 48]);
            exp.extend_from_slice(&src[b + 24..b + 32]);
        }
        assert_eq!(wire, exp);
        let mut dst = vec![0xeeu8; 96];
        // SAFETY: as above.
        unsafe { s.unpack(wire.as_ptr(), count, dst.as_mut_ptr()) };
        for (i, (&d, &o)) in dst.iter().zip(&src).enumerate() {
            let k = i % 48;
            let data = matches!(k, 0..=1 | 4..=11 | 24..=31 | 40..=47);
            assert_eq!(d, if data { o } else { 0xee }, "byte {i}");
        }
        let mut nat = vec![0xeeu8; 96];
        // SAFETY: as above.
        unsafe { s.copy_typemap(src.as_ptr(), nat.as_mut_ptr(), count) };
        assert_eq!(nat, dst);
    }
}
