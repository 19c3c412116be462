//! What the `amc` benches share: a real `amc serve` in a data directory of its own.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `amc` binary under test.
pub const AMC: &str = env!("CARGO_BIN_EXE_amc");

/// A running `amc serve`, stopped (SIGTERM, then killed) when dropped.
pub struct Serve {
    child: Child,
    /// Its socket.
    pub socket: PathBuf,
    /// Its admin token.
    pub admin_token: String,
}

impl Serve {
    /// Starts `amc serve --test-sender` with `args` in `data`, and waits for its socket.
    #[allow(dead_code)] // not every bench starts it so
    pub fn start(data: &Path, args: &[&std::ffi::OsStr]) -> std::io::Result<Self> {
        Self::start_env(data, args, &[])
    }

    /// [`Serve::start`] with `env` set for it too.
    #[allow(dead_code)] // not every bench starts it so
    pub fn start_env(data: &Path, args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> std::io::Result<Self> {
        let child = Command::new(AMC)
            .args(["serve", "--test-sender"])
            .args(args)
            .envs(env.iter().copied())
            .env("AMC_DATA_DIR", data)
            .env("AMC_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()?;
        let socket = data.join("run/amc.sock");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !(socket.exists() && data.join("admin-token").exists()) {
            assert!(Instant::now() < deadline, "amc serve did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        let admin_token = std::fs::read_to_string(data.join("admin-token"))?.trim().to_owned();
        Ok(Self { child, socket, admin_token })
    }
}

impl Serve {
    /// The daemon's process id.
    #[allow(dead_code)] // not every bench watches the daemon
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// A process's thread count and resident memory (MiB), from `/proc` (Linux).
#[allow(dead_code)] // not every bench watches the daemon
pub fn threads_and_rss(pid: u32) -> (u64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (field("Threads:"), field("VmRSS:") as f64 / 1024.0)
}

#[allow(unused_imports)] // not every bench watches the daemon
pub use amc_testkit::bench::cpu_time;

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}
