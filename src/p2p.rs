//! Exports of the p2p area (see `core/src/abi/api/p2p.rs`).
