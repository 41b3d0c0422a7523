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
}
