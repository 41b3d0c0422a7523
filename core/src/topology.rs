//! Where a communicator's members live: which share a host, and each one's place there.
//!
//! Computed from the world endpoint's host indices (the address exchange every rank took part
//! in, refined by the launcher's node ids where it gives them), so every member derives the
//! same topology without a word exchanged; cached on the communicator, and computed afresh
//! for every split or dup (a new `Comm`).

/// The hosts of one communicator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Comm ranks on each host, ascending; hosts ordered by their lowest comm rank. The first
    /// rank of a host is its leader.
    pub hosts: Vec<Vec<usize>>,
    /// Comm rank → (host, index among that host's ranks).
    pub place: Vec<(usize, usize)>,
}

impl Topology {
    /// `host_of(comm rank)` is any host key: ranks with equal keys share a host.
    pub fn new(size: usize, host_of: impl Fn(usize) -> usize) -> Topology {
        let mut keys: Vec<usize> = Vec::new();
        let mut hosts: Vec<Vec<usize>> = Vec::new();
        let mut place = Vec::with_capacity(size);
        for r in 0..size {
            let k = host_of(r);
            let h = match keys.iter().position(|&x| x == k) {
                Some(h) => h,
                None => {
                    keys.push(k);
                    hosts.push(Vec::new());
                    hosts.len() - 1
                }
            };
            place.push((h, hosts[h].len()));
            hosts[h].push(r);
        }
        Topology { hosts, place }
    }

    /// More than one host.
    pub fn spans_hosts(&self) -> bool {
        self.hosts.len() > 1
    }

    /// Every host has the same number of ranks: the shape the two-level algorithms need (each
    /// local index has one rank on every host).
    pub fn is_regular(&self) -> bool {
        self.hosts.windows(2).all(|w| w[0].len() == w[1].len())
    }

    /// The comm ranks on `rank`'s host, ascending.
    pub fn local(&self, rank: usize) -> &[usize] {
        &self.hosts[self.place[rank].0]
    }

    /// The comm ranks with `rank`'s local index, one per host in host order (regular
    /// topologies only).
    pub fn cross(&self, rank: usize) -> Vec<usize> {
        let i = self.place[rank].1;
        self.hosts.iter().map(|h| h[i]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_ranks_by_host() {
        // Ranks laid round-robin over two hosts.
        let t = Topology::new(4, |r| [7, 9, 7, 9][r]);
        assert_eq!(t.hosts, vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(t.place, vec![(0, 0), (1, 0), (0, 1), (1, 1)]);
        assert!(t.spans_hosts() && t.is_regular());
        assert_eq!(t.local(3), &[1, 3]);
        assert_eq!(t.cross(2), vec![2, 3]);
        assert_eq!(t.cross(1), vec![0, 1]);
        let uneven = Topology::new(4, |r| usize::from(r == 3));
        assert!(uneven.spans_hosts() && !uneven.is_regular());
        let one = Topology::new(3, |_| 5);
        assert!(!one.spans_hosts() && one.is_regular());
    }
}
