//! A Secret Service of the test's own: a private D-Bus session bus (`dbus-daemon`) with
//! GNOME Keyring's secrets component on it, its login keyring made and unlocked with a
//! password given on standard input, as Linux desktops unlock it at login. What AMC keeps
//! in "the Keychain" lands there on Linux; `secret-tool` (libsecret) reads it back, a
//! client AMC did not write.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running Secret Service; both daemons end when it is dropped.
pub struct SecretService {
    bus: Child,
    address: String,
    home: PathBuf,
}

impl SecretService {
    /// Starts the bus and the keyring under `dir` and waits until the keyring answers on
    /// the bus. Panics naming the Debian packages when a program is missing.
    pub fn start(dir: &Path) -> Self {
        let home = dir.join("secret-service");
        let runtime = home.join("run");
        amc_core::files::create_dir_all(&runtime).expect("the Secret Service's folders");
        let mut bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon (Debian: dbus-daemon)");
        let address = {
            use std::io::BufRead;
            let mut line = String::new();
            let out = bus.stdout.take().expect("its address");
            std::io::BufReader::new(out).read_line(&mut line).expect("its address");
            line.trim().to_owned()
        };
        let service = Self { bus, address, home };
        let mut keyring = service
            .command("gnome-keyring-daemon")
            .args(["--unlock", "--components=secrets", "--daemonize"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gnome-keyring-daemon (Debian: gnome-keyring)");
        {
            use std::io::Write;
            let mut stdin = keyring.stdin.take().expect("its stdin");
            stdin.write_all(b"amc-test-login").expect("the login password");
        }
        assert!(keyring.wait().expect("gnome-keyring-daemon").success(), "gnome-keyring-daemon did not start");
        crate::poll_until("the keyring on the test's D-Bus", || {
            let out = service
                .command("dbus-send")
                .args([
                    "--session",
                    "--print-reply",
                    "--dest=org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus.NameHasOwner",
                    "string:org.freedesktop.secrets",
                ])
                .output()
                .expect("dbus-send (Debian: dbus-bin)");
            String::from_utf8_lossy(&out.stdout).contains("boolean true").then_some(())
        });
        service
    }

    /// The environment a program needs to reach this Secret Service and nothing else.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("DBUS_SESSION_BUS_ADDRESS", self.address.clone()),
            ("XDG_RUNTIME_DIR", self.home.join("run").display().to_string()),
            ("XDG_DATA_HOME", self.home.join("data").display().to_string()),
            ("HOME", self.home.display().to_string()),
        ]
    }

    /// A command run against this Secret Service.
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.envs(self.env());
        command
    }

    /// The secret kept under these attributes, read with `secret-tool` (Debian:
    /// libsecret-tools), if there is one.
    pub fn lookup(&self, attributes: &[(&str, &str)]) -> Option<String> {
        let out = self
            .command("secret-tool")
            .arg("lookup")
            .args(attributes.iter().flat_map(|(k, v)| [*k, *v]))
            .output()
            .expect("secret-tool (Debian: libsecret-tools)");
        (out.status.success() && !out.stdout.is_empty()).then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for SecretService {
    fn drop(&mut self) {
        // The keyring daemon leaves when its bus goes.
        let _ = self.bus.kill();
        let _ = self.bus.wait();
    }
}
