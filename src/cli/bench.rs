//! `hcomm bench`: an nccl-tests-style collective benchmark, run as the ranks of a job
//! (`hcomm run -n 2 hcomm bench allreduce -b 8 -e 64M -f 2`).
//!
//! Each rank calls hcomm-core's C-ABI implementation ([`hcomm_core::abi::api`]) with
//! MPICH-ABI handles — the same entry points `libhcomm.so` exports, argument checks, error
//! handling and all — so what is measured is what a C program gets.
//!
//! # What is measured
//!
//! For each collective and each size `S` from `-b` to `-e` (multiplied by `-f`):
//!
//! - `S` is the size of the whole buffer as nccl-tests defines it: allreduce, bcast and reduce
//!   move `S / typesize` elements; allgather and reduce_scatter (`MPI_Reduce_scatter_block`)
//!   have `S / (n · typesize)` elements per rank, `S` being the n-rank buffer. Sizes are
//!   rounded down to whole elements (per rank for allgather / reduce_scatter); a size that
//!   rounds to nothing is skipped.
//! - Iterations: `-n` and `-w`, or by default `iters = clamp(B / S, 10, --max-iters)` with
//!   `B = --iter-bytes` (256 MiB) and `--max-iters` 2000,
//!   and `warmup = max(2, iters / 10)`: many iterations for small sizes, few for big ones. The
//!   C benchmark `benches/coll_bench.c` uses the same rule, so every implementation in
//!   `scripts/perf-compare.sh` runs the same counts.
//! - Time: after the warm-up, a barrier, then every rank times one batch of `iters` calls; the
//!   time per call is the slowest rank's batch time over `iters` (max over ranks, as nccl-tests'
//!   `-a 3`), in microseconds.
//! - algbw = S / time, busbw = algbw × 2(n−1)/n for allreduce, × (n−1)/n for allgather and
//!   reduce_scatter, × 1 for bcast and reduce, in GB/s (10^9 bytes), as nccl-tests reports.
//! - `#wrong` (`--check 1`, the default): after the timed batch, the inputs are filled again with
//!   values whose result is exact (see [`pattern`]), the outputs with bytes no result holds, one
//!   more call runs, and every rank counts the result elements that differ from the expected
//!   ones; the column is the sum over ranks. The exit status is 1 when any is wrong.
//!
//! Output is the table of [`report`] (or the `--json` document) on rank 0; header lines start
//! with `#`.
//!
//! # Device memory (`--memory device`)
//!
//! Send and receive buffers are CUDA device memory (`cuMemAlloc`, through
//! [`hcomm_core::cuda::Device`]) on the rank's GPU: the local rank (its index among the ranks
//! of its host, `MPI_Comm_split_type` shared) modulo the number of GPUs, or `--device-id` for
//! every rank; its primary context is made current, as `cudaSetDevice` would. CUDA is asked
//! for explicitly before the first collective (so the world communicator is CUDA-aware from
//! its first call, docs/GPU.md); when it cannot be used every rank ends with status 1 after
//! one line "no usable CUDA device: <why>". What changes:
//!
//! - `--check`: the pattern is written on the host and copied to the device, the output is
//!   poisoned with `cuMemsetD8`, and the result is copied back to be compared — all outside
//!   the timed loop.
//! - Header `# d2d copy: R GB/s`: the device-to-device copy rate of rank 0's GPU, measured
//!   once before the sweep by rank 0 alone (the others wait: ranks may share the GPU):
//!   `cuMemcpyDtoD` of the largest size from the send to the receive buffer, back to back, as
//!   many copies as the iteration rule gives that size (`-n` if set), one wait at the end;
//!   R = 2 · size · copies / time (bytes read plus bytes written: a copy's memory traffic).
//! - Column `staged(us)` on every row (`-` except on allreduce rows): the same allreduce the
//!   way a program does it with an MPI that cannot take device buffers — `cuMemcpyDtoH` of the
//!   input to pinned host memory (`cuMemHostAlloc`), `MPI_Allreduce(MPI_IN_PLACE)` on it,
//!   `cuMemcpyHtoD` of the result to the receive buffer — with the same warm-up, iterations
//!   and timing as the device call, measured right after it. With `--check` its result is
//!   checked too and counts in `#wrong`.
//! - JSON: `"memory":"device"`, a `device` object (every rank's GPU, the rule, rank 0's GPU's
//!   name, `d2d_copy_gbs`, `d2d_copy_bytes`, `d2d_copies`) and `staged_time_us` on every row
//!   (null where the table shows `-`). Host runs say `"memory":"host"` and have neither.
//!
//! `--overlap-us` measures host memory only (nonblocking collectives do not take device
//! buffers).

mod mem;
mod overlap;
mod pattern;
mod report;

use std::ffi::{c_int, c_void};
use std::ptr;

use clap::{Args, ValueEnum};
use hcomm_core::abi::api;
use hcomm_core::abi::handles as h;
use hcomm_core::cuda::{Device, PinnedBuffer};

use mem::{Buf, Space};
use pattern::{Dtype, Op, Pattern, Table, POISON};
use report::Row;

/// Default iteration rule (shared with `benches/coll_bench.c`): `--iter-bytes / size`
/// iterations, at least `MIN_ITERS`, at most `--max-iters`.
const DEFAULT_ITER_BYTES: usize = 256 << 20;
const MIN_ITERS: u64 = 10;
const DEFAULT_MAX_ITERS: u64 = 2000;

const MPI_INT64_T: c_int = 0x4c00_083a;
const MPI_INT32_T: c_int = 0x4c00_0439;
const MPI_DOUBLE: c_int = 0x4c00_080b;
const MPI_SUM: c_int = 0x5800_0003;
const MPI_MAX: c_int = 0x5800_0001;
const WORLD: c_int = h::COMM_WORLD;

/// A collective `hcomm bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Coll {
    Allreduce,
    Bcast,
    Allgather,
    /// MPI_Reduce_scatter_block
    #[value(
        name = "reduce_scatter",
        alias = "reduce-scatter",
        alias = "reducescatter"
    )]
    ReduceScatter,
    Reduce,
    /// every collective above
    All,
}

const EVERY: [Coll; 5] = [
    Coll::Allreduce,
    Coll::Bcast,
    Coll::Allgather,
    Coll::ReduceScatter,
    Coll::Reduce,
];

impl Coll {
    fn name(self) -> &'static str {
        match self {
            Coll::Allreduce => "allreduce",
            Coll::Bcast => "bcast",
            Coll::Allgather => "allgather",
            Coll::ReduceScatter => "reduce_scatter",
            Coll::Reduce => "reduce",
            Coll::All => "all",
        }
    }

    /// nccl-tests' bus-bandwidth factor for `n` ranks.
    fn bus_factor(self, n: usize) -> f64 {
        let n = n as f64;
        match self {
            Coll::Allreduce => 2.0 * (n - 1.0) / n,
            Coll::Allgather | Coll::ReduceScatter => (n - 1.0) / n,
            _ => 1.0,
        }
    }

    fn has_op(self) -> bool {
        matches!(self, Coll::Allreduce | Coll::ReduceScatter | Coll::Reduce)
    }

    fn has_root(self) -> bool {
        matches!(self, Coll::Bcast | Coll::Reduce)
    }

    /// Elements per rank's block: the whole buffer, or 1/n of it for allgather and
    /// reduce_scatter.
    fn block(self, elems: usize, n: usize) -> usize {
        match self {
            Coll::Allgather | Coll::ReduceScatter => elems / n,
            _ => elems,
        }
    }

    /// Elements of the whole (nccl-tests) buffer for `block` elements per block.
    fn whole(self, block: usize, n: usize) -> usize {
        match self {
            Coll::Allgather | Coll::ReduceScatter => block * n,
            _ => block,
        }
    }
}

/// Where the buffers live (`--memory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Memory {
    Host,
    /// CUDA device memory on the rank's GPU
    Device,
}

/// Arguments of `hcomm bench` (flags as nccl-tests spells them).
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Collectives to measure, in this order
    #[arg(value_enum, default_value = "all")]
    colls: Vec<Coll>,
    /// Smallest size in bytes (K, M, G suffixes: powers of 1024)
    #[arg(short = 'b', long = "minbytes", default_value = "8", value_parser = parse_size)]
    min_bytes: usize,
    /// Largest size in bytes
    #[arg(short = 'e', long = "maxbytes", default_value = "64M", value_parser = parse_size)]
    max_bytes: usize,
    /// Multiply the size by this from one row to the next
    #[arg(short = 'f', long = "stepfactor", default_value_t = 2, value_parser = clap::value_parser!(u64).range(2..))]
    step_factor: u64,
    /// Datatype: int8 uint8 int16 uint16 int32 uint32 int64 uint64 half bfloat16 float double
    #[arg(short = 'd', long = "datatype", default_value = "float")]
    datatype: String,
    /// Reduction op: sum prod max min (any type); land lor lxor band bor bxor (integer types)
    #[arg(short = 'o', long = "op", default_value = "sum")]
    op: String,
    /// Root of bcast and reduce
    #[arg(short = 'r', long = "root", default_value_t = 0)]
    root: usize,
    /// Use MPI_IN_PLACE (default: separate send and receive buffers)
    #[arg(long)]
    inplace: bool,
    /// Warm-up calls per size (default: max(2, iters/10))
    #[arg(short = 'w', long = "warmup_iters")]
    warmup: Option<u64>,
    /// Timed calls per size (default: clamp(--iter-bytes / size, 10, --max-iters))
    #[arg(short = 'n', long = "iters", value_parser = clap::value_parser!(u64).range(1..))]
    iters: Option<u64>,
    /// Upper bound of the default iteration count
    #[arg(long = "max-iters", default_value_t = DEFAULT_MAX_ITERS, value_parser = clap::value_parser!(u64).range(1..))]
    max_iters: u64,
    /// Bytes per size the default iteration count aims at
    #[arg(long = "iter-bytes", default_value_t = DEFAULT_ITER_BYTES, value_parser = parse_size)]
    iter_bytes: usize,
    /// Check every result (1) or not (0)
    #[arg(short = 'c', long = "check", default_value = "1", action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new())]
    check: bool,
    /// Print one JSON document instead of the table
    #[arg(long)]
    json: bool,
    /// Where send and receive buffers live: host memory, or CUDA device memory on each rank's
    /// GPU (then also: the GPU's device-to-device copy rate, and a host-staged allreduce)
    #[arg(long, value_enum, default_value = "host")]
    memory: Memory,
    /// With --memory device: the GPU of every rank (default: the local rank modulo the
    /// number of GPUs)
    #[arg(long = "device-id")]
    device_id: Option<usize>,
    /// Instead of the sweep: overlap MPI_Iallreduce (float sum) with this many microseconds
    /// of computation per iteration and report how much communication was hidden (-b/-e/-f
    /// sizes; -n iterations, default 50)
    #[arg(long = "overlap-us")]
    overlap_us: Option<u64>,
}

/// Parses `8`, `64K`, `16M`, `1G` (binary multiples, as nccl-tests does).
fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, mul) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1usize << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| format!("'{s}' is not a size (e.g. 8, 64K, 16M, 1G)"))
}

/// The default iteration and warm-up counts for a size (see the module comment).
fn default_iters(size: usize, iter_bytes: usize, max_iters: u64) -> u64 {
    ((iter_bytes / size.max(1)) as u64).clamp(MIN_ITERS, max_iters.max(MIN_ITERS))
}

fn default_warmup(iters: u64) -> u64 {
    (iters / 10).max(2)
}

/// The sizes of the sweep: `min`, `min·f`, ... up to `max`.
fn sizes(min: usize, max: usize, f: u64) -> Vec<usize> {
    let mut v = Vec::new();
    let mut s = min.max(1);
    while s <= max {
        v.push(s);
        match s.checked_mul(f as usize) {
            Some(n) => s = n,
            None => break,
        }
    }
    v
}

/// `MPI_IN_PLACE` in the MPICH ABI.
fn in_place() -> *const c_void {
    h::IN_PLACE as *const c_void
}

/// One rank of the benchmark: its place in the world and the run's settings.
struct Ctx {
    rank: usize,
    n: usize,
    dt: &'static Dtype,
    op: &'static Op,
    root: usize,
    inplace: bool,
    send: Space,
    recv: Space,
    /// The host buffer of the host-staged allreduce (`--memory device` with allreduce).
    pinned: Option<PinnedBuffer>,
}

/// Everything about one collective at one size.
#[derive(Clone, Copy)]
struct Shape {
    coll: Coll,
    /// Elements per block (see [`Coll::block`]).
    block: usize,
    /// Bytes of a block.
    bblock: usize,
    /// Bytes of the whole buffer (`S`).
    size: usize,
}

/// Fails the job on a non-zero MPI return code (the default error handler already ends the
/// job on errors; this catches anything else).
fn ok(rc: c_int, what: &str) {
    if rc != 0 {
        eprintln!("hcomm bench: {what} returned {rc}");
        std::process::exit(1);
    }
}

/// The value, or the job fails with the error (a device copy or allocation that failed).
fn must<T>(r: hcomm_core::error::Result<T>, what: &str) -> T {
    r.unwrap_or_else(|e| {
        eprintln!("hcomm bench: {what}: {}", e.msg);
        std::process::exit(1);
    })
}

impl Ctx {
    /// The collective's call on this rank's buffers, as a C program would make it.
    fn call(&mut self, s: &Shape) -> c_int {
        let (dt, op, root) = (self.dt.handle, self.op.handle, self.root as c_int);
        let blk = s.block as api::Count;
        let recv = self.recv.ptr();
        let send: *const c_void = if self.inplace {
            in_place()
        } else {
            self.send.ptr()
        };
        // SAFETY: the buffers hold max(S) bytes each (allocated for the largest size), which
        // covers every argument below; the counts and handles are valid.
        unsafe {
            match s.coll {
                Coll::Allreduce => api::allreduce("MPI_Allreduce", send, recv, blk, dt, op, WORLD),
                Coll::Bcast => api::bcast("MPI_Bcast", recv, blk, dt, root, WORLD),
                Coll::Reduce => {
                    // MPI_IN_PLACE is for the root only.
                    let send = if self.inplace && self.rank != self.root {
                        self.send.ptr()
                    } else {
                        send
                    };
                    api::reduce("MPI_Reduce", send, recv, blk, dt, op, root, WORLD)
                }
                Coll::Allgather => {
                    api::allgather("MPI_Allgather", send, blk, dt, recv, blk, dt, WORLD)
                }
                Coll::ReduceScatter => api::reduce_scatter_block(
                    "MPI_Reduce_scatter_block",
                    send,
                    recv,
                    blk,
                    dt,
                    op,
                    WORLD,
                ),
                Coll::All => unreachable!(),
            }
        }
    }

    /// Where this rank's input lives, as (in the receive buffer?, byte offset, bytes).
    fn input_at(&self, s: &Shape) -> (bool, usize, usize) {
        match s.coll {
            Coll::Bcast => (true, 0, s.size),
            Coll::Allgather if self.inplace => (true, self.rank * s.bblock, s.bblock),
            Coll::Allgather => (false, 0, s.bblock),
            Coll::Reduce => (self.inplace && self.rank == self.root, 0, s.size),
            _ => (self.inplace, 0, s.size),
        }
    }

    /// The host-staged allreduce of `--memory device`, as a program whose MPI cannot take
    /// device buffers makes it: the input copied to pinned host memory, `MPI_Allreduce` in
    /// place there, the result copied to the device receive buffer.
    fn staged_call(&mut self, s: &Shape) -> c_int {
        let Some(pinned) = self.pinned.as_mut() else {
            unreachable!("staged allreduce without a pinned buffer")
        };
        let host = &mut pinned.as_mut_slice()[..s.size];
        let src = if self.inplace { &self.recv } else { &self.send };
        let src = src.device_buffer().expect("device memory");
        must(
            src.copy_to_host(0, host),
            "cuMemcpyDtoH of the staged allreduce",
        );
        // SAFETY: the pinned buffer holds max(S) >= S bytes; count and handles are valid.
        let rc = unsafe {
            api::allreduce(
                "MPI_Allreduce",
                in_place(),
                host.as_mut_ptr().cast(),
                s.block as api::Count,
                self.dt.handle,
                self.op.handle,
                WORLD,
            )
        };
        if rc == 0 {
            let dst = self.recv.device_buffer_mut().expect("device memory");
            must(
                dst.copy_from_host(0, host),
                "cuMemcpyHtoD of the staged allreduce",
            );
        }
        rc
    }

    /// Fills the input with the check pattern and the output with poison.
    fn prepare(&mut self, s: &Shape, pat: &Pattern) {
        let writes_output = match s.coll {
            Coll::Bcast => self.rank != self.root,
            Coll::Reduce => self.rank == self.root,
            _ => true,
        };
        if writes_output {
            let out_len = match s.coll {
                Coll::ReduceScatter => s.bblock,
                _ => s.size,
            };
            must(self.recv.fill(0, out_len, POISON), "filling the output");
        }
        if s.coll == Coll::Bcast && self.rank != self.root {
            return;
        }
        let (in_recv, from, len) = self.input_at(s);
        let buf = if in_recv {
            &mut self.recv
        } else {
            &mut self.send
        };
        let t = pat.input(self.rank);
        must(buf.write(from, len, |b| t.fill(b, 0)), "filling the input");
    }

    /// Wrong elements of this rank's result.
    fn wrong(&mut self, s: &Shape, pat: &Pattern) -> u64 {
        let reduced = || pat.reduced();
        let out_len = match s.coll {
            Coll::Reduce if self.rank != self.root => return 0,
            Coll::ReduceScatter => s.bblock,
            _ => s.size,
        };
        let out = must(self.recv.read(0, out_len), "reading the result");
        match s.coll {
            Coll::Allreduce | Coll::Reduce => reduced().count_wrong(out, 0),
            Coll::Bcast => pat.input(self.root).count_wrong(out, 0),
            Coll::Allgather => (0..self.n)
                .map(|j| {
                    pat.input(j)
                        .count_wrong(&out[j * s.bblock..(j + 1) * s.bblock], 0)
                })
                .sum(),
            Coll::ReduceScatter => {
                let first = self.rank * s.block;
                let t: Table = reduced();
                t.count_wrong(out, first)
            }
            Coll::All => unreachable!(),
        }
    }
}

fn barrier() {
    // SAFETY: plain call on the world communicator.
    ok(unsafe { api::barrier(WORLD) }, "MPI_Barrier");
}

fn now() -> f64 {
    // SAFETY: no arguments.
    unsafe { api::wtime() }
}

/// The maximum of `x` over all ranks.
fn max_over_ranks(x: f64) -> f64 {
    let mut out = 0f64;
    // SAFETY: one double in, one out, valid handles.
    let rc = unsafe {
        api::allreduce(
            "MPI_Allreduce",
            ptr::from_ref(&x).cast(),
            ptr::from_mut(&mut out).cast(),
            1,
            MPI_DOUBLE,
            MPI_MAX,
            WORLD,
        )
    };
    ok(rc, "MPI_Allreduce");
    out
}

/// The sum of `x` over all ranks.
fn sum_over_ranks(x: u64) -> u64 {
    let (x, mut out) = (x as i64, 0i64);
    // SAFETY: one int64 in, one out, valid handles.
    let rc = unsafe {
        api::allreduce(
            "MPI_Allreduce",
            ptr::from_ref(&x).cast(),
            ptr::from_mut(&mut out).cast(),
            1,
            MPI_INT64_T,
            MPI_SUM,
            WORLD,
        )
    };
    ok(rc, "MPI_Allreduce");
    out as u64
}

/// The library's own description (`MPI_Get_library_version`).
fn library_version() -> String {
    let mut buf = vec![0u8; h::MAX_LIBRARY_VERSION_STRING];
    let mut len: c_int = 0;
    // SAFETY: buf has MPI_MAX_LIBRARY_VERSION_STRING bytes, as the call requires.
    let rc = unsafe { api::get_library_version(buf.as_mut_ptr().cast(), &mut len) };
    ok(rc, "MPI_Get_library_version");
    buf.truncate(len.max(0) as usize);
    String::from_utf8_lossy(&buf)
        .trim_end_matches('\0')
        .to_string()
}

/// One line on stderr in one write, so that the lines of several ranks do not interleave.
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("hcomm bench: {line}\n").as_bytes());
}

/// Whether `r` is `Ok` on every rank (collective). When it is not, one line says why: rank
/// 0's reason when it failed itself (the usual case: every rank fails alike), else each
/// failing rank's.
fn everywhere<T>(r: hcomm_core::error::Result<T>, rank: usize, n: usize) -> Option<T> {
    // Low half: how many ranks failed; high half: whether rank 0 did.
    let lead = if rank == 0 { 1u64 << 32 } else { 0 };
    let mine = if r.is_err() { lead | 1 } else { 0 };
    let sum = sum_over_ranks(mine);
    let (failed, lead_failed) = (sum & 0xffff_ffff, sum >> 32 != 0);
    match r {
        Ok(v) if failed == 0 => Some(v),
        Err(e) if rank == 0 => {
            let others = match failed - 1 {
                0 => String::new(),
                k => format!(" (and on {k} more of the {n} ranks)"),
            };
            say(&format!("{}{others}", e.msg));
            None
        }
        Err(e) if !lead_failed => {
            say(&format!("rank {rank}: {}", e.msg));
            None
        }
        _ => None,
    }
}

/// This rank's index among the ranks of its host (`MPI_Comm_split_type` shared).
fn local_rank() -> usize {
    const MPI_INFO_NULL: c_int = 0x1c00_0000;
    let (mut node, mut r): (c_int, c_int) = (0, 0);
    // SAFETY: valid handles and out-pointers; the communicator is freed below.
    unsafe {
        ok(
            api::comm_split_type(WORLD, h::COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &mut node),
            "MPI_Comm_split_type",
        );
        ok(api::comm_rank(node, &mut r), "MPI_Comm_rank");
        ok(api::comm_free(&mut node), "MPI_Comm_free");
    }
    r as usize
}

/// The GPUs of `--memory device`.
struct Gpu {
    dev: Device,
    /// Every rank's GPU ordinal, by rank.
    ordinals: Vec<i32>,
    /// How the ordinal was chosen, for the header.
    rule: String,
    /// This rank's GPU's name.
    name: String,
}

/// Picks and opens this rank's GPU (`count`: what the driver sees, or why CUDA is
/// unusable). Collective: `None` on every rank when any rank failed.
fn gpu_setup(
    args: &BenchArgs,
    count: hcomm_core::error::Result<usize>,
    rank: usize,
    n: usize,
) -> Option<Gpu> {
    let count = everywhere(count, rank, n)?;
    let local = local_rank();
    let ordinal = args.device_id.unwrap_or(local % count);
    let dev = everywhere(
        Device::open(ordinal).and_then(|d| d.make_current().map(|()| d)),
        rank,
        n,
    )?;
    let mine = ordinal as i32;
    let mut ordinals = vec![0i32; n];
    // SAFETY: one int32 in, n out, valid handles.
    ok(
        unsafe {
            api::allgather(
                "MPI_Allgather",
                ptr::from_ref(&mine).cast(),
                1,
                MPI_INT32_T,
                ordinals.as_mut_ptr().cast(),
                1,
                MPI_INT32_T,
                WORLD,
            )
        },
        "MPI_Allgather",
    );
    let rule = match args.device_id {
        Some(k) => format!("--device-id {k}"),
        None => format!("local rank mod {count} GPU(s)"),
    };
    let name = dev.name().unwrap_or_else(|e| format!("? ({})", e.msg));
    Some(Gpu {
        dev,
        ordinals,
        rule,
        name,
    })
}

/// The device-to-device copy rate of rank 0's GPU in GB/s, (bytes read + bytes written) /
/// time, over `copies` copies of `bytes` bytes from the send to the receive buffer, rank 0
/// alone while the others wait (ranks may share the GPU). Collective.
fn d2d_rate(ctx: &mut Ctx, bytes: usize, copies: u64) -> f64 {
    let mut rate = 0.0;
    if ctx.rank == 0 {
        let src = ctx.send.device_buffer().expect("device memory");
        let dst = ctx.recv.device_buffer_mut().expect("device memory");
        must(dst.copy_from_device(src, bytes, 1), "cuMemcpyDtoD");
        let t0 = now();
        must(
            dst.copy_from_device(src, bytes, copies as usize),
            "cuMemcpyDtoD",
        );
        let t = now() - t0;
        rate = 2.0 * bytes as f64 * copies as f64 / t / 1e9;
    }
    max_over_ranks(rate)
}

/// Entry point of `hcomm bench`; returns the process exit code.
pub fn bench(args: BenchArgs) -> i32 {
    // Everything that can be wrong with the arguments is found before MPI_Init, on every rank
    // alike, so that no rank waits for another that gave up.
    let Some(dt) = pattern::dtype(&args.datatype) else {
        let names: Vec<_> = pattern::DTYPES.iter().map(|d| d.name).collect();
        eprintln!(
            "hcomm bench: unknown datatype '{}' (one of: {})",
            args.datatype,
            names.join(" ")
        );
        return 2;
    };
    let Some(op) = pattern::op(&args.op) else {
        let names: Vec<_> = pattern::OPS.iter().map(|o| o.name).collect();
        eprintln!(
            "hcomm bench: unknown op '{}' (one of: {})",
            args.op,
            names.join(" ")
        );
        return 2;
    };
    if op.int_only && dt.repr != pattern::Repr::Int {
        eprintln!(
            "hcomm bench: op {} is for integer datatypes only, not {}",
            op.name, dt.name
        );
        return 2;
    }
    if args.min_bytes > args.max_bytes {
        eprintln!("hcomm bench: -b is larger than -e");
        return 2;
    }
    let device = args.memory == Memory::Device;
    if args.device_id.is_some() && !device {
        eprintln!("hcomm bench: --device-id needs --memory device");
        return 2;
    }
    if args.overlap_us.is_some() && device {
        eprintln!(
            "hcomm bench: --overlap-us measures host memory only (nonblocking collectives do not take device buffers)"
        );
        return 2;
    }
    let mut colls: Vec<Coll> = Vec::new();
    for &c in &args.colls {
        let list: &[Coll] = if c == Coll::All {
            &EVERY
        } else {
            std::slice::from_ref(&c)
        };
        for &c in list {
            if !colls.contains(&c) {
                colls.push(c);
            }
        }
    }
    // Device memory asks for CUDA explicitly, before the first collective: the world
    // communicator is then CUDA-aware from its first call on (docs/GPU.md, "Paths").
    let cuda = device.then(Device::count);

    // SAFETY: no argc/argv is passed (allowed by MPI).
    ok(
        unsafe { api::init(ptr::null_mut(), ptr::null_mut()) },
        "MPI_Init",
    );
    let (mut rank, mut n): (c_int, c_int) = (0, 0);
    // SAFETY: valid out-pointers.
    ok(unsafe { api::comm_rank(WORLD, &mut rank) }, "MPI_Comm_rank");
    // SAFETY: as above.
    ok(unsafe { api::comm_size(WORLD, &mut n) }, "MPI_Comm_size");
    let (rank, n) = (rank as usize, n as usize);
    let code = if args.root >= n {
        if rank == 0 {
            eprintln!("hcomm bench: root {} is not a rank of {n}", args.root);
        }
        2
    } else if let Some(us) = args.overlap_us {
        overlap::run(
            &sizes(args.min_bytes, args.max_bytes, args.step_factor),
            us,
            args.iters.unwrap_or(50),
            rank == 0,
        )
    } else {
        match cuda {
            None => sweep(&args, &colls, dt, op, rank, n, None),
            Some(count) => match gpu_setup(&args, count, rank, n) {
                Some(gpu) => sweep(&args, &colls, dt, op, rank, n, Some(&gpu)),
                None => 1,
            },
        }
    };
    // SAFETY: after init; nothing is used after (the buffers were freed with the sweep).
    ok(unsafe { api::finalize() }, "MPI_Finalize");
    code
}

/// Runs every collective over every size; prints on rank 0; returns the exit code.
fn sweep(
    args: &BenchArgs,
    colls: &[Coll],
    dt: &'static Dtype,
    op: &'static Op,
    rank: usize,
    n: usize,
    gpu: Option<&Gpu>,
) -> i32 {
    let all_sizes = sizes(args.min_bytes, args.max_bytes, args.step_factor);
    let max_size = all_sizes.last().copied().unwrap_or(0);
    let dev = gpu.map(|g| g.dev);
    let buffers = (|| {
        let space = |len| match &dev {
            None => Ok(Space::host(len)),
            Some(d) => Space::device(d, len),
        };
        let (send, recv) = (space(max_size)?, space(max_size)?);
        let pinned = match dev {
            Some(d) if colls.contains(&Coll::Allreduce) => Some(d.alloc_pinned(max_size)?),
            _ => None,
        };
        Ok((send, recv, pinned))
    })();
    let Some((send, recv, pinned)) = everywhere(buffers, rank, n) else {
        return 1;
    };
    let mut ctx = Ctx {
        rank,
        n,
        dt,
        op,
        root: args.root,
        inplace: args.inplace,
        send,
        recv,
        pinned,
    };
    let d2d = gpu.map(|_| {
        let copies = args
            .iters
            .unwrap_or_else(|| default_iters(max_size, args.iter_bytes, args.max_iters));
        (d2d_rate(&mut ctx, max_size, copies), copies)
    });
    let pat = Pattern::new(dt, op, n);
    let library = library_version();
    let host = hcomm_core::log::hostname();
    let version = env!("CARGO_PKG_VERSION");
    let lead = rank == 0;
    if lead && !args.json {
        let names: Vec<_> = colls.iter().map(|c| c.name()).collect();
        println!("# hcomm bench {version}: {}", names.join(" "));
        println!("# ranks {n}, host {host}, library: {library}");
        println!(
            "# sizes {} .. {} B (x{}), datatype {}, op {}, root {}, {}, check {}",
            args.min_bytes,
            args.max_bytes,
            args.step_factor,
            dt.name,
            op.name,
            args.root,
            if args.inplace {
                "in-place"
            } else {
                "out-of-place"
            },
            if args.check { "on" } else { "off" }
        );
        println!(
            "# iterations: {}; warm-up: {}",
            args.iters.map_or(
                format!("clamp({} / size, 10, {})", args.iter_bytes, args.max_iters),
                |i| i.to_string()
            ),
            args.warmup
                .map_or("max(2, iters/10)".to_string(), |w| w.to_string())
        );
        println!("# time: per call, slowest rank's batch (barrier before each batch); algbw = size/time; busbw = algbw x 2(n-1)/n (allreduce), (n-1)/n (allgather, reduce_scatter), 1 (bcast, reduce); GB = 1e9 B");
        if let (Some(g), Some((rate, copies))) = (gpu, d2d) {
            let list: Vec<String> = g.ordinals.iter().map(|o| o.to_string()).collect();
            println!(
                "# memory: device: cuMemAlloc on each rank's GPU (by rank: {}; {}), rank 0's: {}; inputs written and results read through host copies, outside the timed loop",
                list.join(" "),
                g.rule,
                g.name
            );
            println!(
                "# d2d copy: {rate:.3} GB/s on rank 0's GPU {}: cuMemcpyDtoD of {max_size} B x {copies}, rank 0 alone, (bytes read + bytes written) / time",
                g.dev.ordinal()
            );
            println!("# staged(us): allreduce rows: cuMemcpyDtoH to pinned host memory, MPI_Allreduce in place there, cuMemcpyHtoD; same warm-up and iterations, timed the same way; its result counts in #wrong too");
            println!("{}{}", report::HEADER, report::STAGED_HEADER);
        } else {
            println!("{}", report::HEADER);
        }
    }
    let mut rows = Vec::new();
    let mut any_wrong = false;
    // A sweep can take minutes: when the table does not go to the terminal (--json, or stdout
    // redirected) but stderr does, rank 0 shows where it is on one rewritten stderr line.
    // SAFETY: isatty only inspects the descriptors.
    let progress = lead && unsafe { libc::isatty(2) == 1 && (args.json || libc::isatty(1) == 0) };
    let total = colls.len() * all_sizes.len();
    let mut step = 0;
    for &coll in colls {
        for &want in &all_sizes {
            step += 1;
            if progress {
                use std::io::Write;
                let mut e = std::io::stderr().lock();
                let _ = write!(
                    e,
                    "\r\x1b[Khcomm bench: {} {} bytes ({step}/{total})",
                    coll.name(),
                    want
                );
                let _ = e.flush();
            }
            let block = coll.block(want / dt.size, n);
            if block == 0 {
                continue;
            }
            let whole = coll.whole(block, n);
            let s = Shape {
                coll,
                block,
                bblock: block * dt.size,
                size: whole * dt.size,
            };
            let iters = args
                .iters
                .unwrap_or_else(|| default_iters(s.size, args.iter_bytes, args.max_iters));
            let warmup = args.warmup.unwrap_or_else(|| default_warmup(iters));

            ctx.prepare(&s, &pat);
            for _ in 0..warmup {
                ok(ctx.call(&s), coll.name());
            }
            barrier();
            let t0 = now();
            for _ in 0..iters {
                ok(ctx.call(&s), coll.name());
            }
            let per_call = max_over_ranks((now() - t0) / iters as f64);

            let staged = ctx.pinned.is_some() && coll == Coll::Allreduce;
            let staged_us = staged.then(|| {
                for _ in 0..warmup {
                    ok(ctx.staged_call(&s), "staged MPI_Allreduce");
                }
                barrier();
                let t0 = now();
                for _ in 0..iters {
                    ok(ctx.staged_call(&s), "staged MPI_Allreduce");
                }
                max_over_ranks((now() - t0) / iters as f64) * 1e6
            });

            let wrong = args.check.then(|| {
                ctx.prepare(&s, &pat);
                ok(ctx.call(&s), coll.name());
                let mut w = ctx.wrong(&s, &pat);
                if staged {
                    ctx.prepare(&s, &pat);
                    ok(ctx.staged_call(&s), "staged MPI_Allreduce");
                    w += ctx.wrong(&s, &pat);
                }
                sum_over_ranks(w)
            });
            any_wrong |= wrong.unwrap_or(0) > 0;
            let algbw = s.size as f64 / per_call / 1e9;
            let row = Row {
                coll: coll.name(),
                size: s.size,
                count: whole,
                dtype: dt.name,
                op: if coll.has_op() { op.name } else { "-" },
                root: if coll.has_root() {
                    args.root as i32
                } else {
                    -1
                },
                inplace: args.inplace,
                warmup,
                iters,
                time_us: per_call * 1e6,
                algbw,
                busbw: algbw * coll.bus_factor(n),
                wrong,
                staged_us,
            };
            if lead && !args.json {
                println!("{}", row.text(gpu.is_some()));
            }
            rows.push(row);
        }
    }
    if progress {
        eprint!("\r\x1b[K");
    }
    if lead && args.json {
        let device = match (gpu, d2d) {
            (Some(g), Some((rate, copies))) => Some(report::DeviceInfo {
                gpus: &g.ordinals,
                rule: &g.rule,
                name: &g.name,
                d2d_gbs: rate,
                d2d_bytes: max_size,
                d2d_copies: copies,
            }),
            _ => None,
        };
        let info = report::RunInfo {
            version,
            library: &library,
            host: &host,
            ranks: n,
            check: args.check,
            device,
        };
        println!("{}", report::json(&info, &rows));
    }
    if lead && any_wrong {
        eprintln!("hcomm bench: FAIL: some results were wrong (see #wrong)");
    }
    i32::from(any_wrong)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_iterations() {
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("8"), Ok(8));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert!(parse_size("x").is_err());
        assert_eq!(sizes(8, 64, 2), vec![8, 16, 32, 64]);
        assert_eq!(sizes(8, 100, 4), vec![8, 32]);
        let b = DEFAULT_ITER_BYTES;
        assert_eq!(default_iters(8, b, 2000), 2000);
        assert_eq!(default_iters(1 << 20, b, 2000), 256);
        assert_eq!(default_iters(64 << 20, b, 2000), 10);
        assert_eq!(default_iters(1 << 20, 64 << 20, 200), 64);
        assert_eq!(default_warmup(10), 2);
        assert_eq!(default_warmup(2000), 200);
    }

    #[test]
    fn shapes_follow_nccl_tests() {
        assert_eq!(Coll::Allgather.block(10, 4), 2);
        assert_eq!(Coll::Allgather.whole(2, 4), 8);
        assert_eq!(Coll::Allreduce.block(10, 4), 10);
        assert_eq!(Coll::Allreduce.bus_factor(4), 1.5);
        assert_eq!(Coll::ReduceScatter.bus_factor(2), 0.5);
        assert_eq!(Coll::Bcast.bus_factor(8), 1.0);
    }
}
