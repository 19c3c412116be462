//! The Claude Code channel's tables (the feature as a whole: the core's
//! `service/claude_channel/`, amc-mcp's `claude_channel/`): where each agent's push of new
//! messages stands, and the tool requests hosts ask the person to answer.

mod push;
mod tools;

pub use push::{PushPosition, PushScan};
pub use tools::{NewToolRequest, ToolRequestBounds};
