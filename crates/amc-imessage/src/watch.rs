//! Follows chat.db as Messages writes it.
//!
//! Two watches: one on the two files chat.db and chat.db-wal, for their writes, and on
//! Linux one on the Messages *directory*, for the files being made, removed or renamed
//! (Messages recreates the WAL when it relaunches); the file watch is set again whenever a
//! file is made anew, noticed by an event or by the slow check. On a Mac the directory watch cannot be trusted with
//! writes: FSEvents reports a write to a file that stays open only when it is closed, and
//! Messages keeps chat.db-wal open (notify-rs/notify#240). So the files are watched with
//! kqueue vnode events there (notify's kqueue backend, as steipete/imsg does with
//! DispatchSource), and with inotify on Linux.
//!
//! A file event can come before the commit it announces is visible to a reader, and then
//! nothing wakes AMC again: so every read a file event causes is followed by a few quick
//! checks of `PRAGMA data_version` over the next half second. A slow fallback check (the
//! same, and the file's identity) runs every few seconds, so a lost event never loses a
//! message. An idle AMC wakes only for that check.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use amc_core::every::Ticks;
use amc_core::model::Source;
use amc_core::service::{Amc, SourceState, SourceStatus};
use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::SourceError;
use crate::chatdb::ChatDb;
use crate::sweep::{Recent, SweepReport, Sweeper};
use crate::sync::{CHECKPOINT_KEY, Checkpoint, SharedChatDb, read_checkpoint, rescan_recent, store_readers, sync_once};

/// How long to let a burst of file events settle before reading.
const DEBOUNCE: Duration = Duration::from_millis(5);

/// The pause between two chunks of a sweep: other work (a new message) goes first.
const SWEEP_PAUSE: Duration = Duration::from_millis(10);

/// When the watcher sweeps the whole of chat.db. New rows, and edits, unsends and late
/// joins among the newest rows, come on the event path; a sweep is for what that path
/// cannot see, so it runs on evidence that something happened elsewhere, and otherwise
/// rarely.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepPeriods {
    /// After a sign that chat.db was disrupted (the file or its WAL replaced, the highest
    /// ROWID or the message sequence gone back, the checkpoint's rows no longer there, the
    /// Mac back from sleep): a sweep at most this long after the last one (2 minutes).
    pub disrupted: Duration,
    /// After chat.db changed with no new row and nothing changed among the newest rows (a
    /// change far back, or only a read receipt): at most this long after the last (1 hour).
    pub unexplained: Duration,
    /// With no sign at all: this long after the last (6 hours).
    pub every: Duration,
}

impl SweepPeriods {
    /// The same period for every reason (tests).
    pub const fn all(period: Duration) -> Self {
        Self { disrupted: period, unexplained: period, every: period }
    }
}

impl Default for SweepPeriods {
    fn default() -> Self {
        Self {
            disrupted: Duration::from_secs(120),
            unexplained: Duration::from_secs(3600),
            every: Duration::from_secs(6 * 3600),
        }
    }
}

/// How far the wall clock may run ahead of the monotonic one between two looks before the
/// Mac is taken to have slept (the monotonic clock stops while it sleeps).
const SLEPT: Duration = Duration::from_secs(60);

/// After a read a file event caused, when to look at `data_version` again.
const RECHECKS: [Duration; 3] = [Duration::from_millis(20), Duration::from_millis(80), Duration::from_millis(400)];

/// How the watcher is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchConfig {
    /// chat.db.
    pub chat_db: PathBuf,
    /// The fallback check's period.
    pub poll: Duration,
    /// When the whole file is swept.
    pub sweeps: SweepPeriods,
    /// Contacts databases to name senders from.
    pub contacts: Vec<PathBuf>,
    /// Rows sent longer ago than this that appear after the first import arrived late
    /// (see [`crate::settings::ImessageSettings::late_horizon`]).
    pub late_horizon: Option<Duration>,
    /// Which of the directory watch's events count.
    pub dir_events: DirEvents,
}

/// Which events of the Messages directory's watch the watcher acts on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DirEvents {
    /// All of them (inotify also reports writes to files that stay open).
    #[default]
    All,
    /// Only files made, removed or renamed: what FSEvents reports of a file that stays
    /// open. Tests use it to hold the watcher to what a Mac delivers.
    Namespace,
}

/// What woke the watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// A file event: read what is new.
    Event,
    /// A quick check after an event: read only if `data_version` moved.
    Quick,
    /// The fallback check: the same, plus the slow look (rebuilds, edits, recent rows).
    Slow,
}

/// Whether a watch event makes or removes one of chat.db's files (the file watch must
/// then be set again).
fn is_namespace(event: &notify::Event) -> bool {
    matches!(
        event.kind,
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(notify::event::ModifyKind::Name(_))
    )
}

/// Watches chat.db and chat.db-wal themselves (again): after Messages recreated one, the
/// old watch is on a file that no longer exists.
/// Returns what it watched: each file's identity (`None`: not there, or not watched).
fn arm_files(watcher: &mut notify::RecommendedWatcher, chat_db: &Path) -> [Option<(u64, u64)>; 2] {
    let wal = wal_of(chat_db);
    [chat_db, wal.as_path()].map(|file| {
        let _ = watcher.unwatch(file);
        match watcher.watch(file, RecursiveMode::NonRecursive) {
            Ok(()) => identity(file),
            Err(e) => {
                tracing::debug!(file = %file.display(), error = %e, "not watching this file for now");
                None
            }
        }
    })
}

/// The identities of chat.db and chat.db-wal as they are now.
fn file_identities(chat_db: &Path) -> [Option<(u64, u64)>; 2] {
    [identity(chat_db), identity(&wal_of(chat_db))]
}

/// chat.db's write-ahead log, which SQLite names after the file: `chat.db-wal`, or
/// `messages.sqlite-wal` for a copy `--chat-db` names.
fn wal_of(chat_db: &Path) -> PathBuf {
    let mut name = chat_db.file_name().unwrap_or_default().to_os_string();
    name.push("-wal");
    chat_db.with_file_name(name)
}

/// The names of chat.db's two files, as watch events give them.
fn file_names(chat_db: &Path) -> [OsString; 2] {
    [chat_db, wal_of(chat_db).as_path()].map(|p| p.file_name().unwrap_or_default().to_os_string())
}

fn is_ours(event: &notify::Event, names: &[OsString; 2]) -> bool {
    let relevant = matches!(
        event.kind,
        EventKind::Modify(notify::event::ModifyKind::Data(_))
            | EventKind::Modify(notify::event::ModifyKind::Any)
            | EventKind::Modify(notify::event::ModifyKind::Name(_))
            | EventKind::Create(_)
            | EventKind::Remove(_)
            | EventKind::Any
    );
    relevant && event.paths.iter().any(|p| p.file_name().is_some_and(|n| names.iter().any(|ours| ours == n)))
}

/// What identifies the chat.db file: a replaced or rebuilt one has another inode.
fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

fn status(state: SourceState, reason: Option<String>) -> SourceStatus {
    SourceStatus::new(state, reason)
}

/// The advice for a chat.db that cannot be opened: where to name the right file when there
/// is none, else Full Disk Access.
pub fn full_disk_access_advice(path: &Path, e: &SourceError) -> String {
    if let SourceError::Missing(_) = e {
        return format!(
            "chat.db is missing: {e}. Name the Messages database with --chat-db or imessage_chat_db in \
             config.toml (on macOS, Messages keeps it at ~/Library/Messages/chat.db once it is set up)."
        );
    }
    format!(
        "{e}. On macOS, give AMC Full Disk Access: System Settings → Privacy & Security → Full Disk Access, \
         turn on AMC (or the terminal running `amc serve`), then restart it. chat.db is expected at {}.",
        path.display()
    )
}

/// What a look at chat.db found, for the sweep: the strongest sign wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Sign {
    /// Nothing changed, or only what the event path reads (new rows, the newest rows).
    Explained,
    /// chat.db changed with no new row and nothing changed among the newest rows.
    Unexplained,
    /// chat.db was opened anew or disrupted: its rows may be anywhere.
    Disrupted,
}

struct Open {
    db: SharedChatDb,
    identity: Option<(u64, u64)>,
    /// The WAL's identity at the last look: a WAL made anew means Messages relaunched or
    /// the file was replaced. (Its size is no sign: SQLite restarts a WAL from its start
    /// after every checkpoint, and may truncate it then.)
    wal: Option<(u64, u64)>,
    /// The highest ROWID and the message table's AUTOINCREMENT sequence at the last look:
    /// neither goes back unless rows were rewritten.
    high: (i64, i64),
    /// `data_version` at the last read.
    data_version: i64,
    /// `data_version` at the last slow look: rebuilds and downloads show only there.
    slow_version: i64,
    /// The newest rows as the last read saw them.
    recent: Recent,
    /// What the sweeps found of this file.
    sweeper: Sweeper,
}

/// A sweep under way: the last ROWID compared, and what it did so far.
struct Sweeping {
    after: i64,
    report: SweepReport,
    started: std::time::Instant,
}

/// Follows chat.db until `shutdown`, storing every new row.
pub async fn run(amc: Amc, cfg: WatchConfig, shutdown: CancellationToken) {
    // `true`: the event made or removed a file, so the file watch is set again.
    let (tx, mut rx) = mpsc::channel::<bool>(64);
    let dir = cfg.chat_db.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let names = file_names(&cfg.chat_db);
    let (dir_tx, model, dir_names) = (tx.clone(), cfg.dir_events, names.clone());
    // On a Mac the folder is not watched: notify's kqueue backend would watch each new
    // entry of ~/Library/Messages (one descriptor per file); the files' own watches, set
    // again whenever a file's identity changes, cover recreation there.
    let watch_dir = !cfg!(target_os = "macos");
    let dir_watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(event) = res
            && is_ours(&event, &dir_names)
            && (model == DirEvents::All || is_namespace(&event))
        {
            let _ = dir_tx.try_send(is_namespace(&event));
        }
    });
    let _dir_watcher = match dir_watcher {
        Ok(_) if !watch_dir => None,
        Ok(mut w) => match w.watch(&dir, RecursiveMode::NonRecursive) {
            Ok(()) => Some(w),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot watch the Messages folder; checking every few seconds");
                None
            }
        },
        Err(e) => {
            tracing::warn!(error = %e, "no file watcher; checking every few seconds");
            None
        }
    };
    let mut file_watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(event) = res
            && is_ours(&event, &names)
        {
            let _ = tx.try_send(is_namespace(&event));
        }
    })
    .map_err(|e| tracing::warn!(error = %e, "cannot watch chat.db's files; checking every few seconds"))
    .ok();
    let mut armed = file_watcher.as_mut().map(|w| arm_files(w, &cfg.chat_db));
    let mut open: Option<Open> = None;
    // Kept by a thread of its own: tokio's timer would wake the runtime on the way to a
    // far deadline. The thread looks at chat.db's files itself and wakes the runtime only
    // when they changed, something is due, or the Mac slept ([`rest_gate`]).
    let (wanted, base) = (Arc::new(AtomicI64::new(0)), std::time::Instant::now());
    let gate = rest_gate(cfg.chat_db.clone(), cfg.poll, base, wanted.clone());
    let mut tick = Ticks::gated("amc-chatdb-check", cfg.poll, gate);
    // The quick checks still to make after the last event, and when the next is due.
    let mut recheck: Option<(usize, tokio::time::Instant)> = None;
    // The strongest sign since the last sweep began (a sweep is due once after opening
    // chat.db), and when that sweep began; while one runs, its next range is due after a
    // pause. With no sign, a sweep is due `sweeps.every` after the last.
    let (mut sign, mut swept_at, mut sweeping) = (Sign::Disrupted, None::<tokio::time::Instant>, None::<Sweeping>);
    let mut clocks = (std::time::SystemTime::now(), tokio::time::Instant::now());
    loop {
        let due = recheck.map(|(_, at)| at);
        let now = tokio::time::Instant::now();
        let wall = std::time::SystemTime::now();
        if let Some(asleep) = slept((clocks.0, clocks.1.into_std()), (wall, now.into_std())) {
            tracing::debug!(slept_s = asleep.as_secs(), "the Mac slept; a sweep is due");
            sign = sign.max(Sign::Disrupted);
        }
        clocks = (wall, now);
        let sweep_due = match (&sweeping, swept_at) {
            _ if open.is_none() => None,
            (Some(_), _) => Some(now + SWEEP_PAUSE),
            (None, None) => Some(now),
            (None, Some(at)) => Some(
                at + match sign {
                    Sign::Disrupted => cfg.sweeps.disrupted,
                    Sign::Unexplained => cfg.sweeps.unexplained,
                    Sign::Explained => cfg.sweeps.every,
                },
            ),
        };
        // The check's thread wakes this loop at its period while chat.db is not open (to
        // open it again) and once a sweep is near; otherwise only on a change.
        let want_at = match (&open, sweep_due) {
            (None, _) => 0,
            (Some(_), Some(at)) => at.into_std().saturating_duration_since(base).as_millis() as i64,
            (Some(_), None) => i64::MAX,
        };
        wanted.store(want_at, Ordering::Relaxed);
        // A sweep further off than the next fallback check waits for that check's tick:
        // tokio's timer would wake the runtime on the way to a far deadline.
        let sweep_due = sweep_due.filter(|at| at.saturating_duration_since(now) <= cfg.poll);
        let look = tokio::select! {
            () = shutdown.cancelled() => return,
            () = async { tokio::time::sleep_until(sweep_due.unwrap_or(now)).await }, if sweep_due.is_some() => {
                if sweeping.is_none() {
                    (sign, swept_at) = (Sign::Explained, Some(tokio::time::Instant::now()));
                    sweeping = Some(Sweeping { after: 0, report: SweepReport::default(), started: std::time::Instant::now() });
                }
                sweep_step(&amc, &mut open, &mut sweeping, &mut sign).await;
                continue;
            }
            Some(namespace) = rx.recv() => {
                tokio::time::sleep(DEBOUNCE).await;
                let mut rearm = namespace;
                while let Ok(n) = rx.try_recv() {
                    rearm |= n;
                }
                if rearm && let Some(w) = file_watcher.as_mut() {
                    armed = Some(arm_files(w, &cfg.chat_db));
                }
                Look::Event
            }
            () = async { tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now)).await }, if due.is_some() => Look::Quick,
            () = tick.tick() => {
                // A file made again since it was watched (or not there then) is watched anew.
                if let Some(w) = file_watcher.as_mut()
                    && armed.is_some_and(|a| a != file_identities(&cfg.chat_db) || a.contains(&None))
                {
                    armed = Some(arm_files(w, &cfg.chat_db));
                }
                Look::Slow
            }
        };
        sign = sign.max(step(&amc, &cfg, &mut open, look).await);
        let now = tokio::time::Instant::now();
        recheck = match (look, recheck) {
            (Look::Event, _) => Some((0, now + RECHECKS[0])),
            (Look::Quick, Some((i, _))) => RECHECKS.get(i + 1).map(|d| (i + 1, now + *d)),
            (_, kept) => kept,
        };
    }
}

/// How long the Mac slept between two looks at the clocks, if it did: the monotonic
/// clock stands still while a Mac sleeps (`mach_absolute_time`; Linux's `CLOCK_MONOTONIC`
/// too), the wall clock does not. A wall clock set back, or ahead by less than
/// [`SLEPT`] (a time server's correction), is no sleep.
fn slept(
    before: (std::time::SystemTime, std::time::Instant),
    now: (std::time::SystemTime, std::time::Instant),
) -> Option<Duration> {
    let wall = now.0.duration_since(before.0).ok()?;
    let awake = now.1.saturating_duration_since(before.1);
    (wall > awake + SLEPT).then(|| wall - awake)
}

/// At rest, the most checks in a row the check's thread keeps to itself before it wakes
/// the watcher anyway (10 minutes at the default 30 s).
const QUIET_TICKS: u32 = 20;

/// What tells a write to chat.db's files: which file, its size and when it was modified.
type Stamp = Option<(u64, u64, u64, i64, i64)>;

fn stamp(path: &Path) -> Stamp {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
}

/// The check's gate, run on its thread at each period: whether to wake the watcher. It
/// does when chat.db or its WAL was written or made anew since the last look (SQLite
/// writes a commit to the WAL, a checkpoint to chat.db: each moves the file's size or
/// time), and at the look after that too (a commit's frames are in the WAL before
/// `data_version` shows it); when the watcher wants it by now (`wanted`, milliseconds
/// after `base`: chat.db not open yet, or a sweep due within the period); when the Mac
/// slept; and at least every [`QUIET_TICKS`] checks. At rest it asks the file system only,
/// so an idle AMC's runtime sleeps through the check.
fn rest_gate(
    chat_db: PathBuf,
    period: Duration,
    base: std::time::Instant,
    wanted: Arc<AtomicI64>,
) -> impl FnMut() -> bool + Send + 'static {
    let wal = wal_of(&chat_db);
    let (mut seen, mut clocks, mut quiet, mut was_written) = (None::<[Stamp; 2]>, None, 0, false);
    move || {
        let stamps = [stamp(&chat_db), stamp(&wal)];
        let written = seen != Some(stamps);
        seen = Some(stamps);
        let now = (std::time::SystemTime::now(), std::time::Instant::now());
        let asleep = clocks.is_some_and(|before| slept(before, now).is_some());
        clocks = Some(now);
        let due = (now.1 + period).saturating_duration_since(base).as_millis() as i64 >= wanted.load(Ordering::Relaxed);
        quiet += 1;
        let wake = written || was_written || asleep || due || quiet >= QUIET_TICKS;
        was_written = written;
        if wake {
            quiet = 0;
        }
        wake
    }
}

/// One range of the sweep under way; the end of it when chat.db has no more rows. A sweep
/// that cannot go on (chat.db closed, a read failed), or that came before the first
/// import, ends, and another is due as after a disruption.
async fn sweep_step(amc: &Amc, open: &mut Option<Open>, sweeping: &mut Option<Sweeping>, sign: &mut Sign) {
    let (Some(o), Some(s)) = (open.as_mut(), sweeping.as_mut()) else {
        *sweeping = None;
        return;
    };
    let imported = read_checkpoint(amc).await.is_ok_and(|c| c.imported_before());
    let next = if imported { o.sweeper.chunk(amc, &o.db, s.after, &mut s.report).await } else { Ok(None) };
    match next {
        Ok(Some(last)) => s.after = last,
        Ok(None) => {
            let r = &s.report;
            if r.inserted + r.updated > 0 {
                tracing::info!(
                    rows = r.rows,
                    inserted = r.inserted,
                    updated = r.updated,
                    late = r.late,
                    "chat.db swept: repaired what differed"
                );
            } else {
                tracing::debug!(
                    rows = r.rows,
                    took_ms = s.started.elapsed().as_millis() as u64,
                    "chat.db swept: nothing differed"
                );
            }
            if !imported {
                *sign = Sign::Disrupted;
            }
            if r.failed > 0 {
                *sign = (*sign).max(Sign::Unexplained);
            }
            *sweeping = None;
        }
        Err(e) => {
            tracing::warn!(error = %e, "sweeping chat.db failed; sweeping again later");
            *sign = Sign::Disrupted;
            *sweeping = None;
        }
    }
}

/// One look at chat.db: (re)open it if needed, and read what is new. Returns what it saw
/// of a change the event path cannot read: the sign for a sweep.
async fn step(amc: &Amc, cfg: &WatchConfig, open: &mut Option<Open>, look: Look) -> Sign {
    let (path, contacts) = (cfg.chat_db.as_path(), cfg.contacts.as_slice());
    let now_identity = identity(path);
    if open.as_ref().is_some_and(|o| o.identity != now_identity) {
        tracing::info!("chat.db was replaced; reading it again");
        *open = None;
    }
    let reopened = open.is_none();
    if reopened {
        // Opening, probing the schema and reading Contacts may wait on locks: not on the
        // async threads.
        let (p, c, late) = (path.to_owned(), contacts.to_vec(), cfg.late_horizon);
        let opened = tokio::task::spawn_blocking(move || {
            let db = ChatDb::open(&p)?.with_contacts(crate::contacts::Contacts::load(&c)).with_late_horizon(late);
            let data_version = db.data_version().unwrap_or(-1);
            Ok::<_, SourceError>((db, data_version))
        })
        .await
        .map_err(|e| SourceError::Read(e.to_string()))
        .and_then(|r| r);
        match opened {
            Ok((db, data_version)) => {
                *open = Some(Open {
                    data_version,
                    slow_version: data_version,
                    db: Arc::new(Mutex::new(db)),
                    identity: now_identity,
                    wal: identity(&wal_of(path)),
                    high: (0, 0),
                    recent: Recent::default(),
                    sweeper: Sweeper::default(),
                });
            }
            Err(e) => {
                amc.set_source_status(
                    Source::Imessage,
                    status(SourceState::Degraded, Some(full_disk_access_advice(path, &e))),
                );
                return Sign::Explained;
            }
        }
    } else {
        // Has anything been written since the last look? A file event says so; the
        // checks ask `data_version`, and an event's read remembers it too.
        let Some(o) = open.as_mut() else { return Sign::Explained };
        // A pragma that reads chat.db's shared memory and waits on no lock: asked in place
        // on this thread, it costs an idle AMC no hand-off to another thread (each a
        // round of wake-ups; `block_in_place` would hand the runtime's work to one). Only
        // when a read of chat.db holds the connection is the wait taken off the runtime.
        let version = match o.db.try_lock() {
            Ok(db) => db.data_version(),
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().data_version(),
            Err(std::sync::TryLockError::WouldBlock) => {
                tokio::task::block_in_place(|| o.db.lock().unwrap_or_else(|p| p.into_inner()).data_version())
            }
        };
        match (version, look) {
            (Ok(v), Look::Slow) if v == o.slow_version => return Sign::Explained,
            (Ok(v), Look::Slow) => (o.data_version, o.slow_version) = (v, v),
            (Ok(v), Look::Quick) if v == o.data_version => return Sign::Explained,
            (Ok(v), _) => o.data_version = v,
            (Err(_), _) => {}
        }
    }
    let Some(db) = open.as_ref().map(|o| o.db.clone()) else { return Sign::Explained };
    let mut sign = if reopened { Sign::Disrupted } else { Sign::Explained };
    // The slow look, on the slow check after a change and whenever chat.db was just
    // (re)opened (whatever woke the watcher: what changed before the open is known only
    // from the rows): a rebuild in place keeps the file's identity, so compare the rows
    // with the checkpoint; look again at the newest rows for reactions and downloads.
    if reopened && let Err(e) = store_readers(amc, &db).await {
        tracing::warn!(error = %e, "reading who is in each chat failed");
    }
    if look == Look::Slow || reopened {
        if resync_if_rebuilt(amc, &db).await {
            sign = Sign::Disrupted;
        }
        if let Err(e) = rescan_recent(amc, &db).await {
            tracing::warn!(error = %e, "rescanning chat.db failed");
        }
    }
    let read = sync_once(amc, &db).await;
    let new_rows = read.as_ref().is_ok_and(|r| r.rows > 0);
    match read {
        Ok(report) => {
            if report.rows > 0 {
                tracing::debug!(rows = report.rows, inserted = report.inserted, "chat.db read");
            }
            amc.set_source_status(Source::Imessage, status(SourceState::Connected, None));
            // chat.db was read: what AMC could read while away is in (and Full Disk Access
            // is granted, as the window says).
            if reopened {
                amc.note_caught_up(Source::Imessage);
            }
            crate::recheck::recheck_sent(amc, &db).await;
        }
        Err(e) => {
            tracing::warn!(error = %e, "reading chat.db failed; trying again");
            amc.set_source_status(Source::Imessage, status(SourceState::Degraded, Some(e.to_string())));
            *open = None;
            return Sign::Disrupted;
        }
    }
    // Edits, unsends and late chat joins of the newest rows: on the same read as new rows.
    let Some(o) = open.as_mut() else { return sign };
    let newest_changed = match o.recent.look(amc, &db).await {
        Ok(report) => report.decoded > 0 || report.renamed > 0,
        Err(e) => {
            tracing::warn!(error = %e, "comparing chat.db's newest rows failed");
            true
        }
    };
    sign = sign.max(o.disrupted(path, &db).await);
    if !new_rows && !newest_changed && !reopened {
        sign = sign.max(Sign::Unexplained);
    }
    sign
}

impl Open {
    /// Whether chat.db shows a disruption since the last look: its WAL made anew, its
    /// highest ROWID or the message sequence gone back.
    async fn disrupted(&mut self, path: &Path, db: &SharedChatDb) -> Sign {
        let wal = identity(&wal_of(path));
        let wal_reset = matches!((self.wal, wal), (Some(was), Some(now)) if was != now);
        self.wal = wal;
        let d = db.clone();
        let high = tokio::task::spawn_blocking(move || d.lock().unwrap_or_else(|p| p.into_inner()).high_marks()).await;
        let Ok(Ok(high)) = high else { return Sign::Disrupted };
        let went_back = high.0 < self.high.0 || high.1 < self.high.1;
        self.high = high;
        if wal_reset || went_back {
            tracing::info!(wal_reset, went_back, "chat.db was rewritten; a sweep is due");
            Sign::Disrupted
        } else {
            Sign::Explained
        }
    }
}

/// A chat.db that was rebuilt or replaced (its rows no longer what the checkpoint
/// describes) is read again from the start (returns whether it was): ingest is idempotent on the message guid,
/// so nothing doubles. Three signs, any one enough: the checkpoint's ROWID holds another
/// message, chat.db ends below the checkpoint, or the rows at or below the checkpoint are
/// not as many as when they were read (written into gaps below it, or deleted).
pub async fn resync_if_rebuilt(amc: &Amc, db: &SharedChatDb) -> bool {
    let Ok(checkpoint) = read_checkpoint(amc).await else { return false };
    if checkpoint.rowid == 0 {
        return false;
    }
    // chat.db's side, off the async threads.
    let (d, at) = (db.clone(), checkpoint.clone());
    let look = tokio::task::spawn_blocking(move || RowsNow::of(&d.lock().unwrap_or_else(|p| p.into_inner()), &at));
    let Ok(RowsNow { guid_moved, last, counted }) = look.await else { return false };
    // chat.db ends below the checkpoint. After deletions its last row is one AMC read
    // (ROWIDs are AUTOINCREMENT: new rows still come after the checkpoint); after a rebuild
    // it is not.
    let shrunk = match last {
        Some((max, guid)) if max < checkpoint.rowid => match guid {
            Some(guid) => !amc.is_stored(Source::Imessage, &guid).await.unwrap_or(false),
            None => true,
        },
        _ => false,
    };
    // More rows below the checkpoint than were read: written into gaps. Fewer: the person
    // deleted some, which needs no reading, only the new count.
    let grown = checkpoint.rows.zip(counted).is_some_and(|(rows, now)| now > rows);
    if !(guid_moved || shrunk || grown) {
        if let (Some(rows), Some(now)) = (checkpoint.rows, counted)
            && now < rows
        {
            let recounted = Checkpoint { rows: Some(now), ..checkpoint };
            if let Err(e) = amc.set_checkpoint(Source::Imessage, CHECKPOINT_KEY, &recounted.encode()).await {
                tracing::warn!(error = %e, "could not record chat.db's row count");
            }
        }
        return false;
    }
    {
        tracing::warn!(
            checkpoint = checkpoint.rowid,
            guid_moved,
            shrunk,
            grown,
            "chat.db was rebuilt: its rows no longer match AMC's checkpoint; resyncing by message guid"
        );
        if let Err(e) = amc.set_checkpoint(Source::Imessage, CHECKPOINT_KEY, &Checkpoint::resync().encode()).await {
            tracing::warn!(error = %e, "could not reset the chat.db checkpoint");
        }
    }
    true
}

/// What chat.db holds now, beside a checkpoint: whether the checkpoint's row holds another
/// message (a deleted one is no sign), its last row and that row's guid, and how many rows
/// there are at or below the checkpoint.
struct RowsNow {
    guid_moved: bool,
    last: Option<(i64, Option<String>)>,
    counted: Option<i64>,
}

impl RowsNow {
    fn of(db: &ChatDb, checkpoint: &Checkpoint) -> Self {
        let guid_moved = checkpoint
            .guid
            .as_ref()
            .is_some_and(|guid| db.guid_of(checkpoint.rowid).ok().flatten().is_some_and(|now| &now != guid));
        let last = db.max_rowid().ok().map(|max| (max, db.guid_of(max).ok().flatten()));
        Self { guid_moved, last, counted: db.rows_up_to(checkpoint.rowid).ok() }
    }
}

/// Whether file events arrive for a file in `dir` as the watcher arms them (kqueue on a
/// Mac, inotify elsewhere): a scratch file is made there (never over anything already
/// there), watched alone, written to and removed, and the first event for it awaited up to
/// `within`. Returns how long it took, or what failed. `amc doctor --deep` runs it beside
/// chat.db, which it never touches.
pub fn events_arrive(dir: &Path, within: Duration) -> Result<Duration, String> {
    /// The scratch file, removed however the check ends.
    struct Scratch(PathBuf);
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let path = dir.join(format!(".amc-doctor-{}-{nanos}", std::process::id()));
    let mut file = amc_core::files::create_new(&path)
        .map_err(|e| format!("cannot make a scratch file in {}: {e}", dir.display()))?;
    let scratch = Scratch(path);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        if e.is_ok_and(|e| matches!(e.kind, EventKind::Modify(_) | EventKind::Create(_))) {
            let _ = tx.send(());
        }
    })
    .map_err(|e| format!("cannot watch files: {e}"))?;
    watcher
        .watch(&scratch.0, RecursiveMode::NonRecursive)
        .map_err(|e| format!("cannot watch the scratch file: {e}"))?;
    let started = std::time::Instant::now();
    std::io::Write::write_all(&mut file, b"amc doctor")
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("cannot write the scratch file: {e}"))?;
    let arrived = rx
        .recv_timeout(within)
        .map(|()| started.elapsed())
        .map_err(|_| format!("no file event came within {} s of a write", within.as_secs()));
    let _ = watcher.unwatch(&scratch.0);
    arrived
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::time::{Duration, Instant, SystemTime};

    use super::{QUIET_TICKS, rest_gate, slept};

    #[test]
    fn a_wall_clock_ahead_of_the_monotonic_one_is_a_sleep() {
        let (wall, mono) = (SystemTime::now(), Instant::now());
        // Thirty seconds awake, the wall clock thirty seconds on: awake.
        let awake = Duration::from_secs(30);
        assert_eq!(slept((wall, mono), (wall + awake, mono + awake)), None);
        // An hour asleep between two 30 s checks: the monotonic clock moved 30 s.
        let hour = Duration::from_secs(3600);
        assert_eq!(slept((wall, mono), (wall + hour + awake, mono + awake)), Some(hour));
        // A time server setting the clock a few seconds ahead, or back: no sleep.
        assert_eq!(slept((wall, mono), (wall + awake + Duration::from_secs(5), mono + awake)), None);
        assert_eq!(slept((wall, mono), (wall - hour, mono + awake)), None);
    }

    #[test]
    fn the_check_wakes_the_watcher_only_for_a_write_something_due_or_now_and_then() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("chat.db");
        std::fs::write(&db, b"x").expect("write");
        let wanted = Arc::new(AtomicI64::new(i64::MAX));
        let base = Instant::now();
        let mut gate = rest_gate(db.clone(), Duration::from_secs(30), base, wanted.clone());
        assert!(gate() && gate(), "the first look, and the one after");
        assert!(!gate(), "nothing written, nothing due");
        // A commit grows the WAL; a checkpoint rewrites chat.db in place at the same size.
        // Each wakes the watcher at the look that sees it and the next.
        std::fs::write(dir.path().join("chat.db-wal"), b"frame").expect("wal");
        assert_eq!([gate(), gate(), gate()], [true, true, false], "a commit");
        let f = std::fs::OpenOptions::new().write(true).open(&db).expect("open");
        f.set_modified(SystemTime::now() + Duration::from_secs(1)).expect("touch");
        assert_eq!([gate(), gate(), gate()], [true, true, false], "a checkpoint");
        // chat.db made anew (moved into place): another file.
        std::fs::write(dir.path().join("new.db"), b"x").expect("new");
        std::fs::rename(dir.path().join("new.db"), &db).expect("rename");
        assert_eq!([gate(), gate(), gate()], [true, true, false], "a new file");
        // A sweep due within the period (or chat.db still to open), and one further off.
        let at = |d: Duration| (base.elapsed() + d).as_millis() as i64;
        wanted.store(at(Duration::from_secs(20)), Ordering::Relaxed);
        assert!(gate(), "due within the period");
        wanted.store(at(Duration::from_secs(60)), Ordering::Relaxed);
        assert!(!gate(), "due after the next look");
        wanted.store(i64::MAX, Ordering::Relaxed);
        // At rest, once every QUIET_TICKS looks.
        let woke = (0..QUIET_TICKS * 2).filter(|_| gate()).count();
        assert_eq!(woke, 2);
    }
}
