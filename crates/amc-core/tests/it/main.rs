//! amc-core's integration tests: the public API used as the daemon uses it.

mod own_files;
