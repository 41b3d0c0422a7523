//! The frame header every transport carries in front of every fragment.
//!
//! A receiver matches a frame to a posted receive by `(comm_id, seq, tag)` from a given source,
//! and compares the collective signature (`kind`, `count`, `dtype`, `op`, `root`) of frames of the
//! same `(comm_id, seq)`: a peer that called a different collective is detected instead of
//! exchanging wrong bytes. `auth` is reserved for a message authentication code (the security
//! issue); `flags` and `reserved` leave room for later fields without changing the size.
//!
//! Point-to-point frames ([`Kind::P2p`]) use the fields differently (see [`crate::p2p`]):
//!
//! | field | point-to-point meaning |
//! |---|---|
//! | `comm_id` | the communicator, as for collectives |
//! | `seq` | message number, per (sender, destination) pair: names the message its fragments belong to |
//! | `tag` | the user tag (0..=`MPI_TAG_UB`) |
//! | `count` | total payload bytes of the message (all fragments) |
//! | `offset`, `len` | this fragment's place and length; `offset == 0` marks the first fragment (a message has exactly one, even when empty) |
//! | `root` | the sender's rank in the communicator (`MPI_SOURCE` of the receiver's status) |
//! | `dtype` | the sender's datatype handle (informational) |
//! | `reserved[0..8]` | the message's size in MPI's sense (type size × count, little-endian u64): what a status reports; differs from `count` only for types with padding (`MPI_DOUBLE_INT`, ...) |
//! | `op` | 0 |
//! | `flags` | [`FLAG_SYNC`] on the first fragment of a synchronous-mode send; [`FLAG_SYNC_ACK`] on an acknowledgement (see below) |
//!
//! Synchronous mode (`MPI_Ssend`): the receiver that matches a message flagged [`FLAG_SYNC`]
//! answers with an empty `P2p` frame flagged [`FLAG_SYNC_ACK`] carrying the message's
//! `comm_id` and `seq`; the send completes when it arrives. Acknowledgements are never
//! offered to receives ([`FrameHeader::is_p2p_first`]).
//!
//! Collective frames keep the whole message's length in `reserved[8..16]` ([`FrameHeader::msg_len`]).
//!
//! Collective matching ignores `P2p` frames and point-to-point matching takes only `P2p` frames,
//! so the two share every channel without ever consuming each other's frames.

/// `flags`: a single-copy control frame ([`crate::transport::Link::try_send_cma`]): the
/// payload is the message's address in the sender and a ticket, not the message.
pub const FLAG_CMA: u32 = 1;

/// `flags` of a point-to-point message's first fragment: the sender waits for an
/// acknowledgement of the match (`MPI_Ssend`).
pub const FLAG_SYNC: u32 = 2;
/// `flags`: an acknowledgement of the synchronous message (`comm_id`, `seq`) (no payload).
pub const FLAG_SYNC_ACK: u32 = 4;
/// `flags` of a shared-memory control frame that stands for a fragment in a piece of the
/// sender's fan-out stage (`transport::shm`). Only the two ends of the link see it: the
/// receiving link hands the fragment on without it.
pub const FLAG_STAGED: u32 = 8;

/// "HC" little-endian.
pub const MAGIC: u16 = 0x4348;
pub const VERSION: u8 = 1;

/// Which collective (or point-to-point) a frame belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Barrier = 1,
    Bcast = 2,
    Reduce = 3,
    Allreduce = 4,
    Allgather = 5,
    ReduceScatter = 6,
    ReduceScatterBlock = 7,
    /// Internal collectives (communicator creation) that use the same engine.
    Internal = 8,
    /// A point-to-point message (`MPI_Send` and friends).
    P2p = 9,
    /// A failure notice (see [`crate::health`]): the sender left collective call `seq` of
    /// communicator `comm_id` with an error; the payload is its message (UTF-8 text).
    Notice = 10,
    // The data-movement collectives and the prefix reductions.
    Gather = 16,
    Gatherv = 17,
    Scatter = 18,
    Scatterv = 19,
    Allgatherv = 20,
    Alltoall = 21,
    Alltoallv = 22,
    Scan = 23,
    Exscan = 24,
    Alltoallw = 25,
    NeighborAllgather = 26,
    NeighborAllgatherv = 27,
    NeighborAlltoall = 28,
    NeighborAlltoallv = 29,
    NeighborAlltoallw = 30,
}

impl Kind {
    pub fn mpi_name(self) -> &'static str {
        match self {
            Kind::Barrier => "MPI_Barrier",
            Kind::Bcast => "MPI_Bcast",
            Kind::Reduce => "MPI_Reduce",
            Kind::Allreduce => "MPI_Allreduce",
            Kind::Allgather => "MPI_Allgather",
            Kind::ReduceScatter => "MPI_Reduce_scatter",
            Kind::ReduceScatterBlock => "MPI_Reduce_scatter_block",
            Kind::Internal => "communicator management",
            Kind::P2p => "point-to-point",
            Kind::Notice => "failure notice",
            Kind::Gather => "MPI_Gather",
            Kind::Gatherv => "MPI_Gatherv",
            Kind::Scatter => "MPI_Scatter",
            Kind::Scatterv => "MPI_Scatterv",
            Kind::Allgatherv => "MPI_Allgatherv",
            Kind::Alltoall => "MPI_Alltoall",
            Kind::Alltoallv => "MPI_Alltoallv",
            Kind::Scan => "MPI_Scan",
            Kind::Exscan => "MPI_Exscan",
            Kind::Alltoallw => "MPI_Alltoallw",
            Kind::NeighborAllgather => "MPI_Neighbor_allgather",
            Kind::NeighborAllgatherv => "MPI_Neighbor_allgatherv",
            Kind::NeighborAlltoall => "MPI_Neighbor_alltoall",
            Kind::NeighborAlltoallv => "MPI_Neighbor_alltoallv",
            Kind::NeighborAlltoallw => "MPI_Neighbor_alltoallw",
        }
    }

    pub fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Barrier,
            2 => Kind::Bcast,
            3 => Kind::Reduce,
            4 => Kind::Allreduce,
            5 => Kind::Allgather,
            6 => Kind::ReduceScatter,
            7 => Kind::ReduceScatterBlock,
            8 => Kind::Internal,
            9 => Kind::P2p,
            10 => Kind::Notice,
            16 => Kind::Gather,
            17 => Kind::Gatherv,
            18 => Kind::Scatter,
            19 => Kind::Scatterv,
            20 => Kind::Allgatherv,
            21 => Kind::Alltoall,
            22 => Kind::Alltoallv,
            23 => Kind::Scan,
            24 => Kind::Exscan,
            25 => Kind::Alltoallw,
            26 => Kind::NeighborAllgather,
            27 => Kind::NeighborAllgatherv,
            28 => Kind::NeighborAlltoall,
            29 => Kind::NeighborAlltoallv,
            30 => Kind::NeighborAlltoallw,
            _ => return None,
        })
    }
}

/// What every rank of one collective call must agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signature {
    pub kind: Kind,
    /// Element count as the call defines it (total for reduce_scatter).
    pub count: u64,
    /// Datatype identity (handle value of the ABI in use).
    pub dtype: u32,
    /// Op identity (handle value), 0 when the collective has no op.
    pub op: u32,
    /// Root rank, -1 when the collective has none.
    pub root: i32,
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}(count={}, datatype=0x{:x}",
            self.kind.mpi_name(),
            self.count,
            self.dtype
        )?;
        if self.op != 0 {
            write!(f, ", op=0x{:x}", self.op)?;
        }
        if self.root >= 0 {
            write!(f, ", root={}", self.root)?;
        }
        write!(f, ")")
    }
}

/// The one frame of a collective's small message, as its sender and its receiver both know
/// it: the call's key (`comm_id`, `seq`, `tag`), its signature, and the whole message of
/// `len` bytes in one frame (offset 0). Links post and take such a frame from this
/// description without a [`FrameHeader`] (`transport::Link::try_send_expected`,
/// `try_take_expected`); [`FrameHeader::new`] with the message length set is the same frame.
#[derive(Clone, Copy, Debug)]
pub struct Expected {
    pub comm_id: u64,
    pub seq: u64,
    pub tag: u32,
    pub sig: Signature,
    pub len: usize,
}

/// Fixed-size header; 128 bytes so that a payload that follows it in a slot stays
/// 64-byte aligned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct FrameHeader {
    pub magic: u16,
    pub version: u8,
    pub kind: u8,
    pub flags: u32,
    pub comm_id: u64,
    pub seq: u64,
    pub count: u64,
    pub tag: u32,
    pub root: i32,
    pub dtype: u32,
    pub op: u32,
    /// Sender's world rank.
    pub src: u32,
    /// Payload bytes of this frame.
    pub len: u32,
    /// Byte offset of this frame's payload within its message.
    pub offset: u64,
    /// Room for a message authentication code.
    pub auth: [u8; 32],
    pub reserved: [u8; 32],
}

const _: () = assert!(std::mem::size_of::<FrameHeader>() == 128);

/// Size of a [`FrameHeader`] on the wire and in a shared-memory slot.
pub const HEADER_BYTES: usize = std::mem::size_of::<FrameHeader>();

impl FrameHeader {
    /// A header with only the magic and the version set.
    pub fn blank() -> Self {
        FrameHeader {
            magic: MAGIC,
            version: VERSION,
            ..Default::default()
        }
    }

    pub fn new(sig: &Signature, comm_id: u64, seq: u64, tag: u32, src: u32) -> Self {
        FrameHeader {
            magic: MAGIC,
            version: VERSION,
            kind: sig.kind as u8,
            comm_id,
            seq,
            count: sig.count,
            tag,
            root: sig.root,
            dtype: sig.dtype,
            op: sig.op,
            src,
            ..Default::default()
        }
    }

    /// The first fragment header of a point-to-point message (see the module docs for the
    /// meaning of the fields); the sender sets `offset` per fragment.
    #[allow(clippy::too_many_arguments)]
    pub fn p2p(
        comm_id: u64,
        seq: u64,
        tag: u32,
        src: u32,
        src_comm_rank: i32,
        dtype: u32,
        total: u64,
        mpi_bytes: u64,
    ) -> Self {
        let mut h = FrameHeader {
            magic: MAGIC,
            version: VERSION,
            kind: Kind::P2p as u8,
            comm_id,
            seq,
            count: total,
            tag,
            root: src_comm_rank,
            dtype,
            src,
            ..Default::default()
        };
        h.reserved[..8].copy_from_slice(&mpi_bytes.to_le_bytes());
        h
    }

    /// The acknowledgement, sent by world rank `src`, of the synchronous message whose first
    /// fragment is `first`.
    pub fn p2p_ack(first: &FrameHeader, src: u32) -> Self {
        FrameHeader {
            magic: MAGIC,
            version: VERSION,
            kind: Kind::P2p as u8,
            flags: FLAG_SYNC_ACK,
            comm_id: first.comm_id,
            seq: first.seq,
            tag: first.tag,
            src,
            ..Default::default()
        }
    }

    /// Collective frames: the length in bytes of the whole message this fragment belongs to
    /// (`reserved[8..16]`), so a receiver expecting a different length fails at the first
    /// fragment instead of waiting for bytes that never come (mismatched v-variant counts).
    pub fn msg_len(&self) -> u64 {
        u64::from_le_bytes(self.reserved[8..16].try_into().expect("8 bytes"))
    }

    pub fn set_msg_len(&mut self, len: u64) {
        self.reserved[8..16].copy_from_slice(&len.to_le_bytes());
    }

    pub fn is_p2p(&self) -> bool {
        self.kind == Kind::P2p as u8
    }

    /// The first fragment of a point-to-point message (what matching is offered); not an
    /// acknowledgement.
    pub fn is_p2p_first(&self) -> bool {
        self.is_p2p() && self.offset == 0 && self.flags & FLAG_SYNC_ACK == 0
    }

    /// A failure notice for collective call `seq` of communicator `comm_id` (the payload is
    /// the sender's error message). Neither collective nor point-to-point matching takes it.
    pub fn notice(comm_id: u64, seq: u64, src: u32) -> Self {
        FrameHeader {
            magic: MAGIC,
            version: VERSION,
            kind: Kind::Notice as u8,
            comm_id,
            seq,
            root: -1,
            src,
            ..Default::default()
        }
    }

    pub fn is_notice(&self) -> bool {
        self.kind == Kind::Notice as u8
    }

    /// A point-to-point message's size in MPI's sense (what a status reports).
    pub fn p2p_mpi_bytes(&self) -> u64 {
        u64::from_le_bytes(self.reserved[..8].try_into().expect("8 bytes"))
    }

    /// The header in the first [`HEADER_BYTES`] of `b` (the wire layout is the in-memory
    /// layout, little-endian); `None` when `b` is shorter. Any bit pattern is a header: what
    /// it means is checked by [`FrameHeader::signature`] and the receive paths.
    pub fn from_bytes(b: &[u8]) -> Option<FrameHeader> {
        let b = b.get(..HEADER_BYTES)?;
        // SAFETY: `b` holds HEADER_BYTES bytes; FrameHeader is plain old data (integers and
        // byte arrays, no padding, any bit pattern valid) and read_unaligned needs no alignment.
        Some(unsafe { std::ptr::read_unaligned(b.as_ptr() as *const FrameHeader) })
    }

    /// The header's wire bytes (inverse of [`FrameHeader::from_bytes`]).
    pub fn to_bytes(&self) -> [u8; HEADER_BYTES] {
        // SAFETY: FrameHeader is plain old data of exactly HEADER_BYTES bytes with no padding
        // (its fields tile the 128 bytes), so every byte read is initialized.
        unsafe { std::mem::transmute_copy(self) }
    }

    /// The signature this frame was sent under; `None` if the header is not a valid frame.
    pub fn signature(&self) -> Option<Signature> {
        if self.magic != MAGIC || self.version != VERSION {
            return None;
        }
        Some(Signature {
            kind: Kind::from_u8(self.kind)?,
            count: self.count,
            dtype: self.dtype,
            op: self.op,
            root: self.root,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_signature() {
        let sig = Signature {
            kind: Kind::Allreduce,
            count: 12,
            dtype: 0x4c00040a,
            op: 0x58000003,
            root: -1,
        };
        let h = FrameHeader::new(&sig, 7, 3, 9, 2);
        assert_eq!(h.signature(), Some(sig));
        assert_eq!((h.comm_id, h.seq, h.tag, h.src), (7, 3, 9, 2));
        let mut bad = h;
        bad.magic = 0;
        assert_eq!(bad.signature(), None);
        assert!(sig.to_string().starts_with("MPI_Allreduce(count=12"));
    }

    #[test]
    fn p2p_header_fields() {
        let h = FrameHeader::p2p(7, 41, 0x7fff_ffff, 3, 2, 0x4c000405, 4096, 3072);
        assert!(h.is_p2p());
        assert_eq!(Kind::from_u8(h.kind), Some(Kind::P2p));
        assert_eq!(
            (h.comm_id, h.seq, h.tag, h.src, h.root),
            (7, 41, 0x7fff_ffff, 3, 2)
        );
        assert_eq!((h.count, h.offset, h.p2p_mpi_bytes()), (4096, 0, 3072));
        let coll = FrameHeader::new(
            &Signature {
                kind: Kind::Barrier,
                count: 0,
                dtype: 0,
                op: 0,
                root: -1,
            },
            7,
            41,
            0,
            3,
        );
        assert!(!coll.is_p2p());
    }
}
