//! (coll2 area: being written.)
