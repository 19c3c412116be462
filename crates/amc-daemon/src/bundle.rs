//! The MCP Bundle (`.mcpb`) that installs an agent into Claude Desktop in one click: a zip
//! with `manifest.json` at its root and the `amc` command inside, run as `amc mcp` with the
//! agent's id and token. The format is the MCPB specification's (modelcontextprotocol/mcpb,
//! `MANIFEST.md`, manifest version 0.3): a `binary` server whose `entry_point` is the file in
//! the bundle, started through `${__dirname}`, the folder Claude Desktop unpacks it to.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::json;

/// The bundle's icon: AMC's, at the 512×512 the bundle format recommends.
pub const ICON: &[u8] = include_bytes!("../../../icons/512x512.png");

/// The manifest version written.
pub const MANIFEST_VERSION: &str = "0.3";
/// Where `amc` sits in the bundle.
const ENTRY_POINT: &str = "server/amc";

/// What goes into one agent's bundle.
pub struct BundleFor<'a> {
    /// The agent.
    pub agent_id: &'a str,
    /// Its token (the bundle is the person's to keep private, like the token itself).
    pub token: &'a str,
    /// The `amc` to put inside.
    pub amc: &'a Path,
    /// What else `amc mcp` must be told (`AMC_DATA_DIR` when it is not the default).
    pub env: BTreeMap<String, String>,
}

/// The manifest of the bundle.
pub fn manifest(b: &BundleFor<'_>) -> serde_json::Value {
    let mut env = b.env.clone();
    env.insert("AMC_AGENT_ID".into(), b.agent_id.into());
    env.insert("AMC_BEARER_TOKEN".into(), b.token.into());
    let platform = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let tools: Vec<serde_json::Value> = amc_mcp::tools::inbox_tools()
        .into_iter()
        .map(|t| json!({ "name": t.name, "description": t.description.unwrap_or_default() }))
        .collect();
    json!({
        "manifest_version": MANIFEST_VERSION,
        "name": format!("amc-{}", b.agent_id),
        "display_name": format!("AMC ({})", b.agent_id),
        "version": env!("CARGO_PKG_VERSION"),
        "description": "The iMessage and Discord conversations you approved in AMC, on this Mac.",
        "long_description": "Reads and answers the conversations you approved in AMC, as the agent \
            named in this bundle. Sends may wait for your review in AMC. AMC must be running.",
        "author": { "name": "AMC" },
        "license": "GPL-3.0-or-later",
        "icon": "icon.png",
        "server": {
            "type": "binary",
            "entry_point": ENTRY_POINT,
            "mcp_config": {
                "command": format!("${{__dirname}}/{ENTRY_POINT}"),
                "args": ["mcp", "--no-push"],
                "env": env,
            },
        },
        "tools": tools,
        "compatibility": { "platforms": [platform] },
    })
}

/// The bundle's bytes: `manifest.json`, the icon, and `amc` (executable).
pub fn build(b: &BundleFor<'_>, icon: &[u8]) -> std::io::Result<Vec<u8>> {
    use zip::write::SimpleFileOptions;
    let amc = std::fs::read(b.amc)?;
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let file = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let manifest = serde_json::to_vec_pretty(&manifest(b)).map_err(std::io::Error::other)?;
    out.start_file("manifest.json", file.unix_permissions(0o644)).map_err(std::io::Error::other)?;
    out.write_all(&manifest)?;
    out.start_file("icon.png", file.unix_permissions(0o644)).map_err(std::io::Error::other)?;
    out.write_all(icon)?;
    // Stored as it is: compressing tens of megabytes would keep the person waiting, and the
    // bundle never leaves this Mac.
    let stored = file.compression_method(zip::CompressionMethod::Stored).unix_permissions(0o755);
    out.start_file(ENTRY_POINT, stored).map_err(std::io::Error::other)?;
    out.write_all(&amc)?;
    Ok(out.finish().map_err(std::io::Error::other)?.into_inner())
}

#[cfg(test)]
mod tests {
    /// The bundle format's validator (`mcpb validate`) recommends a 512×512 PNG icon "for
    /// best display in Claude Desktop"; a smaller one is scaled up there.
    #[test]
    fn the_bundles_icon_is_a_512_pixel_png() {
        let icon = super::ICON;
        assert_eq!(&icon[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
        assert_eq!(&icon[12..16], b"IHDR");
        let side = |at: usize| u32::from_be_bytes([icon[at], icon[at + 1], icon[at + 2], icon[at + 3]]);
        assert_eq!((side(16), side(20)), (512, 512));
    }
}
