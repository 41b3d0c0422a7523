//! The frame header every transport carries in front of every fragment.
//!
//! A receiver matches a frame to a posted receive by `(comm_id, seq, tag)` from a given source,
//! and compares the collective signature (`kind`, `count`, `dtype`, `op`, `root`) of frames of the
//! same `(comm_id, seq)`: a peer that called a different collective is detected instead of
//! exchanging wrong bytes. `auth` is reserved for a message authentication code (the security
//! issue); `flags` and `reserved` leave room for later fields without changing the size.

/// "HC" little-endian.
pub const MAGIC: u16 = 0x4348;
pub const VERSION: u8 = 1;

/// Which collective (or point-to-point, later) a frame belongs to.
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

/// Fixed-size header; 128 bytes so that a payload that follows it in a slot stays
/// 64-byte aligned.
#[derive(Clone, Copy, Debug, Default)]
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

impl FrameHeader {
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
}
