//! PMIx client (Open MPI's `mpirun`/`prterun`, `srun --mpi=pmix`), loaded at run time.
//!
//! A PMIx server that starts a process tells it so through the environment (`PMIX_NAMESPACE`,
//! `PMIX_RANK`, `PMIX_SERVER_URI*`). Only then is the system's PMIx client library opened
//! (`HCOMM_PMIX_LIB` if set, else `libpmix.so.2`, then `libpmix.so`) with `dlopen`: libhcomm
//! never links it, so a machine without PMIx still loads libhcomm, and a launch that needs it
//! fails with an error naming PMIx (see `pm::unjoined_launcher`).
//!
//! A handful of calls of the C API do the work: `PMIx_Init` (our namespace and rank),
//! `PMIx_Get` of the job-level `PMIX_JOB_SIZE` (rank `PMIX_RANK_WILDCARD`), `PMIx_Put`
//! (scope `PMIX_GLOBAL`) with `PMIx_Commit`, `PMIx_Fence` over the whole namespace with
//! `PMIX_COLLECT_DATA` (so every `PMIx_Get` after it is answered from the local store), and
//! `PMIx_Finalize`. The structs are mirrored by hand from PMIx 4.2's `pmix_common.h`; their
//! sizes and offsets are asserted at compile time against values measured with the C
//! compiler (see the asserts below).

use super::pm::ProcessManager;
use crate::error::{Error, Result};
use std::ffi::{c_char, c_int, CStr, CString};
use std::mem::{offset_of, size_of};
use std::sync::Mutex;

// ---- pmix_common.h (PMIx 4.2.2) ----

/// `PMIX_MAX_NSLEN`: a namespace is `char[PMIX_MAX_NSLEN + 1]`.
const PMIX_MAX_NSLEN: usize = 255;
/// `PMIX_MAX_KEYLEN`: a key is `char[PMIX_MAX_KEYLEN + 1]`.
const PMIX_MAX_KEYLEN: usize = 511;
const PMIX_SUCCESS: c_int = 0;
/// `UINT32_MAX - 1`: "every process of the namespace", for job-level keys and fences.
const PMIX_RANK_WILDCARD: u32 = u32::MAX - 1;
/// `pmix_scope_t`: share with every process, local and remote.
const PMIX_GLOBAL: u8 = 3;

// `pmix_data_type_t` codes.
const PMIX_BOOL: u16 = 1;
const PMIX_STRING: u16 = 3;
const PMIX_SIZE: u16 = 4;
const PMIX_INT: u16 = 6;
const PMIX_INT32: u16 = 9;
const PMIX_UINT: u16 = 11;
const PMIX_UINT16: u16 = 13;
const PMIX_UINT32: u16 = 14;
const PMIX_UINT64: u16 = 15;
const PMIX_PROC_RANK: u16 = 40;

// Keys.
const PMIX_JOB_SIZE: &CStr = c"pmix.job.size";
const PMIX_NODEID: &CStr = c"pmix.nodeid";
const PMIX_COLLECT_DATA: &CStr = c"pmix.collect";

/// `pmix_proc_t`: a namespace and a rank.
#[repr(C)]
#[derive(Clone, Copy)]
struct PmixProc {
    nspace: [c_char; PMIX_MAX_NSLEN + 1],
    rank: u32,
}

/// The union of `pmix_value_t`. Only the members read or written here are named; `_size`
/// gives it the size and alignment of the C union (its largest members, `pmix_envar_t` and
/// `struct timeval`, hold pointers and 64-bit integers).
#[repr(C)]
#[derive(Clone, Copy)]
union PmixValueData {
    flag: bool,
    string: *mut c_char,
    size: usize,
    integer: c_int,
    int32: i32,
    uint: u32,
    uint16: u16,
    uint32: u32,
    uint64: u64,
    rank: u32,
    _size: [u64; 3],
}

/// `pmix_value_t`: a type code and the union.
#[repr(C)]
#[derive(Clone, Copy)]
struct PmixValue {
    type_: u16,
    data: PmixValueData,
}

/// `pmix_info_t`: a key, directive flags and a value.
#[repr(C)]
#[derive(Clone, Copy)]
struct PmixInfo {
    key: [c_char; PMIX_MAX_KEYLEN + 1],
    flags: u32,
    value: PmixValue,
}

// Measured with gcc 12 on x86-64 against /usr/lib/x86_64-linux-gnu/pmix2/include/pmix.h
// (libpmix-dev 4.2.2): sizeof(pmix_proc_t) = 260, offsetof(rank) = 256; sizeof(pmix_value_t)
// = 32, offsetof(data) = 8; sizeof(pmix_info_t) = 552, offsetof(flags) = 512,
// offsetof(value) = 520. The same on every LP64 target.
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(size_of::<PmixProc>() == 260);
    assert!(offset_of!(PmixProc, rank) == 256);
    assert!(size_of::<PmixValue>() == 32);
    assert!(offset_of!(PmixValue, data) == 8);
    assert!(size_of::<PmixInfo>() == 552);
    assert!(offset_of!(PmixInfo, flags) == 512);
    assert!(offset_of!(PmixInfo, value) == 520);
};

impl PmixProc {
    fn new(nspace: &[c_char; PMIX_MAX_NSLEN + 1], rank: u32) -> PmixProc {
        PmixProc {
            nspace: *nspace,
            rank,
        }
    }
}

impl PmixInfo {
    /// A `bool` info (`PMIX_INFO_LOAD(info, key, &true, PMIX_BOOL)`).
    fn flag(key: &CStr, on: bool) -> PmixInfo {
        let mut k = [0 as c_char; PMIX_MAX_KEYLEN + 1];
        for (d, &s) in k
            .iter_mut()
            .zip(key.to_bytes().iter().take(PMIX_MAX_KEYLEN))
        {
            *d = s as c_char;
        }
        PmixInfo {
            key: k,
            flags: 0,
            value: PmixValue {
                type_: PMIX_BOOL,
                data: PmixValueData { flag: on },
            },
        }
    }
}

type InitFn = unsafe extern "C" fn(*mut PmixProc, *mut PmixInfo, usize) -> c_int;
type GetFn = unsafe extern "C" fn(
    *const PmixProc,
    *const c_char,
    *const PmixInfo,
    usize,
    *mut *mut PmixValue,
) -> c_int;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut PmixValue) -> c_int;
type CommitFn = unsafe extern "C" fn() -> c_int;
type FenceFn = unsafe extern "C" fn(*const PmixProc, usize, *const PmixInfo, usize) -> c_int;
type FinalizeFn = unsafe extern "C" fn(*const PmixInfo, usize) -> c_int;
type ValueDestructFn = unsafe extern "C" fn(*mut PmixValue);
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;

/// The entry points of the PMIx client library. The library stays loaded for the life of the
/// process (it runs a progress thread; unloading it under that thread would crash), so the
/// function pointers stay valid.
#[derive(Clone, Copy)]
struct Api {
    init: InitFn,
    get: GetFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    finalize: FinalizeFn,
    value_destruct: ValueDestructFn,
    error_string: ErrorStringFn,
}

/// Library names tried in order when `HCOMM_PMIX_LIB` is not set.
const DEFAULT_LIBS: &[&str] = &["libpmix.so.2", "libpmix.so"];

/// Why loading failed, for [`load_error`].
static LOAD_ERROR: Mutex<Option<String>> = Mutex::new(None);

fn record_load_error(msg: String) {
    if let Ok(mut g) = LOAD_ERROR.lock() {
        *g = Some(msg);
    }
}

/// Opens the PMIx client library and resolves the calls hcomm makes.
fn load(explicit: Option<&str>) -> std::result::Result<(Api, String), String> {
    let names: Vec<&str> = match explicit {
        Some(p) => vec![p],
        None => DEFAULT_LIBS.to_vec(),
    };
    let mut tried = Vec::new();
    for name in names {
        // SAFETY: opening a shared library runs its initialisers; libpmix's are those of an
        // ordinary C library (it starts no thread before PMIx_Init). The name is either the
        // user's explicit choice (HCOMM_PMIX_LIB) or the PMIx client's well-known soname.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => {
                // Never unloaded: see `Api`.
                let lib: &'static libloading::Library = Box::leak(Box::new(lib));
                return resolve(lib)
                    .map(|api| (api, name.to_string()))
                    .map_err(|e| format!("{name}: {e}"));
            }
            Err(e) => tried.push(with_cause(&e)),
        }
    }
    let what = match explicit {
        Some(p) => format!("HCOMM_PMIX_LIB={p}"),
        None => DEFAULT_LIBS.join(" or "),
    };
    Err(format!("cannot open {what}: {}", tried.join("; ")))
}

/// libloading's message with its cause (`dlerror()`'s text), which its `Display` leaves out.
fn with_cause(e: &libloading::Error) -> String {
    use std::error::Error as _;
    match e.source() {
        Some(c) => format!("{e}: {c}"),
        None => e.to_string(),
    }
}

fn resolve(lib: &'static libloading::Library) -> std::result::Result<Api, String> {
    macro_rules! sym {
        ($name:literal, $ty:ty) => {
            // SAFETY: the symbol's C prototype in pmix.h / pmix_common.h (PMIx 4.2) is the
            // function type named here, argument for argument (pmix_status_t is int,
            // pmix_scope_t uint8_t, the structs are the repr(C) mirrors above), and `lib`
            // is never unloaded, so the copied-out pointer stays valid.
            match unsafe { lib.get::<$ty>(concat!($name, "\0").as_bytes()) } {
                Ok(s) => *s,
                Err(e) => return Err(format!("{}: {}", $name, with_cause(&e))),
            }
        };
    }
    Ok(Api {
        init: sym!("PMIx_Init", InitFn),
        get: sym!("PMIx_Get", GetFn),
        put: sym!("PMIx_Put", PutFn),
        commit: sym!("PMIx_Commit", CommitFn),
        fence: sym!("PMIx_Fence", FenceFn),
        finalize: sym!("PMIx_Finalize", FinalizeFn),
        value_destruct: sym!("PMIx_Value_destruct", ValueDestructFn),
        error_string: sym!("PMIx_Error_string", ErrorStringFn),
    })
}

impl Api {
    /// `PMIX_ERR_...` name of a status, and its number.
    fn status(&self, rc: c_int) -> String {
        // SAFETY: PMIx_Error_string takes any status and returns a pointer to a static
        // NUL-terminated string (never freed), or NULL; it needs no initialisation.
        let p = unsafe { (self.error_string)(rc) };
        if p.is_null() {
            return format!("status {rc}");
        }
        // SAFETY: non-null, NUL-terminated and static, as said above.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy();
        format!("{s} ({rc})")
    }

    fn check(&self, rc: c_int, call: impl FnOnce() -> String) -> Result<()> {
        if rc == PMIX_SUCCESS {
            Ok(())
        } else {
            Err(Error::other(format!(
                "PMIx: {} failed: {}",
                call(),
                self.status(rc)
            )))
        }
    }

    /// `PMIx_Get` of `key` for `proc`, handing the value to `read` before it is freed.
    fn get<T>(
        &self,
        proc: &PmixProc,
        key: &CStr,
        read: impl FnOnce(&PmixValue) -> std::result::Result<T, String>,
    ) -> Result<T> {
        let call = || {
            let who = if proc.rank == PMIX_RANK_WILDCARD {
                "the job".to_string()
            } else {
                format!("rank {}", proc.rank)
            };
            format!("PMIx_Get({}, {who})", key.to_string_lossy())
        };
        let mut val: *mut PmixValue = std::ptr::null_mut();
        // SAFETY: `proc` and `key` are valid for the call (a repr(C) pmix_proc_t and a
        // NUL-terminated string); no info array (NULL, 0); `val` is a valid out-pointer that
        // PMIx_Get sets to a value it allocated with malloc.
        let rc = unsafe { (self.get)(proc, key.as_ptr(), std::ptr::null(), 0, &mut val) };
        self.check(rc, call)?;
        if val.is_null() {
            return Err(Error::other(format!("PMIx: {} returned no value", call())));
        }
        // SAFETY: PMIx_Get succeeded, so `val` points to an initialised pmix_value_t that we
        // own until it is freed below.
        let out = read(unsafe { &*val });
        // SAFETY: PMIX_VALUE_RELEASE: PMIx_Value_destruct frees what the value holds (a
        // string's copy), then the struct itself was allocated by libpmix with malloc
        // (pmix_malloc), so free releases it. `val` is not used again.
        unsafe {
            (self.value_destruct)(val);
            libc::free(val.cast());
        }
        out.map_err(|e| Error::other(format!("PMIx: {}: {e}", call())))
    }
}

/// A number from a value of any integer type (`PMIX_VALUE_GET_NUMBER`, for integers).
fn number(v: &PmixValue) -> std::result::Result<u64, String> {
    // SAFETY: each arm reads the union member that the type code says is initialised.
    let n = unsafe {
        match v.type_ {
            PMIX_UINT32 => v.data.uint32 as u64,
            PMIX_SIZE => v.data.size as u64,
            PMIX_UINT64 => v.data.uint64,
            PMIX_UINT16 => v.data.uint16 as u64,
            PMIX_UINT => v.data.uint as u64,
            PMIX_PROC_RANK => v.data.rank as u64,
            PMIX_INT => u64::try_from(v.data.integer).map_err(|_| "negative".to_string())?,
            PMIX_INT32 => u64::try_from(v.data.int32).map_err(|_| "negative".to_string())?,
            t => return Err(format!("value of type {t}, expected an integer")),
        }
    };
    Ok(n)
}

/// The text of a `PMIX_STRING` value.
fn string(v: &PmixValue) -> std::result::Result<String, String> {
    if v.type_ != PMIX_STRING {
        return Err(format!(
            "value of type {}, expected a string ({PMIX_STRING})",
            v.type_
        ));
    }
    // SAFETY: the type code says `string` is the initialised member.
    let p = unsafe { v.data.string };
    if p.is_null() {
        return Ok(String::new());
    }
    // SAFETY: a PMIX_STRING value holds a NUL-terminated string owned by the value, alive
    // until the value is destructed (after this copy).
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Longest value `put` is given: PMIx has no small limit, and 64 KiB keeps one rank's
/// address blob in one key.
const MAX_VALUE_LEN: usize = 64 * 1024;

/// A process joined to a PMIx server.
struct Pmix {
    api: Api,
    me: PmixProc,
    job: String,
    rank: usize,
    size: usize,
    finalized: bool,
}

impl ProcessManager for Pmix {
    fn name(&self) -> &'static str {
        "PMIx"
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn job_name(&self) -> &str {
        &self.job
    }
    fn max_value_len(&self) -> usize {
        MAX_VALUE_LEN
    }

    fn put(&mut self, key: &str, value: &str) -> Result<()> {
        let k = CString::new(key)
            .map_err(|_| Error::intern(format!("PMIx_Put: key {key:?} holds a NUL")))?;
        let v = CString::new(value)
            .map_err(|_| Error::intern(format!("PMIx_Put({key}): value holds a NUL")))?;
        let mut val = PmixValue {
            type_: PMIX_STRING,
            data: PmixValueData {
                string: v.as_ptr() as *mut c_char,
            },
        };
        // SAFETY: `k` is NUL-terminated; `val` is a PMIX_STRING value whose string `v`
        // outlives the call. PMIx_Put copies the value into its own store and neither frees
        // nor writes through the pointer (pmix_value_xfer duplicates the string).
        let rc = unsafe { (self.api.put)(PMIX_GLOBAL, k.as_ptr(), &mut val) };
        self.api
            .check(rc, || format!("PMIx_Put({key}, PMIX_GLOBAL)"))
    }

    fn fence(&mut self) -> Result<()> {
        // SAFETY: PMIx_Commit takes no arguments; it is called after PMIx_Init succeeded.
        let rc = unsafe { (self.api.commit)() };
        self.api.check(rc, || "PMIx_Commit".into())?;
        let info = [PmixInfo::flag(PMIX_COLLECT_DATA, true)];
        // SAFETY: NULL procs with nprocs 0 means every process of our namespace; `info` is a
        // one-element array of initialised pmix_info_t that lives across the call, which
        // only reads it.
        let rc = unsafe { (self.api.fence)(std::ptr::null(), 0, info.as_ptr(), info.len()) };
        self.api
            .check(rc, || "PMIx_Fence(all, PMIX_COLLECT_DATA)".into())
    }

    fn get(&mut self, rank: usize, key: &str) -> Result<String> {
        let k = CString::new(key)
            .map_err(|_| Error::intern(format!("PMIx_Get: key {key:?} holds a NUL")))?;
        let r = u32::try_from(rank)
            .ok()
            .filter(|&r| r < PMIX_RANK_WILDCARD)
            .ok_or_else(|| Error::intern(format!("PMIx_Get: rank {rank} out of range")))?;
        let proc = PmixProc::new(&self.me.nspace, r);
        self.api.get(&proc, &k, string)
    }

    fn nodes(&mut self) -> Option<Vec<usize>> {
        let mut out = Vec::with_capacity(self.size);
        for r in 0..self.size {
            let proc = PmixProc::new(&self.me.nspace, r as u32);
            match self.api.get(&proc, PMIX_NODEID, number) {
                Ok(n) => out.push(n as usize),
                Err(e) => {
                    crate::trace!("no PMIx node ids: {}", e.msg);
                    return None;
                }
            }
        }
        Some(out)
    }

    fn finalize(&mut self) {
        if std::mem::replace(&mut self.finalized, true) {
            return;
        }
        // SAFETY: called once (the flag above), after a successful PMIx_Init; no info array.
        let rc = unsafe { (self.api.finalize)(std::ptr::null(), 0) };
        if rc != PMIX_SUCCESS {
            crate::warn!("PMIx: PMIx_Finalize failed: {}", self.api.status(rc));
        }
    }
}

/// Whether the environment says a PMIx server started this process.
fn started_by_pmix(env: &dyn Fn(&str) -> Option<String>) -> bool {
    env("PMIX_NAMESPACE").is_some() && env("PMIX_RANK").is_some()
}

/// Joins the PMIx server named by the environment; `None` when no PMIx launcher started us,
/// or when the PMIx client library cannot be loaded ([`load_error`] says why).
pub fn connect() -> Result<Option<Box<dyn ProcessManager>>> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if !started_by_pmix(&env) {
        return Ok(None);
    }
    let explicit = crate::param::pmix_lib();
    let (api, lib) = match load(explicit.as_deref()) {
        Ok(x) => x,
        Err(e) => {
            crate::trace!("PMIx client library not loaded: {e}");
            record_load_error(e);
            return Ok(None);
        }
    };
    let mut me = PmixProc {
        nspace: [0; PMIX_MAX_NSLEN + 1],
        rank: 0,
    };
    // SAFETY: `me` is a writable pmix_proc_t that PMIx_Init fills in; no info array.
    let rc = unsafe { (api.init)(&mut me, std::ptr::null_mut(), 0) };
    api.check(rc, || format!("PMIx_Init (library {lib})"))?;
    let mut pm = Pmix {
        api,
        me,
        job: String::new(),
        rank: 0,
        size: 0,
        finalized: false,
    };
    // From here on a failure still finalizes, so the server sees a clean exit of the client.
    let joined = (|| {
        // The namespace is NUL-terminated within its array (PMIx_Init copies at most
        // PMIX_MAX_NSLEN characters into a zeroed array); read it without trusting that.
        let bytes: Vec<u8> = me
            .nspace
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        let job = String::from_utf8_lossy(&bytes).into_owned();
        if job.is_empty() {
            return Err(Error::other("PMIx: PMIx_Init returned an empty namespace"));
        }
        let wildcard = PmixProc::new(&me.nspace, PMIX_RANK_WILDCARD);
        let size = api.get(&wildcard, PMIX_JOB_SIZE, number)? as usize;
        let rank = me.rank as usize;
        if size == 0 || rank >= size {
            return Err(Error::other(format!(
                "PMIx: PMIx_Init says rank {rank}, but PMIX_JOB_SIZE is {size}"
            )));
        }
        Ok((job, rank, size))
    })();
    match joined {
        Ok((job, rank, size)) => {
            crate::trace!("PMIx: {lib}: namespace {job}, rank {rank} of {size}");
            pm.job = job;
            pm.rank = rank;
            pm.size = size;
            Ok(Some(Box::new(pm)))
        }
        Err(e) => {
            pm.finalize();
            Err(e)
        }
    }
}

/// Why the PMIx client library could not be loaded, if it was tried and failed.
pub fn load_error() -> Option<String> {
    LOAD_ERROR.lock().ok().and_then(|g| g.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_pmix_environment_counts() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(started_by_pmix(&env(&[
            ("PMIX_NAMESPACE", "1234"),
            ("PMIX_RANK", "0")
        ])));
        assert!(!started_by_pmix(&env(&[("PMIX_RANK", "0")])));
        assert!(!started_by_pmix(&env(&[("OMPI_COMM_WORLD_SIZE", "2")])));
    }

    #[test]
    fn a_missing_library_is_reported_not_fatal() {
        let e = load(Some("/nonexistent/libpmix.so")).err().unwrap();
        assert!(e.contains("HCOMM_PMIX_LIB=/nonexistent/libpmix.so"), "{e}");
    }

    #[test]
    fn info_flag_is_a_bool_info() {
        let i = PmixInfo::flag(PMIX_COLLECT_DATA, true);
        assert_eq!(i.value.type_, PMIX_BOOL);
        // SAFETY: `flag` was the member written.
        assert!(unsafe { i.value.data.flag });
        let key: Vec<u8> = i
            .key
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        assert_eq!(key, b"pmix.collect");
    }

    /// Where the system has a PMIx client library, every symbol resolves and the error
    /// strings are PMIx's (no server is needed for either).
    #[test]
    fn resolves_the_system_library() {
        let (api, lib) = match load(None) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("SKIP: no PMIx client library: {e}");
                return;
            }
        };
        assert!(api.status(PMIX_SUCCESS).contains("SUCCESS"), "{lib}");
        // PMIX_ERR_NOT_FOUND
        assert!(api.status(-46).contains("NOT-FOUND") || api.status(-46).contains("NOT_FOUND"));
    }
}
