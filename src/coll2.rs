//! Exports of the coll2 area (see `core/src/abi/api/coll2.rs`).
