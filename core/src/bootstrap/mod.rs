//! Bootstrap: who are my peers and how do I reach them.
//!
//! Sources: the environment contract of a launcher ([`contract`]) and the rendezvous URI:
//! - `tcp://host:port`: rank 0 listens there (on an inherited socket when the launcher made
//!   one), every other rank connects, with retries until the bootstrap timeout;
//! - `file:///shared/dir`: rank 0 listens on an ephemeral port and publishes its address in a
//!   file of that directory ([`file`]); the others read it and connect as with `tcp://`.
//!
//! The result is a star of TCP connections through rank 0 that offers `allgather` of small
//! blobs and `barrier` — enough to exchange endpoint addresses (host identity, the TCP
//! transport's listening address) and to order shared-memory setup. Preload mode will get the
//! same interface from the host MPI. [`net`] chooses the network interface
//! (`HCOMM_SOCKET_IFNAME`) for `file://` and for the TCP transport. Every connection of the
//! star is authenticated with the job secret ([`crate::auth`]).

pub mod contract;
pub mod file;
pub mod net;
pub mod pm;
pub mod pmi;
pub mod pmix;
pub(crate) mod tcp;

pub use tcp::Bootstrap;

use crate::error::{Class, Error, Result};

/// The collective exchange the world setup needs: an allgather of small address blobs and a
/// barrier. hcomm's own [`Bootstrap`] provides it standalone; the preload interposer provides
/// it over the host MPI's world.
pub trait Exchange {
    /// Every rank contributes `blob`; every rank gets all blobs in rank order.
    fn allgather(&mut self, blob: &[u8]) -> Result<Vec<Vec<u8>>>;
    fn barrier(&mut self) -> Result<()>;
}

impl Exchange for Bootstrap {
    fn allgather(&mut self, blob: &[u8]) -> Result<Vec<Vec<u8>>> {
        Bootstrap::allgather(self, blob)
    }
    fn barrier(&mut self) -> Result<()> {
        Bootstrap::barrier(self)
    }
}

/// What a launcher told this process.
#[derive(Clone, Debug)]
pub struct Launch {
    pub rank: usize,
    pub size: usize,
    pub uri: String,
    pub job_id: Option<String>,
    pub listen_fd: Option<i32>,
    /// The job secret that authenticates every TCP connection ([`crate::auth`]).
    pub secret: crate::auth::Secret,
}

fn env_usize(name: &str) -> Result<Option<usize>> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse::<usize>().map(Some).map_err(|_| {
            Error::new(
                Class::Arg,
                format!("{name}={v:?} is not a non-negative integer"),
            )
        }),
        Err(_) => Ok(None),
    }
}

impl Launch {
    /// Reads the contract; `None` when the process was started without a launcher
    /// (a singleton: `MPI_COMM_WORLD` of size 1).
    pub fn from_env() -> Result<Option<Launch>> {
        let (rank, size) = match (
            env_usize(contract::ENV_RANK)?,
            env_usize(contract::ENV_SIZE)?,
        ) {
            (None, None) => return Ok(None),
            (Some(r), Some(s)) => (r, s),
            _ => {
                return Err(Error::new(
                    Class::Arg,
                    format!(
                        "{} and {} must be set together",
                        contract::ENV_RANK,
                        contract::ENV_SIZE
                    ),
                ))
            }
        };
        if size == 0 || rank >= size {
            return Err(Error::new(
                Class::Arg,
                format!(
                    "{}={rank} is not below {}={size}",
                    contract::ENV_RANK,
                    contract::ENV_SIZE
                ),
            ));
        }
        let uri = std::env::var(contract::ENV_URI).unwrap_or_default();
        if size > 1 && uri.is_empty() {
            return Err(Error::new(
                Class::Arg,
                format!(
                    "{} is not set: ranks need a rendezvous address (tcp://host:port or file:///shared/dir)",
                    contract::ENV_URI
                ),
            ));
        }
        let listen_fd = if rank == 0 {
            env_usize(contract::ENV_BOOTSTRAP_FD)?.map(|f| f as i32)
        } else {
            None
        };
        let secret = if size > 1 {
            crate::auth::Secret::from_env().map_err(|e| e.context("job secret"))?
        } else {
            crate::auth::Secret::none()
        };
        if size > 1 && rank == 0 && secret.is_none() {
            crate::warn!(
                "no job secret ({} or {}): this job's TCP connections are not authenticated, any process that can reach {uri} or the ranks' ports may join; see \"Security\" in docs/ARCHITECTURE.md",
                crate::auth::ENV_SECRET_FILE,
                crate::auth::ENV_SECRET
            );
        }
        Ok(Some(Launch {
            rank,
            size,
            uri,
            job_id: std::env::var(contract::ENV_JOB_ID)
                .ok()
                .filter(|j| !j.is_empty()),
            listen_fd,
            secret,
        }))
    }

    /// Whether every rank must be on this host's loopback: the rendezvous is `tcp://` on a
    /// loopback address (a rank elsewhere could not reach it). The TCP transport then listens
    /// on loopback too.
    pub fn loopback_only(&self) -> bool {
        match parse_uri(&self.uri) {
            Ok(Rendezvous::Tcp { host, .. }) => {
                host == "localhost"
                    || host
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
            }
            _ => false,
        }
    }
}

/// A parsed `HCOMM_URI`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rendezvous {
    /// `tcp://host:port`: rank 0 listens at host:port.
    Tcp { host: String, port: u16 },
    /// `file:///dir`: rank 0 publishes its address in `dir`.
    File { dir: std::path::PathBuf },
}

fn bad_uri(uri: &str) -> Error {
    Error::new(
        Class::Arg,
        format!(
            "HCOMM_URI={uri:?} is not a rendezvous address: expected tcp://host:port or file:///shared/dir"
        ),
    )
}

/// `tcp://host:port` or `file:///absolute/dir`.
pub fn parse_uri(uri: &str) -> Result<Rendezvous> {
    if let Some(path) = uri.strip_prefix("file://") {
        // file://host/dir is not supported: the directory must be a local (shared) path.
        if !path.starts_with('/') || path.trim_matches('/').is_empty() {
            return Err(bad_uri(uri));
        }
        return Ok(Rendezvous::File { dir: path.into() });
    }
    let (host, port) = parse_tcp_uri(uri)?;
    Ok(Rendezvous::Tcp { host, port })
}

/// `tcp://host:port` → (host, port).
pub fn parse_tcp_uri(uri: &str) -> Result<(String, u16)> {
    let bad = || bad_uri(uri);
    let rest = uri.strip_prefix("tcp://").ok_or_else(bad)?;
    let (host, port) = rest.rsplit_once(':').ok_or_else(bad)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(bad());
    }
    let port: u16 = port.parse().map_err(|_| bad())?;
    Ok((host.to_string(), port))
}

/// This host's identity: hostname plus boot id, so two containers with one hostname on
/// different kernels are not mistaken for one host.
pub fn host_identity() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    format!("{}/{}", crate::log::hostname(), boot.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        assert_eq!(
            parse_tcp_uri("tcp://127.0.0.1:4000").unwrap(),
            ("127.0.0.1".into(), 4000)
        );
        assert_eq!(parse_tcp_uri("tcp://[::1]:5").unwrap(), ("::1".into(), 5));
        assert_eq!(
            parse_uri("tcp://node1:29500").unwrap(),
            Rendezvous::Tcp {
                host: "node1".into(),
                port: 29500
            }
        );
        assert_eq!(
            parse_uri("file:///shared/rv").unwrap(),
            Rendezvous::File {
                dir: "/shared/rv".into()
            }
        );
        assert_eq!(
            parse_uri("file:///tmp/x/").unwrap(),
            Rendezvous::File {
                dir: "/tmp/x/".into()
            }
        );
        for bad in [
            "",
            "tcp://",
            "tcp://host",
            "tcp://:1",
            "udp://h:1",
            "tcp://h:99999",
            "file://",
            "file:///",
            "file://host/dir",
            "file:relative",
        ] {
            let e = parse_uri(bad).unwrap_err();
            assert_eq!(e.class, Class::Arg, "{bad}");
            assert!(
                e.msg
                    .contains("expected tcp://host:port or file:///shared/dir"),
                "{bad}: {}",
                e.msg
            );
        }
    }
}
