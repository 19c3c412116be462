//! What AMC's tests and benches share. A dev-dependency only: nothing here ships.
//!
//! - [`bench`]: latency summaries, so every bench reports alike.
//! - [`incoming`]: messages as a source hands them to the core, built in one line.
//! - [`eventually`]: waits for a state to hold, with a deadline, instead of sleeping a
//!   fixed time and hoping.
//! - [`SecretService`]: a Secret Service on a D-Bus of the test's own, where AMC keeps
//!   the Discord token on Linux.
//! - [`Stored`]: the store under a running core, for what a test sets up or reads
//!   directly (production code reaches it only through the core's service layer).
#![deny(missing_docs)]

pub mod bench;
mod incoming;
mod secret_service;

use std::future::Future;
use std::time::Duration;

pub use bench::Latencies;
pub use incoming::{Incoming, SENDER, incoming};
pub use secret_service::SecretService;

/// The store under a running [`Amc`](amc_core::service::Amc), opened beside it on the
/// same file: what a test sets up or reads without going through the service layer.
/// Each call opens it again (a few milliseconds), so it never holds a stale view.
pub trait Stored {
    /// The store.
    fn store(&self) -> amc_store::Store;
}

impl Stored for amc_core::service::Amc {
    fn store(&self) -> amc_store::Store {
        amc_store::Store::open(&self.config().db_path()).expect("the store beside the core")
    }
}

/// How long [`eventually`] waits before failing the test.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Polls `check` every few milliseconds until it returns `Some`, and returns that. Panics
/// naming `what` if it has not after [`DEADLINE`].
///
/// For a state that is visible only by asking (a file, an HTTP answer). When the code
/// under test publishes an event for the change, wait on that event instead.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// [`eventually`] for synchronous tests (a child process, a file on disk): calls `check`
/// every few milliseconds until it returns `Some`. Panics naming `what` after
/// [`DEADLINE`].
pub fn poll_until<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
