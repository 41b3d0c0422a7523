//! (p2p area: being written.)
