//! The Claude Code channel, the service's part (the store's is amc-store's
//! `claude_channel/`, the MCP side amc-mcp's `claude_channel/`): new messages told to an
//! agent's sessions as they arrive, bursts folded, acknowledged only by a session that
//! showed it works; and the tool requests a host asks the person to answer from the tray.

mod push;
mod tools;

pub(super) use push::PushState;
pub use push::{MAX_PUSH_WAIT_SECONDS, PUSH_BURST, PUSH_WINDOW, PushBatch, PushItem, PushParams};
pub use tools::{SESSION_GONE_AFTER, TOOL_REQUEST_BOUNDS, TOOL_REQUESTS_KEPT_FOR, ToolAsk};
