//! Entry points for fuzzing every parser of untrusted bytes and strings.
//!
//! Each function takes arbitrary bytes, runs one parser on them and asserts its properties:
//! it never panics (bounds are checked), and where it is cheap, what parses re-encodes to what
//! was parsed. The `cargo fuzz` targets in `fuzz/fuzz_targets/` are one line each, calling the
//! function of the same name; `core/tests/fuzz_corpus.rs` replays every input checked in under
//! `fuzz/corpus/<target>/` through the same function, so the corpus is a regression suite that
//! plain `cargo test` runs. [`TARGETS`] lists them for both.
//!
//! What reaches a parser: bytes from a TCP peer or a stranger on a listening port (frame
//! prefix and header, connection hellos, the bootstrap star's messages and rank table), the
//! address-exchange blobs of the world setup, the authentication handshake's messages, and
//! environment variables (`HCOMM_URI`, `HCOMM_SOCKET_IFNAME`, byte sizes, flags,
//! `HCOMM_TRANSPORT`). Strings are taken from the bytes only when they are UTF-8, because the
//! environment is read with `std::env::var`.

use crate::bootstrap::net::IfSpec;
use crate::bootstrap::{self, Rendezvous};
use crate::frame::{FrameHeader, Kind, HEADER_BYTES};

/// A fuzz target's entry point: arbitrary bytes in, a panic on a violated property.
pub type Entry = fn(&[u8]);

/// `(name, entry point)` of every fuzz target, in the order of `fuzz/Cargo.toml`.
pub const TARGETS: &[(&str, Entry)] = &[
    ("frame_header", frame_header),
    ("tcp_stream", tcp_stream),
    ("tcp_reorder", tcp_reorder),
    ("tcp_hello", tcp_hello),
    ("bootstrap_hello", bootstrap_hello),
    ("bootstrap_table", bootstrap_table),
    ("peer_info", peer_info),
    ("uri", uri),
    ("socket_ifname", socket_ifname),
    ("param_value", param_value),
    ("auth_messages", auth_messages),
];

/// The 128-byte frame header: bytes → header → bytes is the identity; a header with a
/// signature rebuilds to one with the same signature; every accessor is total.
pub fn frame_header(data: &[u8]) {
    let Some(h) = FrameHeader::from_bytes(data) else {
        assert!(data.len() < HEADER_BYTES);
        return;
    };
    assert_eq!(
        &h.to_bytes()[..],
        &data[..HEADER_BYTES],
        "header round trip"
    );
    let _ = (h.msg_len(), h.p2p_mpi_bytes(), h.is_p2p());
    if let Some(k) = Kind::from_u8(h.kind) {
        assert_eq!(k as u8, h.kind);
        assert!(!k.mpi_name().is_empty());
    }
    match h.signature() {
        Some(sig) => {
            assert!(!sig.to_string().is_empty());
            let again = FrameHeader::new(&sig, h.comm_id, h.seq, h.tag, h.src);
            assert_eq!(again.signature(), Some(sig), "signature round trip");
        }
        None => assert!(
            h.magic != crate::frame::MAGIC
                || h.version != crate::frame::VERSION
                || Kind::from_u8(h.kind).is_none()
        ),
    }
}

/// Arbitrary bytes on the sockets of a TCP link (see [`crate::transport::tcp::fuzz::raw_stream`]).
pub fn tcp_stream(data: &[u8]) {
    crate::transport::tcp::fuzz::raw_stream(data)
}

/// Well-formed TCP frames cut and interleaved over several sockets arrive intact and in order.
pub fn tcp_reorder(data: &[u8]) {
    crate::transport::tcp::fuzz::reordered_frames(data)
}

/// The TCP transport's connection hello.
pub fn tcp_hello(data: &[u8]) {
    crate::transport::tcp::fuzz::hello_message(data)
}

/// The bootstrap star's hello (`magic, job length, job, rank`): never panics; what parses
/// re-encodes to a prefix of the input.
pub fn bootstrap_hello(data: &[u8]) {
    if let Some((magic, job, rank)) = bootstrap::tcp::parse_hello(data) {
        let mut m = magic.to_le_bytes().to_vec();
        m.extend_from_slice(&(job.len() as u32).to_le_bytes());
        m.extend_from_slice(job.as_bytes());
        m.extend_from_slice(&(rank as u32).to_le_bytes());
        assert!(data.starts_with(&m), "bootstrap hello round trip");
    }
}

/// The rank table rank 0 sends back from an allgather (`(len, bytes)` per rank): for each
/// rank count the first byte picks, what unpacks repacks to exactly the input.
pub fn bootstrap_table(data: &[u8]) {
    let Some((&n, table)) = data.split_first() else {
        return;
    };
    if let Some(blobs) = bootstrap::tcp::unpack(table, n as usize) {
        assert_eq!(blobs.len(), n as usize);
        let mut packed = Vec::new();
        for b in &blobs {
            packed.extend_from_slice(&(b.len() as u32).to_le_bytes());
            packed.extend_from_slice(b);
        }
        assert_eq!(packed, table, "rank table round trip");
    }
}

/// One rank's blob of the world setup's address exchange.
pub fn peer_info(data: &[u8]) {
    let _ = crate::runtime::parse_peer_info(data);
}

/// `HCOMM_URI`: what parses prints back to an equal rendezvous; an error says what was expected.
pub fn uri(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    match bootstrap::parse_uri(s) {
        Ok(rv) => {
            let text = match &rv {
                Rendezvous::Tcp { host, port } => {
                    assert!(!host.is_empty());
                    format!("tcp://{host}:{port}")
                }
                Rendezvous::File { dir } => {
                    assert!(dir.is_absolute());
                    format!("file://{}", dir.display())
                }
            };
            assert_eq!(bootstrap::parse_uri(&text).ok(), Some(rv), "{text}");
        }
        Err(e) => assert!(e.msg.contains("expected"), "{}", e.msg),
    }
}

/// `HCOMM_SOCKET_IFNAME` (NCCL's grammar), then an interface name to match (after a NUL in
/// the input): names are trimmed, non-empty and comma-free, and every listed name is allowed
/// exactly when the list is not an exclusion list.
pub fn socket_ifname(data: &[u8]) {
    let (spec, name) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let (Ok(spec), Ok(name)) = (std::str::from_utf8(spec), std::str::from_utf8(name)) else {
        return;
    };
    let p = IfSpec::parse(spec);
    for n in &p.names {
        assert!(!n.is_empty() && !n.contains(',') && n.trim() == n, "{n:?}");
        assert_eq!(p.matches(n), !p.exclude, "{spec:?} and {n:?}");
    }
    let _ = p.matches(name);
}

/// Values of the numeric and flag variables: byte sizes (`4096`, `64K`, `1M`, `2G`), flags and
/// `HCOMM_TRANSPORT`. A byte size prints back to itself, and a suffix multiplies exactly.
pub fn param_value(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(v) = crate::param::parse_bytes(s) {
        assert_eq!(crate::param::parse_bytes(&v.to_string()), Some(v));
        let t = s.trim();
        let unit = match t.chars().last() {
            Some('k' | 'K') => 1usize << 10,
            Some('m' | 'M') => 1 << 20,
            Some('g' | 'G') => 1 << 30,
            _ => 1,
        };
        if unit > 1 {
            let base = crate::param::parse_bytes(&t[..t.len() - 1]);
            assert_eq!(base.and_then(|b| b.checked_mul(unit)), Some(v), "{s:?}");
        }
    }
    let _ = crate::param::truthy(s);
    if let Ok(m) = crate::transport::tcp::Mode::parse(s) {
        assert_eq!(crate::transport::tcp::Mode::parse(m.as_str()).ok(), Some(m));
    }
}

/// The authentication handshake's messages (offer, answer, proof, welcome, length prefix):
/// every parser runs on the input; what parses re-encodes to exactly the input.
pub fn auth_messages(data: &[u8]) {
    use crate::auth;
    if let Some((nonce, ctx)) = auth::parse_offer(data) {
        assert_eq!(auth::encode_offer(&nonce, ctx), data, "offer round trip");
    }
    if let Some((nonce, mac, ctx)) = auth::parse_answer(data) {
        assert_eq!(
            auth::encode_answer(&nonce, &mac, ctx),
            data,
            "answer round trip"
        );
    }
    if let Some(mac) = auth::parse_proof(data) {
        assert_eq!(auth::encode_proof(&mac), data, "proof round trip");
    }
    let _ = auth::parse_welcome(data);
    if let Some(prefix) = data.get(..4) {
        if let Some(n) = auth::parse_length(prefix.try_into().expect("4 bytes")) {
            assert!(n <= auth::MAX_MESSAGE);
        }
    }
}
