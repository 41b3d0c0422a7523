//! Process-wide state: init/finalize, the world, and the communicator table.
//!
//! The table is read on every call (a short read lock, never held across a wait); collectives
//! run on an `Arc<Comm>` taken out of it, so threads working on different communicators share
//! nothing but the endpoint's per-peer locks.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::ThreadId;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use crate::abi::handles;
pub use crate::bootstrap::Exchange;
use crate::bootstrap::{contract, host_identity, Bootstrap};
use crate::comm::{Comm, SELF_ID};
use crate::endpoint::Endpoint;
use crate::error::{Class, Error, Result};
use crate::transport::shm::{Geometry, Segment, ShmLink};
use crate::transport::Link;

const NOT_INITIALIZED: u8 = 0;
const INITIALIZING: u8 = 1;
const INITIALIZED: u8 = 2;
const FINALIZED: u8 = 3;

/// The runtime's own state: the world is connected once per process, by whichever of
/// `MPI_Init` or the first `MPI_Session_init` comes first, and torn down when neither the
/// world model nor any session uses it any longer (it cannot be rebuilt: the job's other
/// processes have gone on without this one).
static STATE: AtomicU8 = AtomicU8::new(NOT_INITIALIZED);
static RT: OnceLock<Runtime> = OnceLock::new();

/// Who uses the runtime: the world model (`MPI_Init` … `MPI_Finalize`) and the live
/// sessions. `MPI_Initialized`/`MPI_Finalized` speak of the world model only (MPI-4 §11.2.2:
/// sessions do not make them true). Transitions hold the lock, so two threads that start
/// sessions at once connect the world once.
struct Users {
    /// 0: `MPI_Init` not called; 1: initialized; 2: finalized.
    world_model: u8,
    sessions: usize,
}

static USERS: Mutex<Users> = Mutex::new(Users {
    world_model: 0,
    sessions: 0,
});
const WM_NONE: u8 = 0;
const WM_ACTIVE: u8 = 1;
const WM_DONE: u8 = 2;

pub struct Runtime {
    pub world: Arc<Comm>,
    pub self_comm: Arc<Comm>,
    user: RwLock<Vec<Option<Arc<Comm>>>>,
    pub thread_level: i32,
    main_thread: ThreadId,
    pub host: String,
    /// Kept for the life of the job: closing it early would look like a dead peer later.
    joined: Mutex<Joined>,
}

/// `MPI_Initialized`: whether `MPI_Init` (or `MPI_Init_thread`) has been called.
pub fn is_initialized() -> bool {
    USERS.lock().world_model != WM_NONE
}

/// `MPI_Finalized`: whether `MPI_Finalize` has been called.
pub fn is_finalized() -> bool {
    USERS.lock().world_model == WM_DONE
}

/// The runtime, while the world model or a session uses it.
pub fn get() -> Result<&'static Runtime> {
    match STATE.load(Ordering::Acquire) {
        INITIALIZED => Ok(RT.get().expect("initialized")),
        FINALIZED => Err(Error::other(
            "called after MPI_Finalize (or after the last MPI_Session_finalize)",
        )),
        _ => Err(Error::other("called before MPI_Init (or MPI_Session_init)")),
    }
}

/// Connects the world unless it is up already. Returns the provided thread level.
fn bring_up(required: i32) -> Result<i32> {
    match STATE.load(Ordering::Acquire) {
        INITIALIZED => return Ok(RT.get().expect("initialized").thread_level),
        FINALIZED => return Err(Error::other(
            "MPI cannot be initialized again after MPI_Finalize or the last MPI_Session_finalize",
        )),
        _ => {}
    }
    STATE.store(INITIALIZING, Ordering::Release);
    match build(required) {
        Ok(rt) => {
            let level = rt.thread_level;
            let _ = RT.set(rt);
            STATE.store(INITIALIZED, Ordering::Release);
            Ok(level)
        }
        Err(e) => {
            STATE.store(NOT_INITIALIZED, Ordering::Release);
            Err(e)
        }
    }
}

/// `MPI_Init_thread`: sets up the world once (unless a session has). Returns the provided
/// thread level (a session's runtime provides `MPI_THREAD_MULTIPLE`).
pub fn init(required: i32) -> Result<i32> {
    let mut u = USERS.lock();
    if u.world_model != WM_NONE {
        return Err(Error::other(if u.world_model == WM_DONE {
            "MPI cannot be initialized again after MPI_Finalize"
        } else {
            "MPI is already initialized"
        }));
    }
    let level = bring_up(required)?;
    u.world_model = WM_ACTIVE;
    Ok(level)
}

/// `MPI_Session_init`: brings the world up if nothing has yet, and counts the session.
/// Returns the provided thread level.
pub fn session_init() -> Result<i32> {
    let mut u = USERS.lock();
    let level = bring_up(handles::THREAD_MULTIPLE)?;
    u.sessions += 1;
    Ok(level)
}

/// `MPI_Session_finalize`: the last user of the runtime tears it down as `MPI_Finalize`
/// does (a barrier on the world first), so every process must end its sessions too.
pub fn session_finalize() -> Result<()> {
    let mut u = USERS.lock();
    get()?;
    u.sessions = u
        .sessions
        .checked_sub(1)
        .ok_or_else(|| Error::intern("session count underflow"))?;
    if u.sessions == 0 && u.world_model != WM_ACTIVE {
        tear_down()?;
    }
    Ok(())
}

/// Preload mode: sets up the world once over a host-provided [`Exchange`] (rank `rank` of
/// `size`, as the host MPI numbers them) instead of hcomm's own bootstrap. The world's error
/// handler is `errhandler` (the interposer passes `MPI_ERRORS_RETURN` and routes errors to the
/// host's handler itself). Returns the provided thread level.
pub fn init_over(
    rank: usize,
    size: usize,
    ex: &mut dyn Exchange,
    required: i32,
    errhandler: i32,
) -> Result<i32> {
    let mut u = USERS.lock();
    if STATE
        .compare_exchange(
            NOT_INITIALIZED,
            INITIALIZING,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        return Err(Error::other("hcomm is already initialized"));
    }
    let res = (|| {
        crate::log::set_rank(rank);
        let host = host_identity();
        crate::wait::UNDER_HOST_MPI.store(true, Ordering::Relaxed);
        let ep = if size <= 1 {
            Endpoint::singleton()
        } else {
            crate::transport::tcp::Mode::from_env()?;
            let secret = crate::auth::agree_over(rank, ex)?;
            connect_world(rank, size, None, ex, &host, &secret, false)?
        };
        Ok(assemble(
            Arc::new(ep),
            required,
            errhandler,
            host,
            Joined::Nothing,
        ))
    })();
    match res {
        Ok(rt) => {
            let level = rt.thread_level;
            let _ = RT.set(rt);
            STATE.store(INITIALIZED, Ordering::Release);
            u.world_model = WM_ACTIVE;
            Ok(level)
        }
        Err(e) => {
            STATE.store(NOT_INITIALIZED, Ordering::Release);
            Err(e)
        }
    }
}

/// `MPI_Finalize`: ends the world model; the runtime stays up while a session still uses
/// it (the last `MPI_Session_finalize` tears it down then).
pub fn finalize() -> Result<()> {
    let mut u = USERS.lock();
    get()?;
    if u.world_model != WM_ACTIVE {
        return Err(Error::other("MPI_Finalize without MPI_Init"));
    }
    u.world_model = WM_DONE;
    if u.sessions == 0 {
        tear_down()?;
    }
    Ok(())
}

/// Prints the statistics (when asked for), then a barrier on the world, so no rank tears
/// down while a peer still reads from it, then the state flips. Memory stays mapped until the
/// process exits.
fn tear_down() -> Result<()> {
    let rt = get()?;
    crate::stats::print_if_enabled(rt.world.rank as i32);
    crate::stats::profile::finish(rt.world.rank as i32);
    // Peers that pass this barrier exit: their ends are not failures (crate::health).
    rt.world.ep.set_finalizing();
    crate::coll::barrier(&rt.world).map_err(|e| e.context("barrier in MPI_Finalize"))?;
    if let Joined::Pm(ex) = &mut *rt.joined.lock() {
        ex.pm().finalize();
    }
    STATE.store(FINALIZED, Ordering::Release);
    Ok(())
}

fn build(required: i32) -> Result<Runtime> {
    use crate::bootstrap::pm::{self, Started};
    let mut host = host_identity();
    let (ep, joined) = match pm::detect()? {
        Started::Singleton => (Arc::new(Endpoint::singleton()), Joined::Nothing),
        Started::Hcomm(l) if l.size == 1 => {
            crate::log::set_rank(0);
            (Arc::new(Endpoint::singleton()), Joined::Nothing)
        }
        Started::Hcomm(l) => {
            crate::log::set_rank(l.rank);
            // A bad setting fails here, not after the rendezvous has waited for everyone.
            crate::transport::tcp::Mode::from_env()?;
            let timeout =
                Duration::from_secs(crate::param::bootstrap_timeout_secs().unwrap_or(60) as u64);
            let mut b = Bootstrap::connect(&l, timeout).map_err(|e| e.context("bootstrap"))?;
            let ep = connect_world(
                l.rank,
                l.size,
                l.job_id.clone(),
                &mut b,
                &host,
                &l.secret,
                l.loopback_only(),
            )?;
            (Arc::new(ep), Joined::Star(b))
        }
        Started::Pm(mut ex) => {
            let (rank, size) = (ex.rank(), ex.size());
            crate::log::set_rank(rank);
            let name = ex.pm().name();
            crate::info!(
                "joined {name}: rank {rank} of {size}, job {}",
                ex.pm().job_name()
            );
            // The launcher's node ids refine host identity: ranks share memory only where
            // both say they share a host.
            if let Some(nodes) = ex.pm().nodes().filter(|n| n.len() == size) {
                host = format!("{host}/node{}", nodes[rank]);
            }
            let ep = if size == 1 {
                Endpoint::singleton()
            } else {
                crate::transport::tcp::Mode::from_env()?;
                // The manager's key-value space is the job's own channel, as the host MPI's
                // is in preload mode: rank 0's secret travels through it.
                let secret = crate::auth::agree_over(rank, &mut ex)
                    .map_err(|e| e.context(format!("joining {name}")))?;
                let job = pm_job_id(ex.pm().job_name());
                connect_world(rank, size, Some(job), &mut ex, &host, &secret, false)
                    .map_err(|e| e.context(format!("world setup over {name}")))?
            };
            (Arc::new(ep), Joined::Pm(ex))
        }
    };
    Ok(assemble(
        ep,
        required,
        handles::ERRORS_ARE_FATAL,
        host,
        joined,
    ))
}

/// A job id for segment names from a process manager's job name (any text): 16 hex digits
/// of its hash, the same on every rank.
fn pm_job_id(name: &str) -> String {
    // FNV-1a: stable across processes and builds, unlike std's RandomState.
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    format!("{h:016x}")
}

/// What keeps this process joined to its job: closing it early would look like a dead peer
/// (the TCP star) or a failed task (a process manager) to the others.
enum Joined {
    Nothing,
    Star(#[allow(dead_code)] Bootstrap),
    Pm(crate::bootstrap::pm::PmExchange),
}

/// The runtime around a connected world endpoint.
fn assemble(
    ep: Arc<Endpoint>,
    required: i32,
    errhandler: i32,
    host: String,
    joined: Joined,
) -> Runtime {
    let thread_level = required.clamp(handles::THREAD_SINGLE, handles::THREAD_MULTIPLE);
    let rank = ep.rank;
    let size = ep.size;
    let world = Arc::new(Comm::new(
        0,
        rank,
        (0..size).collect(),
        ep.clone(),
        errhandler,
    ));
    let self_comm = Arc::new(Comm::new(SELF_ID, 0, vec![rank], ep, errhandler));
    crate::info!("initialized: rank {rank} of {size} on {host}");
    Runtime {
        world,
        self_comm,
        user: RwLock::new(Vec::new()),
        thread_level,
        main_thread: std::thread::current().id(),
        host,
        joined: Mutex::new(joined),
    }
}

/// One rank's entry of the address exchange: lines `host identity`, `pid`, `job id`,
/// `HCOMM_TRANSPORT`, `HCOMM_SOCKETS_PER_PEER`, `TCP listening address` (empty when none).
pub(crate) struct PeerInfo {
    host: String,
    /// `pid@pid-namespace` ([`crate::health::pid_field`]), for liveness checks.
    pid: String,
    job: String,
    mode: String,
    sockets: usize,
    tcp_addr: String,
}

pub(crate) fn parse_peer_info(raw: &[u8]) -> PeerInfo {
    let s = String::from_utf8_lossy(raw);
    let mut it = s.splitn(6, '\n').map(str::to_string);
    let mut next = || it.next().unwrap_or_default();
    let host = next();
    let pid = next();
    PeerInfo {
        host,
        pid,
        job: next(),
        mode: next(),
        sockets: next().parse().unwrap_or(1),
        tcp_addr: next(),
    }
}

/// Exchanges addresses and connects to every peer. Peers with this host's identity get shared
/// memory, the others TCP (`HCOMM_TRANSPORT=tcp`: every peer TCP; `=shm`: a peer on another
/// host is an error). Locality comes from host identity alone, never from a local size.
fn connect_world(
    me: usize,
    size: usize,
    job: Option<String>,
    b: &mut dyn Exchange,
    host: &str,
    secret: &crate::auth::Secret,
    loopback_only: bool,
) -> Result<Endpoint> {
    use crate::transport::tcp::{self, Mode};
    let mode = Mode::from_env()?;
    let sockets = tcp::sockets_per_peer();
    let job = job.unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        format!("{:x}{:08x}", std::process::id(), nanos)
    });
    // Every rank that may use TCP listens before the exchange, so its address can be
    // published in it. A failure matters only if some peer needs TCP with us.
    let mut listener = None;
    let mut listen_err = None;
    if mode != Mode::Shm {
        match crate::bootstrap::net::listen_address_for(loopback_only)
            .and_then(|(ip, ifname)| tcp::listen(ip).map(|(lst, a)| (lst, a, ifname)))
        {
            Ok(x) => listener = Some(x),
            Err(e) => listen_err = Some(e),
        }
    }
    let tcp_addr = listener
        .as_ref()
        .map(|(_, a, _)| a.to_string())
        .unwrap_or_default();
    let blob = format!(
        "{host}\n{}\n{job}\n{}\n{sockets}\n{tcp_addr}",
        crate::health::pid_field(),
        mode.as_str()
    );
    let all = b
        .allgather(blob.as_bytes())
        .map_err(|e| e.context("address exchange"))?;
    let peers: Vec<PeerInfo> = all.iter().map(|raw| parse_peer_info(raw)).collect();
    // Rank 0's job id names the segments, so ranks started without a launcher agree too.
    let job = peers[0].job.clone();
    if let Some((r, p)) = peers
        .iter()
        .enumerate()
        .find(|(_, p)| p.mode != mode.as_str())
    {
        return Err(Error::new(
            Class::Arg,
            format!(
                "HCOMM_TRANSPORT differs between ranks: rank {r} has {}, this rank has {}",
                p.mode,
                mode.as_str()
            ),
        ));
    }
    if mode == Mode::Shm {
        if let Some((r, p)) = peers.iter().enumerate().find(|(_, p)| p.host != host) {
            return Err(Error::new(
                Class::Other,
                format!(
                    "HCOMM_TRANSPORT=shm, but rank {r} runs on another host ({}; this host is {host}): unset HCOMM_TRANSPORT or set it to tcp",
                    p.host
                ),
            ));
        }
    }
    let use_shm: Vec<bool> = (0..size)
        .map(|r| r != me && mode != Mode::Tcp && peers[r].host == host)
        .collect();

    // Shared memory, for the peers on this host. The two barriers are collective: every rank
    // takes part, with or without a segment of its own.
    let geo = Geometry::from_params(size);
    let my_name = contract::shm_segment_name(&job, me);
    // A failure to create or map a segment is returned only after both barriers, so a failing
    // rank never leaves its peers waiting in one (the exchange may be the host MPI's, which has
    // no timeout).
    let created = use_shm
        .contains(&true)
        .then(|| Segment::create(&my_name, geo).map(Arc::new));
    let mine = created.as_ref().and_then(|c| c.as_ref().ok()).cloned();
    let res = (|| {
        b.barrier()?;
        let opened = (|| {
            let mut links: Vec<Option<Box<dyn Link>>> = (0..size).map(|_| None).collect();
            if let Some(mine) = &mine {
                let cma = crate::param::cma() != crate::param::CmaMode::Off;
                let mut refused = None;
                for r in (0..size).filter(|&r| use_shm[r]) {
                    let theirs =
                        Arc::new(Segment::open(&contract::shm_segment_name(&job, r), geo)?);
                    // Each receiver decides for itself and tells the sender through the
                    // channel before the next barrier: a sender never posts a single copy
                    // its receiver cannot take.
                    let read_pid = match cma.then(|| theirs.probe_cma()) {
                        // `auto`: invite single copies only where they measured faster.
                        Some(Ok(pid)) => (crate::param::cma() != crate::param::CmaMode::Auto
                            || crate::transport::copy_rate::single_copy_pays(geo.slot_bytes))
                        .then_some(pid),
                        Some(Err(why)) => {
                            refused.get_or_insert((r, why));
                            None
                        }
                        None => None,
                    };
                    links[r] = Some(Box::new(ShmLink::new(
                        mine.clone(),
                        theirs,
                        me,
                        r,
                        read_pid,
                        cma,
                    )));
                    crate::info!(
                        "peer {r}: transport shm (slots {} x {} bytes; single copy from it: {})",
                        geo.slots,
                        geo.slot_bytes,
                        if read_pid.is_some() { "yes" } else { "no" }
                    );
                }
                if let Some((r, why)) = refused {
                    crate::info!(
                        "single copy (CMA) unavailable from rank {r} (and maybe others): {why}; messages from those ranks are copied through shared memory (Yama ptrace_scope, seccomp or another user can forbid process_vm_readv; HCOMM_CMA=0 skips the probe)"
                    );
                }
            }
            Ok::<_, Error>(links)
        })();
        b.barrier()?;
        opened
    })();
    if mine.is_some() {
        // Everyone has mapped our segment (or the setup failed): the name can go.
        Segment::unlink(&my_name);
    }
    if let Some(Err(e)) = created {
        return Err(e.context("shared-memory setup"));
    }
    let mut links = res.map_err(|e| e.context("shared-memory setup"))?;
    let bell = match &mine {
        Some(seg) => crate::endpoint::BellHome::Shm(seg.clone()),
        None => crate::endpoint::BellHome::local(),
    };

    // TCP, for everyone else.
    let mut tcp_peers = Vec::new();
    for r in (0..size).filter(|&r| r != me && !use_shm[r]) {
        let addr = peers[r].tcp_addr.parse().map_err(|_| {
            Error::other(format!(
                "rank {r} published no TCP address ({:?}) but needs TCP with rank {me}",
                peers[r].tcp_addr
            ))
        })?;
        tcp_peers.push(tcp::Peer {
            rank: r,
            addr,
            sockets: sockets
                .min(peers[r].sockets)
                .clamp(1, tcp::MAX_SOCKETS_PER_PEER),
        });
    }
    if !tcp_peers.is_empty() {
        let Some((lst, my_addr, ifname)) = listener else {
            return Err(listen_err
                .unwrap_or_else(|| Error::intern("no TCP listener"))
                .context("TCP transport"));
        };
        let timeout = crate::param::bootstrap_timeout_secs().unwrap_or(60) as u64;
        let deadline = std::time::Instant::now() + Duration::from_secs(timeout);
        let conns = tcp::connect_mesh(me, &job, secret, &lst, &tcp_peers, deadline)
            .map_err(|e| e.context("TCP setup"))?;
        drop(lst); // every peer is connected: later connections are strangers
        let home = bell.clone();
        let ring: tcp::Ring = Arc::new(move || home.doorbell().ring());
        // The same fragment size as shared memory: every rank must chunk alike.
        for (r, link) in tcp::start(conns, ring, geo.slot_bytes)? {
            crate::info!(
                "peer {r}: transport tcp ({my_addr} on {ifname} -> {}, {} socket(s))",
                link.peer_addr(),
                link.sockets()
            );
            links[r] = Some(Box::new(link));
        }
    }
    // Ranks on this host compete for its cores; with TCP each also has a receiver thread.
    let local = peers.iter().filter(|p| p.host == host).count();
    let threads = if tcp_peers.is_empty() { 1 } else { 2 };
    let spin = crate::wait::spin_limit(local * threads);
    let local_index = peers[..me].iter().filter(|p| p.host == host).count();
    crate::wait::bind_rank(local_index, local, threads);
    let mut ep = Endpoint::new(me, links, bell, spin);
    let mut seen: Vec<&str> = Vec::new();
    ep.set_hosts(
        peers
            .iter()
            .map(|p| match seen.iter().position(|h| *h == p.host) {
                Some(i) => i,
                None => {
                    seen.push(&p.host);
                    seen.len() - 1
                }
            })
            .collect(),
    );
    // Liveness: peers on this host are watched through their pids (see crate::health).
    ep.set_peers(
        peers
            .iter()
            .enumerate()
            .map(|(r, p)| match r == me {
                true => crate::health::PeerMeta::unknown(),
                false => crate::health::PeerMeta::new(&p.host, &p.pid, p.host == host),
            })
            .collect(),
    );
    Ok(ep)
}

impl Runtime {
    pub fn is_main_thread(&self) -> bool {
        std::thread::current().id() == self.main_thread
    }

    /// Resolves a communicator handle.
    pub fn comm(&self, h: i32) -> Result<Arc<Comm>> {
        match h {
            handles::COMM_WORLD => Ok(self.world.clone()),
            handles::COMM_SELF => Ok(self.self_comm.clone()),
            handles::COMM_NULL => Err(Error::new(Class::Comm, "communicator is MPI_COMM_NULL")),
            _ if h & !handles::USER_COMM_MASK == handles::USER_COMM_BASE => self
                .user
                .read()
                .get((h & handles::USER_COMM_MASK) as usize)
                .and_then(|c| c.clone())
                .ok_or_else(|| {
                    Error::new(
                        Class::Comm,
                        format!("invalid communicator 0x{h:x} (freed or never created)"),
                    )
                }),
            _ => Err(Error::new(
                Class::Comm,
                format!("invalid communicator 0x{h:x}"),
            )),
        }
    }

    /// Registers a new communicator; returns its handle.
    pub fn add_comm(&self, c: Comm) -> Result<i32> {
        let mut t = self.user.write();
        let idx = match t.iter().position(|c| c.is_none()) {
            Some(i) => i,
            None => {
                t.push(None);
                t.len() - 1
            }
        };
        if idx > handles::USER_COMM_MASK as usize {
            return Err(Error::intern("too many communicators"));
        }
        t[idx] = Some(Arc::new(c));
        Ok(handles::USER_COMM_BASE | idx as i32)
    }

    /// Frees a user communicator handle.
    pub fn free_comm(&self, h: i32) -> Result<()> {
        if h == handles::COMM_WORLD || h == handles::COMM_SELF {
            return Err(Error::new(
                Class::Comm,
                "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed",
            ));
        }
        self.comm(h)?;
        self.user.write()[(h & handles::USER_COMM_MASK) as usize] = None;
        Ok(())
    }
}
