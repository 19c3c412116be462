//! What the two ways of starting AMC share: `amc serve` and the tray app take the same
//! flags, log the same way and stop on the same signals.

use std::path::PathBuf;

use crate::settings::RawConfig;

/// The flags that start AMC.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct StartFlags {
    /// Also serve on this loopback address, e.g. 127.0.0.1:7878 (Host and Origin are checked)
    #[arg(long)]
    pub listen: Option<String>,
    /// Follow this iMessage database (chat.db) [default on macOS: ~/Library/Messages/chat.db]
    #[arg(long, env = "AMC_CHAT_DB")]
    pub chat_db: Option<PathBuf>,
    /// Send iMessages with this program instead of /usr/bin/osascript (a stand-in in tests)
    #[arg(long, env = "AMC_OSASCRIPT")]
    pub osascript: Option<PathBuf>,
    /// Deliver sends to a recording test sender (logged to test-sender.jsonl in the data
    /// directory) instead of iMessage and Discord (iMessage still sends through an
    /// --osascript named explicitly)
    #[arg(long, env = "AMC_TEST_SENDER")]
    pub test_sender: bool,
}

impl StartFlags {
    /// `raw` with these flags, and the Discord token from `AMC_DISCORD_TOKEN` if set.
    pub fn apply(self, raw: RawConfig) -> RawConfig {
        RawConfig {
            listen: self.listen,
            test_sender: self.test_sender,
            chat_db: self.chat_db,
            osascript: self.osascript,
            discord_token: crate::settings::discord_token_from_env(),
            ..raw
        }
    }
}

/// The open files AMC asks for. A Mac starts an app with a soft limit of 256, which each
/// agent's connection and wait, each attachment and each database file count against;
/// macOS refuses a soft limit past `OPEN_MAX` (10,240), whatever the hard limit says.
const OPEN_FILES: u64 = if cfg!(target_os = "macos") { 10_240 } else { 65_536 };

/// Raises the soft limit of open files to [`OPEN_FILES`], or the hard limit if lower, and
/// gives the limit now (`None` if it could not be read). A lower soft limit is left as it
/// was if the system refuses.
pub fn raise_open_files() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let now = getrlimit(Resource::Nofile);
    let want = now.maximum.map_or(OPEN_FILES, |hard| hard.min(OPEN_FILES));
    match now.current {
        Some(soft) if soft < want => {
            let raised = setrlimit(Resource::Nofile, Rlimit { current: Some(want), maximum: now.maximum });
            match raised {
                Ok(()) => Some(want),
                Err(e) => {
                    tracing::warn!(error = %e, soft, "could not raise the limit of open files");
                    Some(soft)
                }
            }
        }
        current => current.or(Some(u64::MAX)),
    }
}

/// Logs to stderr (stdout may be an MCP channel), in colour on a terminal, filtered by
/// [`crate::log_filter`] with `default` when `AMC_LOG` is unset. Each line goes through
/// [`ShownLog`], so a platform's error text or a name in a log line never acts on the
/// terminal.
pub fn init_logging(default: &str) {
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_writer(move || ShownLog { ansi })
        .with_ansi(ansi)
        .with_env_filter(crate::log_filter(default))
        .init();
}

/// stderr for log lines, with every character that would act on a terminal or hide on it
/// ([`amc_core::text::is_hidden`]) written as its code point, `⟨U+000D⟩`, but the newline
/// that ends the line, tabs, and (in colour) the escapes of the log's own colours
/// ([`log_colour_at`]). tracing escapes escape sequences in a message alone, and never a
/// carriage return, a newline or a bidi override, which could then rewrite or reorder the
/// lines the person reads.
struct ShownLog {
    ansi: bool,
}

impl std::io::Write for ShownLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stderr().write_all(shown_log_line(&String::from_utf8_lossy(buf), self.ansi).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// `line` (one formatted log event) as [`ShownLog`] writes it.
fn shown_log_line(line: &str, ansi: bool) -> String {
    let body = line.strip_suffix('\n').unwrap_or(line);
    let mut out = String::with_capacity(line.len());
    let mut chars = body.char_indices();
    while let Some((at, c)) = chars.next() {
        if c == '\x1b'
            && ansi
            && let Some(len) = log_colour_at(&body[at..])
        {
            out.push_str(&body[at..at + len]);
            // The rest of the escape, all ASCII, is copied: step past it.
            chars.nth(len - 2);
        } else if amc_core::text::is_hidden(c) && c != '\t' {
            out.push_str(&format!("⟨U+{:04X}⟩", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    if line.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The length of the colour escape `text` starts with, if it is one the log itself writes
/// (`ESC[…m` setting bold, dim, italic, a foreground colour or none): tracing escapes
/// escapes in a message, not in a field logged with `%`, so an escape that erases, moves,
/// conceals or titles is shown, whoever wrote it.
fn log_colour_at(text: &str) -> Option<usize> {
    let params = text.strip_prefix("\x1b[")?;
    // The log's own are short: looking no further keeps a line of many ESC[ linear.
    let end = params.bytes().take(12).position(|b| b == b'm')?;
    let allowed =
        |p: &str| matches!(p, "" | "0" | "1" | "2" | "3" | "22" | "23" | "31" | "32" | "33" | "34" | "35" | "39");
    params[..end].split(';').all(allowed).then_some(2 + end + 1)
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C). If the signals cannot be watched, never.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        tracing::warn!("cannot listen for SIGTERM and SIGINT");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    tracing::info!("stopping");
}

#[cfg(test)]
mod tests {
    use super::shown_log_line;

    #[test]
    fn a_log_line_cannot_rewrite_or_reorder_what_the_terminal_shows() {
        let line = "WARN send failed: error=Ada\r\x1b[2K    fine\nINFO forged \u{202E}txet\u{200B}\n";
        assert_eq!(
            shown_log_line(line, false),
            "WARN send failed: error=Ada⟨U+000D⟩⟨U+001B⟩[2K    fine⟨U+000A⟩INFO forged ⟨U+202E⟩txet⟨U+200B⟩\n"
        );
        // In colour, the log's own colours stay; any other escape is shown, since tracing
        // leaves those in a field logged with `%` as they are.
        assert_eq!(shown_log_line("\x1b[33mWARN\x1b[0m\ta\n", true), "\x1b[33mWARN\x1b[0m\ta\n");
        assert_eq!(
            shown_log_line("\x1b[1;32mok\x1b[0m detail=Ada\x1b[2K\x1b[8mhid\x1b]0;title\x07\x1b[\n", true),
            "\x1b[1;32mok\x1b[0m detail=Ada⟨U+001B⟩[2K⟨U+001B⟩[8mhid⟨U+001B⟩]0;title⟨U+0007⟩⟨U+001B⟩[\n"
        );
    }
}
