//! (groups area: being written.)
