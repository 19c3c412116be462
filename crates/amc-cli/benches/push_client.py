"""The MCP host side of `cargo bench -p amc-cli --bench push`: the official MCP Python SDK
driving `amc mcp` over stdio, as Claude Code would.

    push_client.py push AGENT TOKEN   one session; prints `E <text> <unix ns>` for each
                                      notifications/claude/channel event, from the SDK's
                                      notification handler
    push_client.py wait N             N sessions (agents waiter-0 … waiter-N-1, tokens one per
                                      line on stdin), each calling wait_for_unread_messages
                                      again and again; prints `W <text> <unix ns>` for each
                                      message a wait returns, then marks it read

It prints `READY` once every session is initialized. AMC_DATA_DIR and AMC_BIN name the
install.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from contextlib import AsyncExitStack

from mcp import ClientSession, StdioServerParameters
from mcp.client import NotificationBinding
from mcp.client.stdio import stdio_client
from pydantic import BaseModel


class ChannelEvent(BaseModel):
    content: str
    meta: dict[str, str] = {}


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def params(agent: str, token: str, push: bool) -> StdioServerParameters:
    env = {"AMC_DATA_DIR": os.environ["AMC_DATA_DIR"], "PATH": os.environ.get("PATH", ""),
           "AMC_BEARER_TOKEN": token, "AMC_AGENT_ID": agent, "AMC_LOG": "warn"}
    return StdioServerParameters(command=os.environ["AMC_BIN"], args=["mcp"] if push else ["mcp", "--no-push"], env=env)


async def session(stack: AsyncExitStack, agent: str, token: str, bindings=(), push: bool = True) -> ClientSession:
    read, write = await stack.enter_async_context(stdio_client(params(agent, token, push)))
    s = await stack.enter_async_context(ClientSession(read, write, notification_bindings=list(bindings)))
    await s.initialize()
    return s


async def push(agent: str, token: str) -> None:
    async def on_event(event: ChannelEvent) -> None:
        say(f"E {event.content} {time.time_ns()}")

    binding = NotificationBinding(method="notifications/claude/channel", params_type=ChannelEvent, handler=on_event)
    async with AsyncExitStack() as stack:
        await session(stack, agent, token, [binding])
        say("READY")
        await asyncio.Event().wait()


async def waiter(s: ClientSession) -> None:
    while True:
        result = await s.call_tool("wait_for_unread_messages", {"timeout_seconds": 25})
        messages = (result.structured_content or {}).get("messages", [])
        now = time.time_ns()
        for m in messages:
            say(f"W {m['text']} {now}")
        if messages:
            await s.call_tool("mark_read", {"message_ids": [m["id"] for m in messages]})


async def wait(n: int) -> None:
    tokens = [sys.stdin.readline().strip() for _ in range(n)]
    async with AsyncExitStack() as stack:
        push = os.environ.get("AMC_BENCH_WAIT_PUSH") == "1"
        sessions = [await session(stack, f"waiter-{i}", t, push=push) for i, t in enumerate(tokens)]
        # Each bridge connects to AMC on its first call, and the SDK compiles each tool's
        # output schema on its first result: both before the clock starts.
        await asyncio.gather(*(s.call_tool("wait_for_unread_messages", {"timeout_seconds": 1}) for s in sessions))
        say("READY")
        await asyncio.gather(*(waiter(s) for s in sessions))


if __name__ == "__main__":
    if sys.argv[1] == "push":
        asyncio.run(push(sys.argv[2], sys.argv[3]))
    else:
        asyncio.run(wait(int(sys.argv[2])))
