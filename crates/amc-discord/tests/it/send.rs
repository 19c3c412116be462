//! Agents' sends to Discord: the request Discord receives, and Discord's refusals.
