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
use crate::bootstrap::{contract, host_identity, Bootstrap, Launch};
use crate::comm::{Comm, SELF_ID};
use crate::endpoint::Endpoint;
use crate::error::{Class, Error, Result};
use crate::transport::shm::{Geometry, Segment, ShmLink};
use crate::transport::Link;

const NOT_INITIALIZED: u8 = 0;
const INITIALIZING: u8 = 1;
const INITIALIZED: u8 = 2;
const FINALIZED: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(NOT_INITIALIZED);
static RT: OnceLock<Runtime> = OnceLock::new();

pub struct Runtime {
    pub world: Arc<Comm>,
    pub self_comm: Arc<Comm>,
    user: RwLock<Vec<Option<Arc<Comm>>>>,
    pub thread_level: i32,
    main_thread: ThreadId,
    pub host: String,
    /// Kept for the life of the job: closing it early would look like a dead peer later.
    _bootstrap: Mutex<Option<Bootstrap>>,
}

pub fn is_initialized() -> bool {
    STATE.load(Ordering::Acquire) >= INITIALIZED
}

pub fn is_finalized() -> bool {
    STATE.load(Ordering::Acquire) == FINALIZED
}

/// The runtime, if `MPI_Init` has completed and `MPI_Finalize` has not.
pub fn get() -> Result<&'static Runtime> {
    match STATE.load(Ordering::Acquire) {
        INITIALIZED => Ok(RT.get().expect("initialized")),
        FINALIZED => Err(Error::other("called after MPI_Finalize")),
        _ => Err(Error::other("called before MPI_Init")),
    }
}

/// `MPI_Init_thread`: sets up the world once. Returns the provided thread level.
pub fn init(required: i32) -> Result<i32> {
    if STATE
        .compare_exchange(
            NOT_INITIALIZED,
            INITIALIZING,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        return Err(Error::other(if is_finalized() {
            "MPI cannot be initialized again after MPI_Finalize"
        } else {
            "MPI is already initialized"
        }));
    }
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

/// `MPI_Finalize`: a barrier on the world, so no rank tears down while a peer still reads
/// from it, then the state flips. Memory stays mapped until the process exits.
pub fn finalize() -> Result<()> {
    let rt = get()?;
    crate::coll::barrier(&rt.world).map_err(|e| e.context("barrier in MPI_Finalize"))?;
    STATE.store(FINALIZED, Ordering::Release);
    Ok(())
}

fn build(required: i32) -> Result<Runtime> {
    let host = host_identity();
    let thread_level = required.clamp(handles::THREAD_SINGLE, handles::THREAD_MULTIPLE);
    let fatal = handles::ERRORS_ARE_FATAL;
    let (ep, bootstrap) = match Launch::from_env()? {
        None => (Arc::new(Endpoint::singleton()), None),
        Some(l) if l.size == 1 => {
            crate::log::set_rank(0);
            (Arc::new(Endpoint::singleton()), None)
        }
        Some(l) => {
            crate::log::set_rank(l.rank);
            let timeout =
                Duration::from_secs(crate::param::bootstrap_timeout_secs().unwrap_or(60) as u64);
            let mut b = Bootstrap::connect(&l, timeout).map_err(|e| e.context("bootstrap"))?;
            let ep = connect_world(&l, &mut b, &host)?;
            (Arc::new(ep), Some(b))
        }
    };
    let rank = ep.rank;
    let size = ep.size;
    let world = Arc::new(Comm::new(0, rank, (0..size).collect(), ep.clone(), fatal));
    let self_comm = Arc::new(Comm::new(SELF_ID, 0, vec![rank], ep, fatal));
    crate::info!("initialized: rank {rank} of {size} on {host}");
    Ok(Runtime {
        world,
        self_comm,
        user: RwLock::new(Vec::new()),
        thread_level,
        main_thread: std::thread::current().id(),
        host,
        _bootstrap: Mutex::new(bootstrap),
    })
}

/// Exchanges addresses and connects to every peer. Peers on this host (same host identity)
/// get shared memory; there is no transport to other hosts yet.
fn connect_world(l: &Launch, b: &mut Bootstrap, host: &str) -> Result<Endpoint> {
    let job = l.job_id.clone().unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        format!("{:x}{:08x}", std::process::id(), nanos)
    });
    let blob = format!("{host}\n{}\n{job}", std::process::id());
    let all = b
        .allgather(blob.as_bytes())
        .map_err(|e| e.context("address exchange"))?;
    let peers: Vec<(String, String)> = all
        .iter()
        .map(|raw| {
            let s = String::from_utf8_lossy(raw);
            let mut it = s.splitn(3, '\n');
            let h = it.next().unwrap_or("").to_string();
            let _pid = it.next();
            (h, it.next().unwrap_or("").to_string())
        })
        .collect();
    // Rank 0's job id names the segments, so ranks started without a launcher agree too.
    let job = peers[0].1.clone();
    for (r, (h, _)) in peers.iter().enumerate() {
        if h != host {
            return Err(Error::new(
                Class::Other,
                format!(
                    "rank {r} runs on another host ({h}); this build of hcomm connects only ranks on one host (the TCP transport is not implemented yet)"
                ),
            ));
        }
    }
    let geo = Geometry::from_params(l.size);
    let my_name = contract::shm_segment_name(&job, l.rank);
    let mine = Arc::new(Segment::create(&my_name, geo)?);
    let res = (|| {
        b.barrier()?;
        let mut links: Vec<Option<Box<dyn Link>>> = Vec::with_capacity(l.size);
        for r in 0..l.size {
            if r == l.rank {
                links.push(None);
                continue;
            }
            let theirs = Arc::new(Segment::open(&contract::shm_segment_name(&job, r), geo)?);
            links.push(Some(Box::new(ShmLink::new(
                mine.clone(),
                theirs,
                l.rank,
                r,
            ))));
            crate::info!(
                "peer {r}: transport shm (slots {} x {} bytes)",
                geo.slots,
                geo.slot_bytes
            );
        }
        b.barrier()?;
        Ok::<_, Error>(links)
    })();
    // Everyone has mapped our segment (or the setup failed): the name can go.
    Segment::unlink(&my_name);
    let links = res.map_err(|e| e.context("shared-memory setup"))?;
    let spin = crate::wait::spin_limit(l.size);
    Ok(Endpoint::new(l.rank, links, mine, spin))
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
