//! TCP transport: between ranks on different hosts, and for every peer with
//! `HCOMM_TRANSPORT=tcp`.
//!
//! **Connection setup.** Every rank that may use TCP listens on an ephemeral port of the
//! interface `HCOMM_SOCKET_IFNAME` chooses ([`crate::bootstrap::net`]) and publishes `ip:port`
//! through the bootstrap allgather. For each pair that uses TCP, the lower rank connects to the
//! higher one, `sockets` times (`HCOMM_SOCKETS_PER_PEER`, the smaller of the two ranks' values),
//! while an acceptor thread takes the connections of lower ranks. Each connection starts with the
//! authenticated handshake of [`crate::auth`] (HMAC challenge–response with the job secret, both
//! ways), whose context is a hello — magic, job id, source and destination rank, socket index —
//! that the acceptor checks before it answers. A stranger (another job, a port scanner, garbage,
//! a wrong secret, a truncated or oversized message, silence) is dropped and logged at INFO while
//! the listener keeps accepting the right peers (each handshake runs on its own thread with a
//! deadline), and the connecting side never mistakes a stranger for its peer. The listener binds
//! the chosen interface's address only (`HCOMM_LISTEN_ANY=1`: every interface) and is closed as
//! soon as every peer is connected, so a running job listens on no port.
//!
//! **Wire format.** Each frame is a 16-byte prefix (`seq: u64`, `magic: u32`, `len: u32`), the
//! 128-byte [`FrameHeader`], then `len` payload bytes. With several sockets per peer, whole
//! frames go to the sockets round-robin (`seq % sockets`), and the receiver restores the
//! per-link order from `seq` (frames that arrive early wait in a small map): one sender thread
//! with a blocking send still gets several TCP streams' congestion windows and buffers, and
//! every collective still sees the frames of a peer in the order they were sent. The largest
//! payload is the job's fragment size (the shared-memory slot size) because the algorithms
//! derive chunking from one link's fragment size and every rank must chunk alike.
//!
//! **Receiving.** One thread per process ([`start`]) polls every TCP socket, reads whole frames
//! into memory, appends them to the peer's queue and rings this rank's doorbell — the engine
//! keeps a single place to sleep. `try_recv` pops from that queue. Because every process drains
//! its sockets continuously, a blocking send (under the link's send lock) cannot deadlock: the
//! peer's socket buffer always empties. The thread runs inside `catch_unwind`; a panic, a socket
//! error, a protocol error, or the peer closing all its connections is recorded for that peer
//! and rings the doorbell, so the next `try_recv`/`try_send` on the link returns an error naming
//! the peer and its address instead of stalling. Frames that arrived before the error are
//! still delivered first (a peer that sent its last frames and exited is not an error until
//! someone waits for more).
//!
//! **Sending.** `sendmsg(MSG_NOSIGNAL)` with two iovecs (prefix+header, payload) — never
//! `write`/`writev`, which raise SIGPIPE on a dead peer. Sockets are non-blocking (the receiver
//! thread shares them); a full socket buffer is waited for with `poll`, re-checking the
//! link's recorded error so a dead peer ends the wait.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::Link;
use crate::auth::{self, Failure, Secret};
use crate::error::{Class, Error, Result};
use crate::frame::FrameHeader;

/// Most TCP connections per pair of ranks.
pub const MAX_SOCKETS_PER_PEER: usize = 8;

const HELLO_MAGIC: u32 = 0x6863_7468; // "hcth"
const ACK_MAGIC: u32 = 0x6863_7461; // "hcta"
const FRAME_MAGIC: u32 = 0x6863_7466; // "hctf"
const PREFIX: usize = 16;
const HDR: usize = std::mem::size_of::<FrameHeader>();
const HEAD: usize = PREFIX + HDR;
/// Bytes the receiver thread reads from one socket before it looks at the others.
const READ_BUDGET: usize = 4 << 20;
/// Staging buffer per socket: small frames are parsed out of it, several per `recv`.
const STAGE: usize = 64 << 10;

#[doc(hidden)]
pub mod fuzz;

/// Called by the receiver thread when frames (or an error) arrived: rings the doorbell.
pub type Ring = Arc<dyn Fn() + Send + Sync>;

/// `HCOMM_TRANSPORT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Shared memory on one host, TCP between hosts.
    Auto,
    /// TCP for every peer.
    Tcp,
    /// Shared memory only: a peer on another host is an error.
    Shm,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(Mode::Auto),
            "tcp" => Ok(Mode::Tcp),
            "shm" => Ok(Mode::Shm),
            _ => Err(Error::new(
                Class::Arg,
                format!("HCOMM_TRANSPORT={s:?}: expected auto, tcp or shm"),
            )),
        }
    }

    /// From the environment.
    pub fn from_env() -> Result<Mode> {
        Mode::parse(&crate::param::transport().unwrap_or_default())
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Tcp => "tcp",
            Mode::Shm => "shm",
        }
    }
}

/// `HCOMM_SOCKETS_PER_PEER`, clamped to 1..=8.
pub fn sockets_per_peer() -> usize {
    crate::param::sockets_per_peer()
        .unwrap_or(1)
        .clamp(1, MAX_SOCKETS_PER_PEER)
}

/// Listens on an ephemeral port of `ip` (of every interface with `HCOMM_LISTEN_ANY=1`);
/// returns the listener and the address peers should dial (`ip` and the port).
pub fn listen(ip: IpAddr) -> Result<(TcpListener, SocketAddr)> {
    let l = TcpListener::bind((crate::bootstrap::net::bind_ip(ip), 0))
        .map_err(|e| Error::other(format!("cannot listen for TCP peers on {ip}: {e}")))?;
    let a = SocketAddr::new(ip, l.local_addr()?.port());
    Ok((l, a))
}

/// A peer reached over TCP.
#[derive(Clone, Debug)]
pub struct Peer {
    pub rank: usize,
    pub addr: SocketAddr,
    /// Connections to open to this peer.
    pub sockets: usize,
}

fn hello(job: &str, src: usize, dst: usize, index: usize, n: usize) -> Vec<u8> {
    let mut m = Vec::with_capacity(24 + job.len());
    m.extend_from_slice(&HELLO_MAGIC.to_le_bytes());
    m.extend_from_slice(&(job.len() as u32).to_le_bytes());
    m.extend_from_slice(job.as_bytes());
    for v in [src, dst, index, n] {
        m.extend_from_slice(&(v as u32).to_le_bytes());
    }
    m
}

/// `(job, src, dst, index, n)` from a hello.
fn parse_hello(m: &[u8]) -> Option<(String, usize, usize, usize, usize)> {
    let u32_at = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(m.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    if u32_at(0)? != HELLO_MAGIC as usize {
        return None;
    }
    let jl = u32_at(4)?;
    let job = String::from_utf8(m.get(8..8 + jl)?.to_vec()).ok()?;
    let at = 8 + jl;
    if m.len() != at + 16 {
        return None;
    }
    Some((
        job,
        u32_at(at)?,
        u32_at(at + 4)?,
        u32_at(at + 8)?,
        u32_at(at + 12)?,
    ))
}

/// Connects this rank to every peer in `peers`: connects to the higher ranks, accepts the
/// lower ones on `listener`. Returns each peer's sockets, in socket-index order.
pub fn connect_mesh(
    me: usize,
    job: &str,
    secret: &Secret,
    listener: &TcpListener,
    peers: &[Peer],
    deadline: Instant,
) -> Result<Vec<(Peer, Vec<TcpStream>)>> {
    let lower: Vec<&Peer> = peers.iter().filter(|p| p.rank < me).collect();
    let higher: Vec<&Peer> = peers.iter().filter(|p| p.rank > me).collect();
    let stop = AtomicBool::new(false);
    let (inbound, outbound) = std::thread::scope(|scope| {
        let acceptor =
            scope.spawn(|| accept_lower(me, job, secret, listener, &lower, deadline, &stop));
        let out = connect_higher(me, job, secret, &higher, deadline);
        if out.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        let inb = acceptor
            .join()
            .unwrap_or_else(|_| Err(Error::intern("TCP accept thread panicked")));
        (inb, out)
    });
    let mut all = outbound?;
    all.extend(inbound?);
    for (_, socks) in &all {
        for s in socks {
            s.set_read_timeout(None)?;
            s.set_write_timeout(None)?;
            s.set_nodelay(true)?;
            s.set_nonblocking(true)?;
        }
    }
    all.sort_by_key(|(p, _)| p.rank);
    Ok(all)
}

fn connect_higher(
    me: usize,
    job: &str,
    secret: &Secret,
    peers: &[&Peer],
    deadline: Instant,
) -> Result<Vec<(Peer, Vec<TcpStream>)>> {
    let mut out = Vec::new();
    for p in peers {
        let mut socks = Vec::with_capacity(p.sockets);
        for index in 0..p.sockets {
            let mut s = loop {
                match TcpStream::connect_timeout(&p.addr, Duration::from_secs(1)) {
                    Ok(s) => break s,
                    Err(e) if Instant::now() > deadline => {
                        return Err(Error::other(format!(
                            "cannot connect to rank {} at {}: {e}",
                            p.rank, p.addr
                        )))
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            };
            let wait = deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_secs(1));
            let ctx = hello(job, me, p.rank, index, p.sockets);
            let ack = auth::connect(&mut s, secret, &ctx, Instant::now() + wait).map_err(|e| {
                Error::other(match e {
                    Failure::WrongSecret => format!(
                        "rank {} at {} proved a different job secret in the TCP handshake: the ranks' secrets differ (this rank's is from {})",
                        p.rank,
                        p.addr,
                        secret.source()
                    ),
                    Failure::Refused(_) => format!(
                        "rank {} at {} did not accept the TCP connection: is it the same job?",
                        p.rank, p.addr
                    ),
                    e => format!("TCP handshake with rank {} at {}: {e}", p.rank, p.addr),
                })
            })?;
            let mut want = ACK_MAGIC.to_le_bytes().to_vec();
            want.extend_from_slice(&(p.rank as u32).to_le_bytes());
            if ack != want {
                return Err(Error::other(format!(
                    "{} answered the TCP handshake, but not as rank {} of this job",
                    p.addr, p.rank
                )));
            }
            socks.push(s);
        }
        out.push(((*p).clone(), socks));
    }
    Ok(out)
}

fn accept_lower(
    me: usize,
    job: &str,
    secret: &Secret,
    listener: &TcpListener,
    peers: &[&Peer],
    deadline: Instant,
    stop: &AtomicBool,
) -> Result<Vec<(Peer, Vec<TcpStream>)>> {
    let mut slots: Vec<Vec<Option<TcpStream>>> = peers
        .iter()
        .map(|p| (0..p.sockets).map(|_| None).collect())
        .collect();
    let mut missing: usize = peers.iter().map(|p| p.sockets).sum();
    // (rank, sockets) of each lower peer, for the handshakes' threads.
    let expect: Arc<Vec<(usize, usize)>> =
        Arc::new(peers.iter().map(|p| (p.rank, p.sockets)).collect());
    let acceptor = auth::Acceptor::<(usize, usize)>::new(secret);
    let what = format!("TCP transport of rank {me}");
    listener.set_nonblocking(true)?;
    while missing > 0 {
        if stop.load(Ordering::Relaxed) {
            return Ok(Vec::new()); // the connecting side failed and reports why
        }
        let mut busy = false;
        match listener.accept() {
            Ok((s, from)) => {
                busy = true;
                let (job, expect) = (job.to_string(), expect.clone());
                acceptor.start(s, from, &what, move |ctx| {
                    let (pj, src, dst, index, n) =
                        parse_hello(ctx).ok_or_else(|| "malformed hello".to_string())?;
                    let i = expect.iter().position(|&(r, _)| r == src);
                    match i {
                        Some(i) if pj == job && dst == me && n == expect[i].1 && index < n => {
                            let mut ack = ACK_MAGIC.to_le_bytes().to_vec();
                            ack.extend_from_slice(&(me as u32).to_le_bytes());
                            Ok((ack, (i, index)))
                        }
                        _ => Err(format!(
                            "hello from rank {src} of job {pj:?} for rank {dst} (socket {index} of {n}); expected job {job:?}, destination rank {me}"
                        )),
                    }
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(Error::other(format!("TCP accept: {e}"))),
        }
        while let Some((s, from, res)) = acceptor.poll() {
            busy = true;
            match res {
                Ok((_, (i, index))) if slots[i][index].is_none() => {
                    slots[i][index] = Some(s);
                    missing -= 1;
                }
                Ok((_, (i, index))) => crate::info!(
                    "{what}: dropped a second connection for rank {} socket {index} from {from}",
                    peers[i].rank
                ),
                Err(e) => crate::info!("{what}: dropped a connection from {from}: {e}"),
            }
        }
        if busy {
            continue;
        }
        if Instant::now() > deadline {
            let absent: Vec<String> = peers
                .iter()
                .zip(&slots)
                .filter(|(_, s)| s.iter().any(Option::is_none))
                .map(|(p, _)| p.rank.to_string())
                .collect();
            return Err(Error::other(format!(
                "timed out waiting for TCP connections from ranks {} (HCOMM_BOOTSTRAP_TIMEOUT)",
                absent.join(",")
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(peers
        .iter()
        .zip(slots)
        .map(|(p, s)| ((*p).clone(), s.into_iter().flatten().collect()))
        .collect())
}

struct Frame {
    hdr: FrameHeader,
    data: Vec<u8>,
}

/// Receive side of one peer, filled by the receiver thread.
#[derive(Default)]
struct RxQueue {
    ready: VecDeque<Frame>,
    /// Frames that overtook an earlier one on another socket, by sequence number.
    early: BTreeMap<u64, Frame>,
    next: u64,
    /// Sockets that reached end-of-file.
    closed: usize,
    /// The first failure on this link; returned by every later call once `ready` is empty.
    error: Option<String>,
}

/// What the link and the receiver thread share about one peer.
struct PeerShared {
    rank: usize,
    addr: SocketAddr,
    sockets: usize,
    rx: Mutex<RxQueue>,
}

impl PeerShared {
    fn fail(&self, msg: String) {
        let mut q = self.rx.lock();
        if q.error.is_none() {
            crate::trace!("TCP link to rank {}: {msg}", self.rank);
            q.error = Some(msg);
        }
    }

    fn error(&self) -> Option<Error> {
        self.rx.lock().error.clone().map(Error::other)
    }

    fn deliver(&self, seq: u64, f: Frame) -> std::result::Result<(), String> {
        let mut q = self.rx.lock();
        if seq == q.next {
            q.ready.push_back(f);
            q.next += 1;
            while let Some(f) = {
                let n = q.next;
                q.early.remove(&n)
            } {
                q.ready.push_back(f);
                q.next += 1;
            }
            Ok(())
        } else if seq > q.next && q.early.insert(seq, f).is_none() {
            Ok(())
        } else {
            Err(format!("duplicate frame sequence number {seq}"))
        }
    }
}

/// Link to a peer over TCP.
pub struct TcpLink {
    shared: Arc<PeerShared>,
    socks: Vec<Arc<TcpStream>>,
    /// Sequence number of the next frame; the lock also keeps a frame's bytes together.
    tx: Mutex<u64>,
    max_payload: usize,
}

impl TcpLink {
    pub fn peer_addr(&self) -> SocketAddr {
        self.shared.addr
    }

    pub fn sockets(&self) -> usize {
        self.socks.len()
    }
}

/// Starts the receiver thread for every connected peer; returns one link per peer
/// (`(rank, link)`). `ring` wakes this rank's waiters.
pub fn start(
    conns: Vec<(Peer, Vec<TcpStream>)>,
    ring: Ring,
    max_payload: usize,
) -> Result<Vec<(usize, TcpLink)>> {
    let mut links = Vec::new();
    let mut readers = Vec::new();
    for (p, socks) in conns {
        let shared = Arc::new(PeerShared {
            rank: p.rank,
            addr: p.addr,
            sockets: socks.len(),
            rx: Mutex::new(RxQueue::default()),
        });
        let socks: Vec<Arc<TcpStream>> = socks.into_iter().map(Arc::new).collect();
        for s in &socks {
            readers.push(Reader::new(s.clone(), shared.clone(), max_payload));
        }
        links.push((
            p.rank,
            TcpLink {
                shared,
                socks,
                tx: Mutex::new(0),
                max_payload,
            },
        ));
    }
    if !readers.is_empty() {
        std::thread::Builder::new()
            .name("hcomm-tcp-rx".into())
            .spawn(move || receiver_thread(readers, ring))
            .map_err(|e| Error::other(format!("cannot start the TCP receiver thread: {e}")))?;
    }
    Ok(links)
}

/// The payload of the frame being read from one socket.
struct Partial {
    seq: u64,
    hdr: FrameHeader,
    data: Vec<u8>,
    filled: usize,
}

/// Read state of one socket.
struct Reader {
    sock: Arc<TcpStream>,
    peer: Arc<PeerShared>,
    stage: Box<[u8]>,
    lo: usize,
    hi: usize,
    cur: Option<Partial>,
    open: bool,
    max_payload: usize,
}

enum Pumped {
    /// Still open; whether a frame was delivered.
    Open(bool),
    /// Clean end of file between frames (frames read before it were delivered).
    Eof,
}

impl Reader {
    fn new(sock: Arc<TcpStream>, peer: Arc<PeerShared>, max_payload: usize) -> Reader {
        Reader {
            sock,
            peer,
            stage: vec![0u8; STAGE].into_boxed_slice(),
            lo: 0,
            hi: 0,
            cur: None,
            open: true,
            max_payload,
        }
    }

    /// Reads what the socket has (up to a budget) and delivers complete frames.
    fn pump(&mut self) -> std::result::Result<Pumped, String> {
        let mut delivered = false;
        let mut budget = READ_BUDGET;
        loop {
            if let Some(p) = &mut self.cur {
                // Payload: first what is staged, then straight from the socket into place.
                let take = (self.hi - self.lo).min(p.data.len() - p.filled);
                p.data[p.filled..p.filled + take]
                    .copy_from_slice(&self.stage[self.lo..self.lo + take]);
                p.filled += take;
                self.lo += take;
                if p.filled == p.data.len() {
                    let p = self.cur.take().expect("checked above");
                    self.peer.deliver(
                        p.seq,
                        Frame {
                            hdr: p.hdr,
                            data: p.data,
                        },
                    )?;
                    delivered = true;
                    continue;
                }
                if budget == 0 {
                    return Ok(Pumped::Open(delivered));
                }
                match (&*self.sock).read(&mut p.data[p.filled..]) {
                    Ok(0) => return Err("connection closed in the middle of a frame".into()),
                    Ok(n) => {
                        p.filled += n;
                        budget = budget.saturating_sub(n);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        return Ok(Pumped::Open(delivered))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e.to_string()),
                }
                continue;
            }
            if self.hi - self.lo >= HEAD {
                self.start_frame()?;
                continue;
            }
            if budget == 0 {
                return Ok(Pumped::Open(delivered));
            }
            if self.lo > 0 {
                self.stage.copy_within(self.lo..self.hi, 0);
                self.hi -= self.lo;
                self.lo = 0;
            }
            match (&*self.sock).read(&mut self.stage[self.hi..]) {
                Ok(0) if self.hi == 0 => return Ok(Pumped::Eof),
                Ok(0) => return Err("connection closed in the middle of a frame header".into()),
                Ok(n) => {
                    self.hi += n;
                    budget = budget.saturating_sub(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    return Ok(Pumped::Open(delivered))
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Parses the prefix and header at `lo` and begins the frame's payload.
    fn start_frame(&mut self) -> std::result::Result<(), String> {
        let b = &self.stage[self.lo..self.lo + HEAD];
        let seq = u64::from_le_bytes(b[0..8].try_into().expect("8 bytes"));
        let magic = u32::from_le_bytes(b[8..12].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(b[12..16].try_into().expect("4 bytes")) as usize;
        if magic != FRAME_MAGIC || len > self.max_payload {
            return Err(format!(
                "corrupt TCP frame (magic 0x{magic:08x}, {len} payload bytes)"
            ));
        }
        // SAFETY: `b[PREFIX..]` holds HDR bytes; FrameHeader is plain old data (integers and
        // byte arrays, no padding, any bit pattern valid) and read_unaligned needs no alignment.
        let hdr = unsafe { std::ptr::read_unaligned(b[PREFIX..].as_ptr() as *const FrameHeader) };
        self.lo += HEAD;
        self.cur = Some(Partial {
            seq,
            hdr,
            data: vec![0u8; len],
            filled: 0,
        });
        Ok(())
    }
}

fn receiver_thread(mut readers: Vec<Reader>, ring: Ring) {
    let res = std::panic::catch_unwind(AssertUnwindSafe(|| receive_loop(&mut readers, &ring)));
    if let Err(panic) = res {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        for r in &readers {
            r.peer
                .fail(format!("the TCP receiver thread panicked: {what}"));
        }
        ring();
    }
}

fn receive_loop(readers: &mut [Reader], ring: &Ring) {
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(readers.len());
    let mut which: Vec<usize> = Vec::with_capacity(readers.len());
    loop {
        fds.clear();
        which.clear();
        for (i, r) in readers.iter().enumerate().filter(|(_, r)| r.open) {
            fds.push(libc::pollfd {
                fd: r.sock.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
            which.push(i);
        }
        if fds.is_empty() {
            return; // every peer closed: nothing left to read
        }
        // SAFETY: fds is a valid array of fds.len() pollfd structs for the call's duration.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1000) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            panic!("poll on TCP sockets failed: {e}");
        }
        let mut wake = false;
        for (k, fd) in fds.iter().enumerate() {
            if fd.revents == 0 {
                continue;
            }
            let r = &mut readers[which[k]];
            match r.pump() {
                Ok(Pumped::Open(d)) => wake |= d,
                Ok(Pumped::Eof) => {
                    wake = true;
                    r.open = false;
                    let mut q = r.peer.rx.lock();
                    q.closed += 1;
                    if q.closed == r.peer.sockets && q.error.is_none() {
                        q.error = Some(format!(
                            "rank {} ({}) closed its TCP connection: did it exit or fail?",
                            r.peer.rank, r.peer.addr
                        ));
                    }
                }
                Err(e) => {
                    wake = true;
                    r.open = false;
                    r.peer.fail(format!(
                        "TCP receive from rank {} ({}) failed: {e}",
                        r.peer.rank, r.peer.addr
                    ));
                }
            }
        }
        if wake {
            ring();
        }
    }
}

/// Writes `head` then `payload` completely with `sendmsg(MSG_NOSIGNAL)`, waiting with `poll`
/// while the socket buffer is full. Gives up when `failed` reports an error on the link.
fn send_all(
    sock: &TcpStream,
    head: &[u8],
    payload: &[u8],
    failed: &dyn Fn() -> Option<Error>,
) -> std::io::Result<()> {
    let total = head.len() + payload.len();
    let mut sent = 0usize;
    while sent < total {
        let (a, b): (&[u8], &[u8]) = if sent < head.len() {
            (&head[sent..], payload)
        } else {
            (&payload[sent - head.len()..], &[])
        };
        let mut iov = [
            libc::iovec {
                iov_base: a.as_ptr() as *mut libc::c_void,
                iov_len: a.len(),
            },
            libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            },
        ];
        // SAFETY: an all-zero msghdr is valid (no name, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = if b.is_empty() { 1 } else { 2 };
        // SAFETY: msg points to iovecs describing live, readable slices; sendmsg only reads
        // them. MSG_NOSIGNAL: a closed peer gives EPIPE instead of SIGPIPE.
        let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n >= 0 {
            sent += n as usize;
            continue;
        }
        let e = std::io::Error::last_os_error();
        match e.kind() {
            std::io::ErrorKind::Interrupted => {}
            std::io::ErrorKind::WouldBlock => {
                if let Some(err) = failed() {
                    return Err(std::io::Error::other(err.msg));
                }
                let mut p = libc::pollfd {
                    fd: sock.as_raw_fd(),
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one valid pollfd for the duration of the call.
                unsafe { libc::poll(&mut p, 1, 100) };
            }
            _ => return Err(e),
        }
    }
    Ok(())
}

impl Link for TcpLink {
    fn max_payload(&self) -> usize {
        self.max_payload
    }

    fn try_send(&self, hdr: &FrameHeader, payload: &[u8]) -> Result<bool> {
        if let Some(e) = self.shared.error() {
            return Err(e);
        }
        if payload.len() > self.max_payload {
            return Err(Error::intern(format!(
                "fragment of {} bytes exceeds the TCP fragment limit of {} bytes",
                payload.len(),
                self.max_payload
            )));
        }
        let mut seq = self.tx.lock();
        let mut head = [0u8; HEAD];
        head[0..8].copy_from_slice(&seq.to_le_bytes());
        head[8..12].copy_from_slice(&FRAME_MAGIC.to_le_bytes());
        head[12..16].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        let mut h = *hdr;
        h.len = payload.len() as u32;
        // SAFETY: FrameHeader is plain old data of exactly HDR bytes with no padding (its
        // fields tile the 128 bytes, see frame.rs), so viewing it as bytes reads no
        // uninitialized memory.
        let hb = unsafe { std::slice::from_raw_parts(&h as *const FrameHeader as *const u8, HDR) };
        head[PREFIX..].copy_from_slice(hb);
        let sock = &self.socks[(*seq % self.socks.len() as u64) as usize];
        let failed = || self.shared.error();
        if let Err(e) = send_all(sock, &head, payload, &failed) {
            let msg = format!(
                "TCP send to rank {} ({}) failed: {e}",
                self.shared.rank, self.shared.addr
            );
            // Part of a frame may be on the wire: the stream is unusable from here on.
            self.shared.fail(msg.clone());
            return Err(Error::other(msg));
        }
        *seq += 1;
        Ok(true)
    }

    fn try_recv(&self, visit: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<()>) -> Result<bool> {
        let f = {
            let mut q = self.shared.rx.lock();
            match q.ready.pop_front() {
                Some(f) => f,
                None => {
                    return match &q.error {
                        Some(e) => Err(Error::other(e.clone())),
                        None => Ok(false),
                    }
                }
            }
        };
        visit(&f.hdr, &f.data).map(|_| true)
    }

    fn name(&self) -> &'static str {
        "tcp"
    }

    fn sent_counter(&self) -> &'static std::sync::atomic::AtomicU64 {
        &super::BYTES_TCP
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Kind, Signature};
    use std::io::Write;
    use std::sync::atomic::AtomicUsize;

    fn test_secret() -> Secret {
        Secret::from_text(b"transport-test-secret", "test").unwrap()
    }

    fn hdr(tag: u32) -> FrameHeader {
        let sig = Signature {
            kind: Kind::Bcast,
            count: 1,
            dtype: 1,
            op: 0,
            root: 0,
        };
        FrameHeader::new(&sig, 0, 1, tag, 0)
    }

    /// Two "ranks" in one process, connected over loopback with `sockets` connections.
    fn pair(sockets: usize) -> (TcpLink, TcpLink, Arc<AtomicUsize>) {
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let (l0, a0) = listen(ip).unwrap();
        let (l1, a1) = listen(ip).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let p0 = Peer {
            rank: 0,
            addr: a0,
            sockets,
        };
        let p1 = Peer {
            rank: 1,
            addr: a1,
            sockets,
        };
        let t = std::thread::spawn(move || {
            connect_mesh(1, "j", &test_secret(), &l1, &[p0], deadline).unwrap()
        });
        let c0 = connect_mesh(0, "j", &test_secret(), &l0, &[p1], deadline).unwrap();
        let c1 = t.join().unwrap();
        let rings = Arc::new(AtomicUsize::new(0));
        let r = rings.clone();
        let ring: Ring = Arc::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        let mut l0 = start(c0, ring.clone(), 1 << 20).unwrap();
        let mut l1 = start(c1, ring, 1 << 20).unwrap();
        (l0.remove(0).1, l1.remove(0).1, rings)
    }

    fn recv_one(l: &TcpLink) -> Result<(FrameHeader, Vec<u8>)> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut got = None;
            if l.try_recv(&mut |h, p| {
                got = Some((*h, p.to_vec()));
                Ok(())
            })? {
                return Ok(got.unwrap());
            }
            assert!(Instant::now() < deadline, "no frame within 10 s");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn modes() {
        assert_eq!(Mode::parse("").unwrap(), Mode::Auto);
        assert_eq!(Mode::parse("TCP").unwrap(), Mode::Tcp);
        assert_eq!(Mode::parse("shm").unwrap(), Mode::Shm);
        let e = Mode::parse("rdma").unwrap_err();
        assert_eq!(e.class, Class::Arg);
        assert!(e.msg.contains("HCOMM_TRANSPORT"), "{}", e.msg);
    }

    #[test]
    fn hello_round_trip() {
        let m = hello("job1", 3, 5, 2, 4);
        assert_eq!(parse_hello(&m), Some(("job1".into(), 3, 5, 2, 4)));
        assert_eq!(parse_hello(&m[..m.len() - 1]), None);
        let mut bad = m.clone();
        bad[0] ^= 1;
        assert_eq!(parse_hello(&bad), None);
    }

    #[test]
    fn frames_keep_order_over_several_sockets() {
        for sockets in [1, 3] {
            let (a, b, rings) = pair(sockets);
            assert_eq!(a.sockets(), sockets);
            // Sizes from empty to a full fragment, in both directions at once.
            let sizes: Vec<usize> = (0..200).map(|i| (i * 7919) % (1 << 20)).collect();
            let s2 = sizes.clone();
            let t = std::thread::spawn(move || {
                for (i, &n) in s2.iter().enumerate() {
                    let data: Vec<u8> = (0..n).map(|k| (k + i) as u8).collect();
                    assert!(b.try_send(&hdr(i as u32), &data).unwrap());
                }
                for (i, &n) in s2.iter().enumerate() {
                    let (h, p) = recv_one(&b).unwrap();
                    assert_eq!(h.tag, i as u32);
                    assert_eq!(p.len(), n);
                }
                b
            });
            for (i, &n) in sizes.iter().enumerate() {
                let data: Vec<u8> = (0..n).map(|k| (k + i) as u8).collect();
                assert!(a.try_send(&hdr(i as u32), &data).unwrap());
            }
            for (i, &n) in sizes.iter().enumerate() {
                let (h, p) = recv_one(&a).unwrap();
                assert_eq!((h.tag, h.len as usize), (i as u32, n));
                assert!(p.iter().enumerate().all(|(k, &v)| v == (k + i) as u8));
            }
            let _b = t.join().unwrap();
            assert!(rings.load(Ordering::SeqCst) > 0, "the doorbell was rung");
        }
    }

    #[test]
    fn closed_peer_is_an_error_not_a_hang() {
        let (a, b, _) = pair(2);
        assert!(b.try_send(&hdr(7), b"last words").unwrap());
        // The peer goes away (as its exit would close its sockets).
        for s in &b.socks {
            s.shutdown(std::net::Shutdown::Both).unwrap();
        }
        // What it sent before is still delivered, then the link reports the loss.
        let (h, p) = recv_one(&a).unwrap();
        assert_eq!((h.tag, p.as_slice()), (7, &b"last words"[..]));
        let deadline = Instant::now() + Duration::from_secs(10);
        let err = loop {
            match a.try_recv(&mut |_, _| Ok(())) {
                Err(e) => break e,
                Ok(got) => assert!(!got),
            }
            assert!(Instant::now() < deadline, "no error within 10 s");
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(err.msg.contains("rank 1"), "{}", err.msg);
        let e = a.try_send(&hdr(8), &[0u8; 1000]).unwrap_err();
        assert!(e.msg.contains("rank 1"), "{}", e.msg);
    }

    #[test]
    fn strangers_garbage_and_wrong_secrets_are_dropped() {
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let (l1, a1) = listen(ip).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let p0 = Peer {
            rank: 0,
            addr: "127.0.0.1:1".parse().unwrap(),
            sockets: 1,
        };
        let t = std::thread::spawn(move || {
            connect_mesh(1, "right", &test_secret(), &l1, &[p0], deadline)
        });
        let soon = || Instant::now() + Duration::from_secs(5);
        // A silent connection and a slow one do not hold up the others ...
        let _silent = TcpStream::connect(a1).unwrap();
        let mut slow = TcpStream::connect(a1).unwrap();
        slow.write_all(&[8, 0]).unwrap();
        // ... garbage, an absurd length and a truncated message are dropped ...
        for junk in [&[0x41u8; 1000][..], &[0xff; 4], &[40, 0, 0, 0, b'h', b'c']] {
            let mut s = TcpStream::connect(a1).unwrap();
            let _ = s.write_all(junk);
        }
        // ... a stranger with the wrong job is refused, one with a wrong secret fails ...
        let mut s = TcpStream::connect(a1).unwrap();
        let r = auth::connect(&mut s, &test_secret(), &hello("wrong", 0, 1, 0, 1), soon());
        assert!(matches!(r, Err(Failure::Refused(_))), "{r:?}");
        let other = Secret::from_text(b"another-jobs-secret!", "t").unwrap();
        let mut s = TcpStream::connect(a1).unwrap();
        let r = auth::connect(&mut s, &other, &hello("right", 0, 1, 0, 1), soon());
        assert!(matches!(r, Err(Failure::WrongSecret)), "{r:?}");
        // ... and the real rank 0 is accepted afterwards.
        let mut s = TcpStream::connect(a1).unwrap();
        let ack =
            auth::connect(&mut s, &test_secret(), &hello("right", 0, 1, 0, 1), soon()).unwrap();
        assert_eq!(&ack[..4], &ACK_MAGIC.to_le_bytes());
        let conns = t.join().unwrap().unwrap();
        assert_eq!(conns.len(), 1);
        assert_eq!(conns[0].0.rank, 0);
    }
}
