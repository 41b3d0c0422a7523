//! hcomm-core: everything below the C entry points.
//!
//! This crate defines no `#[no_mangle]` symbols on purpose: a cdylib exports every C symbol of
//! every crate it links, so each library (`libhcomm.so`, later the preload interposer) defines
//! exactly the entry points it exports and calls into [`abi`] for the work. See
//! `docs/ARCHITECTURE.md` for the layering.

pub mod abi;
pub mod auth;
pub mod bootstrap;
pub mod coll;
pub mod comm;
pub mod cuda;
pub mod datatype;
pub mod endpoint;
pub mod engine;
pub mod error;
pub mod frame;
#[doc(hidden)]
pub mod fuzz;
pub mod group;
pub mod health;
pub mod intercomm;
pub mod log;
pub mod p2p;
pub mod param;
pub mod process_topology;
pub mod progress;
pub mod reduce;
pub mod request;
pub mod runtime;
pub mod scratch;
pub mod stats;
pub mod topology;
pub mod transport;
pub mod typemap;
pub mod wait;
