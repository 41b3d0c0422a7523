//! `HCOMM_CUDA_PHASES=1`: where the time of the IPC allreduce goes. Each rank prints, every
//! 50 calls of one size, the mean time of each phase of `ipc_coll::allreduce` on stderr. A
//! diagnostic for a GPU machine (it measured that the floor of several ranks on one GPU is
//! the GPU's time-slicing between processes: docs/GPU.md); off, it costs one branch per mark.

use std::sync::OnceLock;
use std::time::Instant;

/// The phases, in the order `mark` is called with their index.
const NAMES: [&str; 11] = [
    "bind+lease",
    "shareable",
    "fill-wait",
    "exchange",
    "map_all",
    "kernel-launch",
    "kernel-wait",
    "barrier1",
    "copies-launch",
    "copies-wait",
    "barrier2",
];
const N: usize = NAMES.len();
/// Calls averaged per line.
const EVERY: u64 = 50;

fn on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("HCOMM_CUDA_PHASES").is_ok_and(|v| crate::param::truthy(&v)))
}

/// Sums over the calls of one message size: (nanoseconds per phase, calls, bytes).
static ACC: parking_lot::Mutex<([u64; N], u64, usize)> = parking_lot::Mutex::new(([0; N], 0, 0));

/// One call's phase times.
pub(crate) struct Phases {
    on: bool,
    t: Instant,
    d: [u64; N],
}

impl Phases {
    pub fn start() -> Self {
        Phases {
            on: on(),
            t: Instant::now(),
            d: [0; N],
        }
    }

    /// Phase `i` ends now.
    pub fn mark(&mut self, i: usize) {
        if self.on {
            let now = Instant::now();
            self.d[i] = (now - self.t).as_nanos() as u64;
            self.t = now;
        }
    }

    /// The call is over: adds it up, and prints the means every [`EVERY`] calls.
    pub fn done(&self, rank: usize, bytes: usize) {
        if !self.on {
            return;
        }
        let mut a = ACC.lock();
        if a.2 != bytes {
            *a = ([0; N], 0, bytes);
        }
        for (sum, d) in a.0.iter_mut().zip(self.d) {
            *sum += d;
        }
        a.1 += 1;
        if a.1 == EVERY {
            let mut line =
                format!("hcomm-cuda-phases rank {rank} bytes {bytes} (us, mean of {EVERY}):");
            for (name, sum) in NAMES.iter().zip(a.0) {
                line += &format!(" {name}={:.1}", sum as f64 / (EVERY as f64 * 1e3));
            }
            eprintln!("{line}");
            *a = ([0; N], 0, bytes);
        }
    }
}
