"""The relay tools end to end through `amc mcp --relay`, with three principals (and a
fourth who is never invited), driven by the official MCP Python SDK over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import time
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import SPEC, Daemon, amc_binary, text_form

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@asynccontextmanager
async def relay(data_dir: Path, token: str, agent_id: str, errlog=None, log: str | None = None):
    env = {"AMC_DATA_DIR": str(data_dir), "AMC_BEARER_TOKEN": token, "AMC_AGENT_ID": agent_id, "PATH": os.environ.get("PATH", "")}
    if log:
        env["AMC_LOG"] = log
    params = StdioServerParameters(command=amc_binary(), args=["mcp", "--relay"], env=env)
    kwargs = {"errlog": errlog} if errlog is not None else {}
    async with stdio_client(params, **kwargs) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(s: ClientSession, tool: str, **args) -> dict:
    r = await s.call_tool(tool, args)
    assert not r.is_error, (tool, r.structured_content)
    text_form(r)
    return r.structured_content


async def fail(s: ClientSession, tool: str, **args) -> str:
    r = await s.call_tool(tool, args)
    assert r.is_error, (tool, r.structured_content)
    err = r.structured_content["error"]
    text_form(r)
    return err["code"]


@pytest.fixture
async def principals(daemon: Daemon):
    tokens = {name: daemon.add_agent(name) for name in ["alice", "bob", "carol", "dave"]}
    async with AsyncExitStack() as stack:
        sessions = {n: await stack.enter_async_context(relay(daemon.data_dir, t, n)) for n, t in tokens.items()}
        yield sessions


async def test_tools_list_is_the_relay_contract(principals):
    contract = json.loads((SPEC / "relay-mcp-tools.json").read_text())
    listed = {t.name: t for t in (await principals["alice"].list_tools()).tools}
    for expected in contract["tools"]:
        tool = listed[expected["name"]]
        assert tool.input_schema == expected["inputSchema"], expected["name"]
        got = tool.annotations.model_dump(by_alias=True, exclude_none=True)
        assert got == expected["annotations"], expected["name"]
        assert tool.description.startswith(expected["description"])
        assert tool.output_schema["type"] == "object"


async def test_share_join_post_and_read_across_pages(principals, daemon: Daemon):
    alice, bob, carol, dave = (principals[n] for n in ["alice", "bob", "carol", "dave"])
    thread = await call(alice, "create_thread", title="Release plan", idempotency_key="plan-1")
    tid = thread["thread_id"]
    assert (thread["owner"], thread["access"], thread["latest_seq"]) == ("agent:alice", "owner", 0)
    assert "token" not in json.dumps(thread)
    # Replays return the same thread; the same key with another title is refused.
    assert (await call(alice, "create_thread", title="Release plan", idempotency_key="plan-1"))["thread_id"] == tid
    assert await fail(alice, "create_thread", title="Other", idempotency_key="plan-1") == "IDEMPOTENCY_KEY_REUSE"
    # Private until shared.
    assert await fail(bob, "read_messages", thread_id=tid) == "THREAD_NOT_FOUND"
    assert await fail(bob, "create_thread_invite", thread_id=tid, kind="write") == "THREAD_NOT_FOUND"

    invite = await call(alice, "create_thread_invite", thread_id=tid, kind="write")
    readcap = await call(alice, "create_thread_invite", thread_id=tid, kind="read")
    assert invite["access_token"].startswith("amc_relay_invite_") and len(invite["access_token"]) >= 64
    assert readcap["access_token"].startswith("amc_relay_read_")

    joined = await call(bob, "join_thread", thread_id=tid, access_token=invite["access_token"])
    assert joined["access"] == "write" and invite["access_token"] not in json.dumps(joined)
    assert (await call(bob, "join_thread", thread_id=tid, access_token=invite["access_token"]))["access"] == "write"
    assert await fail(carol, "join_thread", thread_id=tid, access_token=invite["access_token"]) == "INVITATION_USED"
    assert (await call(carol, "join_thread", thread_id=tid, access_token=readcap["access_token"]))["access"] == "read"
    assert (await call(dave, "join_thread", thread_id=tid, access_token=readcap["access_token"]))["access"] == "read"
    forged = readcap["access_token"][:-1] + ("1" if readcap["access_token"].endswith("0") else "0")
    assert await fail(dave, "join_thread", thread_id=tid, access_token=forged) == "THREAD_NOT_FOUND"
    # Only the owner shares; a reader cannot post.
    assert await fail(bob, "create_thread_invite", thread_id=tid, kind="read") == "FORBIDDEN"
    assert await fail(carol, "send_message", thread_id=tid, body="me too", idempotency_key="c1") == "FORBIDDEN"
    # The owner lists its invitations without their secrets, and revokes one.
    listed = daemon.admin("GET", f"/admin/relay/threads/{tid}/invites")["invites"]
    assert {i["kind"] for i in listed} == {"read", "write"} and "amc_relay" not in json.dumps(listed)
    await call(alice, "revoke_thread_invite", thread_id=tid, token_id=readcap["token_id"])
    newcomer = daemon.add_agent("erin")
    async with relay(daemon.data_dir, newcomer, "erin") as erin:
        assert await fail(erin, "join_thread", thread_id=tid, access_token=readcap["access_token"]) == "THREAD_NOT_FOUND"

    # Six bodies of 15,000 bytes: a page holds two under the 32 KiB budget.
    seqs = []
    for i in range(6):
        author = alice if i % 2 == 0 else bob
        r = await call(author, "send_message", thread_id=tid, body=f"{i}" + "x" * 14_999, idempotency_key=f"big-{i}")
        seqs.append(r["seq"])
        assert set(r) == {"thread_id", "seq", "created_at"}
    assert seqs == [1, 2, 3, 4, 5, 6]
    read, after, pages = [], None, 0
    while True:
        args = {"thread_id": tid, "limit": 100}
        if after:
            args["after"] = after
        page = await call(carol, "read_messages", **args)
        assert len(json.dumps(page, indent=2).encode()) <= 32 * 1024
        if not page["messages"]:
            break
        pages += 1
        assert 1 <= len(page["messages"]) <= 2
        read += [m["seq"] for m in page["messages"]]
        after = page["next_cursor"]
        assert page["latest_seq"] == 6
    assert read == [1, 2, 3, 4, 5, 6] and pages == 3
    first = (await call(carol, "read_messages", thread_id=tid, limit=1))["messages"][0]
    assert (first["author"], first["author_is_you"], first["untrusted_content"]) == ("agent:alice", False, True)
    mine = (await call(alice, "read_messages", thread_id=tid, limit=1))["messages"][0]
    assert (mine["author_is_you"], mine["untrusted_content"]) == (True, False)


async def test_a_long_poll_wakes_when_another_principal_posts(principals, daemon: Daemon):
    alice, bob = principals["alice"], principals["bob"]
    tid = (await call(alice, "create_thread", title="pings", idempotency_key="p"))["thread_id"]
    inv = await call(alice, "create_thread_invite", thread_id=tid, kind="write")
    await call(bob, "join_thread", thread_id=tid, access_token=inv["access_token"])
    start = (await call(bob, "read_messages", thread_id=tid))["next_cursor"]

    # Nothing there: a short wait ends with a normal empty page.
    t0 = time.monotonic()
    empty = await call(bob, "wait_for_messages", thread_id=tid, after=start, timeout_seconds=1)
    assert empty["messages"] == [] and empty["next_cursor"] and 0.9 <= time.monotonic() - t0 < 5

    async def post_later():
        # Once Bob's wait is in AMC, waiting (the admin API counts the waits on a thread).
        while daemon.admin("GET", f"/admin/relay/threads/{tid}/waiting")["waiting"] < 1:
            await asyncio.sleep(0.01)
        return await call(alice, "send_message", thread_id=tid, body="wake up", idempotency_key="w1")

    t0 = time.monotonic()
    woken, sent = await asyncio.gather(call(bob, "wait_for_messages", thread_id=tid, after=start, timeout_seconds=25), post_later())
    assert time.monotonic() - t0 < 5, "woken by the post, not by the timeout"
    assert [m["seq"] for m in woken["messages"]] == [sent["seq"]] and woken["messages"][0]["body"] == "wake up"
    # Messages already there return at once.
    t0 = time.monotonic()
    again = await call(bob, "wait_for_messages", thread_id=tid, after=start, timeout_seconds=25)
    assert again["messages"] and time.monotonic() - t0 < 2


async def test_search_only_finds_what_the_caller_can_see(principals):
    alice, bob, dave = principals["alice"], principals["bob"], principals["dave"]
    tid = (await call(alice, "create_thread", title="Quarterly budget", idempotency_key="b"))["thread_id"]
    await call(alice, "send_message", thread_id=tid, body="The budget for marketing is confidential.", idempotency_key="b1")
    other = (await call(bob, "create_thread", title="Lunch", idempotency_key="l"))["thread_id"]
    await call(bob, "send_message", thread_id=other, body="budget lunch at noon", idempotency_key="l1")

    hits = (await call(alice, "search_threads", query="budget"))["hits"]
    assert {h["thread_id"] for h in hits} == {tid}
    assert any(h["seq"] == 1 and "[budget]" in h["snippet"].lower() for h in hits)
    assert {h["thread_id"] for h in (await call(bob, "search_threads", query="budget"))["hits"]} == {other}
    assert (await call(dave, "search_threads", query="confidential budget marketing"))["hits"] == []
    # FTS syntax in the query is just words: run as alice, each would match her thread if
    # it were interpreted (prefix, column filter, OR, NEAR, NOT), and finds nothing.
    for q in ["budg*", "title:budget", 'confidential" OR "nothing', "NEAR(budget marketing)", "budget NOT zebra"]:
        found = (await call(alice, "search_threads", query=q))["hits"]
        assert found == [], q
    hit = next(h for h in (await call(alice, "search_threads", query="budget marketing"))["hits"] if h["seq"] == 1)
    assert (hit["author"], hit["untrusted_content"]) == ("agent:alice", False)
    # Paginated by cursor.
    for i in range(5):
        await call(alice, "send_message", thread_id=tid, body=f"budget line {i}", idempotency_key=f"bl{i}")
    page1 = await call(alice, "search_threads", query="budget", limit=3)
    page2 = await call(alice, "search_threads", query="budget", limit=3, cursor=page1["next_cursor"])
    seen = [(h["thread_id"], h["seq"]) for h in page1["hits"] + page2["hits"]]
    assert len(seen) == len(set(seen)) == 6 and page2["next_cursor"] is not None
    assert await fail(alice, "search_threads", query="lunch", cursor=page1["next_cursor"]) == "CURSOR_INVALID"


async def test_replays_cursors_and_body_limits(principals):
    alice, bob = principals["alice"], principals["bob"]
    tid = (await call(alice, "create_thread", title="limits", idempotency_key="x"))["thread_id"]
    other = (await call(alice, "create_thread", title="other", idempotency_key="y"))["thread_id"]
    first = await call(alice, "send_message", thread_id=tid, body="hello", idempotency_key="k")
    assert await call(alice, "send_message", thread_id=tid, body="hello", idempotency_key="k") == first
    assert await fail(alice, "send_message", thread_id=tid, body="changed", idempotency_key="k") == "IDEMPOTENCY_KEY_REUSE"
    # A receipt moves no cursor: reading from the start still shows the message.
    assert [m["seq"] for m in (await call(alice, "read_messages", thread_id=tid))["messages"]] == [1]

    cursor = (await call(alice, "read_messages", thread_id=tid))["next_cursor"]
    assert await fail(alice, "read_messages", thread_id=other, after=cursor) == "CURSOR_INVALID"
    version, payload, tag = cursor.split(".")
    flipped = ("A" if tag[0] != "A" else "B") + tag[1:]
    assert await fail(alice, "read_messages", thread_id=tid, after=f"{version}.{payload}.{flipped}") == "CURSOR_INVALID"
    assert await fail(alice, "read_messages", thread_id=tid, after="not-a-cursor") == "CURSOR_INVALID"
    assert await fail(bob, "read_messages", thread_id=tid, after=cursor) == "THREAD_NOT_FOUND"

    exactly = "é" * 8192  # 16,384 bytes in 8,192 characters
    assert len(exactly.encode()) == 16_384
    assert (await call(alice, "send_message", thread_id=tid, body=exactly, idempotency_key="max"))["seq"] == 2
    assert await fail(alice, "send_message", thread_id=tid, body=exactly + "a", idempotency_key="over") == "VALIDATION_FAILED"
    assert await fail(alice, "send_message", thread_id=tid, body="a\u0000b", idempotency_key="nul") == "VALIDATION_FAILED"
    assert await fail(alice, "send_message", thread_id=tid, body="bell\u0007", idempotency_key="ctl") == "VALIDATION_FAILED"
    assert await fail(alice, "send_message", thread_id=tid, body='"' * 16_000, idempotency_key="esc") == "VALIDATION_FAILED"
    assert await fail(alice, "send_message", thread_id=tid, body="re", reply_to_seq="99", idempotency_key="r") == "VALIDATION_FAILED"
    reply = await call(alice, "send_message", thread_id=tid, body="re", reply_to_seq="1", idempotency_key="r2")
    page = await call(alice, "read_messages", thread_id=tid, after=cursor)
    assert [(m["seq"], m["reply_to_seq"]) for m in page["messages"]] == [(2, None), (reply["seq"], 1)]
    for bad in [{"thread_id": "not-a-uuid"}, {"thread_id": tid, "limit": 0}, {"thread_id": tid, "limit": 101}]:
        assert await fail(alice, "read_messages", **bad) == "VALIDATION_FAILED"
    assert await fail(alice, "wait_for_messages", thread_id=tid, after=cursor, timeout_seconds=26) == "VALIDATION_FAILED"
    assert await fail(alice, "create_thread", title="", idempotency_key="e") == "VALIDATION_FAILED"
    assert await fail(alice, "create_thread", title="t", idempotency_key="no spaces") == "VALIDATION_FAILED"


async def test_a_write_invitation_goes_to_exactly_one_of_two_racing_principals(principals, daemon: Daemon):
    alice, carol, dave = principals["alice"], principals["carol"], principals["dave"]
    tid = (await call(alice, "create_thread", title="one seat", idempotency_key="s"))["thread_id"]
    inv = await call(alice, "create_thread_invite", thread_id=tid, kind="write")
    # The owner and the person trying it grant them nothing, so it stays unspent.
    assert (await call(alice, "join_thread", thread_id=tid, access_token=inv["access_token"]))["access"] == "owner"
    daemon.admin("POST", f"/admin/relay/threads/{tid}/join", {"access_token": inv["access_token"]})
    results = await asyncio.gather(
        carol.call_tool("join_thread", {"thread_id": tid, "access_token": inv["access_token"]}),
        dave.call_tool("join_thread", {"thread_id": tid, "access_token": inv["access_token"]}),
    )
    outcomes = sorted("ok" if not r.is_error else r.structured_content["error"]["code"] for r in results)
    assert outcomes == ["INVITATION_USED", "ok"]
    winner = "carol" if not results[0].is_error else "dave"
    # The winner may redeem it again, even after the owner revokes it.
    await call(alice, "revoke_thread_invite", thread_id=tid, token_id=inv["token_id"])
    again = await call(principals[winner], "join_thread", thread_id=tid, access_token=inv["access_token"])
    assert again["access"] == "write"


async def test_tokens_stay_out_of_the_logs_even_at_debug(daemon: Daemon, tmp_path: Path):
    token = daemon.add_agent("alice")
    errlog = open(tmp_path / "bridge.err", "w+")
    async with relay(daemon.data_dir, token, "alice", errlog=errlog, log="debug") as alice:
        tid = (await call(alice, "create_thread", title="secret", idempotency_key="s"))["thread_id"]
        minted = await call(alice, "create_thread_invite", thread_id=tid, kind="read")
        await call(alice, "join_thread", thread_id=tid, access_token=minted["access_token"])
    errlog.seek(0)
    logs = errlog.read()
    # rmcp, which logs tool calls whole, is held at info whatever AMC_LOG asks.
    assert "rmcp" in logs and "DEBUG rmcp" not in logs
    assert minted["access_token"] not in logs and token not in logs


async def test_tokens_stay_out_of_the_daemons_log_and_the_bridges_at_trace(tmp_path: Path):
    """At AMC_LOG=trace, every library that logs whole frames is held above trace: no agent
    token, relay capability token or message body reaches either log."""
    daemon = Daemon(tmp_path / "traced", log="trace")
    try:
        token = daemon.add_agent("alice")
        errlog = open(tmp_path / "bridge.err", "w+")
        async with relay(daemon.data_dir, token, "alice", errlog=errlog, log="trace") as alice:
            tid = (await call(alice, "create_thread", title="secret", idempotency_key="s"))["thread_id"]
            minted = await call(alice, "create_thread_invite", thread_id=tid, kind="read")
            await call(alice, "join_thread", thread_id=tid, access_token=minted["access_token"])
            await call(alice, "send_message", thread_id=tid, body="the vault code is 8812", idempotency_key="b")
        errlog.seek(0)
        for name, logs in [("bridge", errlog.read()), ("daemon", daemon.logs())]:
            assert "TRACE" in logs, f"trace logging was on in the {name}'s log"
            for secret in [minted["access_token"], token, daemon.admin_token, "the vault code is 8812"]:
                assert secret not in logs, f"the {name}'s log holds {secret[:12]}…"
    finally:
        daemon.stop()
