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
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import Daemon, amc_binary

pytestmark = pytest.mark.timeout(180)

AGENT = "claude-code"


def claude_binary() -> str:
    explicit = os.environ.get("AMC_CLAUDE")
    if not explicit:
        pytest.skip("AMC_CLAUDE names no Claude Code CLI (scripts/test installs one)")
    return explicit


class Messages:
    """A stand-in for the Messages API: each request is answered, streamed as the API
    streams, with the next of `turns` (a tool call by name, or text), and kept. A turn may
    wait for `release` first, so that a test can act while the session waits for its model."""

    def __init__(self, turns: list[dict]) -> None:
        self.turns = turns
        self.requests: list[dict] = []
        self.waiting = threading.Event()
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if not self.path.startswith("/v1/messages") or self.path.startswith("/v1/messages/count_tokens"):
                    self.send_response(404)
                    self.end_headers()
                    return
                turn = outer.turns[min(len(outer.requests), len(outer.turns) - 1)]
                outer.requests.append(body)
                if turn.get("wait"):
                    outer.waiting.set()
                    outer.release.wait(120)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for event in stream(turn, body.get("model", "stand-in")):
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())

            def log_message(self, *_args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def tool_results(self) -> list[dict]:
        """What Claude Code sent back for the stand-in's tool calls, in order."""
        return [block for request in self.requests for message in request.get("messages", [])
                if message.get("role") == "user" and isinstance(message.get("content"), list)
                for block in message["content"] if block.get("type") == "tool_result"]


def stream(turn: dict, model: str) -> list[dict]:
    """The server-sent events of one assistant turn, as the Messages API streams it."""
    if "tool" in turn:
        start = {"type": "tool_use", "id": f"toolu_{turn['tool']}", "name": turn["tool"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(turn.get("input", {}))}
        stop = "tool_use"
    else:
        start, delta, stop = {"type": "text", "text": ""}, {"type": "text_delta", "text": turn["text"]}, "end_turn"
    message = {"id": "msg_standin", "type": "message", "role": "assistant", "model": model, "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": start},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]


class Claude:
    """The Claude Code CLI in a home of its own, with AMC registered as docs/mcp.md says."""

    def __init__(self, home: Path, api: str = "http://127.0.0.1:9") -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.home = home
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "ANTHROPIC_BASE_URL": api,
                    "ANTHROPIC_API_KEY": "sk-ant-standin", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}

    def run(self, *args: str, timeout: float = 60) -> str:
        done = subprocess.run([claude_binary(), *args], env=self.env, cwd=self.home, capture_output=True,
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
    api = Messages([{"tool": "mcp__amc__list_channels", "wait": True}, {"text": "done"}])
    claude = Claude(tmp_path / "home", api.url)
    claude.register(d.data_dir, token)
    session = subprocess.Popen([claude_binary(), "-p", "Which conversations can you read?", "--allowedTools",
                                "mcp__amc__list_channels"], env=claude.env, cwd=claude.home,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    d = None
    try:
        assert api.waiting.wait(60), "the session never asked its model"
        d = Daemon(tmp_path / "amc")
        api.release.set()
        out, err = session.communicate(timeout=60)
        assert session.returncode == 0, f"{out}\n{err}"
        [result] = api.tool_results()
        assert not result.get("is_error"), result
        channels = json.loads(result["content"] if isinstance(result["content"], str) else result["content"][0]["text"])
        assert [c["name"] for c in channels["channels"]] == ["Chat a"], channels
    finally:
        session.kill()
        api.close()
        if d is not None:
            d.stop()
