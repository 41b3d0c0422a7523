//! The layouts of `MPI_Type_create_subarray` and `MPI_Type_create_darray`: both describe some
//! elements of a global n-dimensional array of `old`, stored in C (last index fastest) or
//! Fortran (first index fastest) order, and both span the whole global array (`lb = 0`,
//! `extent = product(sizes) · extent(old)`), as MPICH and Open MPI make them.
//!
//! Each dimension contributes a list of index ranges it keeps; the typemap visits the kept
//! elements with the fastest dimension innermost, which is the order both MPIs produce.

use super::{BuildError, Layout};

/// The storage order of a multi-dimensional array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    C,
    Fortran,
}

/// How one dimension of a darray is split over the process grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distrib {
    /// Blocks of `darg` indices (`None`: `MPI_DISTRIBUTE_DFLT_DARG`, ceil(gsize / psize)).
    Block(Option<usize>),
    /// Blocks of `darg` indices dealt round-robin (`None`: 1).
    Cyclic(Option<usize>),
    /// Not distributed: every process has the whole dimension.
    None,
}

/// `(start, len)` ranges of indices of one dimension.
type Ranges = Vec<(usize, usize)>;

/// Builds the layout from the kept ranges of each dimension (`dims[i] = (size, ranges)`, in
/// the caller's index order).
fn build(dims: &[(usize, Ranges)], order: Order, old: &Layout) -> Result<Layout, BuildError> {
    let ovf = || "the array's size overflows the address space".to_string();
    let mut fastest_first: Vec<&(usize, Ranges)> = dims.iter().collect();
    if order == Order::C {
        fastest_first.reverse();
    }
    let ext = old.extent_signed();
    let mut t: Option<Layout> = None;
    let mut stride = ext;
    for (size, ranges) in fastest_first {
        let next = match &t {
            None => Layout::indexed(ranges.iter().map(|&(s, l)| (l, s as isize)), ext, old)?,
            Some(inner) => {
                let blocks = ranges
                    .iter()
                    .flat_map(|&(s, l)| s..s + l)
                    .map(|g| (g as isize).checked_mul(stride).map(|d| (1, d)))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(ovf)?;
                Layout::indexed(blocks.into_iter(), 1, inner)?
            }
        };
        t = Some(next);
        stride = isize::try_from(*size)
            .ok()
            .and_then(|s| s.checked_mul(stride))
            .ok_or_else(ovf)?;
    }
    let t = t.ok_or_else(|| "ndims is 0".to_string())?;
    Layout::resized(&t, 0, stride)
}

/// `MPI_Type_create_subarray`: `(size, subsize, start)` of each dimension.
pub fn subarray(
    dims: &[(usize, usize, usize)],
    order: Order,
    old: &Layout,
) -> Result<Layout, BuildError> {
    for (i, &(size, sub, start)) in dims.iter().enumerate() {
        if size == 0 {
            return Err(format!("array_of_sizes[{i}] is 0"));
        }
        if sub > size {
            return Err(format!(
                "array_of_subsizes[{i}] ({sub}) is larger than array_of_sizes[{i}] ({size})"
            ));
        }
        if start > size - sub {
            return Err(format!(
                "array_of_starts[{i}] ({start}) + array_of_subsizes[{i}] ({sub}) exceeds array_of_sizes[{i}] ({size})"
            ));
        }
    }
    let d: Vec<(usize, Ranges)> = dims
        .iter()
        .map(|&(size, sub, start)| (size, vec![(start, sub)]))
        .collect();
    build(&d, order, old)
}

/// The ranges a process at grid coordinate `coord` of `psize` keeps of a dimension of `gsize`.
fn dim_ranges(
    i: usize,
    gsize: usize,
    dist: Distrib,
    psize: usize,
    coord: usize,
) -> Result<Ranges, BuildError> {
    let blk_arg = |darg: Option<usize>, dflt: usize| match darg {
        Some(0) => Err(format!("array_of_dargs[{i}] is 0")),
        Some(b) => Ok(b),
        None => Ok(dflt),
    };
    Ok(match dist {
        Distrib::None => {
            if psize != 1 {
                return Err(format!(
                    "array_of_psizes[{i}] is {psize}, but a dimension with MPI_DISTRIBUTE_NONE needs 1"
                ));
            }
            vec![(0, gsize)]
        }
        Distrib::Block(darg) => {
            let blk = blk_arg(darg, gsize.div_ceil(psize))?;
            if blk.checked_mul(psize).is_none_or(|c| c < gsize) {
                return Err(format!(
                    "array_of_dargs[{i}] ({blk}) times array_of_psizes[{i}] ({psize}) is less than array_of_gsizes[{i}] ({gsize})"
                ));
            }
            let start = coord * blk;
            if start < gsize {
                vec![(start, blk.min(gsize - start))]
            } else {
                vec![]
            }
        }
        Distrib::Cyclic(darg) => {
            let blk = blk_arg(darg, 1)?;
            let step = blk
                .checked_mul(psize)
                .ok_or_else(|| format!("array_of_dargs[{i}] ({blk}) is too large"))?;
            (coord * blk..gsize)
                .step_by(step)
                .map(|s| (s, blk.min(gsize - s)))
                .collect()
        }
    })
}

/// `MPI_Type_create_darray` for process `rank` of `size`: `(gsize, distribution, psize)` of
/// each dimension. The process grid is numbered in row-major order whatever `order` is.
pub fn darray(
    size: usize,
    rank: usize,
    dims: &[(usize, Distrib, usize)],
    order: Order,
    old: &Layout,
) -> Result<Layout, BuildError> {
    let grid = dims
        .iter()
        .try_fold(1usize, |a, d| a.checked_mul(d.2))
        .unwrap_or(0);
    if grid != size {
        return Err(format!(
            "the product of array_of_psizes ({grid}) is not size ({size})"
        ));
    }
    if rank >= size {
        return Err(format!("rank {rank} is not below size {size}"));
    }
    let mut coords = vec![0; dims.len()];
    let mut r = rank;
    for (c, d) in coords.iter_mut().zip(dims).rev() {
        *c = r % d.2;
        r /= d.2;
    }
    let d = dims
        .iter()
        .zip(&coords)
        .enumerate()
        .map(|(i, (&(g, dist, p), &c))| Ok((g, dim_ranges(i, g, dist, p, c)?)))
        .collect::<Result<Vec<_>, BuildError>>()?;
    build(&d, order, old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::{Datatype, ElemType};
    use crate::typemap::Atom;

    fn int() -> Layout {
        Layout::atom(Atom {
            handle: 1,
            dt: Datatype::new(ElemType::I32, 4, 4),
            align: 4,
        })
    }

    /// The byte offsets of the elements, in typemap order.
    fn offsets(l: &Layout) -> Vec<isize> {
        let mut v = vec![];
        l.for_each_run(1, |off, r| {
            v.extend((0..r.n).map(|k| off + (k * r.atom.dt.extent) as isize));
        });
        v
    }

    #[test]
    fn subarray_c_and_fortran() {
        // 4x5 ints, rows 1..3, columns 2..4: C order is row-major.
        let l = subarray(&[(4, 2, 1), (5, 2, 2)], Order::C, &int()).unwrap();
        assert_eq!((l.lb, l.extent(), l.size), (0, 80, 16));
        assert_eq!(offsets(&l), vec![28, 32, 48, 52]);
        assert_eq!(l.true_bounds(), (28, 56));
        // The same arguments in Fortran order: the first index is fastest.
        let l = subarray(&[(4, 2, 1), (5, 2, 2)], Order::Fortran, &int()).unwrap();
        assert_eq!(offsets(&l), vec![36, 40, 52, 56]);
        // 3-D, C order: [2][3][4], the block [1][1..3][3].
        let l = subarray(&[(2, 1, 1), (3, 2, 1), (4, 1, 3)], Order::C, &int()).unwrap();
        assert_eq!(offsets(&l), vec![(12 + 4 + 3) * 4, (12 + 8 + 3) * 4]);
        assert_eq!(l.extent(), 96);
        // An empty subarray still spans the whole array.
        let l = subarray(&[(4, 0, 0), (5, 2, 0)], Order::C, &int()).unwrap();
        assert_eq!((l.size, l.lb, l.extent()), (0, 0, 80));
    }

    #[test]
    fn subarray_bounds_are_checked() {
        assert!(subarray(&[(4, 5, 0)], Order::C, &int()).is_err());
        assert!(subarray(&[(4, 2, 3)], Order::C, &int()).is_err());
        assert!(subarray(&[(0, 0, 0)], Order::C, &int()).is_err());
        assert!(subarray(&[(4, 2, 2)], Order::C, &int()).is_ok());
    }

    #[test]
    fn darray_block_cyclic_none() {
        // 1-D, 10 elements over 3 processes.
        let blk = |r| darray(3, r, &[(10, Distrib::Block(None), 3)], Order::C, &int()).unwrap();
        assert_eq!(offsets(&blk(0)), vec![0, 4, 8, 12]);
        assert_eq!(offsets(&blk(2)), vec![32, 36]);
        assert_eq!(blk(1).extent(), 40);
        let cyc = |r, d| darray(3, r, &[(10, Distrib::Cyclic(d), 3)], Order::C, &int()).unwrap();
        assert_eq!(offsets(&cyc(1, None)), vec![4, 16, 28]);
        assert_eq!(offsets(&cyc(0, Some(2))), vec![0, 4, 24, 28]);
        assert_eq!(offsets(&cyc(2, Some(2))), vec![16, 20]);
        // 2-D 4x6 on a 2x1 grid (rank 1 = coords (1, 0)), rows by block, columns whole.
        let dims = [(4, Distrib::Block(None), 2), (6, Distrib::None, 1)];
        let l = darray(2, 1, &dims, Order::C, &int()).unwrap();
        assert_eq!(offsets(&l), (12..24).map(|i| i * 4).collect::<Vec<_>>());
        // Fortran order: the first index is fastest; rank 1 keeps rows 2..4 of each column.
        let l = darray(2, 1, &dims, Order::Fortran, &int()).unwrap();
        let exp: Vec<isize> = (0..6)
            .flat_map(|c| [c * 4 + 2, c * 4 + 3])
            .map(|i| i * 4)
            .collect();
        assert_eq!(offsets(&l), exp);
        // A 2x2 grid is row-major: rank 1 is coords (0, 1).
        let dims = [(4, Distrib::Block(None), 2), (4, Distrib::Block(None), 2)];
        let l = darray(4, 1, &dims, Order::C, &int()).unwrap();
        assert_eq!(offsets(&l), vec![8, 12, 24, 28]);
    }

    #[test]
    fn darray_errors() {
        let d = |dims: &[(usize, Distrib, usize)], size| darray(size, 0, dims, Order::C, &int());
        assert!(d(&[(10, Distrib::Block(Some(3)), 3)], 3).is_err()); // 3·3 < 10
        assert!(d(&[(10, Distrib::None, 2)], 2).is_err());
        assert!(d(&[(10, Distrib::Block(None), 3)], 4).is_err());
        assert!(d(&[(10, Distrib::Cyclic(Some(0)), 2)], 2).is_err());
        assert!(darray(2, 2, &[(10, Distrib::Block(None), 2)], Order::C, &int()).is_err());
    }
}
