//! Process topologies (MPI-4.1 §8): the Cartesian, graph or distributed-graph structure a
//! communicator may carry, kept on the communicator and copied by `MPI_Comm_dup`, and the
//! neighbor lists that the neighbor collectives exchange with.
//!
//! (Not to be confused with [`crate::topology`], which says which members share a host.)
//!
//! Neighbor order is the standard's: for a Cartesian topology, per dimension the −1 neighbor
//! then the +1 neighbor (`MPI_Cart_shift(d, 1)`'s source, then its dest), `None` standing for
//! `MPI_PROC_NULL`; for a graph, `MPI_Graph_neighbors`; for a distributed graph, the sources
//! and destinations as given or as gathered by `MPI_Dist_graph_create`.

/// `MPI_PROC_NULL` as a neighbor: `None`.
pub type Peer = Option<usize>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcTopo {
    Cart {
        dims: Vec<usize>,
        periods: Vec<bool>,
    },
    Graph {
        /// `index[i]`: the total number of neighbors of nodes 0..=i (MPI's layout).
        index: Vec<usize>,
        edges: Vec<usize>,
    },
    DistGraph {
        sources: Vec<usize>,
        dests: Vec<usize>,
        /// Source weights then destination weights; `None` when created `MPI_UNWEIGHTED`.
        weights: Option<(Vec<i32>, Vec<i32>)>,
    },
}

/// Whom a rank receives block `i` from and sends block `i` to in a neighbor collective, each
/// with the tag that pairs it with the matching block on the other side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbors {
    pub recv: Vec<(Peer, u32)>,
    pub send: Vec<(Peer, u32)>,
}

impl ProcTopo {
    /// Coordinates of `rank` in a Cartesian grid (row-major: the last dimension varies
    /// fastest).
    pub fn coords_of(dims: &[usize], mut rank: usize) -> Vec<usize> {
        let mut c = vec![0; dims.len()];
        for (i, &d) in dims.iter().enumerate().rev() {
            c[i] = rank % d;
            rank /= d;
        }
        c
    }

    /// The rank at `coords`, which must lie within `dims`.
    pub fn rank_of(dims: &[usize], coords: &[usize]) -> usize {
        dims.iter().zip(coords).fold(0, |r, (&d, &c)| r * d + c)
    }

    /// `coord` moved by `disp` along a dimension of size `d`: wrapped when periodic, `None`
    /// when it leaves a non-periodic dimension.
    pub fn moved(coord: usize, disp: i64, d: usize, periodic: bool) -> Option<usize> {
        let to = coord as i64 + disp;
        if periodic {
            Some(to.rem_euclid(d as i64) as usize)
        } else {
            (0..d as i64).contains(&to).then_some(to as usize)
        }
    }

    /// `MPI_Cart_shift`: (source, dest) of `rank` along `dim` by `disp`.
    pub fn shift(
        dims: &[usize],
        periods: &[bool],
        rank: usize,
        dim: usize,
        disp: i64,
    ) -> (Peer, Peer) {
        let c = Self::coords_of(dims, rank);
        let at = |delta: i64| {
            Self::moved(c[dim], delta, dims[dim], periods[dim]).map(|x| {
                let mut n = c.clone();
                n[dim] = x;
                Self::rank_of(dims, &n)
            })
        };
        (at(-disp), at(disp))
    }

    /// The neighbors of node `rank` of a graph topology.
    pub fn graph_neighbors(index: &[usize], edges: &[usize], rank: usize) -> Vec<usize> {
        let start = if rank == 0 { 0 } else { index[rank - 1] };
        edges[start..index[rank]].to_vec()
    }

    /// The neighbor lists of `rank` for the neighbor collectives.
    pub fn neighbors(&self, rank: usize) -> Neighbors {
        match self {
            ProcTopo::Cart { dims, periods } => {
                let mut recv = Vec::with_capacity(2 * dims.len());
                for d in 0..dims.len() {
                    let (lo, hi) = Self::shift(dims, periods, rank, d, 1);
                    recv.push(lo);
                    recv.push(hi);
                }
                // Block 2d goes to the −1 neighbor, which receives it as its +1 block (2d + 1),
                // and the other way round: the tags tell them apart when both neighbors are
                // one process (a periodic dimension of size 1 or 2).
                let send = recv
                    .iter()
                    .enumerate()
                    .map(|(i, &p)| (p, (i ^ 1) as u32))
                    .collect();
                let recv = recv
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| (p, i as u32))
                    .collect();
                Neighbors { recv, send }
            }
            ProcTopo::Graph { index, edges } => {
                let n = Self::graph_neighbors(index, edges, rank);
                let tagged = occurrence_tags(&n);
                Neighbors {
                    recv: tagged.clone(),
                    send: tagged,
                }
            }
            ProcTopo::DistGraph { sources, dests, .. } => Neighbors {
                recv: occurrence_tags(sources),
                send: occurrence_tags(dests),
            },
        }
    }
}

/// Tags for a list of peers that may repeat (multiple edges between two processes): the k-th
/// message to a peer pairs with the k-th message the peer expects from this process, as
/// MPI's non-overtaking order would pair them.
fn occurrence_tags(peers: &[usize]) -> Vec<(Peer, u32)> {
    let mut seen: Vec<(usize, u32)> = Vec::new();
    peers
        .iter()
        .map(|&p| {
            let k = match seen.iter_mut().find(|(q, _)| *q == p) {
                Some((_, k)) => {
                    *k += 1;
                    *k
                }
                None => {
                    seen.push((p, 0));
                    0
                }
            };
            (Some(p), k)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coords_and_ranks_are_row_major() {
        let dims = [2, 3, 2];
        for r in 0..12 {
            let c = ProcTopo::coords_of(&dims, r);
            assert_eq!(ProcTopo::rank_of(&dims, &c), r);
        }
        assert_eq!(ProcTopo::coords_of(&dims, 7), vec![1, 0, 1]);
    }

    #[test]
    fn shifts_wrap_only_when_periodic() {
        let dims = [4];
        assert_eq!(ProcTopo::shift(&dims, &[false], 0, 0, 1), (None, Some(1)));
        assert_eq!(ProcTopo::shift(&dims, &[true], 0, 0, 1), (Some(3), Some(1)));
        assert_eq!(
            ProcTopo::shift(&dims, &[true], 1, 0, -6),
            (Some(3), Some(3))
        );
        assert_eq!(
            ProcTopo::shift(&[2, 2], &[false, true], 3, 1, 1),
            (Some(2), Some(2))
        );
    }

    #[test]
    fn cart_neighbors_pair_minus_with_plus() {
        let t = ProcTopo::Cart {
            dims: vec![2],
            periods: vec![true],
        };
        let n = t.neighbors(0);
        assert_eq!(n.recv, vec![(Some(1), 0), (Some(1), 1)]);
        assert_eq!(n.send, vec![(Some(1), 1), (Some(1), 0)]);
    }

    #[test]
    fn repeated_peers_get_increasing_tags() {
        let t = ProcTopo::DistGraph {
            sources: vec![2, 1, 2],
            dests: vec![],
            weights: None,
        };
        assert_eq!(
            t.neighbors(0).recv,
            vec![(Some(2), 0), (Some(1), 0), (Some(2), 1)]
        );
    }
}
