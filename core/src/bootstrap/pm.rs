//! Joining the process manager that started this process: PMIx, PMI-2, PMI-1, hcomm's own
//! contract, or none (a singleton).
//!
//! Every process manager offers the same three calls — put a key, fence, get a peer's key —
//! and that is all the world setup needs: [`PmExchange`] turns them into the allgather and
//! barrier of [`crate::bootstrap::Exchange`]. Values are hex text cut into pieces no longer
//! than the manager's value limit, so a blob of any bytes passes every wire protocol.
//!
//! [`detect`] chooses in the order of preference (PMIx, PMI-2, PMI-1, then
//! `HCOMM_RANK`, then a singleton) and never turns a process that the environment says is one
//! of N > 1 tasks into a world of one: when it cannot join that launcher it fails, naming the
//! launcher and the fix.

use crate::error::{Class, Error, Result};

/// A process manager's key-value space, as PMIx, PMI-2 and PMI-1 all offer it.
pub trait ProcessManager: Send {
    /// `"PMIx"`, `"PMI-2"`, `"PMI-1"`: for messages.
    fn name(&self) -> &'static str;
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// The job's name in this manager (PMIx namespace, PMI kvsname or job id): unique among
    /// the jobs running at one time, so it can name the job's shared-memory segments.
    fn job_name(&self) -> &str;
    /// Longest value `put` accepts (the hex text of a blob is cut to fit).
    fn max_value_len(&self) -> usize;
    /// Publishes `key = value` for the other processes of the job; visible after the next
    /// [`fence`](Self::fence). `value` is hex text; a key is put once.
    fn put(&mut self, key: &str, value: &str) -> Result<()>;
    /// Collective: returns once every process has called it, and makes every `put` before it
    /// visible to every process.
    fn fence(&mut self) -> Result<()>;
    /// The value that process `rank` put under `key` before the last fence.
    fn get(&mut self, rank: usize, key: &str) -> Result<String>;
    /// The node index of every rank, where the manager tells it (PMIx node ids, PMI-2's
    /// `PMI_process_mapping`). Ranks with equal indices share a host.
    fn nodes(&mut self) -> Option<Vec<usize>> {
        None
    }
    /// Tells the manager this process is done with it (called from `MPI_Finalize`).
    fn finalize(&mut self) {}
}

/// The exchange the world setup needs (an allgather of small blobs and a barrier) over a
/// process manager's key-value space.
pub struct PmExchange {
    pm: Box<dyn ProcessManager>,
    round: usize,
}

impl PmExchange {
    pub fn new(pm: Box<dyn ProcessManager>) -> PmExchange {
        PmExchange { pm, round: 0 }
    }
    pub fn pm(&mut self) -> &mut dyn ProcessManager {
        &mut *self.pm
    }
    pub fn rank(&self) -> usize {
        self.pm.rank()
    }
    pub fn size(&self) -> usize {
        self.pm.size()
    }
}

fn to_hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    if s.len() % 2 != 0 {
        return None;
    }
    let nib = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.chunks(2)
        .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

/// Cuts `hex` into pieces of at most `max` characters; the first piece starts with the number
/// of pieces and a `:` (so a reader knows how many keys to get).
pub(crate) fn split_value(hex: &str, max: usize) -> Vec<String> {
    // Room for the "<count>:" prefix of the first piece: 8 digits is plenty.
    let piece = max.saturating_sub(9).max(16);
    let mut parts: Vec<String> = hex
        .as_bytes()
        .chunks(piece)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    if parts.is_empty() {
        parts.push(String::new());
    }
    parts[0] = format!("{}:{}", parts.len(), parts[0]);
    parts
}

impl crate::bootstrap::Exchange for PmExchange {
    fn allgather(&mut self, blob: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.round += 1;
        let round = self.round;
        let me = self.pm.rank();
        let name = self.pm.name();
        let key = |rank: usize, piece: usize| format!("hc{round}-{rank}-{piece}");
        for (i, part) in split_value(&to_hex(blob), self.pm.max_value_len())
            .iter()
            .enumerate()
        {
            self.pm
                .put(&key(me, i), part)
                .map_err(|e| e.context(format!("{name} put")))?;
        }
        self.pm
            .fence()
            .map_err(|e| e.context(format!("{name} fence")))?;
        let mut all = Vec::with_capacity(self.pm.size());
        for r in 0..self.pm.size() {
            let first = self
                .pm
                .get(r, &key(r, 0))
                .map_err(|e| e.context(format!("{name} get of rank {r}'s address")))?;
            let bad = || {
                Error::other(format!(
                    "{name}: rank {r}'s address entry is malformed ({} characters)",
                    first.len()
                ))
            };
            let (count, head) = first.split_once(':').ok_or_else(bad)?;
            let count: usize = count.parse().map_err(|_| bad())?;
            let mut hex = head.to_string();
            for i in 1..count {
                hex.push_str(
                    &self
                        .pm
                        .get(r, &key(r, i))
                        .map_err(|e| e.context(format!("{name} get of rank {r}'s address")))?,
                );
            }
            all.push(from_hex(&hex).ok_or_else(bad)?);
        }
        Ok(all)
    }

    fn barrier(&mut self) -> Result<()> {
        let name = self.pm.name();
        self.pm
            .fence()
            .map_err(|e| e.context(format!("{name} fence")))
    }
}

/// What started this process.
pub enum Started {
    /// A process manager hcomm joined.
    Pm(PmExchange),
    /// hcomm's own contract (`HCOMM_RANK`, `HCOMM_URI`: `hcomm run` or a hand-made launch).
    Hcomm(crate::bootstrap::Launch),
    /// No launcher: a world of one.
    Singleton,
}

/// Chooses how to join the job: PMIx, PMI-2, PMI-1, hcomm's contract, else a singleton —
/// unless the environment says this process is one of several tasks, which is an error that
/// names the launcher and the fix.
pub fn detect() -> Result<Started> {
    if let Some(pm) = crate::bootstrap::pmix::connect()? {
        return Ok(Started::Pm(PmExchange::new(pm)));
    }
    if let Some(pm) = crate::bootstrap::pmi::connect()? {
        return Ok(Started::Pm(PmExchange::new(pm)));
    }
    if let Some(l) = crate::bootstrap::Launch::from_env()? {
        return Ok(Started::Hcomm(l));
    }
    if let Some(msg) = unjoined_launcher(&|k| std::env::var(k).ok()) {
        return Err(Error::new(Class::Other, msg));
    }
    Ok(Started::Singleton)
}

fn above_one(v: Option<String>) -> Option<usize> {
    v.and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 1)
}

/// The error for a process that a launcher started as one of N > 1 tasks, when no process
/// manager hcomm can join answered (`None` when nothing says there are other tasks).
pub(crate) fn unjoined_launcher(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    // srun sets SLURM_STEP_NUM_TASKS for the tasks of a step; a batch script's own shell has
    // SLURM_NTASKS but is one process, so only a step's variables count.
    if env("SLURM_STEP_ID").is_some() {
        if let Some(n) = above_one(env("SLURM_STEP_NUM_TASKS")) {
            let mpi = env("SLURM_MPI_TYPE").unwrap_or_else(|| "none".into());
            return Some(format!(
                "this process is one of {n} tasks started by Slurm's srun (--mpi={mpi}), but srun gave it no PMI to join: hcomm joins Slurm through PMI-2 or PMIx; start the job with `srun --mpi=pmi2` (or `--mpi=pmix`, or set MpiDefault=pmi2 in slurm.conf)"
            ));
        }
    }
    if let Some(n) = above_one(env("OMPI_COMM_WORLD_SIZE")) {
        return Some(format!(
            "this process is one of {n} ranks started by Open MPI's mpirun, which hcomm joins through PMIx, but the PMIx client library could not be used ({}): install libpmix2 (Debian) or set HCOMM_PMIX_LIB to the libpmix.so of Open MPI's PMIx",
            crate::bootstrap::pmix::load_error().unwrap_or_else(|| "no PMIx server in the environment".into())
        ));
    }
    if env("PMIX_RANK").is_some() || env("PMIX_NAMESPACE").is_some() {
        return Some(format!(
            "this process was started by a PMIx launcher (PMIX_NAMESPACE is set), but the PMIx client library could not be used ({}): install libpmix2 (Debian) or set HCOMM_PMIX_LIB",
            crate::bootstrap::pmix::load_error().unwrap_or_else(|| "unknown reason".into())
        ));
    }
    if let Some(n) = above_one(env("PMI_SIZE")).or_else(|| above_one(env("MPI_LOCALNRANKS"))) {
        return Some(format!(
            "this process is one of {n} ranks of a PMI launcher (PMI_SIZE), but neither PMI_FD nor PMI_PORT is set: start it with MPICH's mpiexec (Hydra) or `srun --mpi=pmi2`"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let b: Vec<u8> = (0..=255).collect();
        assert_eq!(from_hex(&to_hex(&b)).unwrap(), b);
        assert!(from_hex("abc").is_none());
        assert!(from_hex("zz").is_none());
    }

    #[test]
    fn values_split_to_fit() {
        let hex = "ab".repeat(1000);
        let parts = split_value(&hex, 256);
        assert!(parts.iter().all(|p| p.len() <= 256));
        let (n, head) = parts[0].split_once(':').unwrap();
        assert_eq!(n.parse::<usize>().unwrap(), parts.len());
        let joined: String = std::iter::once(head)
            .chain(parts[1..].iter().map(String::as_str))
            .collect();
        assert_eq!(joined, hex);
        assert_eq!(split_value("", 64), vec!["1:".to_string()]);
    }

    #[test]
    fn names_the_launcher_it_cannot_join() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let m = unjoined_launcher(&env(&[
            ("SLURM_STEP_ID", "0"),
            ("SLURM_STEP_NUM_TASKS", "2"),
            ("SLURM_MPI_TYPE", "none"),
        ]))
        .unwrap();
        assert!(m.contains("Slurm") && m.contains("--mpi=pmi2"), "{m}");
        // A batch script's shell is one process, whatever SLURM_NTASKS says.
        assert!(unjoined_launcher(&env(&[("SLURM_NTASKS", "4")])).is_none());
        assert!(unjoined_launcher(&env(&[
            ("SLURM_STEP_ID", "0"),
            ("SLURM_STEP_NUM_TASKS", "1")
        ]))
        .is_none());
        let m = unjoined_launcher(&env(&[("OMPI_COMM_WORLD_SIZE", "3")])).unwrap();
        assert!(m.contains("Open MPI") && m.contains("PMIx"), "{m}");
        let m = unjoined_launcher(&env(&[("PMI_SIZE", "3")])).unwrap();
        assert!(m.contains("PMI_FD"), "{m}");
        assert!(unjoined_launcher(&env(&[])).is_none());
    }
}
