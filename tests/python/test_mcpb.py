"""The MCP Bundle (`.mcpb`) AMC builds so Claude Desktop installs an agent in one click,
checked against the MCPB specification (modelcontextprotocol/mcpb): a zip with
`manifest.json` at its root that validates against the manifest schema, and the bundled
`amc`, executable, which works as the agent it names when started as the manifest says."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import zipfile
from pathlib import Path

import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import ROOT, Daemon, amc_binary

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "mcpb" / "mcpb-manifest-v0.3.schema.json").read_text())


@pytest.fixture
def anyio_backend():
    return "asyncio"


def bundle(daemon: Daemon, agent: str, token: str):
    return daemon.http.post(f"/admin/agents/{agent}/bundle", json={"token": token})


async def test_the_bundle_is_a_valid_mcpb_whose_amc_works_as_the_agent(daemon: Daemon, tmp_path: Path):
    token = daemon.add_agent("claude-desktop")
    daemon.chat("a", ["hello from the bundle test"], approve={"history": "all"})
    r = bundle(daemon, "claude-desktop", token)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/zip"
    assert 'filename="amc-claude-desktop.mcpb"' in r.headers["content-disposition"]
    archive = zipfile.ZipFile(io.BytesIO(r.content))
    assert archive.testzip() is None
    manifest = json.loads(archive.read("manifest.json"))
    jsonschema.validate(manifest, SCHEMA)
    assert manifest["manifest_version"] == "0.3"
    server = manifest["server"]
    assert server["type"] == "binary"
    entry = archive.getinfo(server["entry_point"])
    assert stat.S_IMODE(entry.external_attr >> 16) & 0o111, "the bundled amc is executable"
    assert archive.read(manifest["icon"])[:8] == b"\x89PNG\r\n\x1a\n"
    config = server["mcp_config"]
    assert config["command"] == "${__dirname}/" + server["entry_point"]
    assert config["args"] == ["mcp", "--no-push"]
    env = config["env"]
    assert (env["AMC_AGENT_ID"], env["AMC_BEARER_TOKEN"], env["AMC_DATA_DIR"]) == ("claude-desktop", token, str(daemon.data_dir))
    assert [t["name"] for t in manifest["tools"]][:4] == ["list_unread_messages", "send_message", "mark_read", "get_message_context"]

    # Unpacked as Claude Desktop does, and started as the manifest says, it is the agent.
    unpacked = tmp_path / "installed"
    archive.extractall(unpacked)
    binary = unpacked / server["entry_point"]
    binary.chmod(stat.S_IMODE(entry.external_attr >> 16))
    command = config["command"].replace("${__dirname}", str(unpacked))
    params = StdioServerParameters(command=command, args=config["args"], env={**env, "PATH": os.environ.get("PATH", "")})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            unread = await s.call_tool("list_unread_messages", {})
            assert [m["text"] for m in unread.structured_content["messages"]] == ["hello from the bundle test"]


def test_a_bundle_needs_the_agents_own_token_and_the_admin(daemon: Daemon):
    claude = daemon.add_agent("claude")
    other = daemon.add_agent("other")
    for token in (other, "amc_agent_" + "0" * 64, ""):
        r = bundle(daemon, "claude", token)
        assert r.status_code == 422 and r.json()["error"]["code"] == "VALIDATION_FAILED", r.text
    # An agent cannot make itself a bundle: the route is the person's.
    r = daemon.http.post("/admin/agents/claude/bundle", json={"token": claude}, headers={"Authorization": f"Bearer {claude}"})
    assert r.status_code == 401, r.text


def test_amc_agent_add_writes_the_bundle(daemon: Daemon, tmp_path: Path):
    out = tmp_path / "amc-desktop.mcpb"
    run = subprocess.run([amc_binary(), "agent", "add", "desktop",
                          "--mcpb", str(out)], env={**os.environ, "AMC_DATA_DIR": str(daemon.data_dir)},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert f"Wrote {out}" in run.stdout, run.stdout
    with zipfile.ZipFile(out) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    jsonschema.validate(manifest, SCHEMA)
    assert manifest["server"]["mcp_config"]["env"]["AMC_AGENT_ID"] == "desktop"
