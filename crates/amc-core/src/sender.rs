//! The interface a source implements to deliver an agent's send to its platform, and
//! the recording sender that stands in for the platforms in tests and demos.

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::model::{RemoteFile, SendTarget};
use crate::model::{Source, StagedAttachment};
use crate::time::{Millis, now_ms};

/// A boxed future, so senders can live behind `dyn`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the platform is asked to deliver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutgoingSend {
    /// AMC's id for the send (`msg_<ULID>`).
    pub send_id: String,
    /// The channel, with its platform id.
    #[serde(skip)]
    pub channel: SendTarget,
    /// The channel's platform id (chat guid, Discord channel id).
    pub channel_platform_id: String,
    /// The text, exactly as the agent gave it.
    pub text: String,
    /// The platform id of the message replied to.
    pub reply_to_platform_id: Option<String>,
    /// Files staged by AMC.
    pub attachments: Vec<StagedAttachment>,
    /// For a question AMC asks the person on their phone, its code: a platform that has
    /// buttons (Discord) offers Approve and Reject for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answers: Option<String>,
}

/// A delivered send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The platform's id for the message.
    pub platform_id: String,
    /// When the platform says it was sent.
    pub sent_at: Millis,
    /// The platform ids of the other messages the platform made of this send (Messages
    /// writes each file as a row of its own): they are this send, never new messages.
    pub other_parts: Vec<String>,
}

/// Why a send was not delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The platform refused AMC's credentials or automation permission.
    #[error("{0}")]
    Auth(String),
    /// The platform asked AMC to slow down.
    #[error("the platform is rate limiting; retry in {retry_after} s")]
    RateLimited {
        /// Seconds to wait.
        retry_after: u64,
    },
    /// An attachment is over the platform's limit.
    #[error("{0}")]
    TooLarge(String),
    /// The platform refused or failed the send.
    #[error("{0}")]
    Failed(String),
    /// The send may or may not have gone out (a timeout after the platform call began).
    #[error("{0}")]
    Unknown(String),
    /// The platform deleted the channel, or no longer lets AMC in: nothing went out. The
    /// channel is recorded as gone with this reason.
    #[error("{0}; nothing was sent")]
    Gone(String),
}

/// Why a remote file could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The file is larger than AMC fetches.
    #[error("the file is larger than AMC fetches ({limit} bytes)")]
    TooLarge {
        /// The cap, in bytes.
        limit: u64,
    },
    /// The platform does not have it (any more), or this platform's files are not fetched.
    #[error("{0}")]
    Unavailable(String),
}

/// Delivers agents' sends to one platform.
pub trait Sender: Send + Sync {
    /// The largest attachment the platform accepts, in bytes.
    fn max_attachment_bytes(&self) -> u64;

    /// The most bytes of attachments the platform takes in one message, if it counts
    /// them together (Discord limits the whole upload).
    fn max_total_attachment_bytes(&self) -> Option<u64> {
        None
    }

    /// The longest text the platform takes in one message, in characters (Unicode
    /// scalar values), if it has a limit.
    fn max_text_chars(&self) -> Option<usize> {
        None
    }

    /// Fetches a file the platform keeps (a Discord attachment), up to `max_bytes`.
    fn fetch(&self, file: RemoteFile, max_bytes: u64) -> BoxFuture<'_, Result<Vec<u8>, FetchError>> {
        let _ = (file, max_bytes);
        Box::pin(async { Err(FetchError::Unavailable("this platform's files are not fetched by AMC".into())) })
    }

    /// Delivers one send. Implementations never retry a call whose outcome is unknown.
    fn send(&self, msg: OutgoingSend) -> BoxFuture<'_, Result<Delivery, SendError>>;
}

/// A source's sender that is turned on, replaced or off while AMC runs (Discord connected
/// from the window, without a restart): each send goes to the sender current when it
/// starts. The runtime holds the [`SwitchedSenderHandle`].
pub struct SwitchedSender {
    source: Source,
    current: tokio::sync::watch::Receiver<Option<Arc<dyn Sender>>>,
}

/// Where the runtime says which sender a [`SwitchedSender`] sends with.
pub struct SwitchedSenderHandle(tokio::sync::watch::Sender<Option<Arc<dyn Sender>>>);

impl SwitchedSender {
    /// A sender for `source` that sends nowhere until its handle gives it a sender.
    pub fn new(source: Source) -> (Arc<Self>, SwitchedSenderHandle) {
        let (handle, current) = tokio::sync::watch::channel(None);
        (Arc::new(Self { source, current }), SwitchedSenderHandle(handle))
    }

    fn now(&self) -> Option<Arc<dyn Sender>> {
        self.current.borrow().clone()
    }
}

impl SwitchedSenderHandle {
    /// Sends from now on go through `sender`, or fail as the source being off (`None`).
    pub fn set(&self, sender: Option<Arc<dyn Sender>>) {
        self.0.send_replace(sender);
    }
}

impl Sender for SwitchedSender {
    fn max_attachment_bytes(&self) -> u64 {
        // Off, no file is too large: the send fails saying the source is off.
        self.now().map_or(u64::MAX, |s| s.max_attachment_bytes())
    }

    fn max_total_attachment_bytes(&self) -> Option<u64> {
        self.now().and_then(|s| s.max_total_attachment_bytes())
    }

    fn max_text_chars(&self) -> Option<usize> {
        self.now().and_then(|s| s.max_text_chars())
    }

    fn fetch(&self, file: RemoteFile, max_bytes: u64) -> BoxFuture<'_, Result<Vec<u8>, FetchError>> {
        let now = self.now();
        let source = self.source;
        Box::pin(async move {
            match now {
                Some(s) => s.fetch(file, max_bytes).await,
                None => Err(FetchError::Unavailable(format!("the {source} source is off"))),
            }
        })
    }

    fn send(&self, msg: OutgoingSend) -> BoxFuture<'_, Result<Delivery, SendError>> {
        let now = self.now();
        let source = self.source;
        Box::pin(async move {
            match now {
                Some(s) => s.send(msg).await,
                None => Err(SendError::Failed(format!("the {source} source is off: set it up in AMC's Setup"))),
            }
        })
    }
}

/// The senders of the sources that are running, by source.
#[derive(Clone, Default)]
pub struct Senders {
    by_source: HashMap<Source, Arc<dyn Sender>>,
    recording: Option<RecordingSender>,
    /// The sources whose sends are only recorded.
    recorded: std::collections::HashSet<Source>,
}

impl Senders {
    /// Every source delivers to one recording sender (`amc serve --test-sender`).
    pub fn recording(sender: RecordingSender) -> Self {
        let shared: Arc<dyn Sender> = Arc::new(sender.clone());
        Self::default().with(Source::Imessage, shared.clone()).with(Source::Discord, shared).with_recording(sender)
    }

    fn with_recording(mut self, sender: RecordingSender) -> Self {
        self.recording = Some(sender);
        self.recorded = [Source::Imessage, Source::Discord].into();
        self
    }

    /// Whether this source's sends are only recorded (test mode), not delivered.
    pub fn is_recorded(&self, source: Source) -> bool {
        self.recorded.contains(&source)
    }

    /// The recording sender, when the platforms are stood in for.
    pub fn recording_sender(&self) -> Option<&RecordingSender> {
        self.recording.as_ref()
    }

    /// Registers the sender of a source.
    pub fn with(mut self, source: Source, sender: Arc<dyn Sender>) -> Self {
        self.by_source.insert(source, sender);
        self.recorded.remove(&source);
        self
    }

    /// The sender of a source, if that source is running.
    pub fn get(&self, source: Source) -> Option<&Arc<dyn Sender>> {
        self.by_source.get(&source)
    }
}

/// A sender that delivers nowhere: it records each send (in memory and, if asked, as a
/// JSON line in a file) and answers as a platform would. It stands in for iMessage and
/// Discord where they cannot run, and can be told to fail the next sends.
#[derive(Clone, Default)]
pub struct RecordingSender {
    inner: Arc<Mutex<Recording>>,
    log: Option<PathBuf>,
}

#[derive(Default)]
struct Recording {
    sent: Vec<OutgoingSend>,
    fail_next: Vec<SendError>,
}

impl RecordingSender {
    /// A sender that also appends every send to `log` as a JSON line.
    pub fn with_log(log: PathBuf) -> Self {
        Self { log: Some(log), ..Self::default() }
    }

    /// Everything delivered so far.
    pub fn sent(&self) -> Vec<OutgoingSend> {
        self.lock().sent.clone()
    }

    /// Makes the next send fail with `err` (queued, in order).
    pub fn fail_next(&self, err: SendError) {
        self.lock().fail_next.push(err);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recording> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The attachment limit of the recording sender: Discord's default upload limit.
pub const RECORDING_MAX_ATTACHMENT_BYTES: u64 = 10 * 1024 * 1024;

impl Sender for RecordingSender {
    fn max_attachment_bytes(&self) -> u64 {
        RECORDING_MAX_ATTACHMENT_BYTES
    }

    fn send(&self, msg: OutgoingSend) -> BoxFuture<'_, Result<Delivery, SendError>> {
        Box::pin(async move {
            {
                let mut rec = self.lock();
                if !rec.fail_next.is_empty() {
                    return Err(rec.fail_next.remove(0));
                }
                rec.sent.push(msg.clone());
            }
            if let Some(log) = &self.log {
                let line = serde_json::to_string(&msg).map_err(|e| SendError::Failed(e.to_string()))?;
                let mut f =
                    crate::files::append(log).map_err(|e| SendError::Failed(format!("test sender log: {e}")))?;
                // The record and its newline in one write: appends from concurrent sends
                // never interleave inside a line.
                f.write_all(format!("{line}\n").as_bytes())
                    .map_err(|e| SendError::Failed(format!("test sender log: {e}")))?;
            }
            Ok(Delivery { platform_id: format!("test-{}", msg.send_id), sent_at: now_ms(), other_parts: Vec::new() })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Concurrent sends append whole lines: each line of the log is one JSON record.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn the_test_senders_log_holds_one_record_per_line_under_concurrent_sends() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("test-sender.jsonl");
        let sender = Arc::new(RecordingSender::with_log(log.clone()));
        let target = SendTarget {
            id: "ch_01HZ0000000000000000000000".into(),
            source: Source::Imessage,
            platform_id: "iMessage;-;+15551234567".into(),
            name: "Ada".into(),
            kind: crate::model::ChannelKind::Dm,
            send_policy: crate::model::SendPolicy::Auto,
            gone: None,
        };
        let tasks: Vec<_> = (0..800)
            .map(|i| {
                let (sender, target) = (sender.clone(), target.clone());
                tokio::spawn(async move {
                    let msg = OutgoingSend {
                        send_id: format!("msg_{i:026}"),
                        channel_platform_id: target.platform_id.clone(),
                        channel: target,
                        text: "x".repeat(4096 + i),
                        reply_to_platform_id: None,
                        attachments: Vec::new(),
                        answers: None,
                    };
                    sender.send(msg).await.expect("sent")
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("join");
        }
        let text = std::fs::read_to_string(&log).expect("log");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 800);
        for line in lines {
            serde_json::from_str::<serde_json::Value>(line).expect("one whole record per line");
        }
    }
}
