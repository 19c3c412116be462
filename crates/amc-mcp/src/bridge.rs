//! The stdio bridge (todo).
