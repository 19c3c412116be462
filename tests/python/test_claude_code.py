"""The real Claude Code CLI (npm `@anthropic-ai/claude-code`, the version scripts/test
installs) with `amc mcp` registered as its users register it: its health checks
(`claude mcp list`, `claude mcp get`) with AMC down and up, the backlog they must leave to
the next session, and a `claude -p` session started before AMC that uses AMC's tools once
AMC is up, without being restarted. The model is a stand-in for the Messages API that
answers with the tool calls each test scripts (Claude Code takes `ANTHROPIC_BASE_URL`)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import Daemon, amc_binary
from standins import Model, cli, anthropic_turn

pytestmark = pytest.mark.timeout(180)

AGENT = "claude-code"



class Claude:
    """The Claude Code CLI in a home of its own, with AMC registered as docs/mcp.md says."""

    def __init__(self, home: Path, api: str = "http://127.0.0.1:9") -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.home = home
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "ANTHROPIC_BASE_URL": api,
                    "ANTHROPIC_API_KEY": "sk-ant-standin", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}

    def run(self, *args: str, timeout: float = 60) -> str:
        done = subprocess.run([cli("AMC_CLAUDE"), *args], env=self.env, cwd=self.home, capture_output=True,
                              text=True, timeout=timeout)
        assert done.returncode == 0, f"claude {' '.join(args)}: {done.returncode}\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def register(self, data_dir: Path, token: str) -> None:
        self.run("mcp", "add", "-s", "user", "amc", "--env", f"AMC_AGENT_ID={AGENT}", "--env",
                 f"AMC_BEARER_TOKEN={token}", "--env", f"AMC_DATA_DIR={data_dir}", "--", amc_binary(), "mcp")

    def status(self) -> str:
        """The status line `claude mcp get amc` prints."""
        out = self.run("mcp", "get", "amc")
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.strip().startswith("Status:"))


def agent(daemon: Daemon) -> dict:
    return next(a for a in daemon.admin("GET", "/admin/agents")["agents"] if a["id"] == AGENT)


def test_claude_code_health_checks_list_amc_down_and_up(tmp_path: Path):
    """Before AMC starts, `claude mcp get` and `claude mcp list` show AMC connected (its
    tools are listed from the contract), and so they do once AMC runs."""
    d = Daemon(tmp_path / "amc")
    token = d.add_agent(AGENT)
    d.stop()
    claude = Claude(tmp_path / "home")
    claude.register(d.data_dir, token)
    assert claude.status() == "✔ Connected"
    assert "amc: " in (listed := claude.run("mcp", "list")) and "✔ Connected" in listed, listed
    d = Daemon(d.data_dir)
    try:
        assert claude.status() == "✔ Connected"
    finally:
        d.stop()


def test_claude_code_health_checks_leave_the_backlog_to_the_next_session(tmp_path: Path):
    """`claude mcp list` and `claude mcp get` start the bridge, which is told what waited:
    AMC records none of it as told, so the next session is told it."""
    d = Daemon(tmp_path / "amc")
    try:
        token = d.add_agent(AGENT)
        d.chat("a", [], approve={"history": "all"})
        agent_headers = {"Authorization": f"Bearer {token}", "X-Agent-ID": AGENT}
        batch = d.http.get("/messages/push?timeout_seconds=1", headers=agent_headers).json()
        assert d.http.post("/messages/push/ack", json={"ack": batch["ack"]}, headers=agent_headers).status_code == 200
        placed = agent(d)["last_pushed_at"]
        d.admin("POST", "/admin/test/ingest", {"source": "imessage", "chat_id": "a", "chat_name": "Chat a", "messages": [
            {"id": "a-late", "text": "while nobody listened", "sender": "+15551234567", "sender_name": "Ada"}]})
        claude = Claude(tmp_path / "home")
        claude.register(d.data_dir, token)
        assert "✔ Connected" in claude.run("mcp", "list")
        assert claude.status() == "✔ Connected"
        assert agent(d)["last_pushed_at"] == placed, "a health check recorded the backlog as told"
        waiting = d.http.get("/messages/push?timeout_seconds=1", headers=agent_headers).json()
        assert [i["message"]["text"] for i in waiting["items"] if i["kind"] == "message"] == ["while nobody listened"], waiting
    finally:
        d.stop()


def test_a_claude_code_session_started_before_amc_uses_its_tools_once_amc_is_up(tmp_path: Path):
    """The common login order: Claude Code starts, AMC after it. The session is not
    restarted; its model's call of an AMC tool is answered by AMC."""
    d = Daemon(tmp_path / "amc")
    token = d.add_agent(AGENT)
    d.chat("a", ["see you at 8"], approve={"history": "all", "agents": [AGENT]})
    d.stop()
    api = Model(anthropic_turn, [{"tool": "mcp__amc__list_channels", "wait": True}, {"text": "done"}])
    claude = Claude(tmp_path / "home", api.url)
    claude.register(d.data_dir, token)
    session = subprocess.Popen([cli("AMC_CLAUDE"), "-p", "Which conversations can you read?", "--allowedTools",
                                "mcp__amc__list_channels"], env=claude.env, cwd=claude.home,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    d = None
    try:
        assert api.waiting.wait(60), "the session never asked its model"
        d = Daemon(tmp_path / "amc")
        api.release.set()
        out, err = session.communicate(timeout=60)
        assert session.returncode == 0, f"{out}\n{err}"
        results = [block for request in api.requests for message in request.get("messages", [])
                   if message.get("role") == "user" and isinstance(message.get("content"), list)
                   for block in message["content"] if block.get("type") == "tool_result"]
        [result] = results
        assert not result.get("is_error"), result
        channels = json.loads(result["content"] if isinstance(result["content"], str) else result["content"][0]["text"])
        assert [c["name"] for c in channels["channels"]] == ["Chat a"], channels
    finally:
        session.kill()
        api.close()
        if d is not None:
            d.stop()
