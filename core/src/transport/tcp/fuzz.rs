//! Fuzz entry points for the TCP transport's wire parsers (called through [`crate::fuzz`] by
//! the `cargo fuzz` targets in `fuzz/` and by the corpus replay test `core/tests/fuzz_corpus.rs`).
//!
//! A child module of `transport::tcp`, so it drives the real receive path — [`Reader::pump`]
//! with its staging buffer, prefix/header parsing and per-link reordering — without widening
//! the visibility of anything in the transport. The bytes reach the reader through a Unix
//! stream socket pair: `pump` only calls `read` on its socket, which behaves the same on a
//! stream socket of either family, so every short read and split header is the real code path.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{hello, parse_hello, PeerShared, Pumped, Reader, RxQueue, FRAME_MAGIC, HEAD, PREFIX};
use crate::frame::FrameHeader;

/// Largest payload the fuzzed readers accept: small, so absurd lengths are rejected cheaply.
const MAX_PAYLOAD: usize = 1024;
/// Bytes written to one socket at most (stays below the socket buffer: writes never block).
const MAX_PER_SOCKET: usize = 64 << 10;

/// A connection hello: must never panic, and whatever parses re-encodes to the same bytes.
pub fn hello_message(data: &[u8]) {
    if let Some((job, src, dst, index, n)) = parse_hello(data) {
        assert_eq!(hello(&job, src, dst, index, n), data, "hello round trip");
    }
}

/// One socket of a fuzzed link: the reader's end and the end the test writes to.
struct Pipe {
    reader: Reader,
    writer: Option<UnixStream>,
    written: usize,
    done: bool,
}

fn link(sockets: usize) -> (Arc<PeerShared>, Vec<Pipe>) {
    let shared = Arc::new(PeerShared {
        rank: 1,
        addr: SocketAddr::from(([127, 0, 0, 1], 9)),
        sockets,
        rx: Mutex::new(RxQueue::default()),
    });
    let pipes = (0..sockets)
        .map(|_| {
            let (a, b) = UnixStream::pair().expect("socketpair");
            a.set_nonblocking(true).expect("nonblocking");
            // SAFETY: `a` is an open stream socket we own; into_raw_fd hands its ownership to
            // the TcpStream, which only reads from it and closes it once.
            let sock = unsafe { TcpStream::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(a)) };
            Pipe {
                reader: Reader::new(Arc::new(sock), shared.clone(), MAX_PAYLOAD),
                writer: Some(b),
                written: 0,
                done: false,
            }
        })
        .collect();
    (shared, pipes)
}

impl Pipe {
    fn feed(&mut self, bytes: &[u8]) {
        if self.done {
            return;
        }
        let n = bytes.len().min(MAX_PER_SOCKET - self.written);
        if let Some(w) = &mut self.writer {
            w.write_all(&bytes[..n]).expect("write to the socket pair");
            self.written += n;
        }
        self.pump();
    }

    fn pump(&mut self) {
        if !self.done {
            match self.reader.pump() {
                Ok(Pumped::Open(_)) => {}
                Ok(Pumped::Eof) | Err(_) => self.done = true,
            }
        }
    }

    /// Closes the writing end and reads to the end of the stream.
    fn finish(&mut self) {
        self.writer = None;
        for _ in 0..4 {
            self.pump();
        }
        assert!(
            self.done,
            "a closed socket is seen as end of file or an error"
        );
    }
}

/// The invariants of a link's receive queue, whatever arrived.
fn check_queue(shared: &PeerShared) -> Vec<(FrameHeader, Vec<u8>)> {
    let q = shared.rx.lock();
    assert_eq!(
        q.next as usize,
        q.ready.len(),
        "frames are released in sequence order"
    );
    assert!(
        q.early.keys().all(|&s| s > q.next),
        "early frames are ahead of the next one"
    );
    q.ready
        .iter()
        .map(|f| {
            assert!(
                f.data.len() <= MAX_PAYLOAD,
                "payload within the fragment limit"
            );
            (f.hdr, f.data.clone())
        })
        .collect()
}

/// Arbitrary bytes on 1–3 sockets of one link. The input is a list of records
/// `[socket][length][bytes...]`: `length` bytes go to socket `socket % sockets`, and that
/// socket's reader pumps, so every split of headers and payloads across reads and every
/// interleaving of sockets is reachable. At the end every socket is closed. Must never panic;
/// what is delivered satisfies the queue's invariants.
pub fn raw_stream(data: &[u8]) {
    let Some((&cfg, mut rest)) = data.split_first() else {
        return;
    };
    let (shared, mut pipes) = link(1 + cfg as usize % 3);
    while rest.len() >= 2 {
        let s = rest[0] as usize % pipes.len();
        let n = (rest[1] as usize).min(rest.len() - 2);
        pipes[s].feed(&rest[2..2 + n]);
        rest = &rest[2 + n..];
    }
    for p in &mut pipes {
        p.finish();
    }
    check_queue(&shared);
}

/// One frame as `TcpLink::try_send` puts it on the wire: prefix (`seq`, magic, payload
/// length), header with `len` set, payload.
fn encode(seq: u64, hdr: &FrameHeader, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD + payload.len());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&FRAME_MAGIC.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let mut h = *hdr;
    h.len = payload.len() as u32;
    out.extend_from_slice(&h.to_bytes());
    debug_assert_eq!(out.len(), PREFIX + crate::frame::HEADER_BYTES);
    out.extend_from_slice(payload);
    out
}

/// Well-formed frames, delivered in a fuzzed order: the input chooses the number of sockets,
/// each frame's header bytes and payload, and how the sockets' byte streams are cut and
/// interleaved. Every frame must come out once, intact and in sequence order.
pub fn reordered_frames(data: &[u8]) {
    let Some((&cfg, mut rest)) = data.split_first() else {
        return;
    };
    let sockets = 1 + cfg as usize % 3;
    // Frames: [payload length][header seed][payload...].
    let mut frames: Vec<(FrameHeader, Vec<u8>)> = Vec::new();
    let mut streams: Vec<Vec<u8>> = vec![Vec::new(); sockets];
    while rest.len() >= 2 && frames.len() < 64 {
        let n = (rest[0] as usize).min(rest.len() - 2);
        let seed = rest[1];
        let payload = rest[2..2 + n].to_vec();
        rest = &rest[2 + n..];
        let mut hb = [seed; crate::frame::HEADER_BYTES];
        hb[0] = frames.len() as u8;
        let hdr = FrameHeader::from_bytes(&hb).expect("128 bytes");
        let seq = frames.len() as u64;
        streams[seq as usize % sockets].extend_from_slice(&encode(seq, &hdr, &payload));
        let mut want = hdr;
        want.len = payload.len() as u32;
        frames.push((want, payload));
    }
    // The remaining input cuts the streams: [socket][bytes to write].
    let (shared, mut pipes) = link(sockets);
    let mut at = vec![0usize; sockets];
    for pair in rest.chunks(2) {
        let s = pair[0] as usize % sockets;
        let n = (*pair.get(1).unwrap_or(&255) as usize + 1).min(streams[s].len() - at[s]);
        pipes[s].feed(&streams[s][at[s]..at[s] + n]);
        at[s] += n;
    }
    for s in 0..sockets {
        pipes[s].feed(&streams[s][at[s]..]);
        pipes[s].finish();
    }
    let got = check_queue(&shared);
    assert_eq!(got.len(), frames.len(), "every frame is delivered");
    for (i, ((gh, gp), (wh, wp))) in got.iter().zip(&frames).enumerate() {
        assert_eq!(gh.to_bytes(), wh.to_bytes(), "frame {i}: header intact");
        assert_eq!(gp, wp, "frame {i}: payload intact");
    }
}
