"""AMC's HTTP MCP endpoint (`amc serve --listen`) as the MCP Inspector's CLI meets it. A
client without AMC's headers must be told which headers to send, not be led into an OAuth
flow that cannot succeed; with them, the tools answer. The Inspector comes from npm with
its own Node (`scripts/test` installs both into `$AMC_INSPECTOR`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from conftest import Daemon

PREFIX = os.environ.get("AMC_INSPECTOR")
pytestmark = pytest.mark.skipif(not PREFIX, reason="AMC_INSPECTOR is not set (scripts/test sets it)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def listening(tmp_path: Path):
    port = free_port()
    d = Daemon(tmp_path / "amc", config=f'listen = "127.0.0.1:{port}"\n')
    yield d, f"http://127.0.0.1:{port}/mcp"
    d.stop()


def inspector(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    bin_dir = Path(PREFIX) / "node_modules" / ".bin"
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", "HOME": str(home)}
    return subprocess.run([str(bin_dir / "node"), str(bin_dir / "mcp-inspector"), "--cli", url, *args],
                          env=env, capture_output=True, text=True, timeout=120)


def test_without_headers_the_inspector_is_told_which_to_send_and_no_oauth_starts(listening, tmp_path: Path):
    _, url = listening
    run = inspector(tmp_path, url, "--method", "tools/list")
    assert run.returncode != 0, run.stdout
    said = run.stdout + run.stderr
    assert "Authorization: Bearer" in said and "X-Agent-ID" in said, said
    assert "OAuth requires" not in said and "authorize" not in said.lower().replace("authorization", ""), said


def test_with_the_headers_the_inspector_lists_and_calls_the_tools(listening, tmp_path: Path):
    daemon, url = listening
    token = daemon.add_agent("inspector")
    daemon.chat("a", ["seen through the inspector"], approve={"history": "all"})
    headers = ["--header", f"Authorization: Bearer {token}", "--header", "X-Agent-ID: inspector"]
    listed = inspector(tmp_path, url, *headers, "--method", "tools/list")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    names = [t["name"] for t in json.loads(listed.stdout)["tools"]]
    assert "list_unread_messages" in names and "wait_for_unread_messages" in names, names
    called = inspector(tmp_path, url, *headers, "--method", "tools/call", "--tool-name", "list_unread_messages")
    assert called.returncode == 0, called.stdout + called.stderr
    result = json.loads(called.stdout)
    assert [m["text"] for m in result["structuredContent"]["messages"]] == ["seen through the inspector"]
