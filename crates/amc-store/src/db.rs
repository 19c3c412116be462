//! AMC's one SQLite database as a primitive: the writer, the pool of readers, and
//! migrations. Only the core opens it ([`Database::open`] is crate-private); the core's
//! store and the relay's store run their SQL through [`Database::read`] and
//! [`Database::write`].
//!
//! The core's own schema is versioned by `PRAGMA user_version`. Every other part (the
//! relay) keeps its version in `schema_parts`, so parts migrate independently.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};

use crate::error::{Error, Result};

/// A migration: its name (for the log) and its SQL.
pub type Migration = (&'static str, &'static str);

/// How much of the database the writer reads through a memory map. Readers read into
/// their page caches instead: a reader that begins a transaction after another
/// connection wrote unmaps its whole map (SQLite's `pagerBeginReadTransaction`), so
/// with a map every read that follows a write faulted each page it touched in again.
/// Without one, an agent's unread list after a mark took 1.6 ms instead of 2.2 (p50)
/// and 4.6–5.0 ms instead of 6.3–7.5 (p99) in the inbox bench at 300,000 messages.
const MMAP_BYTES: i64 = 268_435_456;

/// SQLite's soft heap limit, for all connections of the process together (see
/// <https://www.sqlite.org/pragma.html#pragma_soft_heap_limit>): room for the readers'
/// caches of a large inbox (with 32 MiB, ten agents' unread lists at 1,000,000 messages
/// read pages again and again: p99 7.5 ms against 3.8), released once AMC is idle.
const SOFT_HEAP_LIMIT: i64 = 128 * 1024 * 1024;

/// The writer's page cache: a first import's peak memory stays below the exporter's
/// (what the soft heap limit held it to before readers needed more).
const WRITER_CACHE_KIB: i64 = 32 * 1024;

/// Each reader's page cache, allocated as used.
const READER_CACHE_KIB: i64 = 64 * 1024;

/// The write-ahead log's length, in pages, past which it is folded into the database
/// (SQLite's default for its automatic checkpoint).
const CHECKPOINT_PAGES: i32 = 1000;

/// The log's length, in pages, past which the writer copies what the thread has not
/// (32 MiB at SQLite's 4 KiB pages). Well above one batch of a first import (about
/// 3,000 pages), which the thread copies while the writer prepares the next: copied by
/// the writer, each batch's commit would take a third longer.
const LOG_MAX_PAGES: i32 = 8 * CHECKPOINT_PAGES;

/// How long a connection waits for a lock held by another before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The most reader connections open at once. More reads than this wait for one to be
/// free: a hundred agents woken together reuse a few connections instead of opening a
/// hundred (each with its own page cache).
pub const MAX_READERS: usize = 8;

/// In debug builds (every test), panics when called on a runtime's worker thread: a store
/// call waits for the writer or a free reader and for the disk, and on a worker it would
/// stall every task that worker holds. Worker and blocking-pool threads share tokio's name
/// (`tokio-rt-worker`; `tokio-runtime-worker` before tokio 1.5x; a test below notices a new one);
/// what tells them apart is tokio's own check: blocking on a ready channel panics on a
/// worker ("Cannot block the current thread from within a runtime") and returns at once on
/// the blocking pool. (The thread a runtime's `block_on` runs on, a test's body or a
/// binary's `main`, is named otherwise and drives one future, not the pool's tasks.)
#[inline]
pub fn off_the_async_threads() {
    #[cfg(debug_assertions)]
    if matches!(std::thread::current().name(), Some("tokio-rt-worker" | "tokio-runtime-worker")) {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let _ = tx.send(());
        let _ = rx.blocking_recv();
    }
}

/// A cheap, cloneable handle on the database: one writer connection, and a pool of
/// readers that WAL lets run beside it.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
    /// Whether this handle's transactions are uses of the database for
    /// [`Database::release_memory`] (see [`Database::uncounted`]).
    counted: bool,
}

struct Inner {
    path: PathBuf,
    writer: Mutex<Connection>,
    /// When the last write transaction committed (for the idle checkpoint).
    last_write: Mutex<Option<std::time::Instant>>,
    /// Read and write transactions so far, but those of [`Database::uncounted`] handles: what a
    /// release compares with, so that caches any use filled are let go.
    uses: AtomicU64,
    /// [`Inner::uses`] at the last [`Database::release_memory`], once it ran: memory is
    /// let go once per quiet spell.
    released_at: Mutex<Option<u64>>,
    readers: Mutex<Readers>,
    /// Signalled when a reader goes back to the pool.
    returned: std::sync::Condvar,
    /// Folds the log into the database beside the writer (see [`Checkpointer`]).
    checkpointer: Arc<Checkpointer>,
    /// The checkpointer's thread, joined when the database is dropped.
    checkpointing: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.checkpointer.ask(|s| s.stop = true);
        // At most one passive checkpoint to wait for: after this, nothing of the
        // database's is open or running.
        if let Some(t) = self.checkpointing.take()
            && t.join().is_err()
        {
            tracing::warn!("the checkpoint thread panicked");
        }
    }
}

/// Checkpoints off the write path. SQLite's automatic checkpoint runs inside the commit
/// that takes the log past [`CHECKPOINT_PAGES`], so that one write (an agent's
/// `mark_read`, a relay post) waits tens of milliseconds for pages copied on behalf of
/// all. The writer turns it off, and its log hook instead asks a thread of the database's
/// own to run a passive checkpoint on a connection of its own, as SQLite suggests for
/// applications that care about write latency
/// (<https://www.sqlite.org/wal.html#application_initiated_checkpoints>). The thread
/// sleeps until asked: no timer, no wake-up at rest. A log that a steady stream of writes
/// keeps growing is finished by the writer past [`LOG_MAX_PAGES`] (see the hook in `open`).
#[derive(Default)]
struct Checkpointer {
    state: Mutex<CheckpointState>,
    asked: std::sync::Condvar,
}

#[derive(Default)]
struct CheckpointState {
    wanted: bool,
    stop: bool,
    /// A checkpoint of the thread's is under way.
    running: bool,
    /// The writer's own checkpoint is under way: the thread waits.
    paused: bool,
    /// Checkpoints run so far (for tests).
    done: u64,
    /// Checkpoints the writer ran in its commits (for tests).
    by_writer: u64,
}

impl Checkpointer {
    fn ask(&self, f: impl FnOnce(&mut CheckpointState)) {
        f(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()));
        self.asked.notify_all();
    }

    /// Keeps the thread from checkpointing until the guard drops, once its checkpoint
    /// under way (if any) is over: SQLite never waits for another connection's checkpoint,
    /// so the writer's own (the truncating one at rest and at a clean stop) would fail.
    fn pause(&self) -> Paused<'_> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.paused = true;
        self.asked.notify_all();
        while state.running {
            state = self.asked.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        Paused(self)
    }

    /// Runs until the database is dropped: a passive checkpoint each time it is asked.
    fn run(&self, path: &Path) {
        let mut conn = None;
        loop {
            {
                let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                while (!state.wanted || state.paused) && !state.stop {
                    state = self.asked.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                if state.stop {
                    return;
                }
                state.wanted = false;
                state.running = true;
            }
            let checkpoint = |conn: &mut Option<Connection>| -> Result<()> {
                let c = match conn {
                    Some(c) => c,
                    // The database exists by now: never create one where it was removed.
                    None => conn.insert(open_connection(path, OpenFlags::SQLITE_OPEN_READ_WRITE)?),
                };
                c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
                Ok(())
            };
            if let Err(e) = checkpoint(&mut conn) {
                tracing::warn!(error = %e, "checkpoint failed; the next commit asks again");
            }
            self.ask(|s| {
                s.running = false;
                s.done += 1;
            });
        }
    }
}

/// The writer's checkpoint under way (see [`Checkpointer::pause`]).
struct Paused<'a>(&'a Checkpointer);

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        self.0.ask(|s| s.paused = false);
    }
}

/// A reader connection on loan: back to the pool when dropped, or closed (freeing its
/// slot) when there is none or a panic went through it.
struct Lease<'a> {
    db: &'a Database,
    conn: Option<Connection>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut readers = self.db.inner.readers.lock().unwrap_or_else(|p| p.into_inner());
        match self.conn.take() {
            Some(c) if !std::thread::panicking() => readers.idle.push(c),
            _ => readers.open -= 1,
        }
        drop(readers);
        self.db.inner.returned.notify_one();
    }
}

/// The idle reader connections, and how many are open in all.
#[derive(Default)]
struct Readers {
    idle: Vec<Connection>,
    open: usize,
}

impl Database {
    /// Opens (creating if needed) the database at `path`, readable by this account only,
    /// and applies the core's pending `migrations`.
    #[cfg(test)]
    pub(crate) fn open(path: &Path, migrations: &[Migration]) -> Result<Self> {
        Self::open_reporting(path, migrations, &UpdateReporter::default())
    }

    /// [`open`](Self::open), telling `updates` how far the migrations are.
    #[tracing::instrument(skip_all, fields(path = %path.display()), err)]
    pub(crate) fn open_reporting(path: &Path, migrations: &[Migration], updates: &UpdateReporter) -> Result<Self> {
        // Created 0600 here rather than by SQLite (0644 less the umask), and SQLite gives
        // its log and shared-memory files the database's mode. A database made by an older
        // AMC may be wider: narrowed too.
        crate::files::touch(path)?;
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(crate::files::FILE_MODE))?;
        let keys = KeysComputed::default();
        let access = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let mut writer = open_counting(path, access, keys.clone())?;
        writer.pragma_update(None, "journal_mode", "wal")?;
        migrate_core(&mut writer, migrations, updates, &keys)?;
        let reader = warm_reader(path)?;
        let checkpointer = Arc::new(Checkpointer::default());
        // The pragma replaces any log hook: first the pragma, then the hook.
        writer.pragma_update(None, "wal_autocheckpoint", 0)?;
        let asked = Arc::downgrade(&checkpointer);
        writer.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
            if pages >= CHECKPOINT_PAGES
                && let Some(c) = asked.upgrade()
            {
                c.ask(|s| s.wanted = true);
            }
            // SQLite starts the log over only in a transaction begun once every frame
            // was copied (and no reader still uses the log). Under a steady stream of
            // writes, or an import's batches (the next one written while the thread
            // copies the last), the thread never gets there: past its longest, the
            // writer copies what the thread has not, and the log starts over at its next
            // transaction. Passive: busy at once, and left to the next commit, while the
            // thread is at it.
            if pages >= LOG_MAX_PAGES
                && wal.checkpoint().is_ok()
                && let Some(c) = asked.upgrade()
            {
                c.ask(|s| s.by_writer += 1);
            }
            // An error here would fail a statement whose commit happened.
            Ok(())
        }))?;
        let (run, at) = (checkpointer.clone(), path.to_owned());
        let checkpointing = std::thread::Builder::new().name("amc-checkpoint".into()).spawn(move || run.run(&at))?;
        Ok(Self {
            counted: true,
            inner: Arc::new(Inner {
                path: path.to_owned(),
                writer: Mutex::new(writer),
                last_write: Mutex::new(None),
                uses: AtomicU64::new(0),
                released_at: Mutex::new(None),
                readers: Mutex::new(Readers { idle: vec![reader], open: 1 }),
                returned: std::sync::Condvar::new(),
                checkpointer,
                checkpointing: Some(checkpointing),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` in one write transaction (`BEGIN IMMEDIATE`), committing if it returns `Ok`.
    pub fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        self.count_use();
        // A panic inside an earlier closure dropped its transaction, which rolled back:
        // the connection is still sound.
        let mut conn = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        let before = conn.total_changes();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        // Only a transaction that changed rows counts: a source's poll that finds nothing
        // new must not keep AMC from ever being idle.
        if conn.total_changes() != before {
            *self.inner.last_write.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::time::Instant::now());
        }
        Ok(out)
    }

    /// Copies the write-ahead log into the database and truncates it to nothing
    /// (`PRAGMA wal_checkpoint(TRUNCATE)`), so an idle AMC keeps no log beside its
    /// database. Readers in the middle of a transaction make it stop short: it then
    /// returns false, and the log is truncated another time.
    pub fn checkpoint(&self) -> Result<bool> {
        off_the_async_threads();
        let _paused = self.inner.checkpointer.pause();
        let conn = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        // (busy, log frames, frames checkpointed): busy = 1 when it could not finish.
        let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
        Ok(busy == 0)
    }

    /// Lets go of memory a busy spell left behind: the idle readers but one are closed (the
    /// next reads open more again), and the page caches of that one and of the writer are
    /// emptied (`PRAGMA shrink_memory`). A first import leaves well over 100 MB of cached
    /// pages that an idle AMC has no use for. The reader kept keeps the schema it parsed,
    /// so the first read after a quiet spell does not pay for opening a connection. Once
    /// per quiet spell: false when nothing read or wrote since the last release (reads
    /// fill the readers' caches, and a write transaction's lookups the writer's map, even
    /// when it changes nothing).
    pub fn release_memory(&self) -> Result<bool> {
        off_the_async_threads();
        let uses = self.inner.uses.load(Ordering::Acquire);
        {
            let mut released = self.inner.released_at.lock().unwrap_or_else(|p| p.into_inner());
            if *released == Some(uses) {
                return Ok(false);
            }
            *released = Some(uses);
        }
        // Emptying a cache, and unmapping the writer's map of the database (mapped again
        // as used): an import touches every page of it.
        let shrink = format!("PRAGMA shrink_memory; PRAGMA mmap_size = 0; PRAGMA mmap_size = {MMAP_BYTES};");
        let (kept, closed) = {
            let mut readers = self.inner.readers.lock().unwrap_or_else(|p| p.into_inner());
            let mut idle = std::mem::take(&mut readers.idle);
            let kept = idle.pop();
            readers.open -= idle.len();
            (kept, idle)
        };
        drop(closed);
        if let Some(kept) = kept {
            // On loan while it shrinks: back in the pool when the lease drops.
            let lease = Lease { db: self, conn: Some(kept) };
            if let Some(c) = &lease.conn {
                c.execute_batch("PRAGMA shrink_memory;")?;
            }
        }
        let conn = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        conn.execute_batch(&shrink)?;
        Ok(true)
    }

    /// Whether anything read or wrote since the last [`Database::release_memory`], which
    /// would then have something to let go.
    pub fn release_due(&self) -> bool {
        let uses = self.inner.uses.load(Ordering::Acquire);
        *self.inner.released_at.lock().unwrap_or_else(|p| p.into_inner()) != Some(uses)
    }

    /// The same database, through a handle whose transactions are no use of it for
    /// [`Database::release_memory`]: the housekeeping's own minute's look at the store must
    /// not make a release due every minute at rest.
    pub fn uncounted(&self) -> Self {
        Self { inner: self.inner.clone(), counted: false }
    }

    /// Counts a transaction as a use, unless this handle is [`Database::uncounted`]. Every
    /// transaction passes here, so here debug builds check that it is not run on an async
    /// runtime's worker thread ([`off_the_async_threads`]).
    fn count_use(&self) {
        off_the_async_threads();
        if self.counted {
            self.inner.uses.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// How long since the last write that changed rows committed, if any did since the
    /// database was opened.
    pub fn idle_for(&self) -> Option<Duration> {
        self.inner.last_write.lock().unwrap_or_else(|p| p.into_inner()).map(|at| at.elapsed())
    }

    /// Runs `f` in one read transaction on a pooled reader: every query in it sees the
    /// same snapshot.
    pub fn read<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        self.count_use();
        let mut lease = self.take_reader()?;
        let conn = lease.conn.as_mut().ok_or_else(|| Error::internal("reader lease without a connection"))?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
        let out = f(&tx);
        tx.finish()?;
        out
    }

    /// An idle reader, a new one while fewer than [`MAX_READERS`] are open, or else the
    /// next one returned.
    fn take_reader(&self) -> Result<Lease<'_>> {
        let mut readers = self.inner.readers.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(c) = readers.idle.pop() {
                return Ok(Lease { db: self, conn: Some(c) });
            }
            if readers.open < MAX_READERS {
                readers.open += 1;
                drop(readers);
                // The lease gives the slot back if opening fails.
                let mut lease = Lease { db: self, conn: None };
                lease.conn = Some(open_connection(&self.inner.path, OpenFlags::SQLITE_OPEN_READ_ONLY)?);
                return Ok(lease);
            }
            readers = self.inner.returned.wait(readers).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Applies the migrations of `part` (the relay, …) that it has not applied yet, each
    /// in its own transaction, and returns the part's schema version.
    pub fn migrate_part(&self, part: &str, migrations: &[Migration]) -> Result<usize> {
        off_the_async_threads();
        let mut conn = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_parts (part TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID",
        )?;
        let current: usize = conn
            .query_row("SELECT version FROM schema_parts WHERE part = ?1", [part], |r| r.get::<_, i64>(0))
            .optional()?
            .unwrap_or(0)
            .try_into()
            .unwrap_or(0);
        if current > migrations.len() {
            return Err(newer(part, current, migrations.len()));
        }
        for (i, (name, sql)) in migrations.iter().enumerate().skip(current) {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute_batch(sql).map_err(|e| Error::internal(format_args!("migration {part}/{name}: {e}")))?;
            tx.execute(
                "INSERT INTO schema_parts (part, version) VALUES (?1, ?2) \
                 ON CONFLICT (part) DO UPDATE SET version = excluded.version",
                rusqlite::params![part, (i + 1) as i64],
            )?;
            tx.commit()?;
            tracing::info!(part, migration = name, "applied");
        }
        Ok(migrations.len())
    }
}

fn newer(part: &str, found: usize, known: usize) -> Error {
    Error::internal(format_args!("the database is from a newer AMC ({part} schema {found}, this build knows {known})"))
}

/// A connection opened with `access` (read-only, read-write, creating or not), set up as
/// every connection of AMC's is.
fn open_connection(path: &Path, access: OpenFlags) -> Result<Connection> {
    open_counting(path, access, KeysComputed::default())
}

/// [`open_connection`], counting the platform keys it computes in `keys`.
fn open_counting(path: &Path, access: OpenFlags, keys: KeysComputed) -> Result<Connection> {
    let conn = Connection::open_with_flags(path, access | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    register_functions(&conn, keys)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "synchronous", "normal")?;
    // The hot indexes of a large inbox stay in memory: page caches allocated as used, and
    // the writer's reads through a memory map (see [`MMAP_BYTES`] for why readers have
    // none). All connections' caches together stay under SQLite's soft heap limit: past
    // it, SQLite reuses its least recently used pages rather than asking for more
    // memory, which the system's allocator would keep once freed.
    let reader = access.contains(OpenFlags::SQLITE_OPEN_READ_ONLY);
    conn.pragma_update(None, "cache_size", -(if reader { READER_CACHE_KIB } else { WRITER_CACHE_KIB }))?;
    conn.pragma_update(None, "mmap_size", if reader { 0 } else { MMAP_BYTES })?;
    conn.pragma_update(None, "soft_heap_limit", SOFT_HEAP_LIMIT)?;
    conn.pragma_update(None, "temp_store", "memory")?;
    // Plans that never depend on bound values. Without this, SQLite marks a statement
    // whose plan looked at a parameter (`LIMIT ?`, a `column = ?` no index serves) to be
    // compiled again when that parameter is bound anew, and rusqlite clears the bindings
    // of every statement it puts back in its cache: such statements, the unread list
    // among them, were parsed and planned on every call (sqlite3.c: `sqlite3ExprIsInteger`,
    // `whereLoopOutputAdjust`, `sqlite3_clear_bindings`; rusqlite's `cache.rs`).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Runs `sql` on the database at `path` in one transaction with foreign keys off, as a
/// migration runs (tables rebuilt while others refer to them): for tests that take a
/// database back to an older layout.
#[cfg(any(test, feature = "test-support"))]
pub fn rewrite_without_foreign_keys(path: &Path, sql: &str) -> Result<()> {
    let mut conn = Connection::open(path)?;
    conn.pragma_update(None, "foreign_keys", false)?;
    let tx = conn.transaction()?;
    tx.execute_batch(sql)?;
    Ok(tx.commit()?)
}

/// How many platform keys SQLite computed on a connection: a migration that rebuilds
/// `messages` computes one per message, and says how far it is with this. Each
/// connection has its own, so no two databases of one process count together.
type KeysComputed = Arc<AtomicU64>;

/// Registers AMC's SQL functions on `conn`: `amc_platform_key(source, platform_id)`, and
/// `amc_unhidden(text, source, sender_id, is_self, terms)`, whether an agent's search for
/// `terms` (a JSON array of folded words) finds `text` as the agent is given it
/// ([`amc_secrets::found_unhidden`]), `amc_hidden(text, source, sender_id, is_self)`,
/// the text as agents are given it (its secrets behind markers), `amc_hidden_name(name)`,
/// a name (a sender's, a channel's) as agents are given it, and `amc_secrets(source,
/// sender_id, is_self, text)`, the kinds of secret a message holds, as `messages.secrets`
/// stores them
/// ([`amc_secrets::classify`]). Every connection has them, and `messages`' generated
/// column needs the first to write.
fn register_functions(conn: &Connection, keys: KeysComputed) -> Result<()> {
    use rusqlite::functions::FunctionFlags;
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC | FunctionFlags::SQLITE_INNOCUOUS;
    conn.create_scalar_function("amc_platform_key", 2, flags, move |ctx| {
        keys.fetch_add(1, Ordering::Relaxed);
        let text = |i: usize| {
            bytes_arg(ctx, i).ok_or(rusqlite::Error::InvalidFunctionParameterType(i, rusqlite::types::Type::Null))
        };
        Ok(crate::platform_key(&text(0)?, &text(1)?))
    })?;
    conn.create_scalar_function("amc_unhidden", 5, flags, |ctx| {
        let text = text_arg(ctx, 0);
        let (source, sender) = (text_arg(ctx, 1), text_arg(ctx, 2));
        let short = author(&source, &sender, ctx, 3).is_short_code();
        // The same terms on every row of one query: parsed once per statement.
        let terms = ctx.get_or_create_aux(
            4,
            |v| -> std::result::Result<Vec<String>, Box<dyn std::error::Error + Send + Sync>> {
                Ok(serde_json::from_slice(v.as_bytes()?)?)
            },
        )?;
        Ok(amc_secrets::found_unhidden(&text, short, &terms))
    })?;
    conn.create_scalar_function("amc_hidden", 4, flags, |ctx| {
        let (text, source, sender) = (text_arg(ctx, 0), text_arg(ctx, 1), text_arg(ctx, 2));
        Ok(amc_secrets::hide(&text, &amc_secrets::in_message(author(&source, &sender, ctx, 3), &text)))
    })?;
    conn.create_scalar_function("amc_hidden_name", 1, flags, |ctx| {
        if ctx.get_raw(0) == rusqlite::types::ValueRef::Null {
            return Ok(None);
        }
        let name = text_arg(ctx, 0);
        Ok(Some(amc_secrets::hide(&name, &amc_secrets::in_name(&name))))
    })?;
    conn.create_scalar_function("amc_secrets", 4, flags, |ctx| {
        let (source, sender) = (text_arg(ctx, 0), text_arg(ctx, 1));
        Ok(amc_secrets::classify(author(&source, &sender, ctx, 2), &text_arg(ctx, 3)))
    })?;
    Ok(())
}

/// A function's argument `i` as bytes: text and blobs as they are, numbers as their text
/// (a column of text affinity holds numbers as text); `None` for NULL.
fn bytes_arg<'a>(ctx: &'a rusqlite::functions::Context<'_>, i: usize) -> Option<std::borrow::Cow<'a, [u8]>> {
    use rusqlite::types::ValueRef;
    match ctx.get_raw(i) {
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(t.into()),
        ValueRef::Integer(n) => Some(n.to_string().into_bytes().into()),
        ValueRef::Real(x) => Some(x.to_string().into_bytes().into()),
        ValueRef::Null => None,
    }
}

/// The author of a message for the secret finder: `source`, `sender`, and whether the
/// person wrote it (argument `is_self` of the function: any true value SQLite holds).
fn author<'a>(
    source: &'a str,
    sender: &'a str,
    ctx: &rusqlite::functions::Context<'_>,
    is_self: usize,
) -> amc_secrets::Author<'a> {
    let is_self = ctx.get::<i64>(is_self).map(|n| n != 0).unwrap_or(false);
    amc_secrets::Author { source, sender, is_self }
}

/// A function's argument `i` as text, whatever SQLite holds there (NULL as nothing, bytes
/// that are not UTF-8 in part replaced): a message's odd row never fails the statement
/// that reads it for codes.
fn text_arg(ctx: &rusqlite::functions::Context<'_>, i: usize) -> String {
    bytes_arg(ctx, i).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
}

/// A reader with the schema already parsed: the pool starts with one, so the first read
/// after a start does not pay for opening a connection (a millisecond or more).
fn warm_reader(path: &Path) -> Result<Connection> {
    let conn = open_connection(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?;
    Ok(conn)
}

/// Applies every core migration newer than `PRAGMA user_version`, each in its own
/// transaction. Foreign keys are off while one runs, so a migration can rebuild a table
/// others refer to (SQLite's documented way to change a table's constraints), and checked
/// before it commits: a migration that leaves a broken reference fails and changes
/// nothing. A migration that takes more than a few seconds says how far it is.
fn migrate_core(
    conn: &mut Connection,
    migrations: &[Migration],
    updates: &UpdateReporter,
    keys: &KeysComputed,
) -> Result<()> {
    let current: usize = conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))?.try_into().unwrap_or(0);
    if current > migrations.len() {
        return Err(newer("core", current, migrations.len()));
    }
    // For the progress log: how many messages a migration that rewrites them has to do.
    let total: Option<u64> = if current < migrations.len() {
        conn.query_row("SELECT count(*) FROM messages", [], |r| r.get::<_, i64>(0)).ok().and_then(|n| n.try_into().ok())
    } else {
        None
    };
    // The steps that rewrite the messages: they compute every message's platform key
    // (they build `messages` again, its generated column with it).
    let rewrites = |sql: &str| sql.contains("amc_platform_key");
    let of = migrations.iter().skip(current).filter(|(_, sql)| rewrites(sql)).count();
    let mut done = 0;
    for (i, &(name, sql)) in migrations.iter().enumerate().skip(current) {
        conn.pragma_update(None, "foreign_keys", false)?;
        let step = Step { rewriting: rewrites(sql), done, of };
        let percent = overall_percent(StepState::NotStarted, step);
        updates.report(Some(UpdateProgress { migration: name, rewritten: 0, total, percent }));
        done += usize::from(step.rewriting);
        let log = progress_log(name, total, step, updates.clone(), keys.clone());
        conn.progress_handler(PROGRESS_STEPS, Some(log))?;
        let applied = apply_core(conn, name, sql, i + 1);
        updates.report(None);
        conn.progress_handler(0, None::<fn() -> bool>)?;
        conn.pragma_update(None, "foreign_keys", true)?;
        applied?;
        tracing::info!(migration = name, "applied");
    }
    Ok(())
}

/// Runs one core migration and records it as version `version`, in one transaction.
fn apply_core(conn: &mut Connection, name: &str, sql: &str, version: usize) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(sql).map_err(|e| Error::internal(format_args!("migration {name}: {e}")))?;
    let broken: Option<String> =
        tx.query_row("SELECT \"table\" FROM pragma_foreign_key_check LIMIT 1", [], |r| r.get(0)).optional()?;
    if let Some(table) = broken {
        return Err(Error::internal(format_args!("migration {name}: it leaves a broken reference in {table}")));
    }
    tx.pragma_update(None, "user_version", version as i64)?;
    Ok(tx.commit()?)
}

/// How far an update of the store is, while one runs: the tray shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateProgress {
    /// The migration running, such as `0016_channel_keys`.
    pub migration: &'static str,
    /// Messages rewritten so far, for a migration that rewrites them (else 0).
    pub rewritten: u64,
    /// The messages stored, if known.
    pub total: Option<u64>,
    /// How far the whole update is, in percent (below 100): each migration that rewrites
    /// the messages takes an equal share, estimated from how far its rewrite is and, once
    /// every message is rewritten, from how long that took ([`overall_percent`]). `None`
    /// before the first message is rewritten, when no migration rewrites them, and once
    /// the last one is past its estimate.
    pub percent: Option<u8>,
}

/// The share of a migration that rewrites the messages taken by the rewrite itself, in
/// percent; the rest (building the indexes again, checking the references) is taken to
/// last `REST_PER_REWRITE` times as long as the rewrite did. Measured on 500,000 messages
/// (`tests/tray/smoke`): the rewrite 3.1 s, the rest 4.2 s.
const REWRITE_SHARE: u64 = 40;
const REST_PER_REWRITE: f64 = 1.5;

/// How far a migration that rewrites `total` messages is, with `rewritten` of them
/// rewritten; once all are, `rewrite_took` is how long that took and `since` how long ago
/// it ended.
fn step_state(
    rewritten: u64,
    total: Option<u64>,
    rewrite_took: Option<std::time::Duration>,
    since: std::time::Duration,
) -> StepState {
    let Some(total) = total.filter(|&t| t > 0) else { return StepState::NotStarted };
    if rewritten == 0 {
        return StepState::NotStarted;
    }
    let percent = match rewrite_took {
        Some(took) if rewritten >= total => {
            let rest = took.as_secs_f64() * REST_PER_REWRITE;
            let done = if rest > 0.0 { since.as_secs_f64() / rest } else { 1.0 };
            REWRITE_SHARE + (done * (100 - REWRITE_SHARE) as f64) as u64
        }
        _ => rewritten.min(total).saturating_mul(REWRITE_SHARE) / total,
    };
    match u8::try_from(percent) {
        Ok(p) if p < 100 => StepState::At(p),
        _ => StepState::PastEstimate,
    }
}

/// Where an update of the store says how far it is: the one who starts AMC makes it,
/// keeps a [`subscribe`](Self::subscribe)d receiver for whoever shows it (the tray),
/// and hands it to the core's start (`Amc::start_reporting`). A receiver is
/// woken when what it would show changes (the migration, the percent, every message
/// rewritten), not at each message; `None` while no migration runs. The default has no
/// receiver, for starts that show nothing.
#[derive(Clone, Debug, Default)]
pub struct UpdateReporter(tokio::sync::watch::Sender<Option<UpdateProgress>>);

impl UpdateReporter {
    /// A receiver of the update's progress, told each change.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Option<UpdateProgress>> {
        self.0.subscribe()
    }

    fn report(&self, progress: Option<UpdateProgress>) {
        // What a receiver shows: the count of messages rewritten only once it is all.
        let shown = |p: &Option<UpdateProgress>| {
            p.as_ref().map(|p| (p.migration, p.percent, p.total.is_some_and(|t| t > 0 && p.rewritten >= t)))
        };
        self.0.send_if_modified(|now| {
            let changed = shown(now) != shown(&progress);
            *now = progress;
            changed
        });
    }
}

/// Where a migration stands among the update's steps that rewrite the messages.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// It rewrites the messages.
    rewriting: bool,
    /// How many steps that rewrite them ran before it in this update.
    done: usize,
    /// How many the update has.
    of: usize,
}

/// How far a step that rewrites the messages is ([`step_state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StepState {
    /// Not a step that rewrites, or no message rewritten yet.
    NotStarted,
    /// This far, in percent.
    At(u8),
    /// Past the estimate of its end.
    PastEstimate,
}

/// The whole update's percent, below 100: each step that rewrites the messages takes an
/// equal share (a store several releases old may have two), and between them the shares
/// of those done are shown. `None` when nothing says: no such step, none begun, or the
/// last past its estimate (the tray then says "almost done").
fn overall_percent(state: StepState, step: Step) -> Option<u8> {
    let Step { done, of, .. } = step;
    let percent = match state {
        _ if of == 0 => return None,
        StepState::NotStarted if done == 0 || done >= of => return None,
        StepState::NotStarted => done * 100 / of,
        StepState::At(p) => (done * 100 + usize::from(p)) / of,
        StepState::PastEstimate if done + 1 < of => (done + 1) * 100 / of - 1,
        StepState::PastEstimate => return None,
    };
    u8::try_from(percent).ok().filter(|&p| p < 100)
}

/// How many SQLite instructions run between two looks at a migration's progress.
const PROGRESS_STEPS: std::ffi::c_int = 100_000;

/// The progress handler of migration `name`: it tells `updates` how far the update is,
/// and every few seconds it logs how long the migration has run and, for one that
/// rewrites the messages, how many it has rewritten of `total`.
fn progress_log(
    name: &'static str,
    total: Option<u64>,
    step: Step,
    updates: UpdateReporter,
    keys: KeysComputed,
) -> impl FnMut() -> bool + Send + 'static {
    let keyed_before = keys.load(Ordering::Relaxed);
    let started = std::time::Instant::now();
    let mut said = started;
    // When the last message was rewritten, and how long the rewrite took.
    let mut rewrite_ended: Option<(std::time::Instant, std::time::Duration)> = None;
    move || {
        let rewritten = keys.load(Ordering::Relaxed).saturating_sub(keyed_before);
        if rewrite_ended.is_none() && total.is_some_and(|t| t > 0 && rewritten >= t) {
            rewrite_ended = Some((std::time::Instant::now(), started.elapsed()));
        }
        let since = rewrite_ended.map(|(at, _)| at.elapsed()).unwrap_or_default();
        let state = if step.rewriting {
            step_state(rewritten, total, rewrite_ended.map(|(_, took)| took), since)
        } else {
            StepState::NotStarted
        };
        let percent = overall_percent(state, step);
        updates.report(Some(UpdateProgress { migration: name, rewritten, total, percent }));
        if said.elapsed() >= PROGRESS_EVERY {
            said = std::time::Instant::now();
            let seconds = started.elapsed().as_secs();
            match total {
                Some(total) if rewritten > 0 => {
                    tracing::info!(
                        migration = name,
                        seconds,
                        rewritten,
                        total,
                        "updating the store: messages rewritten"
                    )
                }
                _ => tracing::info!(migration = name, seconds, "updating the store"),
            }
        }
        false
    }
}

/// How often a long migration says how far it is.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    const PART: &[Migration] = &[
        ("0001_notes", "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"),
        ("0002_tags", "ALTER TABLE notes ADD COLUMN tag TEXT;"),
    ];

    #[test]
    fn an_update_says_how_far_it_is_through_the_rewrite_and_after_it() {
        use std::time::Duration;
        let s = Duration::from_secs;
        let (total, none) = (Some(500_000), Duration::ZERO);
        use StepState::{At, NotStarted, PastEstimate};
        assert_eq!(step_state(0, total, None, none), NotStarted, "nothing rewritten yet");
        assert_eq!(step_state(10, None, None, none), NotStarted, "the messages were not counted");
        assert_eq!(step_state(10, Some(0), None, none), NotStarted);
        assert_eq!(step_state(1, total, None, none), At(0));
        assert_eq!(step_state(250_000, total, None, none), At(20));
        assert_eq!(step_state(499_999, total, None, none), At(39));
        // All rewritten in 4 s: the rest is taken to last 6 s more.
        assert_eq!(step_state(500_000, total, Some(s(4)), none), At(40));
        assert_eq!(step_state(500_000, total, Some(s(4)), s(3)), At(70));
        assert_eq!(step_state(500_000, total, Some(s(4)), Duration::from_millis(5_999)), At(99));
        // Past the estimate, it is "almost done", never 100 % while it runs.
        assert_eq!(step_state(500_000, total, Some(s(4)), s(6)), PastEstimate);
        assert_eq!(step_state(500_000, total, Some(s(4)), s(60)), PastEstimate);
        assert_eq!(step_state(500_000, total, Some(Duration::ZERO), none), PastEstimate);
        // More keys than messages counted (a message stored meanwhile): never past the rewrite's share.
        assert_eq!(step_state(600_000, total, None, none), At(40));
    }

    #[test]
    fn an_update_of_two_rewriting_steps_rises_once_through_both() {
        let (first, between, second) = (
            Step { rewriting: true, done: 0, of: 2 },
            Step { rewriting: false, done: 1, of: 2 },
            Step { rewriting: true, done: 1, of: 2 },
        );
        let after = Step { rewriting: false, done: 2, of: 2 };
        let seen: Vec<Option<u8>> = [
            (StepState::NotStarted, first),
            (StepState::At(0), first),
            (StepState::At(60), first),
            (StepState::PastEstimate, first),
            (StepState::NotStarted, between),
            (StepState::NotStarted, second),
            (StepState::At(50), second),
            (StepState::At(99), second),
            (StepState::PastEstimate, second),
            (StepState::NotStarted, after),
        ]
        .into_iter()
        .map(|(state, step)| overall_percent(state, step))
        .collect();
        let expected = [None, Some(0), Some(30), Some(49), Some(50), Some(50), Some(75), Some(99), None, None];
        assert_eq!(seen, expected);
        // One step: its own percent, "almost done" past the estimate.
        let only = Step { rewriting: true, done: 0, of: 1 };
        assert_eq!(overall_percent(StepState::At(40), only), Some(40));
        assert_eq!(overall_percent(StepState::PastEstimate, only), None);
        // No step rewrites: nothing to count.
        let none = Step { rewriting: false, done: 0, of: 0 };
        assert_eq!(overall_percent(StepState::NotStarted, none), None);
    }

    /// A core migration may rebuild a table others refer to (foreign keys are off while it
    /// runs), but one that leaves a broken reference changes nothing and is refused.
    #[test]
    fn a_migration_that_breaks_a_reference_changes_nothing() {
        const CORE: &[Migration] = &[
            (
                "0001_pairs",
                "CREATE TABLE parents (id TEXT PRIMARY KEY); \
                 CREATE TABLE children (parent TEXT NOT NULL REFERENCES parents (id) ON DELETE CASCADE); \
                 INSERT INTO parents VALUES ('a'), ('b'); INSERT INTO children VALUES ('a'), ('b');",
            ),
            (
                "0002_rebuild",
                "CREATE TABLE parents_rebuilt (id TEXT PRIMARY KEY, born INTEGER NOT NULL DEFAULT 0); \
                 INSERT INTO parents_rebuilt (id) SELECT id FROM parents; DROP TABLE parents; \
                 ALTER TABLE parents_rebuilt RENAME TO parents;",
            ),
            ("0003_orphans", "DELETE FROM parents WHERE id = 'a';"),
        ];
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("amc.db");
        drop(Database::open(&path, &CORE[..2]).expect("the rebuild runs"));
        let count = |path: &Path| -> (i64, i64, i64) {
            let conn = Connection::open(path).expect("open");
            conn.query_row(
                "SELECT (SELECT count(*) FROM parents), (SELECT count(*) FROM children), \
                 (SELECT user_version FROM pragma_user_version)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("count")
        };
        assert_eq!(count(&path), (2, 2, 2), "dropping the old table deleted no child");
        assert!(Database::open(&path, CORE).is_err(), "refused");
        assert_eq!(count(&path), (2, 2, 2), "nothing changed");
    }

    /// Whoever shows the update is woken when what it shows changes, not at each message
    /// rewritten, and is told when the migrations are over.
    #[test]
    fn an_updates_receiver_is_told_what_it_shows() {
        let updates = UpdateReporter::default();
        let mut shown = updates.subscribe();
        let at = |rewritten, percent| {
            Some(UpdateProgress { migration: "0016_channel_keys", rewritten, total: Some(10), percent })
        };
        updates.report(at(1, Some(4)));
        assert!(shown.has_changed().expect("open"), "the migration began");
        assert_eq!(*shown.borrow_and_update(), at(1, Some(4)));
        updates.report(at(2, Some(4)));
        assert!(!shown.has_changed().expect("open"), "the same percent: nothing to show");
        assert_eq!(*shown.borrow(), at(2, Some(4)), "yet the count is there for a look");
        updates.report(at(3, Some(12)));
        assert!(shown.has_changed().expect("open"), "a new percent");
        shown.mark_unchanged();
        updates.report(at(10, Some(12)));
        assert!(shown.has_changed().expect("open"), "every message rewritten");
        shown.mark_unchanged();
        let dir = tempfile::tempdir().expect("tempdir");
        let migrations: &[Migration] = &[("0001_t", "CREATE TABLE t (x INTEGER);")];
        drop(Database::open_reporting(&dir.path().join("amc.db"), migrations, &updates).expect("open"));
        assert!(shown.has_changed().expect("open"), "told of the migration");
        assert_eq!(*shown.borrow(), None, "and that it is over");
    }

    /// Reads beyond the pool's size wait for a reader instead of opening more, and a read
    /// that panics gives its slot back.
    #[test]
    fn readers_are_bounded_and_survive_a_panicking_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(&dir.path().join("amc.db"), &[]).expect("open");
        let handles: Vec<_> = (0..4 * MAX_READERS)
            .map(|_| {
                let db = db.clone();
                std::thread::spawn(move || {
                    db.read(|tx| Ok(tx.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?)).expect("read")
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().expect("thread"), 1);
        }
        assert!(db.inner.readers.lock().expect("lock").open <= MAX_READERS);
        for _ in 0..MAX_READERS + 1 {
            let db = db.clone();
            let panicked = std::thread::spawn(move || db.read(|_| -> Result<()> { panic!("a bug in a read") })).join();
            assert!(panicked.is_err());
        }
        // Every slot came back: reads still work.
        assert_eq!(db.read(|tx| Ok(tx.query_row("SELECT 2", [], |r| r.get::<_, i64>(0))?)).expect("read"), 2);
    }

    /// Readers read into their caches, never through a map, which SQLite drops whenever
    /// another connection wrote; the writer keeps its map, after a release of memory too.
    #[test]
    fn only_the_writer_maps_the_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(&dir.path().join("amc.db"), &[]).expect("open");
        let mapped = |tx: &Transaction<'_>| -> Result<i64> { Ok(tx.query_row("PRAGMA mmap_size", [], |r| r.get(0))?) };
        for _ in 0..2 {
            assert_eq!(db.read(mapped).expect("reader"), 0);
            assert_eq!(db.write(mapped).expect("writer"), MMAP_BYTES);
            db.write(|tx| Ok(tx.execute_batch("CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1);")?))
                .expect("write");
            assert!(db.release_memory().expect("release"));
        }
    }

    /// A cached statement is compiled once, whatever its parameters: SQLite would
    /// otherwise compile again, on every use, each statement whose plan looked at a bound
    /// value (a `LIMIT ?`, a `column = ?` no index serves), since rusqlite clears a cached
    /// statement's bindings when it is put back.
    #[test]
    fn a_cached_statement_is_compiled_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(&dir.path().join("amc.db"), &[]).expect("open");
        db.write(|tx| Ok(tx.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, tag TEXT, n INTEGER);")?))
            .expect("table");
        let sql = "SELECT k FROM t WHERE k > ?1 AND tag = ?2 AND (?3 IS NULL OR n = ?3) ORDER BY k LIMIT ?4";
        // (times compiled again, times run): the cache hands back the same statement.
        let use_it = |tx: &Transaction<'_>, limit: i64| -> Result<(i32, i32)> {
            let mut stmt = tx.prepare_cached(sql)?;
            stmt.query_map(rusqlite::params![0, "a", None::<i64>, limit], |r| r.get::<_, i64>(0))?.for_each(drop);
            use rusqlite::StatementStatus::{RePrepare, Run};
            Ok((stmt.get_status(RePrepare), stmt.get_status(Run)))
        };
        for (n, limit) in [20, 20, 100].into_iter().enumerate() {
            let runs = n as i32 + 1;
            assert_eq!(db.read(|tx| use_it(tx, limit)).expect("reader"), (0, runs), "a reader compiled it again");
            assert_eq!(db.write(|tx| use_it(tx, limit)).expect("writer"), (0, runs), "the writer compiled it again");
        }
    }

    #[test]
    fn a_checkpoint_leaves_no_log_beside_the_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("amc.db");
        let db = Database::open(&path, &[]).expect("open");
        db.write(|tx| Ok(tx.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (zeroblob(100000));")?))
            .expect("write");
        let wal = path.with_extension("db-wal");
        assert!(std::fs::metadata(&wal).expect("wal").len() > 100_000, "the write went to the log");
        let idle = db.idle_for().expect("a write was noted");
        assert!(idle < Duration::from_secs(60));
        // A transaction that changes nothing (a source's poll finding nothing new) is no
        // write: AMC still becomes idle.
        db.write(|tx| Ok(tx.execute("UPDATE t SET x = x WHERE 0", [])?)).expect("no-op");
        assert!(db.idle_for().expect("still noted") >= idle, "a no-op is not a write");
        assert!(db.checkpoint().expect("checkpoint"));
        assert_eq!(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0), 0);
        let n: i64 = db.read(|tx| Ok(tx.query_row("SELECT length(x) FROM t", [], |r| r.get(0))?)).expect("read");
        assert_eq!(n, 100_000, "nothing lost");
    }

    /// Releasing memory closes the idle readers but one; reads and writes go on as before,
    /// with readers opened again as needed.
    #[test]
    fn released_memory_is_taken_again_when_needed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(&dir.path().join("amc.db"), &[]).expect("open");
        db.write(|tx| Ok(tx.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (randomblob(500000));")?))
            .expect("write");
        let len = |db: &Database| -> i64 {
            db.read(|tx| Ok(tx.query_row("SELECT length(x) FROM t", [], |r| r.get(0))?)).expect("read")
        };
        assert_eq!(len(&db), 500_000);
        assert_eq!(db.inner.readers.lock().expect("lock").open, 1, "the pool starts with a reader");
        // Two reads at once: a second reader.
        assert_eq!(db.read(|_| Ok(len(&db))).expect("read"), 500_000);
        assert_eq!(db.inner.readers.lock().expect("lock").open, 2);
        assert!(db.release_due(), "reads and a write since the start: something to let go");
        assert!(db.release_memory().expect("release"));
        assert!(!db.release_due(), "nothing used since");
        assert!(!db.release_memory().expect("release"), "once per quiet spell");
        let readers = db.inner.readers.lock().expect("lock");
        assert_eq!((readers.open, readers.idle.len()), (1, 1), "idle readers but one are closed");
        drop(readers);
        assert_eq!(len(&db), 500_000, "the reader kept still reads");
        assert!(db.release_due(), "a read fills a cache: due again with no write");
        assert!(db.release_memory().expect("release"), "again after a read");
        assert_eq!(db.read(|_| Ok(len(&db))).expect("read"), 500_000, "a read opens a reader again");
        assert!(db.release_memory().expect("release"), "the second reader's cache goes too");
        // A write transaction that changes nothing still looks pages up.
        db.write(|tx| Ok(tx.execute_batch("UPDATE t SET x = x WHERE 0;")?)).expect("the writer still writes");
        assert!(db.release_due(), "due again after a write");
        assert!(db.release_memory().expect("release"), "again after a write");
        // The housekeeping's own look at the store is no use.
        {
            let housekeeping = db.uncounted();
            assert_eq!(len(&housekeeping), 500_000);
            housekeeping.write(|tx| Ok(tx.execute_batch("DELETE FROM t WHERE 0;")?)).expect("write");
        }
        assert!(!db.release_due(), "nothing but the housekeeping used it");
        assert_eq!(len(&db), 500_000);
        assert!(db.release_due(), "counted again once the guard dropped");
    }

    /// Waits (10 s at most, then panics naming `what`) until the checkpointer's state
    /// satisfies `until`, and returns it locked.
    fn wait_for<'a>(
        c: &'a Checkpointer,
        what: &str,
        until: impl Fn(&CheckpointState) -> bool,
    ) -> std::sync::MutexGuard<'a, CheckpointState> {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut state = c.state.lock().expect("lock");
        while !until(&state) {
            let left = deadline.checked_duration_since(std::time::Instant::now()).unwrap_or_else(|| panic!("{what}"));
            state = c.asked.wait_timeout(state, left).expect("wait").0;
        }
        state
    }

    /// The log is folded into the database beside the writer, not by a commit: with the
    /// thread given time to copy, it stays short however much is written.
    #[test]
    fn the_log_is_checkpointed_beside_the_writer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("amc.db");
        let db = Database::open(&path, &[]).expect("open");
        db.write(|tx| Ok(tx.execute_batch("CREATE TABLE t (x);")?)).expect("table");
        let done = |db: &Database| db.inner.checkpointer.state.lock().expect("lock").done;
        for round in 0..20 {
            let before = done(&db);
            // About 250 pages a round: the log passes CHECKPOINT_PAGES by the fifth.
            db.write(|tx| Ok(tx.execute("INSERT INTO t VALUES (randomblob(1000000))", [])?)).expect("write");
            if round % 5 == 4 {
                drop(wait_for(&db.inner.checkpointer, "a checkpoint within 10 s", |s| s.done > before));
            }
        }
        let log = std::fs::metadata(path.with_extension("db-wal")).expect("wal").len();
        assert!(log < 3 * CHECKPOINT_PAGES as u64 * 4096, "the log grew to {log} bytes");
        let n: i64 = db.read(|tx| Ok(tx.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?)).expect("read");
        assert_eq!(n, 20, "nothing lost");
    }

    /// A commit of thousands of pages (a batch of a first import) is copied by the
    /// thread, not in the writer's commit; the writer copies only a log past its longest,
    /// and the log then starts over.
    #[test]
    fn the_writer_copies_only_a_log_past_its_longest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("amc.db");
        let db = Database::open(&path, &[]).expect("open");
        db.write(|tx| Ok(tx.execute_batch("CREATE TABLE t (x);")?)).expect("table");
        let c = db.inner.checkpointer.clone();
        // A thread too slow to copy anything: only the writer's copies count.
        let _slow = c.pause();
        let by_writer = || c.state.lock().expect("lock").by_writer;
        let wal = || std::fs::metadata(path.with_extension("db-wal")).expect("wal").len() / 4096;
        // About 2,200 pages a commit.
        let batch = |db: &Database| {
            db.write(|tx| Ok(tx.execute("INSERT INTO t VALUES (randomblob(9000000))", [])?)).expect("write");
        };
        for _ in 0..3 {
            batch(&db);
        }
        assert_eq!(by_writer(), 0, "three batches, {} pages of log, left to the thread", wal());
        batch(&db);
        assert_eq!(by_writer(), 1, "past {LOG_MAX_PAGES} pages ({}), the writer copies", wal());
        let longest = wal();
        for _ in 0..4 {
            batch(&db);
        }
        assert_eq!(wal(), longest, "the log started over");
        assert_eq!(by_writer(), 2);
    }

    /// SQLite never waits for another connection's checkpoint: the writer's own (at rest,
    /// at a clean stop) waits for the thread's to end, and the thread starts none meanwhile.
    #[test]
    fn the_writers_checkpoint_waits_for_the_threads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("amc.db");
        let db = Database::open(&path, &[]).expect("open");
        db.write(|tx| Ok(tx.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (zeroblob(100000));")?))
            .expect("write");
        let c = db.inner.checkpointer.clone();
        c.ask(|s| s.running = true); // as if the thread were at it
        let (done, finished) = std::sync::mpsc::channel();
        let writer = db.clone();
        let waiting = std::thread::spawn(move || done.send(writer.checkpoint().expect("checkpoint")));
        let mut state = wait_for(&c, "the writer's checkpoint pauses", |s| s.paused);
        assert!(finished.try_recv().is_err(), "it did not wait");
        state.running = false;
        drop(state);
        c.asked.notify_all();
        assert!(finished.recv().expect("answer"), "the log is truncated");
        waiting.join().expect("thread").expect("sent");
        assert_eq!(std::fs::metadata(path.with_extension("db-wal")).map(|m| m.len()).unwrap_or(0), 0);
        assert!(!c.state.lock().expect("lock").paused);
    }

    #[test]
    fn a_part_migrates_once_and_on_its_own_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("amc.db");
        let db = Database::open(&path, &[]).expect("open");
        assert_eq!(db.migrate_part("notes", &PART[..1]).expect("first"), 1);
        db.write(|tx| Ok(tx.execute("INSERT INTO notes (body) VALUES ('kept')", [])?)).expect("insert");
        // Again with one more: only the new one runs (the first would fail: the table exists).
        assert_eq!(db.migrate_part("notes", PART).expect("second"), 2);
        assert_eq!(db.migrate_part("notes", PART).expect("none"), 2);
        let (body, user_version): (String, i64) = db
            .read(|tx| {
                Ok((
                    tx.query_row("SELECT body FROM notes WHERE tag IS NULL", [], |r| r.get(0))?,
                    tx.pragma_query_value(None, "user_version", |r| r.get(0))?,
                ))
            })
            .expect("read");
        assert_eq!((body.as_str(), user_version), ("kept", 0), "the core's version is not the part's");
        // A build that knows fewer migrations than the database has refuses it.
        let err = db.migrate_part("notes", &PART[..1]).expect_err("refused");
        assert_eq!(err.code, crate::error::ErrorCode::InternalError);
    }

    /// The guard every transaction passes: a store call on a runtime worker fails in debug
    /// builds (tests), and passes on the blocking pool and on the thread of `block_on`.
    #[test]
    fn a_store_call_on_a_runtime_worker_panics_in_debug_builds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(&dir.path().join("amc.db"), &[]).expect("open");
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("rt");
        rt.block_on(async {
            let read = |db: Database| move || db.read(|tx| Ok(tx.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?));
            let on_worker = tokio::spawn({
                let read = read(db.clone());
                async move { read() }
            });
            let failed = on_worker.await.expect_err("a store call on a worker");
            assert!(failed.is_panic() || !cfg!(debug_assertions));
            let blocking = tokio::task::spawn_blocking(read(db.clone())).await.expect("on the blocking pool");
            assert_eq!(blocking.expect("read"), 1);
            assert_eq!(read(db.clone())().expect("on block_on's thread"), 1);
        });
    }
}
