"""Per-agent channels from the command line: `amc channel approve ID --agent NAME` and
`amc channel agents ID --set NAME,NAME | --all`, seen from both agents' side."""

from __future__ import annotations

import json
import os
import subprocess

import httpx

from conftest import Daemon, amc_binary


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
