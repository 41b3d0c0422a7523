//! The environment contract between a launcher (`hcomm run`, or anything else that starts
//! ranks) and the ranks it starts. Documented in README.md ("Environment contract").

/// This process's rank in `MPI_COMM_WORLD` (0-based).
pub const ENV_RANK: &str = "HCOMM_RANK";
/// Number of ranks in `MPI_COMM_WORLD`.
pub const ENV_SIZE: &str = "HCOMM_SIZE";
/// Rank among the ranks started on this host by the same launcher (informational;
/// locality is decided from host identity, never from this).
pub const ENV_LOCAL_RANK: &str = "HCOMM_LOCAL_RANK";
/// Number of ranks started on this host by the same launcher.
pub const ENV_LOCAL_SIZE: &str = "HCOMM_LOCAL_SIZE";
/// Rendezvous address: `tcp://host:port` (rank 0 listens there, the others connect) or
/// `file:///shared/dir` (rank 0 publishes its address in a file there; see `bootstrap::file`).
pub const ENV_URI: &str = "HCOMM_URI";
/// Job identifier (hex): names shared-memory segments (`/dev/shm/hcomm-<job>-<rank>`)
/// so that a launcher can remove whatever a killed job left behind.
pub const ENV_JOB_ID: &str = "HCOMM_JOB_ID";
/// Optional, rank 0 only: an inherited file descriptor of an already listening TCP socket
/// bound to `HCOMM_URI`'s address. Lets a launcher pick a free port without a race.
pub const ENV_BOOTSTRAP_FD: &str = "HCOMM_BOOTSTRAP_FD";

/// Prefix of every shared-memory segment name hcomm creates.
pub const SHM_PREFIX: &str = "hcomm-";

/// Name (without the leading `/`) of the segment rank `rank` of job `job` creates.
pub fn shm_segment_name(job: &str, rank: usize) -> String {
    format!("{SHM_PREFIX}{job}-{rank}")
}
