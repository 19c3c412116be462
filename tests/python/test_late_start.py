"""A host started before AMC: `amc mcp` still lists its tools, each call says AMC is not running
and how to start it, and once AMC is up the host is told `notifications/tools/list_changed`,
both on the `initialize` handshake and on a 2026-07-28 `subscriptions/listen`, for the inbox
and the relay toolsets alike."""

from __future__ import annotations

import asyncio
import json
import os
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import ToolsListChanged

from conftest import SPEC, Daemon, amc_binary, text_form

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

INBOX = ["list_unread_messages", "send_message", "mark_read", "get_message_context"]
INBOX_ADDED = ["list_channels", "wait_for_unread_messages", "search_messages"]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def relay_contract() -> list[str]:
    return [t["name"] for t in json.loads((SPEC / "relay-mcp-tools.json").read_text())["tools"]]


def env(data: Path, token: str) -> dict[str, str]:
    return {"AMC_DATA_DIR": str(data), "PATH": os.environ.get("PATH", ""),
            "AMC_BEARER_TOKEN": token, "AMC_AGENT_ID": "claude"}


def args(relay: bool) -> list[str]:
    return ["mcp", "--relay"] if relay else ["mcp"]


def an_agent(data: Path) -> str:
    """An agent of an AMC that is then stopped."""
    first = Daemon(data)
    try:
        return first.add_agent("claude")
    finally:
        first.stop()


def unavailable(result) -> dict:
    assert result.is_error, result
    err = result.structured_content["error"]
    text_form(result)
    return err


async def listed_as_the_contract(names: list[str], relay: bool) -> None:
    if relay:
        assert names[:len(relay_contract())] == relay_contract(), names
    else:
        assert names == INBOX + INBOX_ADDED, names


async def a_call(call, relay: bool):
    return await (call("list_threads", {}) if relay else call("list_channels", {}))


@asynccontextmanager
async def legacy_host(data: Path, token: str, relay: bool, errlog):
    """A host on the `initialize` handshake, and the queue its tool-list changes land in."""
    changed: asyncio.Queue[types.ToolListChangedNotification] = asyncio.Queue()

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.put_nowait(message)

    params = StdioServerParameters(command=amc_binary(), args=args(relay), env=env(data, token))
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            yield session, init, changed


@pytest.mark.parametrize("relay", [False, True], ids=["inbox", "relay"])
async def test_a_host_on_the_handshake_gets_the_tools_before_amc_and_is_told_once_it_is_up(tmp_path: Path,
                                                                                           relay: bool):
    data = tmp_path / "amc"
    token = an_agent(data)
    errlog = open(tmp_path / "bridge.err", "w+")
    async with legacy_host(data, token, relay, errlog) as (session, init, changed):
        assert init.capabilities.tools.list_changed is True, init.capabilities
        # AMC is not running: the tools are listed all the same, and a call says why it fails.
        await listed_as_the_contract([t.name for t in (await session.list_tools()).tools], relay)
        err = unavailable(await a_call(session.call_tool, relay))
        assert (err["code"], err["status"]) == ("AMC_UNAVAILABLE", 503), err
        assert "AMC is not running" in err["message"] and "amc serve" in err["message"], err
        assert changed.empty()

        daemon = Daemon(data)
        try:
            await asyncio.wait_for(changed.get(), 30)
            await listed_as_the_contract([t.name for t in (await session.list_tools()).tools], relay)
            result = await a_call(session.call_tool, relay)
            assert not result.is_error, result
        finally:
            daemon.stop()


@pytest.mark.parametrize("relay", [False, True], ids=["inbox", "relay"])
async def test_a_host_on_2026_07_28_is_told_on_its_subscription(tmp_path: Path, relay: bool):
    data = tmp_path / "amc"
    token = an_agent(data)
    extra = [] if relay else ["--no-push"]
    params = StdioServerParameters(command=amc_binary(), args=args(relay) + extra, env=env(data, token))
    async with Client(params, mode="auto") as client:
        assert client.protocol_version == "2026-07-28", client.protocol_version
        assert client.server_capabilities.tools.list_changed is True
        async with client.listen(tools_list_changed=True) as subscription:
            assert subscription.honored.tools_list_changed is True, subscription.honored
            await listed_as_the_contract([t.name for t in (await client.list_tools()).tools], relay)
            assert unavailable(await a_call(client.call_tool, relay))["code"] == "AMC_UNAVAILABLE"
            daemon = Daemon(data)
            try:
                event = await asyncio.wait_for(anext(aiter(subscription)), 30)
                assert isinstance(event, ToolsListChanged), event
                await listed_as_the_contract([t.name for t in (await client.list_tools()).tools], relay)
                assert not (await a_call(client.call_tool, relay)).is_error
            finally:
                daemon.stop()
