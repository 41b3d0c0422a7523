//! (types area: being written.)
