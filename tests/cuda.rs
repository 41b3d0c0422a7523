//! Device buffers without a GPU: `tests/cuda/cuda_fake.c` under `hcomm run`, against
//!
//! * no CUDA at all (this machine): `MPIX_Query_cuda_support` is 0, collectives work with
//!   `HCOMM_CUDA` unset, 0 and 1, and "CUDA unavailable" is logged once per rank at INFO
//!   when CUDA was asked for;
//! * a `libcuda.so.1` that lacks symbols, and one whose `cuInit` fails: the same, no crash;
//! * `tests/cuda/fake_cuda.c`, a driver whose device memory the CPU cannot touch (a host
//!   dereference of a device pointer faults): every device-buffer collective, over shared
//!   memory (IPC path where no kernel is needed, staged elsewhere) and over TCP (staged),
//!   mixed host/device ranks, memory without IPC handles, re-allocated buffers, the
//!   caller's context kept, refusals, and CUDA that arrives after the first collective.
//!
//! On a machine that has a real `libcuda.so.1` the no-CUDA expectations do not hold; those
//! tests say so and return.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

const SOURCE: &str = env!("CARGO_MANIFEST_DIR");

fn hcomm_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hcomm"))
}

/// A fresh directory for one test's artifacts, removed with the fake driver's leftovers.
struct Scratch {
    dir: PathBuf,
    tag: String,
}

impl Scratch {
    fn new(what: &str) -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{what}{}x{n}", std::process::id());
        let dir = std::env::temp_dir().join(format!("hcomm-cuda-test-{tag}"));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch { dir, tag }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Ok(rd) = std::fs::read_dir("/dev/shm") {
            let prefix = format!("fakecuda-{}-", self.tag);
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

fn cc(args: &[&str]) {
    let out = Command::new("cc").args(args).output().expect("start cc");
    assert!(
        out.status.success(),
        "cc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The test program, linked with the libhcomm.so next to the hcomm binary.
fn build_prog(s: &Scratch) -> PathBuf {
    let lib = hcomm_bin().parent().unwrap().to_path_buf();
    assert!(lib.join("libhcomm.so").is_file(), "build libhcomm.so first");
    let exe = s.dir.join("cuda_fake");
    cc(&[
        "-O1",
        "-I",
        &format!("{SOURCE}/include"),
        &format!("{SOURCE}/tests/cuda/cuda_fake.c"),
        "-o",
        exe.to_str().unwrap(),
        "-L",
        lib.to_str().unwrap(),
        "-lhcomm",
        &format!("-Wl,-rpath,{}", lib.display()),
        "-ldl",
    ]);
    exe
}

/// `dir/libcuda.so.1` from C source.
fn build_lib(dir: &Path, source: &Path) {
    build_lib_as(dir, source, "libcuda.so.1", &[]);
}

/// `dir/name` from C source, with extra compiler flags.
fn build_lib_as(dir: &Path, source: &Path, name: &str, flags: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let out = dir.join(name);
    let mut args = vec!["-O1", "-shared", "-fPIC"];
    args.extend_from_slice(flags);
    args.extend([
        source.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-lpthread",
        "-lrt",
    ]);
    cc(&args);
}

/// Runs the program on `n` ranks with `env`; returns the output (status checked by callers).
fn run(s: &Scratch, exe: &Path, n: usize, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(hcomm_bin());
    cmd.args(["run", "-n", &n.to_string()])
        .arg(exe)
        .args(args)
        .env_remove("HCOMM_CUDA")
        .env_remove("HCOMM_TRANSPORT")
        .env("FAKECUDA_TAG", &s.tag)
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("start hcomm run")
}

/// [`run`] with `lib` (a directory holding a `libcuda.so.1`) as `LD_LIBRARY_PATH`; asserts
/// that every rank succeeded and returns stdout and stderr.
fn run_ok(
    s: &Scratch,
    exe: &Path,
    n: usize,
    args: &[&str],
    lib: &Path,
    env: &[(&str, &str)],
) -> (String, String) {
    let mut all = vec![("LD_LIBRARY_PATH", lib.to_str().unwrap())];
    all.extend_from_slice(env);
    let o = run(s, exe, n, args, &all);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    (out, err)
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Whether this machine has a real CUDA driver the loader would find.
fn real_cuda_present() -> bool {
    // SAFETY: loads and unloads a library by name, nothing else.
    unsafe {
        let h = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if h.is_null() {
            return false;
        }
        libc::dlclose(h);
        true
    }
}

fn assert_query_run(o: &Output, want: usize, unavailable: usize, why: &str) {
    let (out, err) = text(o);
    assert!(o.status.success(), "{why}: failed\n{out}\n{err}");
    let answers = out.matches("MPIX_Query_cuda_support=0").count();
    assert_eq!(answers, want, "{why}: every rank answers 0\n{out}");
    let logged = err.matches("CUDA unavailable").count();
    assert_eq!(
        logged, unavailable,
        "{why}: 'CUDA unavailable' lines\n{err}"
    );
}

#[test]
fn without_cuda_the_answer_is_0_and_collectives_work() {
    if real_cuda_present() {
        eprintln!("a CUDA driver is installed here: no-CUDA expectations skipped");
        return;
    }
    let s = Scratch::new("none");
    let exe = build_prog(&s);
    let info = ("HCOMM_DEBUG", "INFO");
    // Unset: nothing touches CUDA until MPIX_Query_cuda_support asks (explicitly), which
    // finds no driver: said once per rank.
    let o = run(&s, &exe, 2, &["query"], &[info]);
    assert_query_run(&o, 2, 2, "HCOMM_CUDA unset");
    let o = run(&s, &exe, 2, &["query"], &[info, ("HCOMM_CUDA", "0")]);
    assert_query_run(&o, 2, 0, "HCOMM_CUDA=0");
    let o = run(&s, &exe, 2, &["query"], &[info, ("HCOMM_CUDA", "1")]);
    assert_query_run(&o, 2, 2, "HCOMM_CUDA=1");
    // The default log level (WARN) says nothing about CUDA when nobody asked for it, and
    // warns when HCOMM_CUDA=1 asked for it.
    let o = run(&s, &exe, 2, &["query"], &[]);
    assert_query_run(&o, 2, 0, "HCOMM_CUDA unset without HCOMM_DEBUG");
    let o = run(&s, &exe, 2, &["query"], &[("HCOMM_CUDA", "1")]);
    assert_query_run(&o, 2, 2, "HCOMM_CUDA=1 without HCOMM_DEBUG");
}

#[test]
fn a_broken_driver_means_cuda_unavailable_once() {
    let s = Scratch::new("broken");
    let exe = build_prog(&s);
    // A libcuda.so.1 with only cuInit (failing): a missing symbol is found before any call.
    let only_init = s.dir.join("only_init.c");
    std::fs::write(
        &only_init,
        "int cuInit(unsigned f) { (void)f; return 100; }\n",
    )
    .unwrap();
    let lib1 = s.dir.join("lib1");
    build_lib(&lib1, &only_init);
    // One with every symbol hcomm uses, whose cuInit says "no device".
    let lib2 = s.dir.join("lib2");
    no_device_driver(&s, &lib2);
    for (lib, why) in [
        (&lib1, "has no cuDriverGetVersion"),
        (&lib2, "cuInit failed"),
    ] {
        let o = run(
            &s,
            &exe,
            2,
            &["query"],
            &[
                ("HCOMM_DEBUG", "INFO"),
                ("HCOMM_CUDA", "1"),
                ("LD_LIBRARY_PATH", lib.to_str().unwrap()),
            ],
        );
        assert_query_run(&o, 2, 2, why);
        let (_, err) = text(&o);
        assert_eq!(err.matches(why).count(), 2, "{why}:\n{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The fake driver, checked to define every symbol hcomm calls.
fn fake_driver(s: &Scratch) -> PathBuf {
    let dir = s.dir.join("fake");
    build_lib(
        &dir,
        &PathBuf::from(format!("{SOURCE}/tests/cuda/fake_cuda.c")),
    );
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(dir.join("libcuda.so.1"))
        .output()
        .expect("nm");
    let defined = String::from_utf8_lossy(&out.stdout).into_owned();
    for sym in hcomm_core::cuda::SYMBOLS {
        assert!(
            defined.lines().any(|l| l.ends_with(&format!(" {sym}"))),
            "the fake driver lacks {sym}"
        );
    }
    dir
}

fn ok_lines(out: &str) -> Vec<(usize, usize)> {
    out.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("OK rank ")?;
            let (r, o) = rest.split_once(" opens ")?;
            Some((r.parse().ok()?, o.trim().parse().ok()?))
        })
        .collect()
}

#[test]
fn device_buffers_on_the_fake_driver() {
    let s = Scratch::new("dev");
    let exe = build_prog(&s);
    let fake = fake_driver(&s);
    let ld = ("LD_LIBRARY_PATH", fake.to_str().unwrap());
    // 9 ranks: a reduction over more than 8 sources is a chain of kernel launches (with the
    // real PTX; with the placeholder the reductions are staged).
    for (n, transport) in [(2, "shm"), (3, "shm"), (9, "shm"), (2, "tcp")] {
        let o = run(
            &s,
            &exe,
            n,
            &["device"],
            &[ld, ("HCOMM_TRANSPORT", transport), ("HCOMM_DEBUG", "INFO")],
        );
        let (out, err) = text(&o);
        assert!(o.status.success(), "{n} ranks, {transport}:\n{out}\n{err}");
        let ok = ok_lines(&out);
        assert_eq!(ok.len(), n, "{out}\n{err}");
        for (r, opens) in ok {
            if transport == "shm" {
                // Allgather and bcast went over CUDA IPC (they need no kernel).
                assert!(opens > 0, "rank {r} mapped no peer buffer\n{out}");
            } else {
                assert_eq!(opens, 0, "rank {r}: IPC between 'hosts'\n{out}");
            }
        }
        assert!(err.contains("CUDA-aware"), "{err}");
        assert!(err.contains("device buffers supported"), "{err}");
        // Buffers freed and re-allocated at the same address (the fake, like real drivers,
        // refuses to map an allocation over a stale mapping of the same range): the stale
        // mapping is closed first, and IPC keeps working.
        assert!(
            !err.contains("CUDA IPC unusable"),
            "{n} ranks, {transport}:\n{err}"
        );
        assert!(
            !err.contains("cannot share"),
            "{n} ranks, {transport}:\n{err}"
        );
    }
}

#[test]
fn a_rank_that_cannot_map_its_peers_makes_everyone_stage() {
    let s = Scratch::new("noopen");
    let exe = build_prog(&s);
    let fake = fake_driver(&s);
    let (out, err) = run_ok(
        &s,
        &exe,
        3,
        &["device"],
        &fake,
        &[("FAKECUDA_FAIL_OPEN", "1"), ("HCOMM_DEBUG", "INFO")],
    );
    let ok = ok_lines(&out);
    assert_eq!(ok.len(), 3, "{out}\n{err}");
    // Rank 1 failed its first mapping; from then on the communicator stages, so the others
    // mapped only what the first IPC call opened before the agreement.
    assert!(ok.iter().any(|&(r, opens)| r == 1 && opens == 0), "{out}");
    assert!(err.contains("CUDA IPC unusable"), "{err}");
}

/// `rank R: module loads N` lines of the test program.
fn module_loads(out: &str) -> Vec<usize> {
    out.lines()
        .filter_map(|l| l.split_once(": module loads ")?.1.trim().parse().ok())
        .collect()
}

#[test]
fn reductions_stage_where_the_kernels_cannot_load() {
    // An old driver everywhere (CUDA 12.4: the PTX's ISA is too new), and an old GPU on one
    // rank only: every rank agrees to stage the reductions, nobody fails, and the load is
    // tried once per context, not per call.
    let s = Scratch::new("oldptx");
    let exe = build_prog(&s);
    let fake = fake_driver(&s);
    let ld = ("LD_LIBRARY_PATH", fake.to_str().unwrap());
    for (env, why, warned) in [
        (
            vec![("FAKECUDA_PTX", "222"), ("FAKECUDA_DRIVER", "12040")],
            "UNSUPPORTED_PTX_VERSION",
            3,
        ),
        (vec![("FAKECUDA_PTX", "209:1")], "NO_BINARY_FOR_GPU", 1),
    ] {
        let mut env = env.clone();
        env.extend([ld, ("HCOMM_DEBUG", "WARN")]);
        let o = run(&s, &exe, 3, &["device"], &env);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{why}:\n{out}\n{err}");
        assert_eq!(ok_lines(&out).len(), 3, "{why}:\n{out}\n{err}");
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("GPU reduction kernels unavailable"))
            .collect();
        assert_eq!(lines.len(), warned, "{why}: once per failing rank\n{err}");
        assert!(lines.iter().all(|l| l.contains(why)), "{err}");
        if warned == 3 {
            assert!(lines.iter().all(|l| l.contains("driver 12.4")), "{err}");
        }
        let loads = module_loads(&out);
        assert_eq!(loads.len(), 3, "{out}");
        assert!(
            loads.iter().all(|&n| n <= 1),
            "loaded once per context: {loads:?}"
        );
    }
}

#[test]
fn a_rank_that_cannot_export_anything_makes_everyone_stage() {
    // Rank 1 has no CUDA IPC at all (not even for hcomm's own staging buffer), as on WSL2:
    // it shares nothing, and every call agrees to stage instead of failing everywhere.
    let s = Scratch::new("noipc");
    let exe = build_prog(&s);
    let fake = fake_driver(&s);
    let (out, err) = run_ok(
        &s,
        &exe,
        3,
        &["device"],
        &fake,
        &[("FAKECUDA_NO_IPC", "1"), ("HCOMM_DEBUG", "INFO")],
    );
    assert_eq!(ok_lines(&out).len(), 3, "{out}\n{err}");
    assert!(err.contains("cannot share its buffer"), "{err}");
}

#[test]
fn a_toolkit_stub_ahead_of_the_loaded_driver_is_refused_with_a_warning() {
    // The process loaded libcuda.so.1 (the fake); a stub `libcuda.so` (every symbol, cuInit
    // says CUDA_ERROR_STUB_LIBRARY) comes first on LD_LIBRARY_PATH, and cudarc tries that
    // name first. hcomm must not take the stub for the driver, and must say loudly (WARN, the
    // default level) that device buffers would now crash.
    let s = Scratch::new("stub");
    let exe = build_prog(&s);
    let fake = fake_driver(&s);
    let mut src = String::from("int cuInit(unsigned f) { (void)f; return 34; }\n");
    for sym in hcomm_core::cuda::SYMBOLS.iter().filter(|s| **s != "cuInit") {
        src.push_str(&format!("int {sym}(void) {{ return 34; }}\n"));
    }
    let stub_c = s.dir.join("stub.c");
    std::fs::write(&stub_c, src).unwrap();
    let stubs = s.dir.join("stubs");
    build_lib_as(&stubs, &stub_c, "libcuda.so", &[]);
    let path = format!("{}:{}", stubs.display(), fake.display());
    let o = run(&s, &exe, 2, &["loaded"], &[("LD_LIBRARY_PATH", &path)]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(out.matches("MPIX_Query_cuda_support=0").count(), 2, "{out}");
    let warned: Vec<&str> = err.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warned.len(), 2, "{err}");
    for l in warned {
        assert!(
            l.contains("not the libcuda.so.1 this process loaded"),
            "{l}"
        );
        assert!(l.contains("will crash"), "{l}");
    }
}

#[test]
fn a_driver_without_cu_ctx_get_id() {
    // Drivers older than 525 lack cuCtxGetId: contexts are told apart by handle instead.
    let s = Scratch::new("noctxid");
    let exe = build_prog(&s);
    let dir = s.dir.join("old");
    build_lib_as(
        &dir,
        &PathBuf::from(format!("{SOURCE}/tests/cuda/fake_cuda.c")),
        "libcuda.so.1",
        &["-DFAKECUDA_NO_CTX_ID"],
    );
    let (out, err) = run_ok(&s, &exe, 2, &["device"], &dir, &[("HCOMM_DEBUG", "INFO")]);
    assert_eq!(ok_lines(&out).len(), 2, "{out}\n{err}");
    assert!(err.contains("device buffers supported"), "{err}");
}

#[test]
fn a_thread_without_a_current_context() {
    // The driver refuses cuPointerGetAttributes without a current context, and the program
    // has none current: hcomm asks from a primary context and restores "none".
    let s = Scratch::new("noctx");
    let exe = build_prog(&s);
    let fake = fake_driver(&s);
    let (out, err) = run_ok(
        &s,
        &exe,
        2,
        &["device"],
        &fake,
        &[("FAKECUDA_NEED_CTX", "1"), ("FAKECUDA_NO_USER_CTX", "1")],
    );
    assert_eq!(ok_lines(&out).len(), 2, "{out}\n{err}");
    // With no primary context active (nothing allocated), host buffers are host memory
    // without creating one.
    let (out, err) = run_ok(
        &s,
        &exe,
        2,
        &["loaded"],
        &fake,
        &[("FAKECUDA_NEED_CTX", "1"), ("FAKECUDA_NO_USER_CTX", "1")],
    );
    assert_eq!(out.matches("MPIX_Query_cuda_support=1").count(), 2, "{out}");
    assert_eq!(out.matches("primary retains 0").count(), 2, "{out}\n{err}");
}

#[test]
fn cuda_arriving_after_the_first_collective() {
    let s = Scratch::new("late");
    let exe = build_prog(&s);
    let fake = fake_driver(&s);
    let (out, err) = run_ok(&s, &exe, 2, &["late"], &fake, &[("HCOMM_DEBUG", "INFO")]);
    assert_eq!(ok_lines(&out).len(), 2, "{out}\n{err}");
    // The world agreed "not CUDA-aware" at its calls 1 and 2 (before rank 1 loaded CUDA);
    // the re-agreement at call 4 (the device allreduce) finds rank 1 CUDA-active, on both
    // ranks alike.
    assert_eq!(err.matches("CUDA-aware (device-buffer").count(), 2, "{err}");
}

#[test]
fn preload_never_hands_device_buffers_to_a_host_that_is_not_cuda_aware() {
    let tool = |t: &str| {
        Command::new(t)
            .arg("-v")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if !tool("mpicc.mpich") {
        eprintln!("no mpicc.mpich: skipped");
        return;
    }
    let s = Scratch::new("preload");
    let fake = fake_driver(&s);
    let exe = s.dir.join("cuda_preload");
    let out = Command::new("mpicc.mpich")
        .arg(format!("{SOURCE}/tests/cuda/cuda_preload.c"))
        .arg("-o")
        .arg(&exe)
        .arg("-ldl")
        .output()
        .expect("mpicc.mpich");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let preload = hcomm_bin().with_file_name("libhcomm_preload.so");
    assert!(preload.is_file(), "build libhcomm_preload.so first");
    let o = Command::new("mpiexec.mpich")
        .args(["-n", "2", "-genv", "LD_PRELOAD"])
        .arg(&preload)
        .args(["-genv", "LD_LIBRARY_PATH"])
        .arg(&fake)
        .args(["-genv", "FAKECUDA_TAG", &s.tag])
        .args(["-genv", "HCOMM_STATS", "1"])
        .arg(&exe)
        .stdin(Stdio::null())
        .output()
        .expect("mpiexec.mpich");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let ok: Vec<&str> = out.lines().filter(|l| l.starts_with("OK rank")).collect();
    assert_eq!(ok.len(), 2, "{out}\n{err}");
    // Debian's MPICH is built without CUDA: its answer, not hcomm's, reaches the program.
    assert!(
        ok.iter().all(|l| l.ends_with("host-cuda-support 0")),
        "{out}"
    );
    assert_eq!(
        err.matches("the host MPI is not CUDA-aware").count(),
        2,
        "{err}"
    );
    assert!(
        err.contains("allreduce_handled=1"),
        "hcomm took the predefined one:\n{err}"
    );
}

/// `hcomm run -n N hcomm bench ARGS` with `env`, killed after two minutes (a hung collective
/// fails the test instead of hanging it).
fn bench(s: &Scratch, n: usize, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "5", "120"])
        .arg(hcomm_bin())
        .args(["run", "-n", &n.to_string()])
        .arg(hcomm_bin())
        .arg("bench")
        .args(args)
        .env_remove("HCOMM_CUDA")
        .env_remove("HCOMM_TRANSPORT")
        .env("FAKECUDA_TAG", &s.tag)
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("start timeout hcomm run")
}

/// A `libcuda.so.1` in `dir` with every symbol hcomm calls, whose `cuInit` says "no device".
fn no_device_driver(s: &Scratch, dir: &Path) {
    let mut src = String::from("int cuInit(unsigned f) { (void)f; return 100; }\n");
    for sym in hcomm_core::cuda::SYMBOLS.iter().filter(|s| **s != "cuInit") {
        src.push_str(&format!("int {sym}(void) {{ return 999; }}\n"));
    }
    let c = s.dir.join("no_device.c");
    std::fs::write(&c, src).unwrap();
    build_lib(dir, &c);
}

const COLLS: [&str; 5] = [
    "allreduce",
    "bcast",
    "allgather",
    "reduce_scatter",
    "reduce",
];

/// `hcomm bench --memory device` against the fake driver: device buffers on every rank (the
/// CPU cannot touch them), every result right, the device-to-device copy rate in the header,
/// the host-staged allreduce on the allreduce rows.
#[test]
fn bench_on_device_memory_with_the_fake_driver() {
    let s = Scratch::new("bench");
    let fake = fake_driver(&s);
    let ld = ("LD_LIBRARY_PATH", fake.to_str().unwrap());
    let mut args = COLLS.to_vec();
    args.extend(["--memory", "device", "-b", "8", "-e", "1M"]);
    let o = bench(&s, 2, &args, &[ld, ("HCOMM_DEBUG", "INFO")]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    // CUDA was asked for explicitly (HCOMM_CUDA unset) before the first collective.
    assert!(err.contains("device buffers supported"), "{err}");
    assert!(err.contains("CUDA-aware"), "{err}");
    assert!(
        out.contains("# memory: device: cuMemAlloc on each rank's GPU (by rank: 0 0; local rank mod 1 GPU(s)), rank 0's: hcomm fake CUDA device;"),
        "{out}"
    );
    let d2d: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("# d2d copy: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no d2d copy line:\n{out}"));
    assert!(d2d > 0.0 && d2d.is_finite(), "{out}");
    assert!(
        out.contains("cuMemcpyDtoD of 1048576 B x 256,"),
        "the largest size, the default count:\n{out}"
    );
    let header = out
        .lines()
        .find(|l| l.starts_with("#      collective"))
        .expect("column header");
    assert!(
        header.trim_end().ends_with("#wrong  staged(us)"),
        "{header}"
    );
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    // 8 B .. 1 MiB: 18 sizes of each collective (8 B is one float per rank at 2 ranks).
    assert_eq!(rows.len(), 5 * 18, "{out}");
    for r in &rows {
        assert_eq!(r.len(), 13, "malformed row {r:?}\n{out}");
        assert_eq!(r[11], "0", "wrong elements in {r:?}\n{out}");
        if r[0] == "allreduce" {
            let t: f64 = r[12]
                .parse()
                .unwrap_or_else(|_| panic!("staged time {r:?}"));
            assert!(t > 0.0, "{r:?}");
        } else {
            assert_eq!(r[12], "-", "staged time on a {} row", r[0]);
        }
    }
    for c in COLLS {
        assert!(rows.iter().any(|r| r[0] == c), "no row for {c}:\n{out}");
    }
}

/// In place, another root and 3 ranks; and the JSON document says what the table says.
#[test]
fn bench_on_device_memory_in_place_and_json() {
    let s = Scratch::new("benchj");
    let fake = fake_driver(&s);
    let ld = ("LD_LIBRARY_PATH", fake.to_str().unwrap());
    let mut args = COLLS.to_vec();
    args.extend([
        "--memory",
        "device",
        "--inplace",
        "-r",
        "2",
        "-b",
        "8",
        "-e",
        "256K",
        "-f",
        "8",
    ]);
    let o = bench(&s, 3, &args, &[ld]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(rows.len() >= 5 * 5, "{out}");
    assert!(rows.iter().all(|r| r.len() == 13 && r[11] == "0"), "{out}");

    let o = bench(
        &s,
        2,
        &[
            "allreduce",
            "bcast",
            "--memory",
            "device",
            "-b",
            "8",
            "-e",
            "64K",
            "-f",
            "8",
            "--json",
        ],
        &[ld],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("\"memory\":\"device\""), "{out}");
    assert!(
        out.contains("\"device\":{\"gpus\":[0,0],\"rule\":\"local rank mod 1 GPU(s)\",\"name\":\"hcomm fake CUDA device\",\"d2d_copy_gbs\":"),
        "{out}"
    );
    assert!(
        out.contains("\"d2d_copy_bytes\":32768,"),
        "the largest size: {out}"
    );
    // 8, 64, 512, 4K, 32K: five rows each; the staged time on allreduce rows only.
    assert_eq!(
        out.matches("\"collective\":\"allreduce\"").count(),
        5,
        "{out}"
    );
    assert_eq!(out.matches("\"collective\":\"bcast\"").count(), 5, "{out}");
    assert_eq!(
        out.matches("\"wrong\":0,\"staged_time_us\":null}").count(),
        5,
        "{out}"
    );
    assert_eq!(out.matches("\"staged_time_us\":").count(), 10, "{out}");
    assert!(!out.contains("\"staged_time_us\":0,"), "{out}");
}

/// Without a usable CUDA driver `--memory device` ends every rank with status 1 and one line
/// saying why; nothing panics.
#[test]
fn bench_on_device_memory_without_cuda_says_why() {
    let s = Scratch::new("benchno");
    let args = ["allreduce", "--memory", "device", "-b", "8", "-e", "1K"];
    let check = |o: &Output, why: &str| {
        let (out, err) = text(o);
        assert_eq!(o.status.code(), Some(1), "{why}:\n{out}\n{err}");
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("no usable CUDA device"))
            .collect();
        assert_eq!(lines.len(), 1, "{why}: one line for the job:\n{err}");
        assert!(
            lines[0].starts_with("hcomm bench: no usable CUDA device: ") && lines[0].contains(why),
            "{why}:\n{err}"
        );
        assert!(
            lines[0].ends_with("(and on 1 more of the 2 ranks)"),
            "{why}:\n{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(!out.contains("collective"), "no table:\n{out}");
    };
    // HCOMM_CUDA=0 keeps hcomm away from CUDA even when asked.
    let o = bench(&s, 2, &args, &[("HCOMM_CUDA", "0")]);
    check(&o, "HCOMM_CUDA=0");
    // A driver whose cuInit fails.
    let lib = s.dir.join("nodev");
    no_device_driver(&s, &lib);
    let o = bench(&s, 2, &args, &[("LD_LIBRARY_PATH", lib.to_str().unwrap())]);
    check(&o, "CUDA cuInit failed");
    if real_cuda_present() {
        eprintln!("a CUDA driver is installed here: the no-driver case skipped");
        return;
    }
    let o = bench(&s, 2, &args, &[]);
    check(&o, "no CUDA driver library found");
}
