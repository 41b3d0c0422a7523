//! PMI-1 and PMI-2 clients, spoken natively over the launcher's socket (no C library).
//!
//! Both are the short text protocols of MPICH's `src/pmi/` (Hydra serves both) and Slurm's
//! `mpi/pmi2` plugin. The launcher hands every task a connected socket in `PMI_FD` (Hydra,
//! `srun --mpi=pmi2`) or an address in `PMI_PORT` (Hydra's `-pmi-port` mode, with `PMI_ID`).
//!
//! - **PMI-1**: one line per message, `cmd=NAME key=value ...\n`. We use `init`, `get_maxes`,
//!   `get_my_kvsname`, `put`, `barrier_in`, `get`, `finalize`; rank and size come from
//!   `PMI_RANK`/`PMI_SIZE` (or, with `PMI_PORT`, from the server's answer to `initack`).
//! - **PMI-2**: after a PMI-1 style `cmd=init pmi_version=2 pmi_subversion=0` line, every
//!   message is a 6-character decimal length and `cmd=NAME;key=value;...;` (a `;` inside a
//!   value is doubled). We use `fullinit`, `job-getid`, `kvs-put`, `kvs-fence`, `kvs-get`,
//!   `info-getjobattr` (for `PMI_process_mapping`) and `finalize`.
//!
//! Which one: `HCOMM_PMI=1|2` when set; else PMI-2 when the launcher is Slurm's pmi2 plugin
//! (it sets `PMI_JOBID`), else PMI-1 (Hydra's default). Every read is bounded by the bootstrap
//! timeout, so a launcher that stops answering (a task that never started) is an error that
//! names the call, never a silent hang.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use super::pm::ProcessManager;
use crate::error::{Class, Error, Result};

/// PMI-2's limit on a value (`PMI2_MAX_VALLEN`); PMI-1 asks the server (`get_maxes`).
const PMI2_MAX_VALLEN: usize = 1024;

/// Joins the PMI server named by `PMI_FD`/`PMI_PORT`; `None` when none started us.
pub fn connect() -> Result<Option<Box<dyn ProcessManager>>> {
    let fd = std::env::var("PMI_FD").ok().filter(|s| !s.is_empty());
    let port = std::env::var("PMI_PORT").ok().filter(|s| !s.is_empty());
    if fd.is_none() && port.is_none() {
        return Ok(None);
    }
    let version = match std::env::var("HCOMM_PMI").ok().as_deref() {
        Some("1") => 1,
        Some("2") => 2,
        Some(v) if !v.is_empty() => {
            return Err(Error::new(
                Class::Arg,
                format!("HCOMM_PMI={v:?}: expected 1 or 2"),
            ))
        }
        _ if std::env::var_os("PMI_JOBID").is_some() => 2,
        _ => 1,
    };
    let timeout = Duration::from_secs(crate::param::bootstrap_timeout_secs().unwrap_or(60) as u64);
    let wire = Wire::open(fd.as_deref(), port.as_deref(), timeout)?;
    Ok(Some(if version == 2 {
        Box::new(Pmi2::init(wire)?)
    } else {
        let ids = match port {
            Some(_) => None,
            None => Some((env_usize("PMI_RANK")?, env_usize("PMI_SIZE")?)),
        };
        Box::new(Pmi1::init(wire, ids)?)
    }))
}

/// The socket to the PMI server, with a read buffer and a deadline per answer.
struct Wire {
    fd: OwnedFd,
    buf: Vec<u8>,
    timeout: Duration,
    what: &'static str,
}

fn env_usize(name: &str) -> Result<usize> {
    let v = std::env::var(name).map_err(|_| {
        Error::other(format!(
            "{name} is not set, but PMI_FD is: the launcher's PMI environment is incomplete"
        ))
    })?;
    v.trim()
        .parse()
        .map_err(|_| Error::other(format!("{name}={v:?} is not a number")))
}

impl Wire {
    fn open(fd: Option<&str>, port: Option<&str>, timeout: Duration) -> Result<Wire> {
        let owned = match (fd, port) {
            (Some(fd), _) => {
                let n: i32 = fd.trim().parse().map_err(|_| {
                    Error::new(Class::Arg, format!("PMI_FD={fd:?} is not a descriptor"))
                })?;
                // SAFETY: fcntl(F_GETFD) only inspects the descriptor table; it tells whether
                // `n` is open before anything takes ownership of it.
                if n < 0 || unsafe { libc::fcntl(n, libc::F_GETFD) } < 0 {
                    return Err(Error::other(format!(
                        "PMI_FD={n} is not an open descriptor: the launcher's PMI socket was not inherited (a wrapper script may have closed it)"
                    )));
                }
                // SAFETY: the launcher handed this descriptor to this process for PMI alone;
                // it is open (checked above) and nothing else in the process owns it.
                unsafe { OwnedFd::from_raw_fd(n) }
            }
            (None, Some(p)) => {
                let s = std::net::TcpStream::connect(p.trim()).map_err(|e| {
                    Error::other(format!("PMI_PORT={p}: cannot connect to the launcher: {e}"))
                })?;
                OwnedFd::from(s)
            }
            (None, None) => return Err(Error::intern("no PMI socket")),
        };
        // Programs this rank starts must not inherit the job's PMI socket.
        // SAFETY: F_SETFD on a descriptor this function owns.
        unsafe { libc::fcntl(owned.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
        Ok(Wire {
            fd: owned,
            buf: Vec::new(),
            timeout,
            what: "PMI",
        })
    }

    fn send(&mut self, msg: &[u8]) -> Result<()> {
        let mut done = 0;
        while done < msg.len() {
            let rest = &msg[done..];
            // SAFETY: `rest` is a live slice; MSG_NOSIGNAL turns a launcher that went away
            // into EPIPE instead of SIGPIPE killing the rank.
            let n = unsafe {
                libc::send(
                    self.fd.as_raw_fd(),
                    rest.as_ptr().cast(),
                    rest.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // Not a socket (a pipe pair): plain write.
                    Some(libc::ENOTSOCK) => {
                        // SAFETY: as above, a live slice on an owned descriptor.
                        let w = unsafe {
                            libc::write(self.fd.as_raw_fd(), rest.as_ptr().cast(), rest.len())
                        };
                        if w < 0 {
                            return Err(self.io_error("write", std::io::Error::last_os_error()));
                        }
                        done += w as usize;
                        continue;
                    }
                    _ => return Err(self.io_error("write", e)),
                }
            }
            done += n as usize;
        }
        Ok(())
    }

    fn io_error(&self, op: &str, e: std::io::Error) -> Error {
        Error::other(format!(
            "{} {op} on the launcher's socket failed: {e} (the launcher may have ended the job)",
            self.what
        ))
    }

    /// Reads until `self.buf` holds at least `n` bytes.
    fn fill(&mut self, n: usize, waiting_for: &str) -> Result<()> {
        let deadline = Instant::now() + self.timeout;
        while self.buf.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::other(format!(
                    "{}: no answer to {waiting_for} from the launcher within {} s (HCOMM_BOOTSTRAP_TIMEOUT): another task may have failed to start or to reach MPI_Init",
                    self.what,
                    self.timeout.as_secs()
                )));
            }
            let mut p = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().min(1000) as i32;
            // SAFETY: one valid pollfd for the duration of the call.
            let r = unsafe { libc::poll(&mut p, 1, ms.max(1)) };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(self.io_error("poll", e));
            }
            if r == 0 {
                continue;
            }
            let mut chunk = [0u8; 4096];
            // SAFETY: reads at most chunk.len() bytes into a live stack buffer.
            let n =
                unsafe { libc::read(self.fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(self.io_error("read", e));
            }
            if n == 0 {
                return Err(Error::other(format!(
                    "{}: the launcher closed the connection while this rank waited for {waiting_for} (the job is being ended)",
                    self.what
                )));
            }
            self.buf.extend_from_slice(&chunk[..n as usize]);
        }
        Ok(())
    }

    /// One `\n`-terminated line (without the newline).
    fn line(&mut self, waiting_for: &str) -> Result<String> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return Ok(String::from_utf8_lossy(&line[..i]).into_owned());
            }
            let want = self.buf.len() + 1;
            self.fill(want, waiting_for)?;
        }
    }

    /// One PMI-2 message: 6 characters of decimal length, then the command.
    fn message(&mut self, waiting_for: &str) -> Result<String> {
        self.fill(6, waiting_for)?;
        let head = String::from_utf8_lossy(&self.buf[..6]).into_owned();
        let len: usize = head.trim().parse().map_err(|_| {
            Error::other(format!(
                "PMI-2: malformed message length {head:?} from the launcher"
            ))
        })?;
        self.fill(6 + len, waiting_for)?;
        let msg: Vec<u8> = self.buf.drain(..6 + len).skip(6).collect();
        Ok(String::from_utf8_lossy(&msg).into_owned())
    }
}

// ---------------------------------------------------------------------------------------------
// PMI-1

/// `cmd=NAME a=1 b=2` → pairs. A `msg=` value may hold spaces: it runs until the next word
/// that looks like `key=` (Hydra answers `cmd=get_result rc=0 msg=success value=...`).
pub(crate) fn parse_v1(line: &str) -> Vec<(String, String)> {
    let is_key = |w: &str| {
        w.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
    };
    let mut out: Vec<(String, String)> = Vec::new();
    let mut in_msg = false;
    for word in line.split_whitespace() {
        if in_msg && !is_key(word) {
            let last = &mut out.last_mut().expect("msg pair").1;
            last.push(' ');
            last.push_str(word);
            continue;
        }
        let (k, v) = word.split_once('=').unwrap_or((word, ""));
        in_msg = k == "msg" || k == "errmsg";
        out.push((k.to_string(), v.to_string()));
    }
    out
}

fn field<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Checks an answer's `cmd` and `rc`; returns its pairs.
fn expect(
    what: &str,
    pairs: Vec<(String, String)>,
    cmd: &str,
    request: &str,
) -> Result<Vec<(String, String)>> {
    if field(&pairs, "cmd") != Some(cmd) {
        return Err(Error::other(format!(
            "{what}: the launcher answered {request} with {:?} instead of {cmd}",
            field(&pairs, "cmd").unwrap_or("nothing")
        )));
    }
    match field(&pairs, "rc") {
        None | Some("0") => Ok(pairs),
        Some(rc) => Err(Error::other(format!(
            "{what}: {request} failed (rc={rc}{})",
            field(&pairs, "msg")
                .or(field(&pairs, "errmsg"))
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ))),
    }
}

struct Pmi1 {
    wire: Wire,
    rank: usize,
    size: usize,
    kvsname: String,
    vallen_max: usize,
}

impl Pmi1 {
    /// `ids`: rank and size from the environment (`PMI_FD`); `None` asks the server
    /// (`PMI_PORT`).
    fn init(mut wire: Wire, ids: Option<(usize, usize)>) -> Result<Pmi1> {
        wire.what = "PMI-1";
        let (rank, size) = if let Some(ids) = ids {
            ids
        } else {
            // Hydra's -pmi-port mode: identify with PMI_ID, the server tells rank and size.
            let id = env_usize("PMI_ID")?;
            wire.send(format!("cmd=initack pmiid={id}\n").as_bytes())?;
            expect(
                "PMI-1",
                parse_v1(&wire.line("initack")?),
                "initack",
                "initack",
            )?;
            let mut rank = None;
            let mut size = None;
            while rank.is_none() || size.is_none() {
                let p = parse_v1(&wire.line("initack")?);
                match (field(&p, "cmd"), p.get(1)) {
                    (Some("set"), Some((k, v))) if k == "rank" => rank = v.parse().ok(),
                    (Some("set"), Some((k, v))) if k == "size" => size = v.parse().ok(),
                    _ => {}
                }
            }
            (rank.unwrap_or(0), size.unwrap_or(1))
        };
        if size == 0 || rank >= size {
            return Err(Error::other(format!(
                "PMI-1: rank {rank} is not below size {size}"
            )));
        }
        wire.send(b"cmd=init pmi_version=1 pmi_subversion=1\n")?;
        let a = parse_v1(&wire.line("init")?);
        expect("PMI-1", a, "response_to_init", "init")?;
        wire.send(b"cmd=get_maxes\n")?;
        let a = expect(
            "PMI-1",
            parse_v1(&wire.line("get_maxes")?),
            "maxes",
            "get_maxes",
        )?;
        let vallen_max = field(&a, "vallen_max")
            .and_then(|v| v.parse().ok())
            .unwrap_or(256usize);
        wire.send(b"cmd=get_my_kvsname\n")?;
        let a = expect(
            "PMI-1",
            parse_v1(&wire.line("get_my_kvsname")?),
            "my_kvsname",
            "get_my_kvsname",
        )?;
        let kvsname = field(&a, "kvsname").unwrap_or_default().to_string();
        if kvsname.is_empty() {
            return Err(Error::other("PMI-1: the launcher named no key-value space"));
        }
        Ok(Pmi1 {
            wire,
            rank,
            size,
            kvsname,
            vallen_max,
        })
    }

    fn get_raw(&mut self, key: &str) -> Result<Option<String>> {
        self.wire
            .send(format!("cmd=get kvsname={} key={key}\n", self.kvsname).as_bytes())?;
        let a = parse_v1(&self.wire.line("get")?);
        if field(&a, "cmd") != Some("get_result") {
            return Err(Error::other(format!(
                "PMI-1: the launcher answered get with {:?}",
                field(&a, "cmd").unwrap_or("nothing")
            )));
        }
        Ok(match (field(&a, "rc"), field(&a, "found")) {
            (Some("0") | None, Some("TRUE" | "true") | None) => field(&a, "value").map(Into::into),
            _ => None,
        })
    }
}

impl ProcessManager for Pmi1 {
    fn name(&self) -> &'static str {
        "PMI-1"
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn job_name(&self) -> &str {
        &self.kvsname
    }
    fn max_value_len(&self) -> usize {
        self.vallen_max.saturating_sub(1).max(64)
    }
    fn put(&mut self, key: &str, value: &str) -> Result<()> {
        self.wire.send(
            format!("cmd=put kvsname={} key={key} value={value}\n", self.kvsname).as_bytes(),
        )?;
        expect(
            "PMI-1",
            parse_v1(&self.wire.line("put")?),
            "put_result",
            "put",
        )?;
        Ok(())
    }
    fn fence(&mut self) -> Result<()> {
        self.wire.send(b"cmd=barrier_in\n")?;
        expect(
            "PMI-1",
            parse_v1(&self.wire.line("barrier_in")?),
            "barrier_out",
            "barrier_in",
        )?;
        Ok(())
    }
    fn get(&mut self, rank: usize, key: &str) -> Result<String> {
        self.get_raw(key)?
            .ok_or_else(|| Error::other(format!("PMI-1: rank {rank} published no {key}")))
    }
    fn nodes(&mut self) -> Option<Vec<usize>> {
        let map = self.get_raw("PMI_process_mapping").ok()??;
        parse_process_mapping(&map, self.size)
    }
    fn finalize(&mut self) {
        if self.wire.send(b"cmd=finalize\n").is_ok() {
            let _ = self.wire.line("finalize");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// PMI-2

/// `cmd=NAME;a=1;b=x;;y;` → pairs (`;;` is a literal `;`).
pub(crate) fn parse_v2(msg: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = msg.chars().peekable();
    let flush = |cur: &mut String, out: &mut Vec<(String, String)>| {
        if !cur.is_empty() {
            match cur.split_once('=') {
                Some((k, v)) => out.push((k.to_string(), v.to_string())),
                None => out.push((cur.clone(), String::new())),
            }
            cur.clear();
        }
    };
    while let Some(c) = chars.next() {
        if c == ';' {
            if chars.peek() == Some(&';') {
                chars.next();
                cur.push(';');
            } else {
                flush(&mut cur, &mut out);
            }
        } else {
            cur.push(c);
        }
    }
    flush(&mut cur, &mut out);
    out
}

fn encode_v2(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut body = String::new();
    for (k, v) in pairs {
        body.push_str(k);
        body.push('=');
        body.push_str(&v.replace(';', ";;"));
        body.push(';');
    }
    let mut out = format!("{:<6}", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

struct Pmi2 {
    wire: Wire,
    rank: usize,
    size: usize,
    jobid: String,
}

impl Pmi2 {
    fn init(mut wire: Wire) -> Result<Pmi2> {
        wire.what = "PMI-2";
        wire.send(b"cmd=init pmi_version=2 pmi_subversion=0\n")?;
        let a = parse_v1(&wire.line("init")?);
        expect("PMI-2", a, "response_to_init", "init (version 2)")?;
        let rank = std::env::var("PMI_ID")
            .or_else(|_| std::env::var("PMI_RANK"))
            .unwrap_or_default();
        let mut req = vec![("cmd", "fullinit")];
        let jobid_env = std::env::var("PMI_JOBID").unwrap_or_default();
        if !jobid_env.is_empty() {
            req.push(("pmijobid", &jobid_env));
        }
        if !rank.is_empty() {
            req.push(("pmirank", &rank));
        }
        req.push(("threaded", "FALSE"));
        wire.send(&encode_v2(&req))?;
        let a = expect(
            "PMI-2",
            parse_v2(&wire.message("fullinit")?),
            "fullinit-response",
            "fullinit",
        )?;
        let num = |k: &str| -> Result<usize> {
            field(&a, k)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| Error::other(format!("PMI-2: fullinit-response has no {k}")))
        };
        let (rank, size) = (num("rank")?, num("size")?);
        if size == 0 || rank >= size {
            return Err(Error::other(format!(
                "PMI-2: rank {rank} is not below size {size}"
            )));
        }
        let mut me = Pmi2 {
            wire,
            rank,
            size,
            jobid: String::new(),
        };
        let a = me.call(&[("cmd", "job-getid")], "job-getid-response")?;
        me.jobid = field(&a, "jobid").unwrap_or_default().to_string();
        if me.jobid.is_empty() {
            me.jobid = jobid_env;
        }
        Ok(me)
    }

    fn call(&mut self, req: &[(&str, &str)], answer: &str) -> Result<Vec<(String, String)>> {
        self.wire.send(&encode_v2(req))?;
        let request = req.first().map(|(_, v)| *v).unwrap_or("?");
        expect(
            "PMI-2",
            parse_v2(&self.wire.message(request)?),
            answer,
            request,
        )
    }
}

impl ProcessManager for Pmi2 {
    fn name(&self) -> &'static str {
        "PMI-2"
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn job_name(&self) -> &str {
        &self.jobid
    }
    fn max_value_len(&self) -> usize {
        PMI2_MAX_VALLEN - 1
    }
    fn put(&mut self, key: &str, value: &str) -> Result<()> {
        self.call(
            &[("cmd", "kvs-put"), ("key", key), ("value", value)],
            "kvs-put-response",
        )?;
        Ok(())
    }
    fn fence(&mut self) -> Result<()> {
        self.call(&[("cmd", "kvs-fence")], "kvs-fence-response")?;
        Ok(())
    }
    fn get(&mut self, rank: usize, key: &str) -> Result<String> {
        let src = rank.to_string();
        let jobid = self.jobid.clone();
        let a = self.call(
            &[
                ("cmd", "kvs-get"),
                ("jobid", &jobid),
                ("srcid", &src),
                ("key", key),
            ],
            "kvs-get-response",
        )?;
        match (field(&a, "found"), field(&a, "value")) {
            (Some("TRUE" | "true"), Some(v)) => Ok(v.to_string()),
            _ => Err(Error::other(format!(
                "PMI-2: rank {rank} published no {key}"
            ))),
        }
    }
    fn nodes(&mut self) -> Option<Vec<usize>> {
        let a = self
            .call(
                &[("cmd", "info-getjobattr"), ("key", "PMI_process_mapping")],
                "info-getjobattr-response",
            )
            .ok()?;
        match field(&a, "found") {
            Some("TRUE" | "true") => parse_process_mapping(field(&a, "value")?, self.size),
            _ => None,
        }
    }
    fn finalize(&mut self) {
        let _ = self.call(&[("cmd", "finalize")], "finalize-response");
    }
}

/// MPICH's `PMI_process_mapping`, `(vector,(first_node,nodes,ranks_per_node),...)`: blocks of
/// ranks laid over nodes, repeated until every rank has a node. Returns each rank's node.
pub(crate) fn parse_process_mapping(s: &str, size: usize) -> Option<Vec<usize>> {
    let inner = s.trim().strip_prefix("(vector,")?.strip_suffix(')')?;
    let mut blocks = Vec::new();
    for part in inner.split("),") {
        let t = part.trim().trim_start_matches('(').trim_end_matches(')');
        let v: Vec<usize> = t
            .split(',')
            .map(|x| x.trim().parse().ok())
            .collect::<Option<_>>()?;
        if v.len() != 3 || v[1] == 0 || v[2] == 0 {
            return None;
        }
        blocks.push((v[0], v[1], v[2]));
    }
    if blocks.is_empty() {
        return None;
    }
    let mut nodes = Vec::with_capacity(size);
    // The mapping describes one pass; a job larger than it wraps around (MPICH's reading).
    'outer: loop {
        for &(first, count, per) in &blocks {
            for n in first..first + count {
                for _ in 0..per {
                    if nodes.len() == size {
                        break 'outer;
                    }
                    nodes.push(n);
                }
            }
        }
    }
    Some(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pmi1_lines() {
        let p = parse_v1("cmd=get_result rc=0 value=abc");
        assert_eq!(field(&p, "cmd"), Some("get_result"));
        assert_eq!(field(&p, "value"), Some("abc"));
        let p = parse_v1("cmd=get_result rc=0 msg=success value=abc");
        assert_eq!(field(&p, "value"), Some("abc"));
        assert_eq!(field(&p, "msg"), Some("success"));
        let p = parse_v1("cmd=put_result rc=-1 msg=duplicate key k 1");
        assert_eq!(field(&p, "rc"), Some("-1"));
        assert_eq!(field(&p, "msg"), Some("duplicate key k 1"));
        assert!(expect("PMI-1", p, "put_result", "put")
            .unwrap_err()
            .msg
            .contains("duplicate key"));
    }

    #[test]
    fn parses_and_encodes_pmi2() {
        let p = parse_v2("cmd=kvs-get-response;rc=0;found=TRUE;value=a;;b;");
        assert_eq!(field(&p, "cmd"), Some("kvs-get-response"));
        assert_eq!(field(&p, "value"), Some("a;b"));
        let e = encode_v2(&[("cmd", "kvs-put"), ("key", "k"), ("value", "x;y")]);
        let s = String::from_utf8(e).unwrap();
        assert_eq!(&s[6..], "cmd=kvs-put;key=k;value=x;;y;");
        assert_eq!(s[..6].trim().parse::<usize>().unwrap(), s.len() - 6);
        assert_eq!(field(&parse_v2(&s[6..]), "value"), Some("x;y"));
    }

    #[test]
    fn reads_process_mappings() {
        assert_eq!(
            parse_process_mapping("(vector,(0,2,2))", 4),
            Some(vec![0, 0, 1, 1])
        );
        assert_eq!(
            parse_process_mapping("(vector,(0,1,3),(1,1,1))", 4),
            Some(vec![0, 0, 0, 1])
        );
        // Round-robin (one rank per node, wrapping).
        assert_eq!(
            parse_process_mapping("(vector,(0,2,1))", 4),
            Some(vec![0, 1, 0, 1])
        );
        assert_eq!(parse_process_mapping("(vector,(0,0,1))", 2), None);
        assert_eq!(parse_process_mapping("garbage", 2), None);
    }

    /// A PMI-1 server on a socketpair, answering as Hydra does.
    #[test]
    fn pmi1_exchange_against_a_scripted_server() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let server = std::thread::spawn(move || {
            use std::io::{BufRead, BufReader, Write};
            let mut r = BufReader::new(b.try_clone().unwrap());
            let mut w = b;
            let mut kv = std::collections::HashMap::new();
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap() == 0 {
                    break;
                }
                let p = parse_v1(&line);
                let ans = match field(&p, "cmd").unwrap() {
                    "init" => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".into(),
                    "get_maxes" => "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=64".into(),
                    "get_my_kvsname" => "cmd=my_kvsname kvsname=kvs_42_0".into(),
                    "put" => {
                        kv.insert(
                            field(&p, "key").unwrap().to_string(),
                            field(&p, "value").unwrap().to_string(),
                        );
                        "cmd=put_result rc=0".into()
                    }
                    "barrier_in" => "cmd=barrier_out".into(),
                    "get" => match kv.get(field(&p, "key").unwrap()) {
                        Some(v) => format!("cmd=get_result rc=0 value={v}"),
                        None => "cmd=get_result rc=-1 msg=key not found".into(),
                    },
                    "finalize" => "cmd=finalize_ack".to_string(),
                    c => panic!("unexpected {c}"),
                };
                writeln!(w, "{ans}").unwrap();
            }
        });
        let wire = Wire {
            fd: OwnedFd::from(a),
            buf: Vec::new(),
            timeout: Duration::from_secs(5),
            what: "PMI",
        };
        // One rank of one: the exchange still goes through put, fence and get.
        let pm = Pmi1::init(wire, Some((0, 1))).unwrap();
        assert_eq!(pm.job_name(), "kvs_42_0");
        let mut ex = super::super::pm::PmExchange::new(Box::new(pm));
        use crate::bootstrap::Exchange;
        let blob: Vec<u8> = (0..200u8).collect(); // 400 hex digits: several pieces of 63
        assert_eq!(ex.allgather(&blob).unwrap(), vec![blob.clone()]);
        assert_eq!(ex.allgather(b"second").unwrap(), vec![b"second".to_vec()]);
        ex.barrier().unwrap();
        ex.pm().finalize();
        drop(ex);
        server.join().unwrap();
    }
}
