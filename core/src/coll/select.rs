//! Algorithm and chunk selection, and `HCOMM_ALGO` / `HCOMM_CHUNK_SIZE` forcing.

use std::sync::OnceLock;

/// The algorithms hcomm has. Not every collective has every one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// Ring (reduce-scatter + allgather, or one of the two), pipelined in chunks.
    Ring,
    /// Every rank sends its data straight to every rank that needs it: one step, latency-bound.
    OneShot,
    /// Binomial tree (bcast, reduce), pipelined in chunks.
    Tree,
    /// Chain from the root through every rank, pipelined in chunks (bcast).
    Pipeline,
    /// Dissemination (barrier).
    Dissemination,
    /// One rank: only a local copy.
    Local,
    /// Two levels: within each host, then across hosts, then within again (`coll/hier.rs`).
    Hier,
    /// Only in `HCOMM_ALGO`: the one-level algorithms even across hosts.
    Flat,
}

impl Algo {
    fn parse(s: &str) -> Option<Algo> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "ring" => Algo::Ring,
            "oneshot" | "one-shot" | "direct" => Algo::OneShot,
            "tree" | "binomial" => Algo::Tree,
            "pipeline" | "chain" => Algo::Pipeline,
            "hier" | "hierarchical" | "twolevel" | "two-level" => Algo::Hier,
            "flat" => Algo::Flat,
            _ => return None,
        })
    }
}

/// Parsed `HCOMM_ALGO`: (collective or None for "any", algorithm).
fn forced_table() -> &'static [(Option<String>, Algo)] {
    static T: OnceLock<Vec<(Option<String>, Algo)>> = OnceLock::new();
    T.get_or_init(|| {
        let Some(spec) = crate::param::algo() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in spec.split(',').filter(|s| !s.trim().is_empty()) {
            let (coll, name) = match item.split_once(':') {
                Some((c, a)) => (Some(c.trim().to_ascii_lowercase()), a),
                None => (None, item),
            };
            match Algo::parse(name) {
                Some(a) => out.push((coll, a)),
                None => crate::warn!(
                    "HCOMM_ALGO: unknown algorithm {name:?} (ring, oneshot, tree, pipeline, hier, flat)"
                ),
            }
        }
        out
    })
}

/// Picks the algorithm for collective `coll` (lower-case name as in `HCOMM_ALGO`): a forced
/// one if it applies to this collective, else `small` up to `HCOMM_SMALL_BYTES`, else `large`.
pub fn choose(coll: &str, bytes: usize, available: &[Algo], small: Algo, large: Algo) -> Algo {
    for (c, a) in forced_table() {
        if c.as_deref().is_none_or(|c| c == coll) && available.contains(a) {
            return *a;
        }
    }
    if is_small(bytes) {
        small
    } else {
        large
    }
}

/// Whether `bytes` is a small message (`HCOMM_SMALL_BYTES`, 16 KiB by default).
pub fn is_small(bytes: usize) -> bool {
    bytes <= crate::param::small_bytes().unwrap_or(16 << 10)
}

/// What `HCOMM_ALGO` says about two levels for collective `coll`: `Some(true)` for `hier`,
/// `Some(false)` for `flat` or any one-level algorithm forced for it, `None` when it says
/// nothing (then the topology and size decide).
pub fn forced_levels(coll: &str) -> Option<bool> {
    forced_table()
        .iter()
        .find(|(c, _)| c.as_deref().is_none_or(|c| c == coll))
        .map(|(_, a)| *a == Algo::Hier)
}

/// Pipeline chunk in elements for a block of `block_elems` elements: `HCOMM_CHUNK_SIZE` or the
/// transport's fragment size, raised if needed so a block has fewer than 2^20 chunks (tags).
pub fn chunk_elems(extent: usize, block_elems: usize, fragment: usize) -> usize {
    let bytes = crate::param::chunk_size().unwrap_or(fragment).max(extent);
    let elems = (bytes / extent).max(1);
    elems.max(block_elems.div_ceil((1 << 20) - 1))
}
