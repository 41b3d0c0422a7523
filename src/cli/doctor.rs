//! `hcomm doctor`: checks what hcomm needs from this machine and says how to fix what is wrong.
//! One line per check, `pass`, `warn` or `fail`; the exit status is 1 when anything failed.
//!
//! Every check does the real thing where it can (creates and maps a shared-memory segment,
//! binds a port, reads another process's memory with `process_vm_readv`) rather than reading a
//! setting that may not tell the whole story. Libraries that may be missing (MPI, CUDA) are
//! looked up without running their code where possible (`ldconfig -p` and `LD_LIBRARY_PATH`
//! for MPI). The CUDA driver, when it can be opened, is initialised (`cuInit`) to list the
//! devices: a diagnosis asked for is the place to pay for that.

use std::ffi::{c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};

use clap::Args;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Ranks you plan to run on this host (sizes the /dev/shm and open-files checks).
    #[arg(short = 'n', long, default_value_t = 8)]
    pub ranks: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Pass,
    Warn,
    Fail,
}

struct Report {
    failed: usize,
    warned: usize,
}

impl Report {
    fn line(&mut self, status: Status, what: &str, text: &str) {
        let tag = match status {
            Status::Pass => "pass",
            Status::Warn => {
                self.warned += 1;
                "warn"
            }
            Status::Fail => {
                self.failed += 1;
                "FAIL"
            }
        };
        println!("{tag}  {what:<16} {text}");
    }
}

const MIB: u64 = 1 << 20;

pub fn doctor(args: DoctorArgs) -> i32 {
    let mut r = Report {
        failed: 0,
        warned: 0,
    };
    let n = args.ranks.max(2);
    println!("hcomm doctor (sized for {n} ranks on this host; -n to change)");
    check_libraries(&mut r);
    check_cores(&mut r, n);
    check_shm(&mut r, n);
    check_leftovers(&mut r);
    check_nofile(&mut r, n);
    check_memlock(&mut r);
    check_single_copy(&mut r);
    check_network(&mut r);
    check_mpi(&mut r);
    check_cuda(&mut r, n);
    println!(
        "\n{} failed, {} warning(s). docs/TROUBLESHOOTING.md explains each check.",
        r.failed, r.warned
    );
    i32::from(r.failed > 0)
}

fn check_libraries(r: &mut Report) {
    let Ok(exe) = std::env::current_exe() else {
        r.line(
            Status::Warn,
            "libraries",
            "cannot tell where this hcomm binary is",
        );
        return;
    };
    for (name, role) in [
        ("libhcomm.so", "standalone MPI"),
        ("libhcomm_preload.so", "LD_PRELOAD interposer"),
    ] {
        let lib = exe.with_file_name(name);
        if lib.is_file() {
            r.line(
                Status::Pass,
                "libraries",
                &format!("{role}: {}", lib.display()),
            );
        } else {
            r.line(
                Status::Warn,
                "libraries",
                &format!(
                    "{role}: no {name} next to {} (run `cargo build --release`, or use the binary from an `hcomm install` prefix)",
                    exe.display()
                ),
            );
        }
    }
}

fn check_cores(r: &mut Report, n: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    if cores >= n {
        r.line(
            Status::Pass,
            "cores",
            &format!("{cores} usable, {n} ranks: one core per rank"),
        );
    } else {
        r.line(
            Status::Pass,
            "cores",
            &format!(
                "{cores} usable for {n} ranks: oversubscribed; hcomm then sleeps on futexes instead of spinning (expect lower bandwidth than with a core per rank)"
            ),
        );
    }
}

/// `statvfs` of a path: (total, free) bytes.
fn space(path: &str) -> Option<(u64, u64)> {
    let c = CString::new(path).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `c` is NUL-terminated and `st` is writable for one statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs succeeded and filled `st`.
    let st = unsafe { st.assume_init() };
    let frsize = st.f_frsize;
    Some((st.f_blocks * frsize, st.f_bavail * frsize))
}

fn check_shm(r: &mut Report, n: usize) {
    let slots = hcomm_core::param::shm_slots().unwrap_or(8) as u64;
    let slot_bytes = hcomm_core::param::shm_slot_bytes().unwrap_or(128 << 10) as u64;
    let stage = hcomm_core::transport::shm::stage_pieces() as u64;
    // One channel per ordered pair of ranks on the host, and one fan-out stage per rank.
    let need = (n * (n - 1)) as u64 * slots * slot_bytes + n as u64 * stage * slot_bytes;
    match space("/dev/shm") {
        None => {
            r.line(
                Status::Fail,
                "/dev/shm",
                "missing or unreadable: hcomm's shared-memory transport needs a tmpfs at /dev/shm (containers: `docker run --shm-size=1g`)",
            );
            return;
        }
        Some((total, free)) => {
            let text = format!(
                "{} MiB free of {} MiB; {n} ranks need about {} MiB ({} slots x {} KiB per ordered pair, {} per rank's stage)",
                free / MIB,
                total / MIB,
                need.div_ceil(MIB),
                slots,
                slot_bytes >> 10,
                stage
            );
            if free < need {
                r.line(
                    Status::Fail,
                    "/dev/shm",
                    &format!("{text}: too small (enlarge it, e.g. `mount -o remount,size=2G /dev/shm` or docker --shm-size, or lower HCOMM_SHM_SLOTS / HCOMM_SHM_SLOT_BYTES)"),
                );
            } else if free < 2 * need {
                r.line(
                    Status::Warn,
                    "/dev/shm",
                    &format!("{text}: little headroom"),
                );
            } else {
                r.line(Status::Pass, "/dev/shm", &text);
            }
        }
    }
    match shm_round_trip() {
        Ok(()) => r.line(
            Status::Pass,
            "/dev/shm",
            "created, mapped, wrote and removed a 1 MiB segment (mode 0600)",
        ),
        Err(e) => r.line(
            Status::Fail,
            "/dev/shm",
            &format!("cannot use a shared-memory segment: {e}"),
        ),
    }
}

/// Creates, maps, touches and unlinks a 1 MiB POSIX shared-memory segment.
fn shm_round_trip() -> Result<(), String> {
    let name = CString::new(format!("/hcomm-doctor-{}", std::process::id())).unwrap();
    let len = 1usize << 20;
    // SAFETY: NUL-terminated name; O_EXCL so an existing object is never reused.
    let fd = unsafe {
        libc::shm_open(
            name.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
            0o600,
        )
    };
    if fd < 0 {
        return Err(format!("shm_open: {}", std::io::Error::last_os_error()));
    }
    let result = (|| {
        // SAFETY: `fd` is the descriptor just opened.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            return Err(format!("ftruncate: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: a fresh shared mapping of the whole object; checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: `p` maps `len` writable bytes; writing every page proves tmpfs has room
        // (a full tmpfs raises SIGBUS here rather than at ftruncate, so keep this small).
        unsafe {
            std::ptr::write_bytes(p.cast::<u8>(), 0x5a, len);
            libc::munmap(p, len);
        }
        Ok(())
    })();
    // SAFETY: closing and unlinking what this function created.
    unsafe {
        libc::close(fd);
        libc::shm_unlink(name.as_ptr());
    }
    result
}

fn check_leftovers(r: &mut Report) {
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("hcomm-"))
                .collect()
        })
        .unwrap_or_default();
    if left.is_empty() {
        r.line(Status::Pass, "leftovers", "no hcomm-* segments in /dev/shm");
    } else {
        r.line(
            Status::Warn,
            "leftovers",
            &format!(
                "{} hcomm-* segment(s) in /dev/shm (e.g. {}): from a job killed before cleanup, or one still running; when no hcomm job runs: rm /dev/shm/hcomm-*",
                left.len(),
                left[0]
            ),
        );
    }
}

fn rlimit(resource: libc::__rlimit_resource_t) -> Option<(u64, u64)> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `l` is a valid rlimit to fill.
    (unsafe { libc::getrlimit(resource, &mut l) } == 0).then_some((l.rlim_cur, l.rlim_max))
}

fn limit_text(v: u64) -> String {
    if v == libc::RLIM_INFINITY {
        "unlimited".into()
    } else {
        v.to_string()
    }
}

fn check_nofile(r: &mut Report, n: usize) {
    let Some((soft, hard)) = rlimit(libc::RLIMIT_NOFILE) else {
        r.line(Status::Warn, "open files", "cannot read RLIMIT_NOFILE");
        return;
    };
    // Per rank: a socket per peer per HCOMM_SOCKETS_PER_PEER over TCP, a descriptor per
    // shared-memory peer while mapping, plus the program's own.
    let need = (n as u64) * hcomm_core::param::sockets_per_peer().unwrap_or(1) as u64 + 64;
    let text = format!(
        "soft limit {}, hard {} (about {need} needed per rank for {n} ranks)",
        limit_text(soft),
        limit_text(hard)
    );
    if soft < need {
        r.line(
            Status::Fail,
            "open files",
            &format!("{text}: raise it (`ulimit -n {need}` or more)"),
        );
    } else {
        r.line(Status::Pass, "open files", &text);
    }
}

fn check_memlock(r: &mut Report) {
    match rlimit(libc::RLIMIT_MEMLOCK) {
        Some((soft, _)) => r.line(
            Status::Pass,
            "locked memory",
            &format!(
                "RLIMIT_MEMLOCK {} bytes (hcomm locks no host memory itself; its CUDA staging buffers are pinned through the CUDA driver; GPU frameworks pinning host buffers may want `ulimit -l unlimited`)",
                limit_text(soft)
            ),
        ),
        None => r.line(Status::Warn, "locked memory", "cannot read RLIMIT_MEMLOCK"),
    }
}

/// Whether a child process may read its parent's memory with `process_vm_readv`: the situation
/// of two sibling ranks (neither is the other's ancestor) under Yama's restricted mode.
fn check_single_copy(r: &mut Report) {
    let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .map(|s| s.trim().to_string());
    let scope = match &yama {
        Some(v) => format!("Yama ptrace_scope={v}"),
        None => "no Yama".into(),
    };
    let secret: [u8; 16] = *b"hcomm-doctor-cma";
    // SAFETY: fork in a single-threaded moment of this CLI; the child only makes async-signal
    // -safe calls (process_vm_readv, _exit) before exiting.
    let parent = unsafe { libc::getpid() };
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        r.line(
            Status::Warn,
            "single-copy",
            "cannot fork to test process_vm_readv",
        );
        return;
    }
    if pid == 0 {
        let mut buf = [0u8; 16];
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: 16,
        };
        let remote = libc::iovec {
            iov_base: secret.as_ptr() as *mut c_void,
            iov_len: 16,
        };
        // SAFETY: one local and one remote iovec of 16 bytes each; the remote address is the
        // parent's copy of `secret` (same address space layout after fork).
        let n = unsafe { libc::process_vm_readv(parent, &local, 1, &remote, 1, 0) };
        let code = if n == 16 && buf == secret { 0 } else { 1 };
        // SAFETY: leave the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let mut status: c_int = 0;
    // SAFETY: reaping the child just forked.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        r.line(
            Status::Pass,
            "single-copy",
            &format!("process_vm_readv between processes is permitted ({scope})"),
        );
    } else {
        r.line(
            Status::Warn,
            "single-copy",
            &format!(
                "process_vm_readv between processes is not permitted ({scope}): shared memory works, single-copy paths would fall back to two copies; `sysctl kernel.yama.ptrace_scope=0` permits it (a machine-wide security choice), containers may need CAP_SYS_PTRACE"
            ),
        );
    }
}

fn check_network(r: &mut Report) {
    match hcomm_core::bootstrap::net::listen_address() {
        Ok((ip, ifname)) => match std::net::TcpListener::bind((ip, 0)) {
            Ok(l) => r.line(
                Status::Pass,
                "network",
                &format!(
                    "TCP between hosts would use {ip} ({ifname}); a port could be bound ({}){}",
                    l.local_addr().map(|a| a.port()).unwrap_or(0),
                    if ip.is_loopback() {
                        " — loopback only: set HCOMM_SOCKET_IFNAME for jobs across hosts"
                    } else {
                        ""
                    }
                ),
            ),
            Err(e) => r.line(
                Status::Fail,
                "network",
                &format!("cannot listen on {ip} ({ifname}): {e}"),
            ),
        },
        Err(e) => r.line(
            Status::Fail,
            "network",
            &format!("no usable interface: {e} (check HCOMM_SOCKET_IFNAME)"),
        ),
    }
    if let Ok(uri) = std::env::var("HCOMM_URI") {
        if let Some(hostport) = uri.strip_prefix("tcp://") {
            match std::net::TcpListener::bind(hostport) {
                Ok(_) => r.line(
                    Status::Pass,
                    "rendezvous",
                    &format!("HCOMM_URI={uri}: the port is free here"),
                ),
                Err(e) => r.line(
                    Status::Warn,
                    "rendezvous",
                    &format!(
                        "HCOMM_URI={uri}: cannot bind it here ({e}); fine if this host is not rank 0's, else choose another port"
                    ),
                ),
            }
        } else if let Some(dir) = uri.strip_prefix("file://") {
            let ok = Path::new(dir).is_dir();
            r.line(
                if ok { Status::Pass } else { Status::Fail },
                "rendezvous",
                &format!(
                    "HCOMM_URI={uri}: {}",
                    if ok {
                        "the directory exists (it must be shared by every host of the job)"
                    } else {
                        "the directory does not exist"
                    }
                ),
            );
        } else {
            r.line(
                Status::Fail,
                "rendezvous",
                &format!("HCOMM_URI={uri}: expected tcp://HOST:PORT or file:///DIR"),
            );
        }
    }
}

/// Sonames of the MPI libraries the preload knows, with their ABI.
const MPI_LIBS: [(&str, &str); 4] = [
    ("libmpich.so.12", "MPICH ABI (Debian MPICH)"),
    ("libmpi.so.12", "MPICH ABI (PyPI mpich, vendor MPICHs)"),
    ("libmpi.so.40", "Open MPI 4.x/5.x ABI"),
    (
        "libmpi_abi.so.1",
        "MPI-5 standard ABI (preload forwards it untouched)",
    ),
];

/// Where a library would be found: `LD_LIBRARY_PATH` first, then the loader cache.
fn find_library(soname: &str) -> Option<PathBuf> {
    if let Ok(paths) = std::env::var("LD_LIBRARY_PATH") {
        for dir in paths.split(':').filter(|d| !d.is_empty()) {
            let p = Path::new(dir).join(soname);
            if p.exists() {
                return Some(p);
            }
        }
    }
    let out = std::process::Command::new("ldconfig")
        .arg("-p")
        .output()
        .or_else(|_| {
            std::process::Command::new("/sbin/ldconfig")
                .arg("-p")
                .output()
        })
        .ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let l = l.trim();
        (l.starts_with(soname) && l[soname.len()..].starts_with(' '))
            .then(|| l.rsplit("=> ").next().map(PathBuf::from))
            .flatten()
    })
}

fn check_mpi(r: &mut Report) {
    let found: Vec<String> = MPI_LIBS
        .iter()
        .filter_map(|(so, abi)| find_library(so).map(|p| format!("{} ({abi})", p.display())))
        .collect();
    if found.is_empty() {
        r.line(
            Status::Pass,
            "host MPI",
            "none found: standalone mode (libhcomm.so + hcomm run) needs none; preload needs the MPI the program was built with",
        );
    } else {
        for f in found {
            r.line(Status::Pass, "host MPI", &f);
        }
    }
}

/// Opens a library by soname without making its symbols global; `None` when absent.
fn open(soname: &str) -> Option<*mut c_void> {
    let c = CString::new(soname).ok()?;
    // SAFETY: NUL-terminated; RTLD_LOCAL keeps its symbols out of the global scope.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
    (!h.is_null()).then_some(h)
}

/// A function of an open library, as a pointer-sized address.
fn symbol(h: *mut c_void, name: &CStr) -> Option<usize> {
    // SAFETY: `h` is a live dlopen handle and `name` is NUL-terminated.
    let p = unsafe { libc::dlsym(h, name.as_ptr()) };
    (!p.is_null()).then_some(p as usize)
}

fn cuda_version_text(v: c_int) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

fn check_cuda(r: &mut Report, n: usize) {
    type IntOut = unsafe extern "C" fn(*mut c_int) -> c_int;
    type Init = unsafe extern "C" fn(u32) -> c_int;
    let Some(drv) = open("libcuda.so.1") else {
        r.line(
            Status::Warn,
            "CUDA",
            "no CUDA driver (libcuda.so.1): GPU buffers are not available; fine for CPU-only jobs",
        );
        return;
    };
    let mut driver: c_int = 0;
    if let Some(f) = symbol(drv, c"cuDriverGetVersion") {
        // SAFETY: cuDriverGetVersion(int *) needs no initialisation.
        unsafe { std::mem::transmute::<usize, IntOut>(f)(&mut driver) };
    }
    let mut devices: c_int = 0;
    let init_rc = symbol(drv, c"cuInit").map(|f| {
        // SAFETY: cuInit(unsigned int flags) with flags 0.
        unsafe { std::mem::transmute::<usize, Init>(f)(0) }
    });
    if init_rc == Some(0) {
        if let Some(f) = symbol(drv, c"cuDeviceGetCount") {
            // SAFETY: cuDeviceGetCount(int *) after a successful cuInit.
            unsafe { std::mem::transmute::<usize, IntOut>(f)(&mut devices) };
        }
    }
    let runtime = ["libcudart.so", "libcudart.so.12", "libcudart.so.11.0"]
        .iter()
        .find_map(|so| open(so))
        .and_then(|h| {
            let f = symbol(h, c"cudaRuntimeGetVersion")?;
            let mut v: c_int = 0;
            // SAFETY: cudaRuntimeGetVersion(int *).
            unsafe { std::mem::transmute::<usize, IntOut>(f)(&mut v) };
            Some(v)
        });
    let mut text = format!("driver supports CUDA {}", cuda_version_text(driver));
    match runtime {
        Some(v) => text += &format!(", runtime {}", cuda_version_text(v)),
        None => text += ", no CUDA runtime library found (only the driver is needed by hcomm)",
    }
    if init_rc != Some(0) {
        r.line(
            Status::Fail,
            "CUDA",
            &format!(
                "{text}; cuInit failed ({:?}): driver/kernel module mismatch or no device access (check nvidia-smi, /dev/nvidia*)",
                init_rc
            ),
        );
    } else if runtime.is_some_and(|v| v > driver) {
        r.line(
            Status::Fail,
            "CUDA",
            &format!("{text}: the runtime is newer than the driver supports; update the driver or use an older runtime"),
        );
    } else if devices == 0 {
        r.line(
            Status::Warn,
            "CUDA",
            &format!("{text}; no GPU visible (CUDA_VISIBLE_DEVICES?)"),
        );
    } else {
        r.line(
            Status::Pass,
            "CUDA",
            &format!("{text}; {devices} GPU(s) visible"),
        );
        for line in cuda_devices(drv, devices) {
            r.line(Status::Pass, "CUDA", &line);
        }
        check_gpu_sharing(r, n, devices as usize);
    }
}

/// Ranks that share a GPU: without the MPS server, the GPU time-slices between their
/// processes and each phase of a device collective waits for its turn (measured on an H200:
/// a 4 MiB allreduce at 2 ranks took 383 µs without MPS, 36 µs with it; docs/GPU.md).
fn check_gpu_sharing(r: &mut Report, n: usize, gpus: usize) {
    if gpus == 0 || n <= gpus {
        return;
    }
    let pipe =
        std::env::var("CUDA_MPS_PIPE_DIRECTORY").unwrap_or_else(|_| "/tmp/nvidia-mps".into());
    let control = std::path::Path::new(&pipe).join("control");
    if control.exists() {
        r.line(
            Status::Pass,
            "CUDA",
            &format!(
                "{n} ranks share {gpus} GPU(s); the MPS server is running ({})",
                control.display()
            ),
        );
    } else {
        r.line(
            Status::Warn,
            "CUDA",
            &format!(
                "{n} ranks would share {gpus} GPU(s) and no MPS server is running: the GPU then time-slices between the ranks' processes (device collectives pay hundreds of microseconds per call); start it with `nvidia-cuda-mps-control -d` (docs/GPU.md)"
            ),
        );
    }
}

/// One line per visible device: name, compute capability, memory. Only after a successful
/// `cuInit`; a device whose queries fail says so instead.
fn cuda_devices(drv: *mut c_void, count: c_int) -> Vec<String> {
    type DeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
    type GetName = unsafe extern "C" fn(*mut std::ffi::c_char, c_int, c_int) -> c_int;
    type GetAttribute = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int;
    type TotalMem = unsafe extern "C" fn(*mut usize, c_int) -> c_int;
    // CUdevice_attribute values from cuda.h.
    const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
    const COMPUTE_CAPABILITY_MINOR: c_int = 76;
    let (Some(get), Some(name), Some(attr), Some(mem)) = (
        symbol(drv, c"cuDeviceGet"),
        symbol(drv, c"cuDeviceGetName"),
        symbol(drv, c"cuDeviceGetAttribute"),
        // The plain name takes a 32-bit size; cuda.h maps it to _v2 on 64-bit builds.
        symbol(drv, c"cuDeviceTotalMem_v2"),
    ) else {
        return vec!["the driver lacks the device queries (cuDeviceGet, cuDeviceGetName, cuDeviceGetAttribute, cuDeviceTotalMem_v2)".into()];
    };
    // SAFETY: the four addresses are the driver's functions of these names, whose C
    // signatures the types above transcribe.
    let (get, name, attr, mem) = unsafe {
        (
            std::mem::transmute::<usize, DeviceGet>(get),
            std::mem::transmute::<usize, GetName>(name),
            std::mem::transmute::<usize, GetAttribute>(attr),
            std::mem::transmute::<usize, TotalMem>(mem),
        )
    };
    (0..count.min(64))
        .map(|ordinal| {
            let mut dev: c_int = 0;
            // SAFETY: cuDeviceGet(CUdevice *, int ordinal) after cuInit, ordinal < count.
            if unsafe { get(&mut dev, ordinal) } != 0 {
                return format!("GPU {ordinal}: cuDeviceGet failed");
            }
            let mut buf = [0 as std::ffi::c_char; 256];
            // SAFETY: the driver writes at most `len` bytes, NUL included, into `buf`.
            let named = unsafe { name(buf.as_mut_ptr(), buf.len() as c_int, dev) } == 0;
            let label = if named {
                // SAFETY: `buf` is zero-initialised and the driver NUL-terminates what it
                // writes, so a NUL lies within the array.
                unsafe { CStr::from_ptr(buf.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            } else {
                "(name unavailable)".into()
            };
            let (mut major, mut minor): (c_int, c_int) = (0, 0);
            let mut bytes: usize = 0;
            // SAFETY: each call writes one int (size_t) through a valid pointer for a valid
            // device handle.
            let cc_ok = unsafe {
                attr(&mut major, COMPUTE_CAPABILITY_MAJOR, dev) == 0
                    && attr(&mut minor, COMPUTE_CAPABILITY_MINOR, dev) == 0
            };
            // SAFETY: as above.
            let mem_ok = unsafe { mem(&mut bytes, dev) } == 0;
            format!(
                "GPU {ordinal}: {label}, compute capability {}, {}",
                if cc_ok {
                    format!("{major}.{minor}")
                } else {
                    "?".into()
                },
                if mem_ok {
                    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
                } else {
                    "memory size unavailable".into()
                }
            )
        })
        .collect()
}
