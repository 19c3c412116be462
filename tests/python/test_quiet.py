"""What a person notices around a healthy AMC: at `AMC_LOG=warn` the daemon and the bridge
log nothing for healthy requests, and a clean stop leaves no write-ahead log beside the
database."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import Daemon, amc_binary

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_at_warn_healthy_requests_log_nothing_and_a_clean_stop_truncates_the_wal(tmp_path: Path):
    d = Daemon(tmp_path / "amc", log="warn")
    try:
        token = d.add_agent("claude")
        ch, ids = d.chat("a", ["hello", "how are you?"], approve={"history": "all", "send_policy": "auto"})
        env = {"AMC_DATA_DIR": str(d.data_dir), "PATH": os.environ.get("PATH", ""), "AMC_BEARER_TOKEN": token,
               "AMC_AGENT_ID": "claude", "AMC_LOG": "warn"}
        bridge_log = tmp_path / "bridge.err"
        with open(bridge_log, "w") as err:
            params = StdioServerParameters(command=amc_binary(), args=["mcp"], env=env)
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    await s.list_tools()
                    for _ in range(3):
                        assert not (await s.call_tool("list_unread_messages", {})).is_error
                    assert not (await s.call_tool("search_messages", {"query": "hello"})).is_error
                    assert not (await s.call_tool("mark_read", {"message_ids": ids})).is_error
                    assert not (await s.call_tool("send_message", {"channel_id": ch, "text": "fine"})).is_error
        assert bridge_log.read_text() == "", bridge_log.read_text()
        lines = [l for l in d.logs().splitlines() if l.strip()]
        # The one warning a test-mode daemon gives at start, and nothing per request.
        assert len(lines) == 1 and "test sender" in lines[0], lines
        wal = d.data_dir / "amc.db-wal"
        assert wal.exists() and wal.stat().st_size > 0, "the writes went to the log"
    finally:
        d.stop()
    assert d.proc.returncode == 0
    assert not wal.exists() or wal.stat().st_size == 0, f"{wal.stat().st_size} bytes left after a clean stop"
