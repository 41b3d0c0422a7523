//! One internal error type with context, and its mapping to MPI error classes.
//!
//! The innermost failure says what went wrong (and with which peer); the ABI layer adds the
//! call name and rank when it reports it. Error classes use MPICH's numbering, which is the ABI
//! of `include/mpi.h`; a different ABI personality translates at its boundary.

use std::fmt;

/// MPI error classes, MPICH numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Class {
    Success = 0,
    Buffer = 1,
    Count = 2,
    Type = 3,
    Tag = 4,
    Comm = 5,
    Rank = 6,
    Root = 7,
    Group = 8,
    Op = 9,
    Topology = 10,
    Dims = 11,
    Arg = 12,
    Unknown = 13,
    Truncate = 14,
    Other = 15,
    Intern = 16,
    InStatus = 17,
    Pending = 18,
    Request = 19,
    Info = 28,
    InfoKey = 29,
    InfoValue = 30,
    InfoNokey = 31,
    UnsupportedOperation = 44,
    Keyval = 48,
    Session = 75,
}

/// Highest class value `MPI_Error_class`/`MPI_Error_string` accept (`MPI_ERR_LASTCODE` is
/// larger, but hcomm returns classes as codes).
pub const LAST_CLASS: i32 = 80; // MPI_ERR_ERRHANDLER (MPI 5.0; mpi4py knows it)

impl Class {
    pub fn name(self) -> &'static str {
        use Class::*;
        match self {
            Success => "MPI_SUCCESS",
            Buffer => "MPI_ERR_BUFFER",
            Count => "MPI_ERR_COUNT",
            Type => "MPI_ERR_TYPE",
            Tag => "MPI_ERR_TAG",
            Comm => "MPI_ERR_COMM",
            Rank => "MPI_ERR_RANK",
            Root => "MPI_ERR_ROOT",
            Group => "MPI_ERR_GROUP",
            Op => "MPI_ERR_OP",
            Topology => "MPI_ERR_TOPOLOGY",
            Dims => "MPI_ERR_DIMS",
            Arg => "MPI_ERR_ARG",
            Unknown => "MPI_ERR_UNKNOWN",
            Truncate => "MPI_ERR_TRUNCATE",
            Other => "MPI_ERR_OTHER",
            Intern => "MPI_ERR_INTERN",
            InStatus => "MPI_ERR_IN_STATUS",
            Pending => "MPI_ERR_PENDING",
            Request => "MPI_ERR_REQUEST",
            Info => "MPI_ERR_INFO",
            Session => "MPI_ERR_SESSION",
            InfoKey => "MPI_ERR_INFO_KEY",
            InfoValue => "MPI_ERR_INFO_VALUE",
            InfoNokey => "MPI_ERR_INFO_NOKEY",
            UnsupportedOperation => "MPI_ERR_UNSUPPORTED_OPERATION",
            Keyval => "MPI_ERR_KEYVAL",
        }
    }

    /// The standard's text for a class, for `MPI_Error_string`.
    pub fn description(self) -> &'static str {
        use Class::*;
        match self {
            Success => "No MPI error",
            Buffer => "Invalid buffer pointer",
            Count => "Invalid count argument",
            Type => "Invalid datatype",
            Tag => "Invalid tag argument",
            Comm => "Invalid communicator",
            Rank => "Invalid rank",
            Root => "Invalid root",
            Group => "Invalid group",
            Op => "Invalid MPI_Op",
            Topology => "Invalid topology",
            Dims => "Invalid dimension argument",
            Arg => "Invalid argument",
            Unknown => "Unknown error",
            Truncate => "Message truncated",
            Other => "Other MPI error",
            Intern => "Internal MPI error",
            InStatus => "Error code is in status",
            Pending => "Pending request",
            Request => "Invalid MPI_Request",
            Info => "Invalid info object",
            Session => "Invalid session handle",
            InfoKey => "Invalid info key",
            InfoValue => "Invalid info value",
            InfoNokey => "Key not defined in info object",
            UnsupportedOperation => "Unsupported operation",
            Keyval => "Invalid keyval",
        }
    }

    pub fn from_code(code: i32) -> Option<Class> {
        use Class::*;
        Some(match code {
            0 => Success,
            1 => Buffer,
            2 => Count,
            3 => Type,
            4 => Tag,
            5 => Comm,
            6 => Rank,
            7 => Root,
            8 => Group,
            9 => Op,
            10 => Topology,
            11 => Dims,
            12 => Arg,
            13 => Unknown,
            14 => Truncate,
            15 => Other,
            16 => Intern,
            17 => InStatus,
            18 => Pending,
            19 => Request,
            28 => Info,
            29 => InfoKey,
            30 => InfoValue,
            31 => InfoNokey,
            44 => UnsupportedOperation,
            48 => Keyval,
            75 => Session,
            _ => return None,
        })
    }
}

/// An error with its class and a message for humans.
#[derive(Debug, Clone)]
pub struct Error {
    pub class: Class,
    pub msg: String,
}

impl Error {
    pub fn new(class: Class, msg: impl Into<String>) -> Self {
        Error {
            class,
            msg: msg.into(),
        }
    }

    /// A failure of the machinery (transport, bootstrap, OS): `MPI_ERR_OTHER`.
    pub fn other(msg: impl Into<String>) -> Self {
        Error::new(Class::Other, msg)
    }

    pub fn intern(msg: impl Into<String>) -> Self {
        Error::new(Class::Intern, msg)
    }

    /// Adds a breadcrumb in front of the message, keeping the class.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.msg = format!("{what}: {}", self.msg);
        self
    }

    /// An OS error from `what` (the errno is read now).
    pub fn os(what: impl fmt::Display) -> Self {
        Error::other(format!("{what}: {}", std::io::Error::last_os_error()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.msg, self.class.name())
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::other(e.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_trip() {
        for code in 0..20 {
            let c = Class::from_code(code).unwrap();
            assert_eq!(c as i32, code);
            assert!(c.name().starts_with("MPI_"));
        }
        assert!(Class::from_code(20).is_none());
        assert_eq!(Class::from_code(48), Some(Class::Keyval));
        assert!(Class::from_code(-1).is_none());
    }

    #[test]
    fn context_keeps_class() {
        let e = Error::new(Class::Count, "negative").context("MPI_Bcast");
        assert_eq!(e.class, Class::Count);
        assert_eq!(e.to_string(), "MPI_Bcast: negative (MPI_ERR_COUNT)");
    }
}
