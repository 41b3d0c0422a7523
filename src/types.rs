//! Exports of the types area (see `core/src/abi/api/types.rs`).
