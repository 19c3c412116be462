"""Per-agent channels from the command line (`amc channel approve ID --agent NAME`, `amc
channel agents ID --set NAME,NAME | --all`), and the leak matrix over both MCP toolsets
and the push."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client import NotificationBinding
from mcp.client.stdio import stdio_client

from conftest import Daemon, amc_binary
from test_push import ChannelEvent


def amc(daemon: Daemon, *args: str) -> dict:
    run = subprocess.run([amc_binary(), "--json", *args], env={**os.environ, "AMC_DATA_DIR": str(daemon.data_dir)},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def channels_of(daemon: Daemon, agent: str, token: str) -> list[str]:
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(daemon.socket)), base_url="http://localhost",
                      headers={"Authorization": f"Bearer {token}", "X-Agent-ID": agent}) as c:
        return [ch["id"] for ch in c.get("/channels").json()["channels"]]


def test_the_cli_opens_a_channel_to_the_agents_named(daemon: Daemon):
    tokens = {name: daemon.add_agent(name) for name in ("assistant", "coder")}
    ch, _ = daemon.chat("family", ["dinner?"])
    approved = amc(daemon, "channel", "approve", ch, "--history", "all", "--agent", "assistant")
    assert approved["agents"] == [{"id": "assistant", "send_policy": None}], approved
    assert channels_of(daemon, "assistant", tokens["assistant"]) == [ch]
    assert channels_of(daemon, "coder", tokens["coder"]) == []
    both = amc(daemon, "channel", "agents", ch, "--set", "assistant,coder")
    assert [a["id"] for a in both["agents"]] == ["assistant", "coder"]
    assert channels_of(daemon, "coder", tokens["coder"]) == [ch]
    everyone = amc(daemon, "channel", "agents", ch, "--all")
    assert everyone["agents"] is None
    nobody = amc(daemon, "channel", "agents", ch, "--set", "")
    assert nobody["agents"] == [] and channels_of(daemon, "assistant", tokens["assistant"]) == []


# --- The leak matrix over MCP -------------------------------------------------------------
#
# The same matrix as the daemon's REST test (crates/amc-daemon/tests/it/scopes.rs), asked
# through `amc mcp` with the official SDK: every inbox tool, the relay toolset and the push,
# for every message the coder may not see. A hidden id must get exactly the answer an id
# that does not exist gets.

MARK = "kiwi"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@asynccontextmanager
async def session(data_dir: Path, token: str, agent: str, *args: str, events: asyncio.Queue | None = None):
    env = {"AMC_DATA_DIR": str(data_dir), "PATH": os.environ.get("PATH", ""),
           "AMC_BEARER_TOKEN": token, "AMC_AGENT_ID": agent}
    params = StdioServerParameters(command=amc_binary(), args=["mcp", *args], env=env)
    bindings = []
    if events is not None:
        async def on_event(params: ChannelEvent) -> None:
            events.put_nowait(params)
        bindings = [NotificationBinding(method="notifications/claude/channel", params_type=ChannelEvent, handler=on_event)]
    errlog = open(data_dir.parent / f"bridge-{agent}.err", "a")
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, notification_bindings=bindings) as s:
            await s.initialize()
            yield s


def answer(result) -> tuple:
    """What a call told: the error code, or the result with ids that differ by design
    (a fresh send's id) left out."""
    body = result.structured_content
    if result.is_error:
        return ("error", body["error"]["code"], body["error"]["status"])
    return ("ok", json.dumps(body, sort_keys=True))


def ghost_of(real: str) -> str:
    """An id of the same shape as `real` that names nothing."""
    return real[:-6] + "ZZZZZZ"


@pytest.mark.anyio
@pytest.mark.timeout(180)
async def test_no_mcp_tool_and_no_push_shows_a_hidden_message(tmp_path: Path):
    d = Daemon(tmp_path / "amc")
    try:
        await _matrix(d)
    finally:
        d.stop()


async def _matrix(d: Daemon) -> None:
    tokens = {name: d.add_agent(name) for name in ("assistant", "coder")}
    open_ch, open_ids = d.chat("open", ["plum for everyone"], approve={"history": "all", "send_policy": "auto"})
    a_ch, a_ids = d.chat("only-a", [f"{MARK} for the assistant", f"{MARK} again"],
                         approve={"history": "all", "agents": ["assistant"], "send_policy": "auto"})
    none_ch, none_ids = d.chat("none", [f"{MARK} for nobody"], approve={"history": "all", "agents": []})
    pending_ch, pending_ids = d.chat("pending", [f"{MARK} waiting"])
    blocked_ch, blocked_ids = d.chat("blocked", [f"{MARK} blocked"])
    d.admin("POST", f"/admin/channels/{blocked_ch}/block", {})
    # A channel approved "from now": what came before the approval stays hidden.
    late_ch, late_old = d.chat("late", [f"{MARK} before the approval"], approve={"history": "from_now"})
    late_new = d.admin("POST", "/admin/test/ingest", {"source": "imessage", "chat_id": "late", "chat_name": "Chat late",
                                                       "messages": [{"id": "late-new", "text": "after", "sender": "+1555"}]})["inserted"]
    hidden = {a_ch: a_ids, none_ch: none_ids, pending_ch: pending_ids, blocked_ch: blocked_ids, late_ch: late_old}
    ghost_ch, ghost_msg = ghost_of(open_ch), ghost_of(open_ids[0])
    leaks: list[str] = []

    async def same(s: ClientSession, tool: str, hidden_args: dict, ghost_args: dict) -> None:
        got, want = answer(await s.call_tool(tool, hidden_args)), answer(await s.call_tool(tool, ghost_args))
        if got != want:
            leaks.append(f"{tool} {hidden_args}: {got} where an unknown id gets {want}")

    events: asyncio.Queue[ChannelEvent] = asyncio.Queue()
    async with session(d.data_dir, tokens["coder"], "coder", events=events) as coder:
        for ch, ids in hidden.items():
            hidden_ch = ch if ch != late_ch else ghost_ch  # the late channel itself is visible
            await same(coder, "list_unread_messages", {"channel_id": hidden_ch}, {"channel_id": ghost_ch})
            await same(coder, "send_message", {"channel_id": hidden_ch, "text": "hi"}, {"channel_id": ghost_ch, "text": "hi"})
            await same(coder, "search_messages", {"query": MARK, "channel_id": ch}, {"query": MARK, "channel_id": ghost_ch})
            await same(coder, "wait_for_unread_messages", {"channel_id": hidden_ch, "timeout_seconds": 1},
                       {"channel_id": ghost_ch, "timeout_seconds": 1})
            for m in ids:
                for where in (ch, open_ch):
                    await same(coder, "get_message_context", {"channel_id": where, "around_message_id": m, "before": 50},
                               {"channel_id": where, "around_message_id": ghost_msg, "before": 50})
                await same(coder, "send_message", {"channel_id": open_ch, "text": "re", "reply_to": m},
                           {"channel_id": open_ch, "text": "re", "reply_to": ghost_msg})
                await same(coder, "mark_read", {"message_ids": [m]}, {"message_ids": [ghost_msg]})
        # What the coder may see holds no hidden message, however it asks.
        seen = ok_json(await coder.call_tool("list_channels", {}))
        if sorted(c["id"] for c in seen["channels"]) != sorted([open_ch, late_ch]):
            leaks.append(f"list_channels: {seen}")
        found = ok_json(await coder.call_tool("search_messages", {"query": MARK, "limit": 50}))
        leaks += [f"search: {r['message']['id']}" for r in found["results"]]
        around = ok_json(await coder.call_tool("get_message_context",
                                               {"channel_id": late_ch, "around_message_id": late_new[0], "before": 50}))
        leaks += [f"context: {m['id']}" for m in around["messages"] if m["id"] != late_new[0]]
        unread = ok_json(await coder.call_tool("list_unread_messages", {"limit": 100}))
        leaks += [f"unread: {m['id']}" for m in unread["messages"] if m["id"] not in open_ids + late_new]

        # The relay toolset knows nothing of the inbox's channels and messages.
        async with session(d.data_dir, tokens["coder"], "coder", "--relay") as relay:
            thread = ok_json(await relay.call_tool("create_thread", {"title": "scratch", "idempotency_key": "scratch-1"}))["thread_id"]
            ghost_thread = ghost_of(thread)
            for ch in [*hidden, open_ch]:
                await same(relay, "read_messages", {"thread_id": ch}, {"thread_id": ghost_thread})
                await same(relay, "join_thread", {"thread_id": ch, "access_token": "x"},
                           {"thread_id": ghost_thread, "access_token": "x"})
            found = ok_json(await relay.call_tool("search_threads", {"query": MARK}))
            leaks += [f"relay search: {h}" for h in found["hits"]]

        # The push: a message for the assistant only is never told to the coder.
        deadline = time.monotonic() + 30
        while not any(a["id"] == "coder" and a["pushing"] for a in d.admin("GET", "/admin/agents")["agents"]):
            assert time.monotonic() < deadline, "the coder's push never started"
            await asyncio.sleep(0.02)
        while not events.empty():  # what was already there when the session began
            told = events.get_nowait()
            if told.meta.get("channel_id") not in (open_ch, late_ch):
                leaks.append(f"push: {told.meta}")
        for chat, text in [("only-a", f"{MARK} fresh for the assistant"), ("open", "fresh for everyone")]:
            d.admin("POST", "/admin/test/ingest", {"source": "imessage", "chat_id": chat, "chat_name": f"Chat {chat}",
                                                   "messages": [{"id": f"{chat}-fresh", "text": text, "sender": "+1555"}]})
        told = await asyncio.wait_for(events.get(), 30)
        if told.meta.get("channel_id") != open_ch:
            leaks.append(f"push: {told.meta}")
    assert leaks == [], f"{len(leaks)} leaks:\n" + "\n".join(leaks)
    assert d.sent_texts() == [], "no probe sent anything"

    # The assistant, to whom the channel is open, finds it with the same tools.
    async with session(d.data_dir, tokens["assistant"], "assistant") as assistant:
        found = ok_json(await assistant.call_tool("search_messages", {"query": MARK}))
        assert sorted(r["message"]["channel_id"] for r in found["results"]) == [a_ch] * 3, found


def ok_json(result) -> dict:
    assert not result.is_error, result.structured_content
    return result.structured_content
