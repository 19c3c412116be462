"""The real Codex CLI (npm `@openai/codex`, the version scripts/test installs) with AMC
configured as docs/mcp.md shows (`amc mcp --no-push` in `config.toml`), started before
AMC: `codex exec` lists AMC's tools although AMC is down, and its model's call of one is
answered by AMC once AMC is up, without restarting Codex. The model is a stand-in for the
Responses API, a provider Codex's configuration names."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import Daemon, amc_binary
from standins import Model, cli, openai_turn

pytestmark = pytest.mark.timeout(180)

AGENT = "codex"



def configure(home: Path, api: str, data_dir: Path, token: str) -> dict:
    """Codex's home, with the stand-in as its model provider and AMC as docs/mcp.md says."""
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(f'''model = "stand-in"
model_provider = "standin"

[model_providers.standin]
name = "stand-in"
base_url = "{api}/v1"
env_key = "STANDIN_API_KEY"
wire_api = "responses"

[mcp_servers.amc]
command = {json.dumps(amc_binary())}
args = ["mcp", "--no-push"]
env = {{ AMC_AGENT_ID = "{AGENT}", AMC_BEARER_TOKEN = "{token}", AMC_DATA_DIR = {json.dumps(str(data_dir))} }}
''')
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "CODEX_HOME": str(home / ".codex"),
            "STANDIN_API_KEY": "stand-in"}


def test_a_codex_session_started_before_amc_uses_its_tools_once_amc_is_up(tmp_path: Path):
    d = Daemon(tmp_path / "amc")
    token = d.add_agent(AGENT)
    d.chat("a", ["see you at 8"], approve={"history": "all", "agents": [AGENT]})
    d.stop()
    api = Model(openai_turn, [{"tool": "mcp__amc__list_channels", "wait": True}, {"text": "done"}], "/v1/responses")
    env = configure(tmp_path / "home", api.url, d.data_dir, token)
    session = subprocess.Popen([cli("AMC_CODEX"), "exec", "--skip-git-repo-check", "Which conversations can you read?"],
                               env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    d = None
    try:
        assert api.waiting.wait(60), "the session never asked its model"
        listed = [t for t in api.requests[0]["tools"] if t.get("name") == "mcp__amc"]
        assert listed and {"list_channels", "send_message"} <= {t["name"] for t in listed[0]["tools"]}, \
            "Codex was given no AMC tools while AMC was down"
        d = Daemon(tmp_path / "amc")
        api.release.set()
        out, err = session.communicate(timeout=60)
        assert session.returncode == 0, f"{out}\n{err}"
        [result] = [item for item in api.requests[-1]["input"] if item.get("type") == "function_call_output"]
        channels = json.loads(result["output"].split("Output:\n", 1)[-1])
        assert [c["name"] for c in channels["channels"]] == ["Chat a"], result
    finally:
        session.kill()
        api.close()
        if d is not None:
            d.stop()
