//! Process groups: an ordered list of distinct world ranks (group rank `i` is world rank
//! `world[i]`), and the MPI group algebra on them.
//!
//! A group is plain local data: building one never communicates. Communicators keep their own
//! member list (`Comm::world`); `MPI_Comm_group` copies it into a `Group`, and
//! `MPI_Comm_create` turns a `Group` back into a member list. Ranks arrive from C as `i32` and
//! are checked here, so the ABI layer only maps handles.

use crate::error::{Class, Error, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Group rank → world rank; no duplicates.
    pub world: Vec<usize>,
}

/// `MPI_Group_compare`'s outcomes (the ABI layer maps them to `MPI_IDENT` …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    Ident,
    Similar,
    Unequal,
}

impl Group {
    pub fn new(world: Vec<usize>) -> Group {
        Group { world }
    }

    pub fn empty() -> Group {
        Group { world: Vec::new() }
    }

    pub fn size(&self) -> usize {
        self.world.len()
    }

    /// The group rank of world rank `w`, if it is a member.
    pub fn rank_of(&self, w: usize) -> Option<usize> {
        self.world.iter().position(|&x| x == w)
    }

    /// Checks `ranks` (from C) are valid, distinct ranks of this group; `what` names the
    /// argument in messages. Returns them as indices.
    fn ranks_arg(&self, ranks: &[i32], what: &str) -> Result<Vec<usize>> {
        if ranks.len() > self.size() {
            return Err(Error::new(
                Class::Arg,
                format!(
                    "n = {} is larger than the group size {}",
                    ranks.len(),
                    self.size()
                ),
            ));
        }
        let mut seen = vec![false; self.size()];
        ranks
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let idx = usize::try_from(r)
                    .ok()
                    .filter(|&x| x < self.size())
                    .ok_or_else(|| {
                        Error::new(
                            Class::Rank,
                            format!(
                                "{what}[{i}] = {r} is not a rank of a group of size {}",
                                self.size()
                            ),
                        )
                    })?;
                if std::mem::replace(&mut seen[idx], true) {
                    return Err(Error::new(
                        Class::Rank,
                        format!("{what}[{i}] = {r} appears twice"),
                    ));
                }
                Ok(idx)
            })
            .collect()
    }

    /// `MPI_Group_incl`: the members at `ranks`, in that order.
    pub fn incl(&self, ranks: &[i32]) -> Result<Group> {
        let idx = self.ranks_arg(ranks, "ranks")?;
        Ok(Group::new(idx.iter().map(|&i| self.world[i]).collect()))
    }

    /// `MPI_Group_excl`: the members not at `ranks`, in this group's order.
    pub fn excl(&self, ranks: &[i32]) -> Result<Group> {
        let idx = self.ranks_arg(ranks, "ranks")?;
        let mut drop = vec![false; self.size()];
        for i in idx {
            drop[i] = true;
        }
        Ok(Group::new(
            self.world
                .iter()
                .zip(drop)
                .filter(|&(_, d)| !d)
                .map(|(&w, _)| w)
                .collect(),
        ))
    }

    /// `MPI_Group_union`: every member of this group in its order, then the members of
    /// `other` that are not in this group, in `other`'s order.
    pub fn union(&self, other: &Group) -> Group {
        let mut world = self.world.clone();
        world.extend(other.world.iter().filter(|w| !self.world.contains(w)));
        Group::new(world)
    }

    /// `MPI_Group_intersection`: the members of this group that are also in `other`, in this
    /// group's order.
    pub fn intersection(&self, other: &Group) -> Group {
        Group::new(
            self.world
                .iter()
                .copied()
                .filter(|w| other.world.contains(w))
                .collect(),
        )
    }

    /// `MPI_Group_difference`: the members of this group that are not in `other`, in this
    /// group's order.
    pub fn difference(&self, other: &Group) -> Group {
        Group::new(
            self.world
                .iter()
                .copied()
                .filter(|w| !other.world.contains(w))
                .collect(),
        )
    }

    /// Expands `MPI_Group_range_incl`/`_excl` triplets `(first, last, stride)` into ranks,
    /// triplet by triplet. Each triplet's ranks must lie in the group (`first` and `last`
    /// included, even when the stride steps past `last`), the stride must not be 0, and no
    /// rank may appear twice over all triplets (MPI-4 §7.3.2).
    /// The stride's sign must agree with `last - first`.
    pub fn expand_ranges(&self, ranges: &[[i32; 3]]) -> Result<Vec<usize>> {
        let n = self.size() as i64;
        let mut seen = vec![false; self.size()];
        let mut out = Vec::new();
        for (i, &[first, last, stride]) in ranges.iter().enumerate() {
            for (what, r) in [("first", first), ("last", last)] {
                if !(0..n).contains(&(r as i64)) {
                    return Err(Error::new(
                        Class::Rank,
                        format!("ranges[{i}] {what} = {r} is not a rank of a group of size {n}"),
                    ));
                }
            }
            // A stride that leads away from `last` has no meaning in MPI (MPICH rejects it).
            if stride == 0 || (first < last && stride < 0) || (first > last && stride > 0) {
                return Err(Error::new(
                    Class::Arg,
                    format!("ranges[{i}] = ({first}, {last}, {stride}): the stride does not lead from first to last"),
                ));
            }
            let (mut r, last, stride) = (first as i64, last as i64, stride as i64);
            while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
                if std::mem::replace(&mut seen[r as usize], true) {
                    return Err(Error::new(
                        Class::Rank,
                        format!("ranges[{i}] names rank {r}, which an earlier range named too"),
                    ));
                }
                out.push(r as usize);
                r += stride;
            }
        }
        Ok(out)
    }

    /// `MPI_Group_range_incl`: the ranks of the triplets, in triplet order.
    pub fn range_incl(&self, ranges: &[[i32; 3]]) -> Result<Group> {
        let idx = self.expand_ranges(ranges)?;
        Ok(Group::new(idx.iter().map(|&i| self.world[i]).collect()))
    }

    /// `MPI_Group_range_excl`: the members not named by a triplet, in this group's order.
    pub fn range_excl(&self, ranges: &[[i32; 3]]) -> Result<Group> {
        let mut drop = vec![false; self.size()];
        for i in self.expand_ranges(ranges)? {
            drop[i] = true;
        }
        Ok(Group::new(
            self.world
                .iter()
                .zip(drop)
                .filter(|&(_, d)| !d)
                .map(|(&w, _)| w)
                .collect(),
        ))
    }

    /// `MPI_Group_translate_ranks`: for each rank of this group, its rank in `other`, or
    /// `undefined` when it is not a member there; `proc_null` maps to itself.
    pub fn translate(
        &self,
        ranks: &[i32],
        other: &Group,
        proc_null: i32,
        undefined: i32,
    ) -> Result<Vec<i32>> {
        ranks
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                if r == proc_null {
                    return Ok(proc_null);
                }
                let w = usize::try_from(r)
                    .ok()
                    .and_then(|x| self.world.get(x))
                    .ok_or_else(|| {
                        Error::new(
                            Class::Rank,
                            format!(
                                "ranks1[{i}] = {r} is not a rank of group1 (size {})",
                                self.size()
                            ),
                        )
                    })?;
                Ok(other.rank_of(*w).map_or(undefined, |x| x as i32))
            })
            .collect()
    }

    /// `MPI_Group_compare`: same members in the same order, same members, or neither.
    pub fn compare(&self, other: &Group) -> Compare {
        if self.world == other.world {
            return Compare::Ident;
        }
        let (mut a, mut b) = (self.world.clone(), other.world.clone());
        a.sort_unstable();
        b.sort_unstable();
        if a == b {
            Compare::Similar
        } else {
            Compare::Unequal
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PN: i32 = -1;
    const UNDEF: i32 = -32766;

    #[test]
    fn incl_excl_keep_the_right_order() {
        let g = Group::new(vec![10, 11, 12, 13, 14]);
        assert_eq!(g.incl(&[4, 0, 2]).unwrap().world, vec![14, 10, 12]);
        assert_eq!(g.incl(&[]).unwrap().size(), 0);
        assert_eq!(g.excl(&[3, 0]).unwrap().world, vec![11, 12, 14]);
        assert_eq!(g.excl(&[]).unwrap(), g);
        assert_eq!(g.excl(&[0, 1, 2, 3, 4]).unwrap().size(), 0);
    }

    #[test]
    fn bad_ranks_are_rejected() {
        let g = Group::new(vec![3, 1, 2]);
        assert_eq!(g.incl(&[3]).unwrap_err().class, Class::Rank);
        assert_eq!(g.incl(&[-1]).unwrap_err().class, Class::Rank);
        assert_eq!(g.incl(&[1, 1]).unwrap_err().class, Class::Rank);
        assert_eq!(g.excl(&[0, 0]).unwrap_err().class, Class::Rank);
        assert_eq!(g.incl(&[0, 1, 2, 0]).unwrap_err().class, Class::Arg);
    }

    #[test]
    fn translate_and_rank_of() {
        let a = Group::new(vec![0, 1, 2, 3]);
        let b = Group::new(vec![3, 1]);
        assert_eq!(
            a.translate(&[0, 1, 3, PN], &b, PN, UNDEF).unwrap(),
            vec![UNDEF, 1, 0, PN]
        );
        assert_eq!(b.translate(&[0, 1], &a, PN, UNDEF).unwrap(), vec![3, 1]);
        assert_eq!(
            b.translate(&[2], &a, PN, UNDEF).unwrap_err().class,
            Class::Rank
        );
        assert_eq!(b.rank_of(1), Some(1));
        assert_eq!(b.rank_of(0), None);
    }

    #[test]
    fn compare() {
        let a = Group::new(vec![0, 1, 2]);
        assert_eq!(a.compare(&a.clone()), Compare::Ident);
        assert_eq!(a.compare(&Group::new(vec![2, 0, 1])), Compare::Similar);
        assert_eq!(a.compare(&Group::new(vec![0, 1])), Compare::Unequal);
        assert_eq!(Group::empty().compare(&Group::empty()), Compare::Ident);
    }

    #[test]
    fn set_operations_keep_mpi_order() {
        let a = Group::new(vec![5, 1, 3, 7]);
        let b = Group::new(vec![7, 2, 1, 9]);
        assert_eq!(a.union(&b).world, vec![5, 1, 3, 7, 2, 9]);
        assert_eq!(b.union(&a).world, vec![7, 2, 1, 9, 5, 3]);
        assert_eq!(a.intersection(&b).world, vec![1, 7]);
        assert_eq!(b.intersection(&a).world, vec![7, 1]);
        assert_eq!(a.difference(&b).world, vec![5, 3]);
        assert_eq!(a.difference(&a).size(), 0);
        assert_eq!(Group::empty().union(&a), a);
    }

    #[test]
    fn ranges() {
        let g = Group::new((10..20).collect());
        assert_eq!(
            g.range_incl(&[[0, 9, 4], [7, 5, -1]]).unwrap().world,
            vec![10, 14, 18, 17, 16, 15]
        );
        // A stride may step past `last`; a single rank is (r, r, 1).
        assert_eq!(
            g.range_incl(&[[1, 2, 5], [9, 9, 1]]).unwrap().world,
            vec![11, 19]
        );
        assert_eq!(g.range_incl(&[[5, 2, 1]]).unwrap_err().class, Class::Arg);
        assert_eq!(
            g.range_excl(&[[0, 9, 2]]).unwrap().world,
            vec![11, 13, 15, 17, 19]
        );
        assert_eq!(g.range_excl(&[[0, 9, 1]]).unwrap().size(), 0);
        assert_eq!(g.range_incl(&[[0, 10, 1]]).unwrap_err().class, Class::Rank);
        assert_eq!(g.range_incl(&[[-1, 3, 1]]).unwrap_err().class, Class::Rank);
        assert_eq!(g.range_incl(&[[0, 3, 0]]).unwrap_err().class, Class::Arg);
        assert_eq!(
            g.range_excl(&[[0, 4, 2], [4, 6, 1]]).unwrap_err().class,
            Class::Rank
        );
    }
}
