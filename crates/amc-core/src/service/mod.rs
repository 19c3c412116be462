//! What agents and the person can do. Both the REST routes and the MCP tools call this
//! layer, so every rule (approval, send policy, idempotency, limits, input ranges) is
//! applied in one place.
//!
//! # Layout
//! - `inbox.rs`: the agents' reads (unread, context, get, mark read, channels).
//! - `send.rs`: the agents' sends and their delivery.
//! - `readers.rs`: the readers rule, which holds a send that would carry one
//!   conversation's text to people who could not read it.
//! - `failed_later.rs`: sends the platform fails after reporting them sent.
//! - `admin.rs`: the person's actions (approval, review, agents, pause).
//! - `ingest.rs`: the sources' front door (messages, edits, reactions, unsends,
//!   checkpoints, late arrivals).
//! - `search.rs`: `search_messages`, words and phrases over what an agent may see.
//! - `phone.rs`: approvals from the person's phone, asked and answered in their own
//!   iMessage conversation.
//! - `claude_channel/`: the Claude Code channel: new messages told to agents' sessions as
//!   they arrive, bursts folded (`push.rs`), and hosts' requests to use a tool, answered by
//!   the person (`tools.rs`).
//! - `upkeep.rs`: the housekeeping that runs every minute.
//! - `health.rs`: the sources' states.

mod admin;
mod claude_channel;
mod failed_later;
mod health;
mod inbox;
mod ingest;
mod phone;
mod readers;
mod search;
mod send;
mod upkeep;
mod waits;
pub use waits::WaitSlot;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::{Event, EventBus};
use crate::ratelimit::RateLimiter;
use crate::sender::Senders;
use amc_attach::AttachmentPolicy;
use amc_store::Store;

pub use admin::{AdminSend, InboxItem};
pub use amc_store::db::{UpdateProgress, UpdateReporter};
pub use amc_store::{HELD_BOUNDS, SEND_LOG_KEPT};
pub use claude_channel::{MAX_PUSH_WAIT_SECONDS, PUSH_BURST, PUSH_WINDOW, PushBatch, PushItem, PushParams};
pub use claude_channel::{SESSION_GONE_AFTER, TOOL_REQUEST_BOUNDS, TOOL_REQUESTS_KEPT_FOR, ToolAsk};
pub use health::{CatchingUp, Health, SourceState, SourceStatus};
pub use inbox::{
    ContextPage, ContextParams, MAX_UNREAD_WAIT_SECONDS, MarkReadResult, UnreadPage, UnreadParams, WaitUnreadParams,
};
pub use phone::{PHONE_ASKS_A_MINUTE, PHONE_EXPIRES_MINUTES, PhoneChange, PhoneConversation, PhoneSettings, button_id};
pub use readers::CROSSES_CONVERSATIONS;
pub use search::{MAX_QUERY_CHARS, SearchPage, SearchParams, SearchResult};
pub use send::{AttachmentRef, SendReceipt, SendRequest};
pub use waits::MAX_WAITS_PER_AGENT;

const PAUSED_SETTING: &str = "agents_paused";

/// What of AMC's settings the window changes while it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSettings {
    /// The folders agents may send files from (AMC's own outbox first).
    pub attachment_dirs: Vec<std::path::PathBuf>,
    /// Sends per channel.
    pub rate_limit: crate::ratelimit::RateLimit,
    /// How long a platform has to confirm a send.
    pub send_timeout: std::time::Duration,
}

/// A cheap, cloneable handle on a running AMC core.
#[derive(Clone)]
pub struct Amc {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    store: Store,
    senders: Senders,
    events: EventBus,
    limiter: RateLimiter,
    /// The folders agents may send files from: replaced whole when the person changes them.
    attachments: std::sync::RwLock<AttachmentPolicy>,
    /// How long a platform has to confirm a send, in milliseconds (changed from the window).
    send_timeout_ms: std::sync::atomic::AtomicU64,
    /// The longest it has been since start: a send begun before a shorter one was set still
    /// runs under the longer, so none is given up on while its platform call may go out.
    send_timeout_ceiling_ms: std::sync::atomic::AtomicU64,
    health: health::Registry,
    paused: AtomicBool,
    started: Instant,
    url_filter: amc_attach::url::AddressFilter,
    /// Bumped on every revocation, so an agent's waits end at once.
    revocations: tokio::sync::watch::Sender<u64>,
    /// The push's acknowledgements, windows and sessions.
    push: claude_channel::PushState,
    /// The keys of what agents are handed to give back (cursors, acknowledgements).
    keys: crate::crypto::Keys,
    /// The waits each agent holds open.
    waits: waits::Waits,
    /// The search backlog's indexing while it runs: when it began, and how far it is.
    indexing: std::sync::Mutex<Option<(Instant, amc_store::IndexProgress)>>,
    /// The classification backlog's work while it runs (see [`Amc::classify_backlog`]).
    classifying: std::sync::Mutex<Option<(Instant, amc_store::IndexProgress)>>,
    /// A first import is under way: indexing waits for its end.
    deferring: AtomicBool,
    /// Store work running at once on the blocking pool (see [`Amc::blocking`]).
    lanes: tokio::sync::Semaphore,
    /// Agents found not revoked, with the revocation count read before they were looked
    /// up: the finding holds until the next revocation of any agent.
    vetted: std::sync::Mutex<std::collections::HashMap<String, u64>>,
    /// Tokens found valid, by hash (see [`Amc::authenticate`]).
    tokens: std::sync::Mutex<std::collections::HashMap<[u8; 32], KnownToken>>,
    /// Where AMC asks on the person's phone, and its loop's state.
    phone: phone::PhoneState,
}

/// A token found valid: its agent, the revocation count read before the lookup, and when.
struct KnownToken {
    agent_id: String,
    generation: u64,
    at: Instant,
}

/// How long a token found valid is taken on trust (no revocation in between) before the
/// store is asked again, which also notes when the agent was last seen.
const TOKEN_TRUST: std::time::Duration = std::time::Duration::from_secs(30);

/// An authenticated agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCtx {
    /// The agent's id.
    pub agent_id: String,
}

impl Amc {
    /// Opens the store, settles sends a previous run left in flight (they become
    /// `unknown`), and prepares the attachment folders.
    pub fn start(config: Config, senders: Senders) -> Result<Self> {
        Self::start_reporting(config, senders, &UpdateReporter::default())
    }

    /// [`start`](Self::start), telling `updates` how far an update of the store is (a new
    /// release's migrations may take a while; the tray shows it).
    pub fn start_reporting(config: Config, senders: Senders, updates: &UpdateReporter) -> Result<Self> {
        crate::files::create_dir_all(&config.data_dir)?;
        // Messages are private: only the person's account may read AMC's files (a folder
        // made by an older AMC may be wider).
        std::fs::set_permissions(&config.data_dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        let store = Store::open_reporting(&config.db_path(), updates)?;
        let interrupted = store.recover_interrupted_sends()?;
        if !interrupted.is_empty() {
            tracing::warn!(
                count = interrupted.len(),
                "sends were in flight when AMC stopped; marked unknown for review"
            );
        }
        let attachments = AttachmentPolicy::new(&config.attachment_dirs, &config.staging_dir(), &config.data_dir)?;
        let paused = store.setting(PAUSED_SETTING)?.as_deref() == Some("true");
        let keys = crate::crypto::Keys::derive(&store.root_key(|| Ok(crate::crypto::new_root_key()?))?);
        let phone = phone::PhoneState::load(&store)?;
        Ok(Self {
            inner: Arc::new(Inner {
                limiter: RateLimiter::new(config.rate_limit),
                health: health::Registry::new(&senders),
                store,
                senders,
                events: EventBus::default(),
                attachments: std::sync::RwLock::new(attachments),
                send_timeout_ms: std::sync::atomic::AtomicU64::new(config.send_timeout.as_millis() as u64),
                send_timeout_ceiling_ms: std::sync::atomic::AtomicU64::new(config.send_timeout.as_millis() as u64),
                paused: AtomicBool::new(paused),
                started: Instant::now(),
                url_filter: amc_attach::url::is_public,
                config,
                revocations: tokio::sync::watch::Sender::new(0),
                push: claude_channel::PushState::new(keys.push_acks().clone()),
                keys,
                waits: waits::Waits::default(),
                indexing: Default::default(),
                classifying: Default::default(),
                deferring: AtomicBool::new(false),
                tokens: Default::default(),
                vetted: Default::default(),
                lanes: tokio::sync::Semaphore::new(amc_store::db::MAX_READERS + 2),
                phone,
            }),
        })
    }

    /// The store, for the core's own tests.
    #[cfg(test)]
    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    /// A slot for one more long wait of `agent_id` (the relay's too): every wait an agent
    /// holds open counts against one bound, [`MAX_WAITS_PER_AGENT`]; past it,
    /// `RATE_LIMITED` with `retry_after` 1 until one ends.
    pub fn enter_wait(&self, agent_id: &str) -> Result<WaitSlot<'_>> {
        self.inner.waits.enter(agent_id)
    }

    /// The key the relay signs its cursors with (derived for that purpose alone).
    pub fn relay_cursor_signer(&self) -> &crate::crypto::Signer {
        self.inner.keys.relay_cursors()
    }

    /// AMC's database, for parts that keep their own tables in it (the relay).
    pub fn database(&self) -> &amc_store::db::Database {
        self.inner.store.database()
    }

    /// Changes on every agent revocation: a long wait watches it to end at once when its
    /// agent is revoked.
    pub fn revocations(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.revocations.subscribe()
    }

    /// Whether `agent_id` was revoked (or never existed). An agent found not revoked is
    /// not looked up again until the next revocation of any agent: a thousand waits of
    /// one agent check once.
    pub async fn is_agent_revoked(&self, agent_id: String) -> Result<bool> {
        let generation = *self.inner.revocations.borrow();
        {
            let vetted = self.inner.vetted.lock().unwrap_or_else(|p| p.into_inner());
            if vetted.get(&agent_id) == Some(&generation) {
                return Ok(false);
            }
        }
        let id = agent_id.clone();
        let revoked = self.blocking(move |s| s.is_agent_revoked(&id)).await?;
        if !revoked {
            self.vet(agent_id, generation);
        }
        Ok(revoked)
    }

    /// Notes that `agent_id` was found not revoked at revocation count `generation`.
    fn vet(&self, agent_id: String, generation: u64) {
        let mut vetted = self.inner.vetted.lock().unwrap_or_else(|p| p.into_inner());
        let g = vetted.entry(agent_id).or_insert(generation);
        *g = (*g).max(generation);
    }

    /// The change feed.
    pub fn events(&self) -> &EventBus {
        &self.inner.events
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// What of AMC's settings is in force now: the configuration's at start, or the
    /// window's since ([`Amc::apply_settings`]).
    pub fn live_settings(&self) -> LiveSettings {
        LiveSettings {
            attachment_dirs: self.attachments().allowed_dirs().to_vec(),
            rate_limit: self.inner.limiter.limit(),
            send_timeout: self.send_timeout(),
        }
    }

    /// Puts `settings` in force at once: the next send is limited, timed and checked by
    /// them. Fails, changing nothing, when a folder cannot be used.
    pub fn apply_settings(&self, settings: &LiveSettings) -> Result<()> {
        let config = &self.inner.config;
        let policy = AttachmentPolicy::new(&settings.attachment_dirs, &config.staging_dir(), &config.data_dir)?;
        *self.inner.attachments.write().unwrap_or_else(|p| p.into_inner()) = policy;
        self.inner.limiter.set_limit(settings.rate_limit);
        self.inner.send_timeout_ms.store(settings.send_timeout.as_millis() as u64, Ordering::Release);
        self.inner.send_timeout_ceiling_ms.fetch_max(settings.send_timeout.as_millis() as u64, Ordering::AcqRel);
        tracing::info!(?settings, "settings changed from the window");
        Ok(())
    }

    /// The folders agents may send files from, as they are now.
    fn attachments(&self) -> AttachmentPolicy {
        self.inner.attachments.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How long a platform has to confirm a send, as it is now.
    fn send_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.inner.send_timeout_ms.load(Ordering::Acquire))
    }

    /// The longest a send in flight may still be waiting on its platform: the longest
    /// timeout set since start.
    fn send_timeout_ceiling(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.inner.send_timeout_ceiling_ms.load(Ordering::Acquire))
    }

    /// The recording sender, when AMC runs with `--test-sender`.
    pub fn test_sender(&self) -> Option<&crate::sender::RecordingSender> {
        self.inner.senders.recording_sender()
    }

    /// Whether the person paused all agents' sends.
    pub fn paused(&self) -> bool {
        self.inner.paused.load(Ordering::SeqCst)
    }

    /// Runs store work off the async threads, a few at a time: as many as the database
    /// has readers, and two more for writes. A hundred agents' waits woken together then
    /// queue as futures rather than as a hundred threads waiting for eight readers.
    async fn blocking<T: Send + 'static>(&self, f: impl FnOnce(&Store) -> Result<T> + Send + 'static) -> Result<T> {
        let _permit = self.inner.lanes.acquire().await.map_err(Error::internal)?;
        let store = self.inner.store.clone();
        tokio::task::spawn_blocking(move || f(&store)).await.map_err(Error::internal)?
    }

    /// Checks an agent's bearer token, and the `X-Agent-ID` it came with, if any.
    ///
    /// A token the store found valid is taken on trust for [`TOKEN_TRUST`] while no agent
    /// is revoked: a thousand agents' calls arriving together do not make a thousand
    /// store reads, each on a thread of its own. Any revocation ends every such trust.
    pub async fn authenticate(&self, token: &str, claimed_agent: Option<&str>) -> Result<AgentCtx> {
        let hash = crate::token::hash_token(token);
        let generation = *self.inner.revocations.borrow();
        let known = {
            let tokens = self.inner.tokens.lock().unwrap_or_else(|p| p.into_inner());
            tokens
                .get(&hash)
                .filter(|k| k.generation == generation && k.at.elapsed() < TOKEN_TRUST)
                .map(|k| k.agent_id.clone())
        };
        let agent_id = match known {
            Some(agent_id) => agent_id,
            None => {
                let token = token.to_owned();
                let found = self.blocking(move |s| s.authenticate_agent(&token)).await?;
                let mut tokens = self.inner.tokens.lock().unwrap_or_else(|p| p.into_inner());
                let Some(agent_id) = found else {
                    tokens.remove(&hash);
                    return Err(Error::unauthorized("missing, unknown or revoked token"));
                };
                tokens.insert(hash, KnownToken { agent_id: agent_id.clone(), generation, at: Instant::now() });
                drop(tokens);
                self.vet(agent_id.clone(), generation);
                agent_id
            }
        };
        if let Some(claimed) = claimed_agent
            && claimed != agent_id
        {
            return Err(Error::unauthorized("X-Agent-ID does not match the token's agent"));
        }
        Ok(AgentCtx { agent_id })
    }

    /// Publishes an event on the change feed.
    pub fn publish(&self, event: Event) {
        self.inner.events.publish(event);
    }
}
