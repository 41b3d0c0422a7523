//! `hcomm bench --overlap-us C`: how much of an `MPI_Iallreduce` hides behind C microseconds
//! of computation (a busy loop that makes no MPI call), per size.
//!
//! For each size S (float sum, `iters` iterations after a warm-up, barrier before each batch,
//! the slowest rank's time per iteration):
//! - `comm`: `MPI_Allreduce` alone;
//! - `blocking`: `MPI_Allreduce`, then the computation;
//! - `overlapped`: `MPI_Iallreduce`, the computation, `MPI_Wait`;
//! - hidden = (blocking − overlapped) / min(comm, compute), clamped to 0..100 %: the share of
//!   the communication that the overlap took off the critical path (100 % when the overlapped
//!   iteration costs no more than the longer of the two parts).
//!
//! What to expect on a machine with spare cores: close to 100 % once the computation is longer
//! than the communication (the progress thread moves the data). With as many ranks as cores
//! the progress thread competes with the computation for a core, so less is hidden; the figure
//! says so honestly rather than assuming a spare core.

use std::ffi::c_int;
use std::time::{Duration, Instant};

use hcomm_core::abi::api;

use super::{max_over_ranks, now, ok, Buf, WORLD};

const MPI_FLOAT: c_int = 0x4c00_040a;
const MPI_SUM: c_int = 0x5800_0003;
const STATUS_IGNORE: usize = 1;

/// Busy computation for `d` without any MPI call (the progress thread must do the moving).
fn compute(d: Duration) -> f64 {
    let start = Instant::now();
    let mut x = 1.000_000_1f64;
    while start.elapsed() < d {
        for _ in 0..256 {
            x = x * 1.000_000_1 + 1e-9;
        }
    }
    x
}

fn batch(iters: u64, mut f: impl FnMut()) -> f64 {
    // SAFETY: no buffers.
    ok(unsafe { api::barrier(WORLD) }, "MPI_Barrier");
    let t0 = now();
    for _ in 0..iters {
        f();
    }
    max_over_ranks((now() - t0) / iters as f64)
}

/// Runs the overlap table over `sizes` (bytes); rank 0 prints it. Returns the exit code.
pub fn run(sizes: &[usize], compute_us: u64, iters: u64, lead: bool) -> i32 {
    let d = Duration::from_micros(compute_us);
    let max = sizes.iter().copied().max().unwrap_or(0);
    let send = Buf::new(max);
    let recv = Buf::new(max);
    let mut sink = 0.0;
    if lead {
        println!(
            "# hcomm bench --overlap-us {compute_us}: MPI_Iallreduce (float sum) overlapped with {compute_us} us of computation per iteration, {iters} iterations; progress: HCOMM_PROGRESS={}",
            std::env::var("HCOMM_PROGRESS").unwrap_or_else(|_| "thread".into())
        );
        println!(
            "#{:>11} {:>12} {:>12} {:>14} {:>14} {:>8}",
            "size", "comm(us)", "compute(us)", "blocking(us)", "overlapped(us)", "hidden"
        );
    }
    for &size in sizes {
        let count = (size / 4) as i64;
        if count == 0 {
            continue;
        }
        let allreduce = || {
            // SAFETY: both buffers hold `max` >= size bytes.
            ok(
                unsafe {
                    api::allreduce(
                        "MPI_Allreduce",
                        send.ptr.cast(),
                        recv.ptr.cast(),
                        count,
                        MPI_FLOAT,
                        MPI_SUM,
                        WORLD,
                    )
                },
                "MPI_Allreduce",
            )
        };
        let warm = (iters / 10).max(2);
        for _ in 0..warm {
            allreduce();
        }
        let comm = batch(iters, allreduce);
        let comp = batch(iters, || sink += compute(d));
        let blocking = batch(iters, || {
            allreduce();
            sink += compute(d);
        });
        let overlapped = batch(iters, || {
            let mut req: c_int = 0;
            // SAFETY: buffers as above, untouched until the wait.
            ok(
                unsafe {
                    api::start_nonblocking("MPI_Iallreduce", WORLD, &mut req, |c| {
                        api::plan::allreduce(
                            send.ptr.cast(),
                            recv.ptr.cast(),
                            count,
                            MPI_FLOAT,
                            MPI_SUM,
                            c,
                        )
                    })
                },
                "MPI_Iallreduce",
            );
            sink += compute(d);
            // SAFETY: the request just started; status ignored.
            ok(
                unsafe { api::wait(&mut req, STATUS_IGNORE as *mut _) },
                "MPI_Wait",
            );
        });
        let hideable = comm.min(comp);
        let hidden = if hideable > 0.0 {
            ((blocking - overlapped) / hideable).clamp(0.0, 1.0)
        } else {
            0.0
        };
        if lead {
            println!(
                "{:>12} {:>12.1} {:>12.1} {:>14.1} {:>14.1} {:>7.0}%",
                size,
                comm * 1e6,
                comp * 1e6,
                blocking * 1e6,
                overlapped * 1e6,
                hidden * 100.0
            );
        }
    }
    std::hint::black_box(sink);
    0
}
