//! The job secret and the challenge–response handshake that authenticates every TCP
//! connection (bootstrap star and TCP transport).
//!
//! **Secret.** One per job, at least 16 bytes. `hcomm run` makes 32 random bytes (hex text) and
//! hands them to its ranks in an inherited memfd (`HCOMM_SECRET_FD`), so the secret is in no
//! environment block, file or command line. Ranks started by other means read
//! `HCOMM_SECRET_FILE` (a file of mode 0600 or stricter) or `HCOMM_SECRET`. In preload mode rank
//! 0 makes one and the host MPI's allgather hands it to the others ([`agree_over`]). Without any
//! of these the key is empty: connections are still checked for the job id and the protocol, but
//! anyone who can reach the ports can join; rank 0 warns. The secret is never logged and never
//! crosses the wire.
//!
//! **Handshake** (once per connection, never per frame). The connecting side C and the accepting
//! side A each pick a 32-byte nonce from the OS (`getrandom(2)`); `ctx_c` and `ctx_a` are the
//! caller's hello and acknowledgement (job id, ranks, socket index), which are bound into both
//! proofs. Every message is a little-endian u32 length and at most [`MAX_MESSAGE`] bytes.
//!
//! ```text
//! C → A  offer   : "hcA1" nonce_c ctx_c
//! A → C  answer  : "hcA2" nonce_a HMAC(K, "acceptor"  ‖ transcript) ctx_a   (A closes instead when ctx_c is not for it)
//! C → A  proof   : "hcA3" HMAC(K, "connector" ‖ transcript)
//! A → C  welcome : "hcA4"
//! transcript = nonce_c ‖ nonce_a ‖ len ctx_c ‖ ctx_c ‖ len ctx_a ‖ ctx_a
//! ```
//!
//! HMAC-SHA256 (RFC 2104, RustCrypto's `hmac` + `sha2`); MACs are compared in constant time.
//! Distinct labels for the two proofs stop a reflection (replaying A's proof as C's), fresh
//! nonces on both sides stop replay. C checks A's proof before it proves anything itself, so a
//! rank that reaches a peer of its own job with another secret fails at once with an error
//! saying the secrets differ; A never ends the job on a bad proof (that would let any stranger
//! kill it): it drops the connection, logs at INFO, and keeps accepting. Every read on a
//! connection that is not yet authenticated is bounded in size and by a deadline.
//!
//! The parsers ([`parse_offer`], [`parse_answer`], [`parse_proof`], [`parse_welcome`]) are pure
//! functions over byte slices, for fuzzing.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{Class, Error, Result};

/// Inherited descriptor (a memfd) holding the secret as text: set by `hcomm run`.
pub const ENV_SECRET_FD: &str = "HCOMM_SECRET_FD";
/// Path of a file (mode 0600 or stricter) holding the secret as text.
pub const ENV_SECRET_FILE: &str = "HCOMM_SECRET_FILE";
/// The secret itself, as text.
pub const ENV_SECRET: &str = "HCOMM_SECRET";

/// Shortest secret accepted, in bytes.
pub const MIN_SECRET: usize = 16;
/// Longest secret accepted, in bytes.
pub const MAX_SECRET: usize = 4096;
/// Largest handshake message (length prefix excluded).
pub const MAX_MESSAGE: usize = 4096;
/// Nonce and MAC size.
pub const NONCE: usize = 32;
pub const MAC: usize = 32;
/// How long an accepting side waits for a connection's whole handshake.
pub const ACCEPT_TIMEOUT: Duration = Duration::from_secs(5);
/// Most handshakes an accepting side runs at once; further connections are dropped.
pub const MAX_PENDING: usize = 64;

const OFFER: [u8; 4] = *b"hcA1";
const ANSWER: [u8; 4] = *b"hcA2";
const PROOF: [u8; 4] = *b"hcA3";
const WELCOME: [u8; 4] = *b"hcA4";
const LABEL_ACCEPTOR: &[u8] = b"hcomm-auth-v1 acceptor\0";
const LABEL_CONNECTOR: &[u8] = b"hcomm-auth-v1 connector\0";

type HmacSha256 = Hmac<Sha256>;

/// A job secret (the HMAC key). Empty when the job has none. Its bytes are never printed
/// (`Debug` shows the length only) and are overwritten when dropped.
#[derive(Clone, Default)]
pub struct Secret {
    key: Vec<u8>,
    /// Where it came from, for messages (`HCOMM_SECRET_FILE=/path`, ...).
    source: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes from {})", self.key.len(), self.source())
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        for b in self.key.iter_mut() {
            // SAFETY: b is a valid, aligned &mut u8; a volatile write is not optimized away.
            unsafe { std::ptr::write_volatile(b, 0) };
        }
    }
}

impl Secret {
    /// No secret: connections are not authenticated (the key is empty).
    pub fn none() -> Secret {
        Secret::default()
    }

    pub fn is_none(&self) -> bool {
        self.key.is_empty()
    }

    /// Where the secret came from (never the secret itself).
    pub fn source(&self) -> &str {
        if self.key.is_empty() {
            "nowhere (no secret)"
        } else {
            &self.source
        }
    }

    /// The secret in `text` (surrounding whitespace removed), from `source`.
    pub fn from_text(text: &[u8], source: &str) -> Result<Secret> {
        let start = text.iter().position(|b| !b.is_ascii_whitespace());
        let end = text.iter().rposition(|b| !b.is_ascii_whitespace());
        let key = match (start, end) {
            (Some(s), Some(e)) => text[s..=e].to_vec(),
            _ => Vec::new(),
        };
        if key.len() < MIN_SECRET || key.len() > MAX_SECRET {
            return Err(Error::new(
                Class::Arg,
                format!(
                    "the job secret from {source} is {} bytes long; it must have {MIN_SECRET} to {MAX_SECRET} (e.g. the output of `openssl rand -hex 32`)",
                    key.len()
                ),
            ));
        }
        Ok(Secret {
            key,
            source: source.to_string(),
        })
    }

    /// A fresh random secret: 32 bytes from the OS, as 64 hex digits (text, so that it can be
    /// handed on as it is).
    pub fn random(source: &str) -> Result<Secret> {
        let raw = random_bytes::<32>()?;
        Secret::from_text(hex(&raw).as_bytes(), source)
    }

    /// The secret's text, for handing it to ranks (the launcher's memfd, preload's exchange).
    pub fn text(&self) -> &[u8] {
        &self.key
    }

    /// Reads `HCOMM_SECRET_FD`, then `HCOMM_SECRET_FILE`, then `HCOMM_SECRET`: the first that
    /// is set wins. `Secret::none()` when none is.
    pub fn from_env() -> Result<Secret> {
        let var = |n: &str| std::env::var(n).ok().filter(|v| !v.trim().is_empty());
        if let Some(fd) = var(ENV_SECRET_FD) {
            let fd: i32 = fd.trim().parse().map_err(|_| {
                Error::new(
                    Class::Arg,
                    format!("{ENV_SECRET_FD}={fd:?} is not a file descriptor number"),
                )
            })?;
            return read_fd(fd);
        }
        if let Some(path) = var(ENV_SECRET_FILE) {
            return read_file(std::path::Path::new(&path));
        }
        if let Some(s) = std::env::var_os(ENV_SECRET).filter(|v| !v.is_empty()) {
            use std::os::unix::ffi::OsStrExt;
            return Secret::from_text(s.as_bytes(), ENV_SECRET);
        }
        Ok(Secret::none())
    }

    fn mac(
        &self,
        label: &[u8],
        nonce_c: &[u8],
        nonce_a: &[u8],
        ctx_c: &[u8],
        ctx_a: &[u8],
    ) -> HmacSha256 {
        let mut m = HmacSha256::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        m.update(label);
        m.update(nonce_c);
        m.update(nonce_a);
        m.update(&(ctx_c.len() as u32).to_le_bytes());
        m.update(ctx_c);
        m.update(&(ctx_a.len() as u32).to_le_bytes());
        m.update(ctx_a);
        m
    }
}

/// The launcher's side of [`ENV_SECRET_FD`]: a sealed memfd holding a fresh random secret. It is
/// created without close-on-exec, so every rank the launcher starts while it is open inherits
/// it (the launcher closes its copy once the ranks are started); no file, environment block or
/// command line ever holds the secret.
pub struct SecretFd(std::os::fd::OwnedFd);

impl SecretFd {
    pub fn new() -> Result<SecretFd> {
        SecretFd::with_secret(&Secret::random("the launcher")?)
    }

    /// A sealed memfd holding `secret` (a proxy of `hcomm run` across hosts, which got the
    /// secret from the launcher over its standard input).
    pub fn with_secret(secret: &Secret) -> Result<SecretFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: the name is a NUL-terminated literal; flags are plain integers.
        let fd = unsafe { libc::memfd_create(c"hcomm-secret".as_ptr(), libc::MFD_ALLOW_SEALING) };
        if fd < 0 {
            return Err(Error::os("memfd_create for the job secret"));
        }
        // SAFETY: fd was just created and is owned by nothing else.
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let text = secret.text();
        // SAFETY: text is a readable slice of text.len() bytes.
        let n = unsafe { libc::pwrite(fd, text.as_ptr() as *const libc::c_void, text.len(), 0) };
        if n != text.len() as isize {
            return Err(Error::os("writing the job secret to its memfd"));
        }
        // Sealed: a rank cannot change the secret its peers will read.
        let seals =
            libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
        // SAFETY: fcntl on our own descriptor with integer arguments.
        if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } != 0 {
            return Err(Error::os("sealing the job secret's memfd"));
        }
        Ok(SecretFd(owned))
    }

    /// The descriptor number, for [`ENV_SECRET_FD`].
    pub fn raw(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.0)
    }
}

/// HMAC-SHA256 of `data` under `key` (RFC 2104 / RFC 4231).
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; MAC] {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    m.update(data);
    m.finalize().into_bytes().into()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `N` random bytes from the kernel (`getrandom(2)`).
pub fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut out = [0u8; N];
    let mut got = 0;
    while got < N {
        // SAFETY: the pointer and length describe the unfilled tail of `out`.
        let n =
            unsafe { libc::getrandom(out[got..].as_mut_ptr() as *mut libc::c_void, N - got, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::other(format!("getrandom: {e}")));
        }
        got += n as usize;
    }
    Ok(out)
}

/// The secret in the inherited descriptor `fd` (read from offset 0, so a program started again
/// by the same shell reads it again). Marks `fd` close-on-exec: programs a rank starts do not
/// inherit the secret.
fn read_fd(fd: i32) -> Result<Secret> {
    let mut buf = vec![0u8; MAX_SECRET + 1];
    // SAFETY: buf is a writable buffer of buf.len() bytes; pread touches nothing else.
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
    if n < 0 {
        return Err(Error::other(format!(
            "{ENV_SECRET_FD}={fd}: cannot read the job secret ({}); was the descriptor the launcher passed closed by a program in between?",
            std::io::Error::last_os_error()
        )));
    }
    buf.truncate(n as usize);
    // SAFETY: fcntl on a descriptor number; failure is harmless (it stays inheritable).
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    let s = Secret::from_text(&buf, &format!("{ENV_SECRET_FD}={fd}"));
    buf.iter_mut().for_each(|b| *b = 0);
    s
}

/// The secret in the file `path`, which must not be accessible to group or others.
pub fn read_file(path: &std::path::Path) -> Result<Secret> {
    use std::os::unix::fs::MetadataExt;
    let shown = format!("{ENV_SECRET_FILE}={}", path.display());
    let f = std::fs::File::open(path)
        .map_err(|e| Error::new(Class::Arg, format!("{shown}: cannot open it: {e}")))?;
    let md = f
        .metadata()
        .map_err(|e| Error::new(Class::Arg, format!("{shown}: {e}")))?;
    if !md.is_file() {
        return Err(Error::new(
            Class::Arg,
            format!("{shown} is not a regular file"),
        ));
    }
    let mode = md.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(Error::new(
            Class::Arg,
            format!(
                "{shown} has mode {mode:04o}: group or others may read it; the job secret file must be mode 0600 or stricter (chmod 600 {})",
                path.display()
            ),
        ));
    }
    let mut text = Vec::new();
    (&f).take(MAX_SECRET as u64 + 1)
        .read_to_end(&mut text)
        .map_err(|e| Error::new(Class::Arg, format!("{shown}: {e}")))?;
    let s = Secret::from_text(&text, &shown);
    text.iter_mut().for_each(|b| *b = 0);
    s
}

/// Preload mode: every rank adopts rank 0's secret, handed over by the host MPI's allgather
/// (the host's channel is the job's own; hcomm's TCP never carries it). Rank 0 uses the
/// environment's secret when one is set, else a random one.
pub fn agree_over(rank: usize, ex: &mut dyn crate::runtime::Exchange) -> Result<Secret> {
    let mine = if rank == 0 {
        match Secret::from_env()? {
            s if s.is_none() => Secret::random("rank 0 (through the host MPI)")?,
            s => s,
        }
    } else {
        Secret::none()
    };
    let blob = if rank == 0 {
        mine.text().to_vec()
    } else {
        Vec::new()
    };
    let all = ex
        .allgather(&blob)
        .map_err(|e| e.context("job secret exchange"))?;
    let theirs = all
        .first()
        .ok_or_else(|| Error::intern("job secret exchange returned nothing"))?;
    Secret::from_text(theirs, "rank 0 (through the host MPI)")
}

// ---------------------------------------------------------------------------------------------
// Messages: pure encoders and parsers.

/// `"hcA1" nonce_c ctx_c`.
pub fn encode_offer(nonce_c: &[u8; NONCE], ctx_c: &[u8]) -> Vec<u8> {
    [&OFFER[..], nonce_c, ctx_c].concat()
}

/// `(nonce_c, ctx_c)` of an offer.
pub fn parse_offer(m: &[u8]) -> Option<([u8; NONCE], &[u8])> {
    let rest = m.strip_prefix(&OFFER)?;
    Some((rest.get(..NONCE)?.try_into().ok()?, &rest[NONCE..]))
}

/// `"hcA2" nonce_a mac_a ctx_a`.
pub fn encode_answer(nonce_a: &[u8; NONCE], mac_a: &[u8; MAC], ctx_a: &[u8]) -> Vec<u8> {
    [&ANSWER[..], nonce_a, mac_a, ctx_a].concat()
}

/// `(nonce_a, mac_a, ctx_a)` of an answer.
pub fn parse_answer(m: &[u8]) -> Option<([u8; NONCE], [u8; MAC], &[u8])> {
    let rest = m.strip_prefix(&ANSWER)?;
    Some((
        rest.get(..NONCE)?.try_into().ok()?,
        rest.get(NONCE..NONCE + MAC)?.try_into().ok()?,
        &rest[NONCE + MAC..],
    ))
}

/// `"hcA3" mac_c`.
pub fn encode_proof(mac_c: &[u8; MAC]) -> Vec<u8> {
    [&PROOF[..], mac_c].concat()
}

/// `mac_c` of a proof.
pub fn parse_proof(m: &[u8]) -> Option<[u8; MAC]> {
    let rest = m.strip_prefix(&PROOF)?;
    (rest.len() == MAC).then(|| rest.try_into().expect("MAC bytes"))
}

/// Whether `m` is the welcome.
pub fn parse_welcome(m: &[u8]) -> bool {
    m == WELCOME
}

/// A length-prefixed message's payload length from its 4-byte prefix, if acceptable.
pub fn parse_length(prefix: [u8; 4]) -> Option<usize> {
    let n = u32::from_le_bytes(prefix) as usize;
    (n <= MAX_MESSAGE).then_some(n)
}

// ---------------------------------------------------------------------------------------------
// I/O: both sides of the handshake over a blocking TcpStream.

/// Why a handshake failed.
#[derive(Debug)]
pub enum Failure {
    /// The connection failed, timed out or closed.
    Io(std::io::Error),
    /// The other side sent something that is not this protocol (or an absurd length).
    Garbage(&'static str),
    /// Accepting side: the offer is not for us (another job, rank, ...). Connecting side: the
    /// acceptor closed the connection after our offer.
    Refused(String),
    /// The other side's proof is wrong: it does not hold our secret.
    WrongSecret,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Io(e) => write!(f, "{e}"),
            Failure::Garbage(w) => write!(f, "not an hcomm handshake ({w})"),
            Failure::Refused(w) => write!(f, "refused: {w}"),
            Failure::WrongSecret => write!(f, "wrong proof of the job secret"),
        }
    }
}

fn remaining(deadline: Instant) -> std::io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "handshake timed out",
        ));
    }
    Ok(left)
}

/// Reads exactly `buf.len()` bytes, never past `deadline` (each read's timeout is the time left).
fn read_exact_until(s: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> std::io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        s.set_read_timeout(Some(remaining(deadline)?))?;
        match s.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "connection closed during the handshake",
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "handshake timed out",
                ))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn recv(s: &mut TcpStream, deadline: Instant) -> std::result::Result<Vec<u8>, Failure> {
    let mut len = [0u8; 4];
    read_exact_until(s, &mut len, deadline).map_err(Failure::Io)?;
    let n = parse_length(len).ok_or(Failure::Garbage("absurd message length"))?;
    let mut m = vec![0u8; n];
    read_exact_until(s, &mut m, deadline).map_err(Failure::Io)?;
    Ok(m)
}

fn send(s: &mut TcpStream, m: &[u8], deadline: Instant) -> std::result::Result<(), Failure> {
    let mut buf = Vec::with_capacity(4 + m.len());
    buf.extend_from_slice(&(m.len() as u32).to_le_bytes());
    buf.extend_from_slice(m);
    s.set_write_timeout(Some(remaining(deadline).map_err(Failure::Io)?))
        .map_err(Failure::Io)?;
    // std's TcpStream::write is send(MSG_NOSIGNAL) on Linux: no SIGPIPE.
    s.write_all(&buf).map_err(Failure::Io)
}

/// The connecting side: offers `ctx_c`, checks the acceptor's proof, proves our own, and waits
/// for the welcome. Returns the acceptor's `ctx_a`. Leaves the stream's timeouts set.
pub fn connect(
    s: &mut TcpStream,
    secret: &Secret,
    ctx_c: &[u8],
    deadline: Instant,
) -> std::result::Result<Vec<u8>, Failure> {
    let nonce_c = random_bytes::<NONCE>().map_err(|e| Failure::Io(std::io::Error::other(e.msg)))?;
    send(s, &encode_offer(&nonce_c, ctx_c), deadline)?;
    let answer = match recv(s, deadline) {
        Ok(m) => m,
        Err(Failure::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(Failure::Refused(
                "the other side closed the connection".into(),
            ))
        }
        Err(e) => return Err(e),
    };
    let (nonce_a, mac_a, ctx_a) = parse_answer(&answer).ok_or(Failure::Garbage("bad answer"))?;
    if secret
        .mac(LABEL_ACCEPTOR, &nonce_c, &nonce_a, ctx_c, ctx_a)
        .verify_slice(&mac_a)
        .is_err()
    {
        // A null proof, so the acceptor too learns that the secrets differ (and can say so
        // when its rendezvous times out) instead of seeing a closed connection.
        let _ = send(s, &encode_proof(&[0; MAC]), deadline);
        return Err(Failure::WrongSecret);
    }
    let mac_c: [u8; MAC] = secret
        .mac(LABEL_CONNECTOR, &nonce_c, &nonce_a, ctx_c, ctx_a)
        .finalize()
        .into_bytes()
        .into();
    send(s, &encode_proof(&mac_c), deadline)?;
    let welcome = recv(s, deadline)?;
    if !parse_welcome(&welcome) {
        return Err(Failure::Garbage("bad welcome"));
    }
    Ok(ctx_a.to_vec())
}

/// The accepting side: reads an offer, asks `decide` whether its `ctx_c` is for us (`Ok` with
/// our `ctx_a` and a value for the caller, or `Err` with the reason to refuse), proves our
/// secret, checks the connector's proof, and welcomes it. Returns `ctx_c` and the value.
pub fn accept<T>(
    s: &mut TcpStream,
    secret: &Secret,
    deadline: Instant,
    decide: impl FnOnce(&[u8]) -> std::result::Result<(Vec<u8>, T), String>,
) -> std::result::Result<(Vec<u8>, T), Failure> {
    let offer = recv(s, deadline)?;
    let (nonce_c, ctx_c) = parse_offer(&offer).ok_or(Failure::Garbage("bad offer"))?;
    let (ctx_a, value) = decide(ctx_c).map_err(Failure::Refused)?;
    let nonce_a = random_bytes::<NONCE>().map_err(|e| Failure::Io(std::io::Error::other(e.msg)))?;
    let mac_a: [u8; MAC] = secret
        .mac(LABEL_ACCEPTOR, &nonce_c, &nonce_a, ctx_c, &ctx_a)
        .finalize()
        .into_bytes()
        .into();
    send(s, &encode_answer(&nonce_a, &mac_a, &ctx_a), deadline)?;
    let proof = recv(s, deadline)?;
    let mac_c = parse_proof(&proof).ok_or(Failure::Garbage("bad proof"))?;
    secret
        .mac(LABEL_CONNECTOR, &nonce_c, &nonce_a, ctx_c, &ctx_a)
        .verify_slice(&mac_c)
        .map_err(|_| Failure::WrongSecret)?;
    send(s, &WELCOME, deadline)?;
    Ok((ctx_c.to_vec(), value))
}

/// The result of a background handshake: the connection, its address, and the outcome.
pub type Accepted<T> = (
    TcpStream,
    SocketAddr,
    std::result::Result<(Vec<u8>, T), Failure>,
);

/// Runs accepting handshakes on their own threads, so that a silent or slow stranger never
/// holds up an accept loop; at most [`MAX_PENDING`] at once (further connections are dropped).
pub struct Acceptor<T> {
    secret: Arc<Secret>,
    pending: Arc<AtomicUsize>,
    tx: mpsc::Sender<Accepted<T>>,
    rx: mpsc::Receiver<Accepted<T>>,
}

impl<T: Send + 'static> Acceptor<T> {
    pub fn new(secret: &Secret) -> Acceptor<T> {
        let (tx, rx) = mpsc::channel();
        Acceptor {
            secret: Arc::new(secret.clone()),
            pending: Arc::new(AtomicUsize::new(0)),
            tx,
            rx,
        }
    }

    /// Starts the handshake of a freshly accepted connection. `what` names the listener in
    /// log lines.
    pub fn start<D>(&self, mut s: TcpStream, from: SocketAddr, what: &str, decide: D)
    where
        D: FnOnce(&[u8]) -> std::result::Result<(Vec<u8>, T), String> + Send + 'static,
    {
        if self.pending.fetch_add(1, Ordering::AcqRel) >= MAX_PENDING {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            crate::info!("{what}: dropped a connection from {from}: too many handshakes at once");
            return;
        }
        let (secret, pending, tx) = (self.secret.clone(), self.pending.clone(), self.tx.clone());
        let spawned = std::thread::Builder::new()
            .name("hcomm-auth".into())
            .spawn(move || {
                let res = s
                    .set_nonblocking(false)
                    .map_err(Failure::Io)
                    .and_then(|_| accept(&mut s, &secret, Instant::now() + ACCEPT_TIMEOUT, decide));
                pending.fetch_sub(1, Ordering::AcqRel);
                let _ = tx.send((s, from, res));
            });
        if spawned.is_err() {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            crate::info!("{what}: dropped a connection from {from}: cannot start a thread");
        }
    }

    /// A finished handshake, if any.
    pub fn poll(&self) -> Option<Accepted<T>> {
        self.rx.try_recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn hmac_sha256_rfc4231() {
        let long_key = vec![0xaau8; 131];
        let cases: [(&[u8], &[u8], &str); 6] = [
            (&[0x0b; 20], b"Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (b"Jefe", b"what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            (&[0xaa; 20], &[0xdd; 50], "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
            (
                &unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"),
                &[0xcd; 50],
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
            ),
            (&long_key, b"Test Using Larger Than Block-Size Key - Hash Key First", "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
            (
                &long_key,
                b"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
            ),
        ];
        for (i, (key, data, want)) in cases.iter().enumerate() {
            assert_eq!(
                hex(&hmac_sha256(key, data)),
                *want,
                "RFC 4231 test case {}",
                i + 1
            );
        }
        // Test case 5: output truncated to 128 bits.
        let t5 = hmac_sha256(&[0x0c; 20], b"Test With Truncation");
        assert_eq!(hex(&t5[..16]), "a3b6167473100ee06e0c796c2955552b");
    }

    #[test]
    fn secret_sources() {
        let e = Secret::from_text(b"short", "test").unwrap_err();
        assert!(
            e.msg.contains("5 bytes") && !e.msg.contains("short"),
            "{}",
            e.msg
        );
        let s = Secret::from_text(b"  0123456789abcdef\n", "test").unwrap();
        assert_eq!(s.text(), b"0123456789abcdef");
        assert!(
            !format!("{s:?}").contains("0123"),
            "Debug never shows the secret"
        );
        let r = Secret::random("t").unwrap();
        assert_eq!(r.text().len(), 64);
        assert_ne!(r.text(), Secret::random("t").unwrap().text());

        let dir = std::env::temp_dir().join(format!("hcomm-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s");
        std::fs::write(&p, "fedcba9876543210fedcba\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_file(&p).unwrap_err();
        assert!(
            e.msg.contains("mode 0644") && e.msg.contains("0600"),
            "{}",
            e.msg
        );
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_file(&p).unwrap().text(), b"fedcba9876543210fedcba");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert!(read_file(&p).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn launcher_memfd_is_sealed_and_readable_again() {
        let fd = SecretFd::new().unwrap();
        let a = read_fd(fd.raw()).unwrap();
        let b = read_fd(fd.raw()).unwrap();
        assert_eq!(a.text().len(), 64);
        assert_eq!(a.text(), b.text(), "read from offset 0 every time");
        // SAFETY: write to our own descriptor; it must fail (sealed).
        let n = unsafe { libc::pwrite(fd.raw(), b"x".as_ptr() as *const libc::c_void, 1, 0) };
        assert!(n < 0, "the memfd is sealed against writes");
        assert!(a.source().contains(ENV_SECRET_FD));
    }

    #[test]
    fn messages_round_trip_and_reject_garbage() {
        let n = [7u8; NONCE];
        let m = [9u8; MAC];
        assert_eq!(
            parse_offer(&encode_offer(&n, b"ctx")),
            Some((n, &b"ctx"[..]))
        );
        assert_eq!(
            parse_answer(&encode_answer(&n, &m, b"a")),
            Some((n, m, &b"a"[..]))
        );
        assert_eq!(parse_proof(&encode_proof(&m)), Some(m));
        assert!(parse_welcome(&WELCOME));
        for bad in [
            &b""[..],
            b"hcA1",
            b"hcA2xxxx",
            b"garbage garbage garbage garbage garbage",
        ] {
            assert!(parse_offer(bad).is_none());
            assert!(parse_answer(bad).is_none());
            assert!(parse_proof(bad).is_none());
            assert!(!parse_welcome(bad));
        }
        assert!(parse_offer(&encode_offer(&n, b"")[..NONCE + 3]).is_none());
        assert!(parse_proof(&encode_proof(&m)[..MAC]).is_none());
        assert_eq!(parse_length([0, 0x10, 0, 0]), Some(4096));
        assert_eq!(parse_length([1, 0x10, 0, 0]), None);
        assert_eq!(parse_length([0xff; 4]), None);
    }

    /// Plays a misbehaving connecting side instead of [`connect`].
    type Garble = Box<dyn FnOnce(&mut TcpStream) + Send>;
    type Outcome<T> = std::result::Result<T, Failure>;
    /// The acceptor's `(ctx_c, value)`.
    type Accepted42 = (Vec<u8>, u32);

    /// One handshake over loopback: (connector's result, acceptor's result).
    fn handshake(
        c_secret: &Secret,
        a_secret: &Secret,
        garble: Option<Garble>,
    ) -> (Option<Outcome<Vec<u8>>>, Outcome<Accepted42>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let c_secret = c_secret.clone();
        let t = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            match garble {
                Some(g) => {
                    g(&mut s);
                    None
                }
                None => Some(connect(
                    &mut s,
                    &c_secret,
                    b"hello",
                    Instant::now() + Duration::from_secs(5),
                )),
            }
        });
        let (mut s, _) = l.accept().unwrap();
        let a = accept(
            &mut s,
            a_secret,
            Instant::now() + Duration::from_millis(800),
            |ctx| {
                if ctx == b"hello" {
                    Ok((b"ack".to_vec(), 42))
                } else {
                    Err(format!("unexpected hello {ctx:?}"))
                }
            },
        );
        drop(s);
        (t.join().unwrap(), a)
    }

    #[test]
    fn handshake_right_secret_passes_wrong_fails() {
        let k1 = Secret::from_text(b"the-right-secret-0123", "t").unwrap();
        let k2 = Secret::from_text(b"the-wrong-secret-0123", "t").unwrap();
        let (c, a) = handshake(&k1, &k1, None);
        assert_eq!(c.unwrap().unwrap(), b"ack");
        assert_eq!(a.unwrap(), (b"hello".to_vec(), 42));
        // No secret on both sides is consistent too (unauthenticated job).
        let (c, a) = handshake(&Secret::none(), &Secret::none(), None);
        assert!(c.unwrap().is_ok() && a.is_ok());
        // Different secrets: the connector sees it first and says so.
        let (c, a) = handshake(&k2, &k1, None);
        assert!(matches!(c.unwrap(), Err(Failure::WrongSecret)));
        assert!(a.is_err());
        let (c, _) = handshake(&Secret::none(), &k1, None);
        assert!(matches!(c.unwrap(), Err(Failure::WrongSecret)));
    }

    #[test]
    fn handshake_rejects_garbage_truncation_and_absurd_lengths() {
        let k = Secret::from_text(b"the-right-secret-0123", "t").unwrap();
        let cases: Vec<(&str, Garble)> = vec![
            (
                "garbage",
                Box::new(|s: &mut TcpStream| {
                    let _ = s.write_all(&[0x17u8; 300]);
                    std::thread::sleep(Duration::from_millis(100));
                }),
            ),
            (
                "absurd length",
                Box::new(|s: &mut TcpStream| {
                    let _ = s.write_all(&u32::MAX.to_le_bytes());
                }),
            ),
            (
                "truncated offer",
                Box::new(|s: &mut TcpStream| {
                    let m = encode_offer(&[1; NONCE], b"hello");
                    let _ = s.write_all(&(m.len() as u32).to_le_bytes());
                    let _ = s.write_all(&m[..10]);
                }),
            ),
            (
                "silent",
                Box::new(|_: &mut TcpStream| std::thread::sleep(Duration::from_millis(1200))),
            ),
            (
                "bad proof",
                Box::new(|s: &mut TcpStream| {
                    let m = encode_offer(&[1; NONCE], b"hello");
                    let _ = s.write_all(&(m.len() as u32).to_le_bytes());
                    let _ = s.write_all(&m);
                    let mut len = [0u8; 4];
                    let _ = s.read_exact(&mut len);
                    let mut ans = vec![0u8; u32::from_le_bytes(len) as usize];
                    let _ = s.read_exact(&mut ans);
                    let p = encode_proof(&[0; MAC]);
                    let _ = s.write_all(&(p.len() as u32).to_le_bytes());
                    let _ = s.write_all(&p);
                }),
            ),
            (
                "stranger's hello",
                Box::new(|s: &mut TcpStream| {
                    let m = encode_offer(&[1; NONCE], b"other job");
                    let _ = s.write_all(&(m.len() as u32).to_le_bytes());
                    let _ = s.write_all(&m);
                }),
            ),
        ];
        for (what, g) in cases {
            let t0 = Instant::now();
            let (_, a) = handshake(&k, &k, Some(g));
            let e = a.expect_err(what);
            assert!(
                t0.elapsed() < Duration::from_secs(3),
                "{what}: bounded in time"
            );
            match what {
                "garbage" | "absurd length" => {
                    assert!(matches!(e, Failure::Garbage(_)), "{what}: {e}")
                }
                "truncated offer" | "silent" => assert!(matches!(e, Failure::Io(_)), "{what}: {e}"),
                "bad proof" => assert!(matches!(e, Failure::WrongSecret), "{what}: {e}"),
                _ => assert!(matches!(e, Failure::Refused(_)), "{what}: {e}"),
            }
        }
    }
}
