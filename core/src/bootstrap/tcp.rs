//! The TCP star behind [`Bootstrap`]: rank 0 accepts one connection per other rank.
//!
//! Wire format: every message is a little-endian u32 length and that many bytes. A connecting
//! rank first runs the authenticated handshake of [`crate::auth`] with the hello
//! `MAGIC, job-id length+bytes (may be empty), rank` as its context; rank 0 acknowledges with
//! `MAGIC` when it accepts the rank, and closes the connection when it does not (another job),
//! so a rank that reached a stranger or a stale address keeps retrying instead of waiting on the
//! wrong process. A rank 0 of this job that proves a different secret is an error at once
//! ("the secrets differ"); a connection to rank 0 that sends garbage, a wrong proof, a truncated
//! or oversized message, or nothing at all is dropped and logged at INFO, while rank 0 keeps
//! accepting (each handshake runs on its own short-lived thread with a deadline, see
//! [`crate::auth::Acceptor`]). All reads and connects are bounded by the bootstrap timeout, and a
//! timeout names the missing ranks and the address.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{file, net, parse_uri, Launch, Rendezvous};
use crate::auth::{self, Failure};
use crate::error::{Error, Result};

const MAGIC: u32 = 0x6863_6d62; // "hcmb"

pub struct Bootstrap {
    rank: usize,
    size: usize,
    /// Rank 0: connections indexed by rank (index 0 unused). Others: `[rank 0]`.
    conns: Vec<Option<TcpStream>>,
    uri: String,
}

fn send_msg(s: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(4 + data.len());
    buf.extend_from_slice(&(data.len() as u32).to_le_bytes());
    buf.extend_from_slice(data);
    // std's TcpStream::write uses send(MSG_NOSIGNAL) on Linux: a dead peer is an error, not SIGPIPE.
    s.write_all(&buf)
}

fn recv_msg(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > (64 << 20) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "bootstrap message too large",
        ));
    }
    let mut v = vec![0u8; len];
    s.read_exact(&mut v)?;
    Ok(v)
}

/// Removes rank 0's published address file when rank 0 is done with the rendezvous
/// (everyone joined, or it failed): a later job must not find a stale address.
struct Published(Option<PathBuf>);

impl Drop for Published {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Rank 0's listening socket: inherited from the launcher, bound to the `tcp://` address, or
/// bound to an ephemeral port and published for `file://`.
fn rank0_listener(l: &Launch) -> Result<(TcpListener, Published)> {
    if let Some(fd) = l.listen_fd {
        // SAFETY: the launcher passed us this descriptor of a listening socket for our
        // exclusive use (contract: HCOMM_BOOTSTRAP_FD); we take ownership of it.
        return Ok((unsafe { TcpListener::from_raw_fd(fd) }, Published(None)));
    }
    match parse_uri(&l.uri)? {
        Rendezvous::Tcp { host, port } => {
            let bound = match host.parse::<std::net::IpAddr>() {
                Ok(ip) => TcpListener::bind((net::bind_ip(ip), port)),
                Err(_) => TcpListener::bind((host.as_str(), port)),
            };
            let listener = bound.map_err(|e| {
                Error::other(format!(
                    "rank 0 cannot listen on {} ({e}); choose another port in HCOMM_URI",
                    l.uri
                ))
            })?;
            Ok((listener, Published(None)))
        }
        Rendezvous::File { dir } => {
            let (ip, ifname) = net::listen_address()?;
            let listener = TcpListener::bind((net::bind_ip(ip), 0)).map_err(|e| {
                Error::other(format!(
                    "rank 0 cannot listen on {ip} ({ifname}) for {}: {e}",
                    l.uri
                ))
            })?;
            let addr = SocketAddr::new(ip, listener.local_addr()?.port());
            let path = file::address_file(&dir, l.job_id.as_deref(), &l.uri, 0);
            file::publish(&path, &addr.to_string())?;
            crate::info!(
                "bootstrap: rank 0 listens on {addr} ({ifname}), published in {}",
                path.display()
            );
            Ok((listener, Published(Some(path))))
        }
    }
}

impl Bootstrap {
    pub fn connect(l: &Launch, timeout: Duration) -> Result<Bootstrap> {
        let deadline = Instant::now() + timeout;
        let job = l.job_id.clone().unwrap_or_default();
        let mut conns: Vec<Option<TcpStream>> = (0..l.size).map(|_| None).collect();
        if l.size == 1 {
            return Ok(Bootstrap {
                rank: 0,
                size: 1,
                conns,
                uri: l.uri.clone(),
            });
        }
        if l.rank == 0 {
            let (listener, _published) = rank0_listener(l)?;
            accept_ranks(l, &job, &listener, &mut conns, deadline, timeout)?;
        } else {
            conns[0] = Some(join_rank0(l, &job, deadline, timeout)?);
        }
        Ok(Bootstrap {
            rank: l.rank,
            size: l.size,
            conns,
            uri: l.uri.clone(),
        })
    }

    fn io_err(&self, peer: usize, e: std::io::Error) -> Error {
        Error::other(format!(
            "bootstrap connection to rank {peer} failed ({e}); rendezvous {}",
            self.uri
        ))
    }

    /// Every rank contributes `blob`; every rank gets all blobs in rank order.
    pub fn allgather(&mut self, blob: &[u8]) -> Result<Vec<Vec<u8>>> {
        if self.size == 1 {
            return Ok(vec![blob.to_vec()]);
        }
        if self.rank == 0 {
            let mut all = vec![blob.to_vec()];
            for r in 1..self.size {
                let s = self.conns[r]
                    .as_mut()
                    .expect("rank 0 holds every connection");
                let m = recv_msg(s).map_err(|e| self.io_err(r, e))?;
                all.push(m);
            }
            let mut packed = Vec::new();
            for b in &all {
                packed.extend_from_slice(&(b.len() as u32).to_le_bytes());
                packed.extend_from_slice(b);
            }
            for r in 1..self.size {
                let s = self.conns[r]
                    .as_mut()
                    .expect("rank 0 holds every connection");
                send_msg(s, &packed).map_err(|e| self.io_err(r, e))?;
            }
            Ok(all)
        } else {
            let s = self.conns[0].as_mut().expect("connected to rank 0");
            send_msg(s, blob)
                .map_err(|e| Error::other(format!("bootstrap send to rank 0: {e}")))?;
            let packed = recv_msg(s).map_err(|e| self.io_err(0, e))?;
            unpack(&packed, self.size)
                .ok_or_else(|| Error::other("bootstrap: malformed table from rank 0"))
        }
    }

    pub fn barrier(&mut self) -> Result<()> {
        self.allgather(&[]).map(|_| ())
    }
}

/// Rank 0's side: accepts until every other rank has joined (or the deadline passes).
fn accept_ranks(
    l: &Launch,
    job: &str,
    listener: &TcpListener,
    conns: &mut [Option<TcpStream>],
    deadline: Instant,
    timeout: Duration,
) -> Result<()> {
    listener.set_nonblocking(true)?;
    let acceptor = auth::Acceptor::<usize>::new(&l.secret);
    let what = format!("bootstrap on {}", l.uri);
    let mut missing = l.size - 1;
    // Connections that claimed a rank of this job but failed the secret check.
    let mut wrong_secret = 0usize;
    while missing > 0 {
        let mut busy = false;
        match listener.accept() {
            Ok((s, from)) => {
                busy = true;
                let (job, size) = (job.to_string(), l.size);
                acceptor.start(s, from, &what, move |ctx| {
                    let (magic, peer_job, rank) =
                        parse_hello(ctx).ok_or_else(|| "malformed hello".to_string())?;
                    if magic != MAGIC || peer_job != job || rank == 0 || rank >= size {
                        return Err(format!(
                            "hello for rank {rank} of job {peer_job:?}; expected job {job:?}, ranks 1..{size}"
                        ));
                    }
                    Ok((MAGIC.to_le_bytes().to_vec(), rank))
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(Error::other(format!("bootstrap accept on {}: {e}", l.uri))),
        }
        while let Some((s, from, res)) = acceptor.poll() {
            busy = true;
            match res {
                Ok((_, rank)) if conns[rank].is_none() => {
                    s.set_read_timeout(None)?;
                    s.set_write_timeout(None)?;
                    s.set_nodelay(true)?;
                    conns[rank] = Some(s);
                    missing -= 1;
                }
                Ok((_, rank)) => {
                    crate::info!("{what}: dropped a second connection for rank {rank} from {from}")
                }
                Err(e) => {
                    if matches!(e, Failure::WrongSecret) {
                        wrong_secret += 1;
                    }
                    crate::info!("{what}: dropped a connection from {from}: {e}");
                }
            }
        }
        if busy {
            continue;
        }
        if Instant::now() > deadline {
            let absent: Vec<String> = (1..l.size)
                .filter(|&r| conns[r].is_none())
                .map(|r| r.to_string())
                .collect();
            let hint = if wrong_secret > 0 {
                format!(
                    "; {wrong_secret} connection(s) claiming a rank of this job failed the secret check: the ranks' secrets differ (this rank's is from {}; set the same HCOMM_SECRET_FILE or HCOMM_SECRET on every rank)",
                    l.secret.source()
                )
            } else {
                String::new()
            };
            return Err(Error::other(format!(
                "bootstrap timed out after {}s at {}: ranks {} never arrived (HCOMM_BOOTSTRAP_TIMEOUT){hint}",
                timeout.as_secs(),
                l.uri,
                absent.join(",")
            )));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

/// Where rank 0 listens, as far as we can tell now: `Err` is a reason to keep waiting.
fn rank0_addresses(l: &Launch, rv: &Rendezvous) -> Result<Vec<SocketAddr>, String> {
    match rv {
        Rendezvous::Tcp { host, port } => (host.as_str(), *port)
            .to_socket_addrs()
            .map(|a| a.collect())
            .map_err(|e| format!("cannot resolve {host}: {e}")),
        Rendezvous::File { dir } => {
            let path = file::address_file(dir, l.job_id.as_deref(), &l.uri, 0);
            let text = file::read(&path)
                .ok_or_else(|| format!("rank 0 has not published {} yet", path.display()))?;
            text.parse::<SocketAddr>()
                .map(|a| vec![a])
                .map_err(|_| format!("{} holds no address: {text:?}", path.display()))
        }
    }
}

/// Why joining rank 0 at one address failed.
enum JoinError {
    /// Worth another try (nobody there yet, another job, a timeout).
    Retry(String),
    /// Rank 0 of this job holds another secret: retrying cannot help.
    Fatal(Error),
}

/// Connects to `addr`, runs the authenticated hello and waits for rank 0's acknowledgement.
fn try_join(
    l: &Launch,
    addr: &SocketAddr,
    hello: &[u8],
    deadline: Instant,
) -> Result<TcpStream, JoinError> {
    let mut s = TcpStream::connect_timeout(addr, Duration::from_secs(1))
        .map_err(|e| JoinError::Retry(format!("cannot connect to {addr}: {e}")))?;
    let left = deadline
        .saturating_duration_since(Instant::now())
        .clamp(Duration::from_millis(100), Duration::from_secs(10));
    let io = |e: std::io::Error| JoinError::Retry(format!("{addr}: {e}"));
    s.set_nodelay(true).map_err(io)?;
    match auth::connect(&mut s, &l.secret, hello, Instant::now() + left) {
        Ok(ack) if ack == MAGIC.to_le_bytes() => {
            s.set_read_timeout(None).map_err(io)?;
            s.set_write_timeout(None).map_err(io)?;
            Ok(s)
        }
        Ok(_) => Err(JoinError::Retry(format!(
            "{addr} is not an hcomm rank 0 (wrong answer)"
        ))),
        Err(Failure::WrongSecret) => Err(JoinError::Fatal(Error::other(format!(
            "rank 0 at {} ({addr}) answered for this job but proved a different job secret: the ranks' secrets differ (this rank's is from {}); every rank needs the same HCOMM_SECRET_FILE or HCOMM_SECRET (`hcomm run` hands one to its ranks)",
            l.uri,
            l.secret.source()
        )))),
        Err(Failure::Refused(_)) => Err(JoinError::Retry(format!(
            "{addr} did not accept this rank: another job there, or a different HCOMM_JOB_ID?"
        ))),
        Err(e) => Err(JoinError::Retry(format!("{addr}: {e}"))),
    }
}

/// A non-zero rank's side: find rank 0 and join, retrying until the deadline.
fn join_rank0(l: &Launch, job: &str, deadline: Instant, timeout: Duration) -> Result<TcpStream> {
    let rv = parse_uri(&l.uri)?;
    let mut hello = Vec::new();
    hello.extend_from_slice(&MAGIC.to_le_bytes());
    hello.extend_from_slice(&(job.len() as u32).to_le_bytes());
    hello.extend_from_slice(job.as_bytes());
    hello.extend_from_slice(&(l.rank as u32).to_le_bytes());
    loop {
        let last = match rank0_addresses(l, &rv) {
            Ok(addrs) => {
                let mut last = format!("{} resolves to no address", l.uri);
                for a in &addrs {
                    match try_join(l, a, &hello, deadline) {
                        Ok(s) => return Ok(s),
                        Err(JoinError::Fatal(e)) => return Err(e),
                        Err(JoinError::Retry(e)) => last = e,
                    }
                }
                last
            }
            Err(e) => e,
        };
        if Instant::now() > deadline {
            return Err(Error::other(format!(
                "bootstrap timed out after {}s: rank {} could not reach rank 0 at {} ({last}) (HCOMM_BOOTSTRAP_TIMEOUT)",
                timeout.as_secs(),
                l.rank,
                l.uri
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `(magic, job, rank)` of a bootstrap hello (the handshake's context).
pub fn parse_hello(m: &[u8]) -> Option<(u32, String, usize)> {
    let magic = u32::from_le_bytes(m.get(0..4)?.try_into().ok()?);
    let jl = u32::from_le_bytes(m.get(4..8)?.try_into().ok()?) as usize;
    let job = String::from_utf8(m.get(8..8 + jl)?.to_vec()).ok()?;
    let rank = u32::from_le_bytes(m.get(8 + jl..12 + jl)?.try_into().ok()?) as usize;
    Some((magic, job, rank))
}

pub(crate) fn unpack(mut p: &[u8], n: usize) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = u32::from_le_bytes(p.get(0..4)?.try_into().ok()?) as usize;
        out.push(p.get(4..4 + len)?.to_vec());
        p = &p[4 + len..];
    }
    p.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Secret;

    fn test_secret() -> Secret {
        Secret::from_text(b"bootstrap-test-secret", "test").unwrap()
    }

    #[test]
    fn star_allgather_over_real_sockets() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let uri = format!("tcp://127.0.0.1:{port}");
        let n = 3;
        let handles: Vec<_> = (0..n)
            .map(|r| {
                let uri = uri.clone();
                std::thread::spawn(move || {
                    let launch = Launch {
                        rank: r,
                        size: n,
                        uri,
                        job_id: Some("t".into()),
                        listen_fd: None,
                        secret: test_secret(),
                    };
                    let mut b = Bootstrap::connect(&launch, Duration::from_secs(10)).unwrap();
                    let all = b.allgather(format!("r{r}").as_bytes()).unwrap();
                    b.barrier().unwrap();
                    all
                })
            })
            .collect();
        for h in handles {
            let all = h.join().unwrap();
            assert_eq!(all, vec![b"r0".to_vec(), b"r1".to_vec(), b"r2".to_vec()]);
        }
    }

    fn star(uri: &str, jobs: &[&str], timeout: Duration) -> Vec<Result<Vec<Vec<u8>>>> {
        let n = jobs.len();
        let handles: Vec<_> = jobs
            .iter()
            .enumerate()
            .map(|(r, job)| {
                let launch = Launch {
                    rank: r,
                    size: n,
                    uri: uri.to_string(),
                    job_id: Some(job.to_string()),
                    listen_fd: None,
                    secret: test_secret(),
                };
                std::thread::spawn(move || {
                    let mut b = Bootstrap::connect(&launch, timeout)?;
                    let all = b.allgather(format!("r{r}").as_bytes())?;
                    b.barrier()?;
                    Ok(all)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    }

    #[test]
    fn file_rendezvous() {
        let dir = std::env::temp_dir().join(format!("hcomm-bs-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let uri = format!("file://{}", dir.display());
        // A stale file from a crashed job must not stop the new one.
        let stale = file::address_file(&dir, Some("fj"), &uri, 0);
        file::publish(&stale, "127.0.0.1:1").unwrap();
        for res in star(&uri, &["fj", "fj", "fj", "fj"], Duration::from_secs(20)) {
            let all = res.unwrap();
            assert_eq!(all.len(), 4);
            assert_eq!(all[3], b"r3".to_vec());
        }
        // Rank 0 removed its address file once everyone had joined.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stranger_is_rejected() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let uri = format!("tcp://127.0.0.1:{port}");
        let res = star(&uri, &["jobA", "jobB"], Duration::from_millis(1500));
        let e0 = res[0].as_ref().unwrap_err();
        assert!(e0.msg.contains("ranks 1 never arrived"), "{}", e0.msg);
        let e1 = res[1].as_ref().unwrap_err();
        assert!(e1.msg.contains("could not reach rank 0"), "{}", e1.msg);
    }

    #[test]
    fn different_secrets_are_a_clear_error() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let uri = format!("tcp://127.0.0.1:{port}");
        let t0 = Instant::now();
        let handles: Vec<_> = [b"secret-of-rank-zero!", b"secret-of-rank-one!!"]
            .into_iter()
            .enumerate()
            .map(|(r, key)| {
                let launch = Launch {
                    rank: r,
                    size: 2,
                    uri: uri.clone(),
                    job_id: None,
                    listen_fd: None,
                    secret: Secret::from_text(key, "test").unwrap(),
                };
                std::thread::spawn(move || {
                    Bootstrap::connect(&launch, Duration::from_millis(1500)).err()
                })
            })
            .collect();
        let errs: Vec<Error> = handles
            .into_iter()
            .map(|h| h.join().unwrap().expect("must fail"))
            .collect();
        assert!(errs[1].msg.contains("secrets differ"), "{}", errs[1].msg);
        assert!(errs[1].msg.contains(&uri), "{}", errs[1].msg);
        assert!(
            errs[0].msg.contains("ranks 1 never arrived") && errs[0].msg.contains("secrets differ"),
            "{}",
            errs[0].msg
        );
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn missing_rank_is_named() {
        let launch = Launch {
            rank: 0,
            size: 3,
            uri: "tcp://127.0.0.1:0".into(),
            job_id: None,
            listen_fd: None,
            secret: test_secret(),
        };
        let e = Bootstrap::connect(&launch, Duration::from_millis(200))
            .err()
            .unwrap();
        assert!(e.msg.contains("ranks 1,2 never arrived"), "{}", e.msg);
    }
}
