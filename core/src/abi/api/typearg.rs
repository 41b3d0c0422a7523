//! Datatype arguments of communication calls: one path for predefined and derived types.
//!
//! A call resolves its datatype handle once ([`type_arg`]), then asks for a [`View`]: how
//! `count` items of the type travel through the algorithms — as an array of elements of one
//! predefined type (or of bytes), which is all the algorithms and transports understand.
//!
//! * Predefined types, and derived types whose items are a plain array of one predefined type
//!   (`MPI_Type_contiguous`, a vector without gaps, ...): the user's buffer itself, offset by
//!   the first entry's displacement — zero copies, `count × n` elements of that type.
//! * Other derived types: the items are packed into a contiguous staging buffer before the
//!   call and unpacked after it ([`Staged`]); a type of one predefined type travels (and is
//!   reduced) as its elements, a mixed one as bytes.
//! * With a user-defined op, the function must see items in the user's own layout, so the view
//!   is *native*: items of the type's extent, the user's buffer when the items tile memory,
//!   else a staging buffer holding just the typemap's bytes at their own offsets.
//!
//! Normalising to elements also makes signatures compare type *signatures*, as MPI matches
//! them: a rank sending one `contiguous(4, MPI_INT)` matches a rank receiving 4 `MPI_INT`.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::abi::handles as h;
use crate::coll::{Reduction, UserOp};
use crate::datatype::{Datatype, ElemType};
use crate::error::{Class, Error, Result};
use crate::typemap::Layout;

const BYTE: c_int = 0x4c00_010d;
const BYTE_DT: Datatype = Datatype::new(ElemType::Byte, 1, 1);

/// A valid, committed datatype argument.
pub(crate) struct TypeArg {
    pub handle: c_int,
    kind: Kind,
}

enum Kind {
    Predefined(Datatype),
    Derived(Arc<Layout>),
}

/// Resolves a datatype argument of a communication call: NULL, unknown, freed and uncommitted
/// types, and types with a negative extent, are `MPI_ERR_TYPE`.
pub(crate) fn type_arg(dt: c_int, what: &str) -> Result<TypeArg> {
    checked_type(dt, what, false)
}

/// [`type_arg`] for packing, which also takes types with a negative extent (every buffer
/// computation of the communication paths assumes a non-negative one).
pub(crate) fn packing_type_arg(dt: c_int, what: &str) -> Result<TypeArg> {
    checked_type(dt, what, true)
}

fn checked_type(dt: c_int, what: &str, allow_negative_extent: bool) -> Result<TypeArg> {
    if dt == h::DATATYPE_NULL {
        return Err(Error::new(
            Class::Type,
            format!("{what} is MPI_DATATYPE_NULL"),
        ));
    }
    if let Some((d, _)) = h::datatype(dt) {
        return Ok(TypeArg {
            handle: dt,
            kind: Kind::Predefined(d),
        });
    }
    let t = h::user_type(dt).ok_or_else(|| {
        Error::new(
            Class::Type,
            format!("{what} 0x{dt:x} is not a valid datatype (freed, or never created)"),
        )
    })?;
    if !t.committed() {
        return Err(Error::new(
            Class::Type,
            format!("{what} 0x{dt:x} is not committed (call MPI_Type_commit first)"),
        ));
    }
    if !allow_negative_extent && t.layout.extent_signed() < 0 {
        return Err(Error::new(
            Class::Type,
            format!(
                "{what} 0x{dt:x} has a negative extent ({}): hcomm does not communicate such types (MPI_Pack them instead)",
                t.layout.extent_signed()
            ),
        ));
    }
    Ok(TypeArg {
        handle: dt,
        kind: Kind::Derived(t.layout.clone()),
    })
}

impl TypeArg {
    /// `MPI_Type_get_extent`'s extent.
    /// The offset of an item's first data byte from its buffer pointer (0 for predefined
    /// types).
    pub fn true_lb(&self) -> isize {
        match &self.kind {
            Kind::Predefined(_) => 0,
            Kind::Derived(l) => l.true_bounds().0,
        }
    }

    pub fn extent(&self) -> usize {
        match &self.kind {
            Kind::Predefined(d) => d.extent,
            Kind::Derived(l) => l.extent(),
        }
    }

    /// `MPI_Type_size`: bytes of data in one item, the length of its type signature.
    pub fn size(&self) -> usize {
        match &self.kind {
            Kind::Predefined(d) => d.size,
            Kind::Derived(l) => l.size,
        }
    }

    /// The view for moving data (no reduction).
    pub fn moving(&self) -> View {
        let l = match &self.kind {
            Kind::Predefined(d) => return View::direct(*d, self.handle, 1, 0),
            Kind::Derived(l) => l,
        };
        if l.elems == 0 {
            return View::direct(BYTE_DT, BYTE, 0, 0);
        }
        if let Some((disp, atom, n)) = l.dense() {
            return View::direct(atom.dt, atom.handle, n, disp);
        }
        let (dt, handle, per) = match l.homogeneous() {
            Some(a) => (a.dt, a.handle, l.elems),
            None => (BYTE_DT, BYTE, l.wire),
        };
        View {
            dt,
            handle,
            per,
            how: How::Pack(l.clone()),
        }
    }

    /// The view for a user-defined op: items in their own layout.
    fn native(&self) -> View {
        match &self.kind {
            Kind::Predefined(d) => View::direct(*d, self.handle, 1, 0),
            Kind::Derived(l) => {
                let dt = Datatype::new(ElemType::Opaque, l.size, l.extent());
                let tiles = l.dense().is_some() || l.elems == 0;
                View {
                    dt,
                    handle: self.handle,
                    per: 1,
                    how: if tiles {
                        How::Direct(l.lb)
                    } else {
                        How::Native(l.clone())
                    },
                }
            }
        }
    }

    fn lb(&self) -> isize {
        match &self.kind {
            Kind::Predefined(_) => 0,
            Kind::Derived(l) => l.lb,
        }
    }

    fn name(&self) -> String {
        h::datatype_name(self.handle)
            .map(str::to_string)
            .unwrap_or_else(|| format!("0x{:x} (derived)", self.handle))
    }
}

/// The reduction and the view of a reducing call. A predefined op needs a type made of one
/// predefined type it is defined for; a user-defined op takes any type.
pub(crate) fn reduce_args(op: c_int, t: &TypeArg) -> Result<(Reduction, View)> {
    if op == h::OP_NULL {
        return Err(Error::new(Class::Op, "op is MPI_OP_NULL"));
    }
    if let Some(u) = h::user_op(op) {
        let v = t.native();
        let red = Reduction::User(UserOp {
            f: u.f,
            commute: u.commute,
            dtype: t.handle,
            extent: v.dt.extent,
            lb: t.lb(),
        });
        return Ok((red, v));
    }
    let (o, oname) = h::op(op).ok_or_else(|| {
        Error::new(
            Class::Op,
            format!("op 0x{op:x} is not a valid reduction op (freed, or never created)"),
        )
    })?;
    let v = t.moving();
    let mixed = matches!(&t.kind, Kind::Derived(l) if l.elems > 0 && l.homogeneous().is_none());
    if mixed {
        return Err(Error::new(
            Class::Op,
            format!(
                "{oname} is not defined for datatype {}: it mixes several predefined types (use a user-defined op)",
                t.name()
            ),
        ));
    }
    if v.per > 0 && (v.dt.elem == ElemType::Opaque || !crate::reduce::is_supported(v.dt.elem, o)) {
        let base = h::datatype_name(v.handle).unwrap_or("?");
        return Err(Error::new(
            Class::Op,
            format!("{oname} is not defined for datatype {} ({base})", t.name()),
        ));
    }
    Ok((Reduction::builtin(v.dt.elem, o), v))
}

/// How `count` items of a datatype travel: `count × per` elements of `dt`.
pub(crate) struct View {
    /// The element the algorithms see.
    pub dt: Datatype,
    /// Its handle, for signatures.
    pub handle: c_int,
    per: usize,
    how: How,
}

enum How {
    /// The user's buffer at this byte offset.
    Direct(isize),
    /// Packed to and from the wire format.
    Pack(Arc<Layout>),
    /// Typemap bytes copied to a staging buffer at their own offsets (from the lower bound).
    Native(Arc<Layout>),
}

impl View {
    const fn direct(dt: Datatype, handle: c_int, per: usize, off: isize) -> View {
        View {
            dt,
            handle,
            per,
            how: How::Direct(off),
        }
    }

    /// Whether the call passes the user's buffer itself (no packing, no host copy): what
    /// device buffers need.
    pub fn is_direct(&self) -> bool {
        matches!(self.how, How::Direct(_))
    }

    /// Elements of `dt` that `count` items are.
    pub fn count(&self, count: usize, what: &str) -> Result<usize> {
        count
            .checked_mul(self.per)
            .filter(|&n| {
                n.checked_mul(self.dt.extent)
                    .is_some_and(|b| b <= isize::MAX as usize)
            })
            .ok_or_else(|| {
                Error::new(
                    Class::Count,
                    format!("{what} {count} is too large for the datatype"),
                )
            })
    }

    /// Bytes the algorithms move for `count` items.
    pub fn bytes(&self, count: usize, what: &str) -> Result<usize> {
        Ok(self.count(count, what)? * self.dt.extent)
    }

    /// Makes `count` items at `buf` available as a contiguous array of elements: loads them
    /// first when `load` (the call reads them), and writes them back in
    /// [`Staged::finish`] when `store` (the call writes them).
    ///
    /// # Safety
    /// `buf` holds `count` items of the type, readable when `load`, writable when `store`,
    /// for as long as the returned value lives; `count` passed [`View::count`].
    pub unsafe fn stage(
        &self,
        buf: *const c_void,
        count: usize,
        load: bool,
        store: bool,
    ) -> Staged {
        let user = buf as *mut u8;
        let (layout, native) = match &self.how {
            How::Direct(off) => {
                return Staged {
                    user,
                    ptr: user.wrapping_offset(*off),
                    count: 0,
                    layout: None,
                    native: false,
                    _buf: Vec::new(),
                }
            }
            How::Pack(l) => (l.clone(), false),
            How::Native(l) => (l.clone(), true),
        };
        let bytes = count * self.per * self.dt.extent;
        // 16-byte aligned, like a malloc'ed buffer: kernels and user functions cast it.
        let mut v: Vec<u128> = vec![0; bytes.div_ceil(16)];
        let ptr = v.as_mut_ptr().cast::<u8>();
        let s = Staged {
            user,
            ptr,
            count: if store { count } else { 0 },
            layout: Some(layout),
            native,
            _buf: v,
        };
        if load {
            // SAFETY: per the contract.
            unsafe { s.load_items(0, count) };
        }
        s
    }
}

/// A buffer of elements standing for the user's items (see [`View::stage`]).
pub(crate) struct Staged {
    user: *mut u8,
    ptr: *mut u8,
    /// Items to write back in `finish`.
    count: usize,
    layout: Option<Arc<Layout>>,
    native: bool,
    _buf: Vec<u128>,
}

impl Staged {
    /// The elements.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Writes back only the first `items` items in `finish` (the rest is scratch).
    pub fn store_only(&mut self, items: usize) {
        self.count = self.count.min(items);
    }

    /// Loads items `first .. first + n` from the user's buffer (a part the call reads that
    /// was not loaded when staging, such as the own block of an in-place allgather).
    ///
    /// # Safety
    /// Those items are readable in the user's buffer and lie within the staged ones.
    pub unsafe fn load_items(&self, first: usize, n: usize) {
        let Some(l) = &self.layout else { return };
        let ext = l.extent();
        let src = self.user.wrapping_add(first * ext);
        // SAFETY: per the contract; the staging buffer holds every staged item.
        unsafe {
            if self.native {
                let dst = self.ptr.wrapping_add(first * ext).wrapping_offset(-l.lb);
                l.copy_typemap(src, dst, n);
            } else {
                l.pack(src, n, self.ptr.add(first * l.wire));
            }
        }
    }

    /// Like [`Staged::finish`] after a receive that stored `bytes` bytes of elements: writes
    /// back only what was received (MPI leaves the rest of the buffer untouched): the
    /// elements of packed items, the whole items of native ones.
    ///
    /// # Safety
    /// As promised to [`View::stage`].
    pub unsafe fn finish_received(mut self, bytes: usize) {
        if let (Some(l), false) = (&self.layout, self.native) {
            // The wire format: whole items and the whole elements of a partial one.
            let b = bytes.min(self.count.saturating_mul(l.wire));
            // SAFETY: per the contract of `stage`: `b` bytes of staged items.
            unsafe { l.unpack_prefix(self.ptr, b, self.user) };
            return;
        }
        if let Some(l) = &self.layout {
            let item = if self.native { l.extent() } else { l.wire };
            if let Some(whole) = bytes.checked_div(item) {
                self.count = self.count.min(whole);
            }
        }
        // SAFETY: forwarded contract.
        unsafe { self.finish() }
    }

    /// Writes the staged items back to the user's buffer (when staged with `store`).
    ///
    /// # Safety
    /// As promised to [`View::stage`].
    pub unsafe fn finish(self) {
        let Some(l) = &self.layout else { return };
        // SAFETY: per the contract of `stage`.
        unsafe {
            if self.native {
                l.copy_typemap(self.ptr.wrapping_offset(-l.lb), self.user, self.count);
            } else {
                l.unpack(self.ptr, self.count, self.user);
            }
        }
    }
}

/// The per-rank blocks of one buffer in the data-movement collectives (Gather(v), Scatter(v),
/// Allgatherv, Alltoall(v)) as byte spans for the algorithms: block `i` is `count` items, the
/// first at byte offset `at` from the buffer. When the view is direct, the spans are the user's
/// buffer (zero copies, no allocation); otherwise they are consecutive spans of one staging
/// buffer, filled from the user's layout by [`Blocks::load`] and written back to it by
/// [`Blocks::store`], which leaves the bytes outside the typemap (gaps) untouched.
pub(crate) struct Blocks {
    user: *mut u8,
    /// `(at, count)` of each block.
    items: Vec<(isize, usize)>,
    spans: Vec<(*mut u8, usize)>,
    layout: Option<Arc<Layout>>,
    native: bool,
    _buf: Vec<u128>,
}

impl View {
    /// The blocks `items` (`(at, count)` each) of the buffer at `buf`. Computes pointers and
    /// allocates the staging buffer only: reads and writes nothing of the user's.
    ///
    /// Every count must have passed [`View::count`], and the blocks' bytes together must fit
    /// in `isize` (the staging buffer holds them all).
    pub fn blocks(&self, buf: *const c_void, items: &[(isize, usize)]) -> Blocks {
        let user = buf as *mut u8;
        let item = self.per * self.dt.extent;
        let (layout, native) = match &self.how {
            How::Direct(off) => {
                let spans = items
                    .iter()
                    .map(|&(at, n)| (user.wrapping_offset(at.wrapping_add(*off)), n * item))
                    .collect();
                return Blocks {
                    user,
                    items: items.to_vec(),
                    spans,
                    layout: None,
                    native: false,
                    _buf: Vec::new(),
                };
            }
            How::Pack(l) => (l.clone(), false),
            How::Native(l) => (l.clone(), true),
        };
        let total: usize = items.iter().map(|&(_, n)| n * item).sum();
        // 16-byte aligned, like `View::stage`'s buffer.
        let mut v: Vec<u128> = vec![0; total.div_ceil(16)];
        let base = v.as_mut_ptr().cast::<u8>();
        let mut at = 0;
        let spans = items
            .iter()
            .map(|&(_, n)| {
                let s = (base.wrapping_add(at), n * item);
                at += n * item;
                s
            })
            .collect();
        Blocks {
            user,
            items: items.to_vec(),
            spans,
            layout: Some(layout),
            native,
            _buf: v,
        }
    }
}

impl Blocks {
    /// `(pointer, bytes)` of each block, as the algorithms move them.
    pub fn spans(&self) -> &[(*mut u8, usize)] {
        &self.spans
    }

    /// Fills block `i` of the staging buffer from the user's buffer (nothing when direct).
    ///
    /// # Safety
    /// The block's items are readable in the user's buffer.
    pub unsafe fn load(&self, i: usize) {
        let Some(l) = &self.layout else { return };
        let ((at, n), dst) = (self.items[i], self.spans[i].0);
        let src = self.user.wrapping_offset(at);
        // SAFETY: per the contract; the span holds the block's `n` items.
        unsafe {
            if self.native {
                l.copy_typemap(src, dst.wrapping_offset(-l.lb), n);
            } else {
                l.pack(src, n, dst);
            }
        }
    }

    /// Writes block `i` back from the staging buffer to the user's buffer (nothing when
    /// direct).
    ///
    /// # Safety
    /// The block's items are writable in the user's buffer.
    pub unsafe fn store(&self, i: usize) {
        let Some(l) = &self.layout else { return };
        let ((at, n), src) = (self.items[i], self.spans[i].0);
        let dst = self.user.wrapping_offset(at);
        // SAFETY: per the contract; the span holds the block's `n` items.
        unsafe {
            if self.native {
                l.copy_typemap(src.wrapping_offset(-l.lb), dst, n);
            } else {
                l.unpack(src, n, dst);
            }
        }
    }

    /// [`Blocks::load`] of every block but `skip`.
    ///
    /// # Safety
    /// As for [`Blocks::load`], for each of them.
    pub unsafe fn load_all_but(&self, skip: Option<usize>) {
        for i in (0..self.items.len()).filter(|&i| Some(i) != skip) {
            // SAFETY: forwarded contract.
            unsafe { self.load(i) };
        }
    }

    /// [`Blocks::store`] of every block but `skip`.
    ///
    /// # Safety
    /// As for [`Blocks::store`], for each of them.
    pub unsafe fn store_all_but(&self, skip: Option<usize>) {
        for i in (0..self.items.len()).filter(|&i| Some(i) != skip) {
            // SAFETY: forwarded contract.
            unsafe { self.store(i) };
        }
    }
}
