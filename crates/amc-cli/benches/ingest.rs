//! A first import as a person meets it, side by side with imessage-exporter on the same
//! file: `amc serve --chat-db` from its start to every message of chat.db stored, against
//! `imessage-exporter -f txt` exporting the same chat.db, in alternating runs. Prints the
//! median time, CPU time and peak memory of each and their ratios.
//!
//! `AMC_BENCH_CHAT_DB` names the chat.db (the iMessage bench writes one with
//! `AMC_BENCH_KEEP=DIR`), `AMC_BENCH_EXPORTER` the imessage-exporter binary (without it
//! only AMC runs), and `AMC_BENCH_RUNS` the runs of each (5 by default).
//! `AMC_BENCH_BASELINE` names another build's `amc` (an earlier release, say), run in
//! the same alternation, to see what a change did on the same machine the same hour.
//! Last, it runs AMC once more until its search index has caught up and it went idle, and
//! prints its memory and wake-ups at rest, and the store's bytes per message beside
//! chat.db's. `scripts/bench` runs it with the exporter.
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `amc` binary under test.
const AMC: &str = env!("CARGO_BIN_EXE_amc");

/// A finished run: how long it took, the CPU time it used (user and system, every
/// thread) and the most memory it held.
struct Run {
    took: Duration,
    cpu_s: f64,
    peak_mib: f64,
}

/// Clock ticks per second of `/proc/PID/stat`'s times (`USER_HZ`, 100 on Linux).
const TICKS_PER_S: f64 = 100.0;

/// The CPU time a process used so far, user and system over all its threads, in
/// seconds, and whether it has exited (a zombie not yet reaped, whose times are final):
/// from `/proc/PID/stat`, where after the command's name, in parentheses, come the state
/// (field 3) and the user and system times (fields 14 and 15).
fn cpu_s(pid: u32) -> Option<(f64, bool)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some((ticks / TICKS_PER_S, *fields.first()? == "Z"))
}

/// A memory figure of a running process from `/proc/PID/status` (`field` is `VmHWM`,
/// the peak, or `VmRSS`, now), in MiB.
fn status_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// The peak resident memory of a running process, in MiB.
fn peak_mib(pid: u32) -> Option<f64> {
    status_mib(pid, "VmHWM")
}

/// Waits for `child` to exit, noting its peak memory until then; returns that and the
/// CPU time it used, read once it exited and before it is reaped.
fn watch_until_exit(mut child: Child) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let (mut peak, mut cpu) = (0.0f64, 0.0);
    loop {
        if let Some(p) = peak_mib(child.id()) {
            peak = peak.max(p);
        }
        let exited = match cpu_s(child.id()) {
            Some((used, exited)) => {
                cpu = used;
                exited
            }
            None => false,
        };
        let status = if exited { Some(child.wait()?) } else { child.try_wait()? };
        if let Some(status) = status {
            if !status.success() {
                return Err(format!("exited with {status}").into());
            }
            return Ok((peak, cpu));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The first column of `sql` (with `?1` bound to `n`) on the store at `db`, read-only;
/// false while it cannot be read (not created yet, or being migrated).
fn store_says(db: &Path, sql: &str, n: i64) -> bool {
    let Ok(conn) = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return false;
    };
    conn.query_row(sql, [n], |r| r.get(0)).unwrap_or(false)
}

/// `amc serve` importing `chat_db` into a fresh data directory under `work`: the process,
/// stopped when dropped, and its store.
fn serve(amc: &Path, chat_db: &Path, work: &Path) -> Result<(Stop, PathBuf), Box<dyn std::error::Error>> {
    let data = work.join("amc");
    let _ = std::fs::remove_dir_all(&data);
    let child = Command::new(amc)
        .args(["serve", "--test-sender", "--chat-db"])
        .arg(chat_db)
        .env("AMC_DATA_DIR", &data)
        .env("AMC_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok((Stop(child), data.join("amc.db")))
}

/// `amc serve` on a fresh data directory, until every message is stored: until its
/// iMessage checkpoint, written in the same transaction as the messages it covers, reaches
/// chat.db's last row (`last_rowid`). The bench asks over one connection, a primary-key
/// lookup every 5 ms; counting the messages (a scan of an index, 6 ms at the end) on a
/// new connection each time took a good part of a core from AMC's two. Every message is
/// then counted once, after the time is taken.
fn amc_run(
    amc: &Path,
    chat_db: &Path,
    expected: i64,
    last_rowid: i64,
    work: &Path,
) -> Result<Run, Box<dyn std::error::Error>> {
    let t0 = Instant::now();
    let (guard, db) = serve(amc, chat_db, work)?;
    let pid = guard.0.id();
    let mut peak = 0.0f64;
    let mut conn = None;
    loop {
        if let Some(p) = peak_mib(pid) {
            peak = peak.max(p);
        }
        if conn.is_none() && db.exists() {
            conn = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).ok();
        }
        if conn.as_ref().and_then(checkpoint_rowid).is_some_and(|rowid| rowid >= last_rowid) {
            break;
        }
        if t0.elapsed() > Duration::from_secs(600) {
            return Err("amc serve did not store every message in 10 minutes".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = t0.elapsed();
    let cpu_s = cpu_s(pid).ok_or("amc serve's CPU time could not be read")?.0;
    if !store_says(&db, "SELECT count(*) >= ?1 FROM messages", expected) {
        return Err(
            format!("the checkpoint reached chat.db's last row with fewer than {expected} messages stored").into()
        );
    }
    drop(guard);
    Ok(Run { took, cpu_s, peak_mib: peak })
}

/// The last chat.db ROWID the store's iMessage checkpoint (`ROWID:guid:rows`) covers, if
/// it can be read yet.
fn checkpoint_rowid(conn: &rusqlite::Connection) -> Option<i64> {
    let value: String = conn
        .query_row(
            "SELECT value FROM source_state WHERE source = ?1 AND key = ?2",
            [amc_core::model::Source::Imessage.as_str(), amc_imessage::sync::CHECKPOINT_KEY],
            |r| r.get(0),
        )
        .ok()?;
    Some(amc_imessage::sync::Checkpoint::decode(&value).rowid)
}

/// What a first import leaves: the store's bytes per message once its search index caught
/// up, chat.db's, and the daemon at rest after it.
struct AfterImport {
    store_bytes: f64,
    chat_bytes: f64,
    rest_mib: f64,
    /// Of it, anonymous memory (the heap, stacks), and pages of files (mostly AMC's code).
    rest_anon_mib: f64,
    rest_file_mib: f64,
    wakeups_per_s: f64,
}

/// How long the wake-ups at rest are counted.
const REST_WINDOW: Duration = Duration::from_secs(60);

/// How often AMC's housekeeping runs (`amc_core::service::upkeep`).
const HOUSEKEEPING: Duration = Duration::from_secs(60);

/// The context switches of every thread of `pid` so far, by thread id.
fn switches(pid: u32, seen: &mut std::collections::HashMap<String, u64>) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return };
    for task in tasks.flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else { continue };
        let n: u64 = status
            .lines()
            .filter(|l| l.contains("ctxt_switches:"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
        let tid = task.file_name().to_string_lossy().into_owned();
        let e = seen.entry(tid).or_default();
        *e = (*e).max(n);
    }
}

/// `amc serve` importing `chat_db` until its search index caught up and it went idle
/// (the write-ahead log folded and truncated, which the same housekeeping tick follows by
/// letting the caches go); then, from half a housekeeping tick later, its wake-ups over a
/// minute at rest (context switches, summed over its threads, sampled every second so that
/// a thread that ends is counted) and its resident memory at the end of it; then the
/// store's bytes per message, and chat.db's.
fn after_import(
    amc: &Path,
    chat_db: &Path,
    expected: i64,
    work: &Path,
) -> Result<AfterImport, Box<dyn std::error::Error>> {
    let t0 = Instant::now();
    let (guard, db) = serve(amc, chat_db, work)?;
    let pid = guard.0.id();
    let indexed = "SELECT (SELECT count(*) FROM messages) >= ?1 AND NOT EXISTS (SELECT 1 FROM search_backlog)";
    let wal = db.with_extension("db-wal");
    while !(store_says(&db, indexed, expected) && std::fs::metadata(&wal).is_ok_and(|m| m.len() == 0)) {
        if t0.elapsed() > Duration::from_secs(600) {
            return Err("amc serve did not index every message and go idle in 10 minutes".into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // Half a tick on, so that the minute counted holds the next housekeeping tick in its
    // middle, whole, and begins after the caches were let go.
    std::thread::sleep(HOUSEKEEPING / 2);
    let mut before = std::collections::HashMap::new();
    switches(pid, &mut before);
    let mut during = before.clone();
    let began = Instant::now();
    while began.elapsed() < REST_WINDOW {
        std::thread::sleep(Duration::from_secs(1));
        switches(pid, &mut during);
    }
    switches(pid, &mut during);
    let counted = began.elapsed();
    let woke: u64 = during.iter().map(|(tid, n)| n - before.get(tid).copied().unwrap_or(0)).sum();
    let rest_mib = status_mib(pid, "VmRSS").ok_or("no VmRSS")?;
    let rest_anon_mib = status_mib(pid, "RssAnon").ok_or("no RssAnon")?;
    let rest_file_mib = status_mib(pid, "RssFile").ok_or("no RssFile")?;
    drop(guard);
    let conn = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let used: i64 = conn.query_row(
        "SELECT (page_count - freelist_count) * page_size FROM pragma_page_count, pragma_freelist_count, pragma_page_size",
        [],
        |r| r.get(0),
    )?;
    let chat = std::fs::metadata(chat_db)?.len() as f64;
    Ok(AfterImport {
        store_bytes: used as f64 / expected as f64,
        chat_bytes: chat / expected as f64,
        rest_mib,
        rest_anon_mib,
        rest_file_mib,
        wakeups_per_s: woke as f64 / counted.as_secs_f64(),
    })
}

/// imessage-exporter exporting every conversation as text, into a fresh folder.
fn exporter_run(exporter: &Path, chat_db: &Path, work: &Path) -> Result<Run, Box<dyn std::error::Error>> {
    let out = work.join("export");
    let _ = std::fs::remove_dir_all(&out);
    let t0 = Instant::now();
    let child = Command::new(exporter)
        .args(["-f", "txt", "-p"])
        .arg(chat_db)
        .arg("-o")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let (peak, cpu_s) = watch_until_exit(child)?;
    Ok(Run { took: t0.elapsed(), cpu_s, peak_mib: peak })
}

/// Stops `amc serve` (SIGTERM, as a person quitting it would) when dropped.
struct Stop(Child);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::var("AMC_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let work = tempfile::tempdir()?;
    let chat_db = PathBuf::from(std::env::var_os("AMC_BENCH_CHAT_DB").ok_or(
        "set AMC_BENCH_CHAT_DB to a chat.db (AMC_BENCH_KEEP=DIR cargo bench -p amc-imessage --bench imessage writes one)",
    )?);
    let expected: i64 = rusqlite::Connection::open_with_flags(&chat_db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?
        .query_row("SELECT count(*) FROM message", [], |r| r.get(0))?;
    let last_rowid: i64 = rusqlite::Connection::open_with_flags(&chat_db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?
        .query_row("SELECT max(ROWID) FROM message", [], |r| r.get(0))?;
    let exporter = std::env::var_os("AMC_BENCH_EXPORTER").map(PathBuf::from);
    let baseline = std::env::var_os("AMC_BENCH_BASELINE").map(PathBuf::from);
    let (mut amc, mut peer, mut before) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        amc.push(amc_run(Path::new(AMC), &chat_db, expected, last_rowid, work.path())?);
        if let Some(e) = &exporter {
            peer.push(exporter_run(e, &chat_db, work.path())?);
        }
        if let Some(b) = &baseline {
            before.push(amc_run(b, &chat_db, expected, last_rowid, work.path())?);
        }
    }
    if !before.is_empty() {
        let s = median(before.iter().map(|r| r.took.as_secs_f64()).collect());
        let mib = median(before.iter().map(|r| r.peak_mib).collect());
        let now = median(amc.iter().map(|r| r.took.as_secs_f64()).collect());
        println!(
            "baseline build, same runs: median {s:.2} s, peak RSS {mib:.0} MiB; this build / baseline: {:.2}",
            now / s
        );
    }
    let amc_s = median(amc.iter().map(|r| r.took.as_secs_f64()).collect());
    let amc_cpu = median(amc.iter().map(|r| r.cpu_s).collect());
    let amc_mib = median(amc.iter().map(|r| r.peak_mib).collect());
    println!(
        "first import of {expected} messages, amc serve to all stored: median {amc_s:.2} s ({:.0} msg/s), \
         CPU {amc_cpu:.2} s, peak RSS {amc_mib:.0} MiB ({runs} runs)",
        expected as f64 / amc_s
    );
    if !peer.is_empty() {
        let peer_s = median(peer.iter().map(|r| r.took.as_secs_f64()).collect());
        let peer_cpu = median(peer.iter().map(|r| r.cpu_s).collect());
        let peer_mib = median(peer.iter().map(|r| r.peak_mib).collect());
        println!(
            "imessage-exporter -f txt on the same file: median {peer_s:.2} s, CPU {peer_cpu:.2} s, \
             peak RSS {peer_mib:.0} MiB ({runs} runs)"
        );
        println!(
            "ratio AMC / imessage-exporter: time {:.2}, CPU {:.2}, peak memory {:.2}",
            amc_s / peer_s,
            amc_cpu / peer_cpu,
            amc_mib / peer_mib
        );
    } else {
        println!("imessage-exporter: not run (set AMC_BENCH_EXPORTER to its binary)");
    }
    let after = after_import(Path::new(AMC), &chat_db, expected, work.path())?;
    println!(
        "daemon at rest after the import: RSS {:.1} MiB (anonymous {:.1}, files {:.1}), {:.2} wake-ups/s \
         (context switches over {} s)",
        after.rest_mib,
        after.rest_anon_mib,
        after.rest_file_mib,
        after.wakeups_per_s,
        REST_WINDOW.as_secs()
    );
    println!(
        "store after the import, search index included: {:.0} bytes per message; chat.db {:.0}; ratio {:.2}",
        after.store_bytes,
        after.chat_bytes,
        after.store_bytes / after.chat_bytes
    );
    Ok(())
}
