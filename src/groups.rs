//! Exports of the groups area (see `core/src/abi/api/groups.rs`).
