//! `hcomm selftest -n N`: the "run two ranks first" check in one command.
//!
//! It starts N ranks of this same binary with `hcomm run` (the ranks see
//! `HCOMM_SELFTEST_WORKER=1`). Each rank calls hcomm-core's C-ABI entry points — what a C
//! program gets — with `MPI_ERRORS_RETURN` on the world, so a broken link is reported instead of
//! ending the job:
//! 1. every pair of ranks exchanges messages over the transport it would use (rounds of a
//!    round-robin tournament, so every rank has one partner per round and nothing can
//!    deadlock): 8-byte round trips for latency and `--bytes` (64 KiB, several fragments) both
//!    ways for bandwidth, every byte checked;
//! 2. each collective runs once on a small buffer and every rank checks the exact result.
//!
//! Rank 0 prints a table per pair (result, transport, hosts, latency, bandwidth) and per
//! collective; the exit status is 1 when anything failed (every rank knows the verdict).

use std::ffi::{c_int, c_void};
use std::process::Command;
use std::time::Instant;

use clap::Args;
use hcomm_core::abi::api;
use hcomm_core::abi::handles as h;

#[derive(Debug, Args)]
pub struct SelftestArgs {
    /// Number of ranks.
    #[arg(short = 'n', long, default_value_t = 2)]
    pub ranks: usize,
    /// Bytes of the bandwidth message exchanged by every pair.
    #[arg(long, default_value_t = 64 << 10)]
    pub bytes: usize,
}

const WORKER: &str = "HCOMM_SELFTEST_WORKER";
const MPI_BYTE: c_int = 0x4c00_010d;
const MPI_INT: c_int = 0x4c00_0405;
const MPI_DOUBLE: c_int = 0x4c00_080b;
const MPI_SUM: c_int = 0x5800_0003;
const MPI_MIN: c_int = 0x5800_0002;
const WORLD: c_int = h::COMM_WORLD;
/// `MPI_STATUS_IGNORE` in the MPICH ABI.
const STATUS_IGNORE: usize = 1;

pub fn selftest(args: SelftestArgs) -> i32 {
    if std::env::var_os(WORKER).is_some() && std::env::var_os("HCOMM_RANK").is_some() {
        return worker(&args);
    }
    if args.ranks < 1 {
        eprintln!("hcomm selftest: -n must be at least 1");
        return 2;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("hcomm selftest: cannot find this program: {e}");
            return 1;
        }
    };
    let status = Command::new(&exe)
        .args(["run", "-n", &args.ranks.to_string()])
        .arg(&exe)
        .args(["selftest", "--bytes", &args.bytes.to_string()])
        .env(WORKER, "1")
        .status();
    match status {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("hcomm selftest: cannot start hcomm run: {e}");
            1
        }
    }
}

/// The partner of `rank` in round `round` of a round-robin tournament over `n` ranks (the
/// circle method; with odd n one rank sits out each round: `None`).
fn partner(rank: usize, round: usize, n: usize) -> Option<usize> {
    if n < 2 {
        return None;
    }
    // m players (a dummy one when n is odd); player m-1 stays, the others rotate: in round r,
    // r meets m-1 and r+k meets r-k (mod m-1).
    let m = if n % 2 == 0 { n } else { n + 1 };
    let r = round % (m - 1);
    let p = if rank == m - 1 {
        r
    } else if rank == r {
        m - 1
    } else {
        (2 * r + (m - 1) - rank) % (m - 1)
    };
    (p < n).then_some(p)
}

/// The byte at `i` of the message `from` sends `to`.
fn pattern(from: usize, to: usize, i: usize) -> u8 {
    (i.wrapping_mul(31) ^ from.wrapping_mul(7) ^ to.wrapping_mul(13)) as u8
}

/// One pair's outcome, as the doubles gathered to rank 0.
#[derive(Clone, Copy, Default)]
struct PairResult {
    /// 0 ok, 1 wrong data, 2 an MPI error.
    status: f64,
    latency_us: f64,
    gbps: f64,
}

/// # Safety
/// The buffers hold `n` bytes each.
unsafe fn exchange(peer: usize, send: *const u8, recv: *mut u8, n: usize) -> c_int {
    // SAFETY: the caller's buffers; peer is a valid rank.
    unsafe {
        api::sendrecv(
            "MPI_Sendrecv",
            send.cast(),
            n as i64,
            MPI_BYTE,
            peer as c_int,
            7,
            recv.cast(),
            n as i64,
            MPI_BYTE,
            peer as c_int,
            7,
            WORLD,
            STATUS_IGNORE as *mut _,
        )
    }
}

fn test_pair(rank: usize, peer: usize, bytes: usize) -> PairResult {
    let mut r = PairResult::default();
    let small_out = [rank as u8; 8];
    let mut small_in = [0u8; 8];
    let reps = 50;
    let t = Instant::now();
    for _ in 0..reps {
        // SAFETY: 8-byte buffers.
        if unsafe { exchange(peer, small_out.as_ptr(), small_in.as_mut_ptr(), 8) } != 0 {
            r.status = 2.0;
            return r;
        }
    }
    r.latency_us = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
    if small_in != [peer as u8; 8] {
        r.status = 1.0;
    }
    let out: Vec<u8> = (0..bytes).map(|i| pattern(rank, peer, i)).collect();
    let mut inp = vec![0u8; bytes];
    let t = Instant::now();
    // SAFETY: both buffers hold `bytes` bytes.
    if unsafe { exchange(peer, out.as_ptr(), inp.as_mut_ptr(), bytes) } != 0 {
        r.status = 2.0;
        return r;
    }
    let secs = t.elapsed().as_secs_f64();
    r.gbps = if secs > 0.0 {
        2.0 * bytes as f64 / secs / 1e9
    } else {
        0.0
    };
    if inp
        .iter()
        .enumerate()
        .any(|(i, &b)| b != pattern(peer, rank, i))
    {
        r.status = 1.0;
    }
    r
}

/// Runs one collective check; `Ok(true)` when this rank's result is right.
type Check = fn(usize, usize) -> Result<bool, c_int>;

fn check_allreduce(rank: usize, n: usize) -> Result<bool, c_int> {
    let send: Vec<c_int> = (0..1000).map(|i| (rank * 1000 + i) as c_int).collect();
    let mut recv = vec![0 as c_int; 1000];
    // SAFETY: 1000 ints each.
    let rc = unsafe {
        api::allreduce(
            "MPI_Allreduce",
            send.as_ptr().cast(),
            recv.as_mut_ptr().cast(),
            1000,
            MPI_INT,
            MPI_SUM,
            WORLD,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    let ranks_sum = (n * (n - 1) / 2) as c_int;
    Ok(recv
        .iter()
        .enumerate()
        .all(|(i, &v)| v == 1000 * ranks_sum + (n * i) as c_int))
}

fn check_bcast(rank: usize, n: usize) -> Result<bool, c_int> {
    let root = n - 1;
    let mut buf: Vec<c_int> = (0..1000)
        .map(|i| if rank == root { (i * 3) as c_int } else { -1 })
        .collect();
    // SAFETY: 1000 ints.
    let rc = unsafe {
        api::bcast(
            "MPI_Bcast",
            buf.as_mut_ptr().cast(),
            1000,
            MPI_INT,
            root as c_int,
            WORLD,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    Ok(buf.iter().enumerate().all(|(i, &v)| v == (i * 3) as c_int))
}

fn check_reduce(rank: usize, n: usize) -> Result<bool, c_int> {
    let send = [rank as f64 + 0.5; 64];
    let mut recv = [0f64; 64];
    // SAFETY: 64 doubles each.
    let rc = unsafe {
        api::reduce(
            "MPI_Reduce",
            send.as_ptr().cast(),
            recv.as_mut_ptr().cast(),
            64,
            MPI_DOUBLE,
            MPI_SUM,
            0,
            WORLD,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    let expect = (n * (n - 1) / 2) as f64 + 0.5 * n as f64;
    Ok(rank != 0 || recv.iter().all(|&v| v == expect))
}

fn check_allgather(rank: usize, n: usize) -> Result<bool, c_int> {
    let send = [rank as c_int; 16];
    let mut recv = vec![-1 as c_int; 16 * n];
    // SAFETY: 16 ints out, 16 per rank in.
    let rc = unsafe {
        api::allgather(
            "MPI_Allgather",
            send.as_ptr().cast(),
            16,
            MPI_INT,
            recv.as_mut_ptr().cast(),
            16,
            MPI_INT,
            WORLD,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    Ok(recv
        .iter()
        .enumerate()
        .all(|(i, &v)| v == (i / 16) as c_int))
}

fn check_reduce_scatter(rank: usize, n: usize) -> Result<bool, c_int> {
    let send: Vec<c_int> = (0..8 * n).map(|i| (i + rank) as c_int).collect();
    let mut recv = [0 as c_int; 8];
    // SAFETY: 8 * n ints in, 8 out.
    let rc = unsafe {
        api::reduce_scatter_block(
            "MPI_Reduce_scatter_block",
            send.as_ptr().cast(),
            recv.as_mut_ptr().cast(),
            8,
            MPI_INT,
            MPI_SUM,
            WORLD,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    let ranks_sum = n * (n - 1) / 2;
    Ok(recv
        .iter()
        .enumerate()
        .all(|(j, &v)| v == (n * (8 * rank + j) + ranks_sum) as c_int))
}

fn check_alltoall(rank: usize, n: usize) -> Result<bool, c_int> {
    let send: Vec<c_int> = (0..4 * n).map(|i| (rank * 100 + i / 4) as c_int).collect();
    let mut recv = vec![-1 as c_int; 4 * n];
    // SAFETY: 4 ints per rank each way.
    let rc = unsafe {
        api::alltoall(
            "MPI_Alltoall",
            send.as_ptr().cast(),
            4,
            MPI_INT,
            recv.as_mut_ptr().cast(),
            4,
            MPI_INT,
            WORLD,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    Ok(recv
        .iter()
        .enumerate()
        .all(|(i, &v)| v == ((i / 4) * 100 + rank) as c_int))
}

fn check_barrier(_rank: usize, _n: usize) -> Result<bool, c_int> {
    // SAFETY: no buffers.
    match unsafe { api::barrier(WORLD) } {
        0 => Ok(true),
        rc => Err(rc),
    }
}

const CHECKS: [(&str, Check); 7] = [
    ("MPI_Allreduce", check_allreduce),
    ("MPI_Bcast", check_bcast),
    ("MPI_Reduce", check_reduce),
    ("MPI_Allgather", check_allgather),
    ("MPI_Reduce_scatter_block", check_reduce_scatter),
    ("MPI_Alltoall", check_alltoall),
    ("MPI_Barrier", check_barrier),
];

fn worker(args: &SelftestArgs) -> i32 {
    let mut provided: c_int = 0;
    // SAFETY: no argc/argv; `provided` is a valid output.
    if unsafe { api::init_thread(std::ptr::null_mut(), std::ptr::null_mut(), 0, &mut provided) }
        != 0
    {
        return 1;
    }
    // SAFETY: plain handles.
    unsafe { api::comm_set_errhandler(WORLD, h::ERRORS_RETURN) };
    let (mut rank, mut size) = (0, 0);
    // SAFETY: valid outputs.
    unsafe {
        api::comm_rank(WORLD, &mut rank);
        api::comm_size(WORLD, &mut size);
    }
    let (rank, n) = (rank as usize, size as usize);
    let rt = match hcomm_core::runtime::get() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("hcomm selftest: {e}");
            return 1;
        }
    };
    let ep = &rt.world.ep;

    // 1. Every pair.
    let mut mine = vec![PairResult::default(); n];
    let rounds = if n % 2 == 0 { n - 1 } else { n };
    for round in 0..rounds.max(1) {
        if let Some(peer) = partner(rank, round, n) {
            mine[peer] = test_pair(rank, peer, args.bytes);
        }
    }
    // Per peer: status, latency, bandwidth, transport (0 self, 1 shm, 2 tcp, 3 other).
    let mut row = Vec::with_capacity(4 * n);
    for (peer, r) in mine.iter().enumerate() {
        let t = match ep.transport_name(peer) {
            "self" => 0.0,
            "shm" => 1.0,
            "tcp" => 2.0,
            _ => 3.0,
        };
        row.extend_from_slice(&[r.status, r.latency_us, r.gbps, t]);
    }
    let mut all = vec![0f64; 4 * n * n];
    // SAFETY: 4n doubles out, 4n per rank in.
    let rc = unsafe {
        api::allgather(
            "MPI_Allgather",
            row.as_ptr().cast::<c_void>(),
            (4 * n) as i64,
            MPI_DOUBLE,
            all.as_mut_ptr().cast(),
            (4 * n) as i64,
            MPI_DOUBLE,
            WORLD,
        )
    };
    let mut failed = rc != 0;
    if rank == 0 {
        println!(
            "hcomm selftest: {n} rank(s), {} bytes per pair message",
            args.bytes
        );
        println!(
            "{:>5} {:>5}  {:<7} {:<9} {:<25} {:>11} {:>10}",
            "rank", "peer", "result", "transport", "hosts", "latency", "bandwidth"
        );
    }
    for i in 0..n {
        for j in (i + 1)..n {
            let at = |r: usize, p: usize, k: usize| all[r * 4 * n + p * 4 + k];
            let status = at(i, j, 0).max(at(j, i, 0));
            let bad = rc != 0 || status != 0.0;
            failed |= bad;
            if rank == 0 {
                let transport = match at(i, j, 3) as i32 {
                    1 => "shm",
                    2 => "tcp",
                    0 => "self",
                    _ => "?",
                };
                let host = |r: usize| {
                    let h = if r == rank {
                        rt.host.split('/').next()
                    } else {
                        ep.peer_host(r)
                    };
                    h.filter(|h| !h.is_empty()).unwrap_or("?").to_string()
                };
                let result = match status as i32 {
                    _ if rc != 0 => "FAILED",
                    0 => "OK",
                    1 => "WRONG",
                    _ => "ERROR",
                };
                println!(
                    "{i:>5} {j:>5}  {result:<7} {transport:<9} {:<25} {:>8.1} us {:>6.2} GB/s",
                    format!("{} / {}", host(i), host(j)),
                    (at(i, j, 1) + at(j, i, 1)) / 2.0,
                    at(i, j, 2).min(at(j, i, 2)),
                );
            }
        }
    }

    // 2. Each collective once.
    for (name, check) in CHECKS {
        let local = check(rank, n);
        let ok_here: c_int = matches!(local, Ok(true)).into();
        let mut ok_all: c_int = 0;
        // SAFETY: one int each way.
        let rc = unsafe {
            api::allreduce(
                "MPI_Allreduce",
                (&ok_here as *const c_int).cast(),
                (&mut ok_all as *mut c_int).cast(),
                1,
                MPI_INT,
                MPI_MIN,
                WORLD,
            )
        };
        let ok = rc == 0 && ok_all == 1;
        failed |= !ok;
        if rank == 0 {
            let detail = match local {
                Err(code) => format!(" (error class {code} here)"),
                _ if !ok => " (a wrong result on some rank)".into(),
                _ => String::new(),
            };
            println!("{name:<26} {}{detail}", if ok { "OK" } else { "FAILED" });
        }
    }
    if rank == 0 {
        println!(
            "hcomm selftest: {}",
            if failed { "FAILED" } else { "all passed" }
        );
    }
    // SAFETY: after the last call.
    unsafe { api::finalize() };
    i32::from(failed)
}

#[cfg(test)]
mod tests {
    use super::partner;

    #[test]
    fn tournament_pairs_everyone_once() {
        for n in 1..=9 {
            let rounds = if n % 2 == 0 { n - 1 } else { n };
            let mut met = vec![vec![0; n]; n];
            for round in 0..rounds.max(1) {
                for (r, row) in met.iter_mut().enumerate() {
                    if let Some(p) = partner(r, round, n) {
                        assert_eq!(partner(p, round, n), Some(r), "n={n} round={round}");
                        row[p] += 1;
                    }
                }
            }
            for (r, row) in met.iter().enumerate() {
                for (p, &c) in row.iter().enumerate() {
                    assert_eq!(c, usize::from(r != p), "n={n}: {r} met {p} {c} times");
                }
            }
        }
    }
}
