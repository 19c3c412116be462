"""Fixtures: a real `amc serve` in a temporary data directory, and helpers to reach it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "tests" / "fixtures" / "spec"


FENCE = re.compile(r"⟦untrusted ([0-9a-f]{16})⟧(.*)⟦/untrusted \1⟧", re.S)
LABELS = {"integrity": "untrusted", "confidentiality": "private"}


def _unfence(value, nonces: set):
    """`value` (a result's text form, parsed) with each fence taken off, checked to stand
    around exactly the texts of others (`untrusted_content`), each with the result's nonce."""
    if isinstance(value, list):
        return [_unfence(v, nonces) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    theirs = {"text", "body", "snippet"} if value.get("untrusted_content") is True else set()
    if isinstance(value.get("message"), dict) and value["message"].get("untrusted_content") is True:
        theirs.add("excerpt")
    for key, v in value.items():
        if key in theirs and isinstance(v, str):
            m = FENCE.fullmatch(v)
            assert m, f"{key} of another's message is fenced: {v!r}"
            nonces.add(m.group(1))
            out[key] = m.group(2)
        else:
            assert not (isinstance(v, str) and v.startswith("⟦untrusted ")), f"only others' text is fenced: {v!r}"
            out[key] = _unfence(v, nonces)
    return out


def text_form(result) -> str:
    """Checks a tool result's text: pretty-printed JSON that is its structured content with
    others' text fenced under one nonce, and labelled in `_meta` when it succeeded."""
    text = result.content[0].text
    parsed = json.loads(text)
    assert text == json.dumps(parsed, indent=2, ensure_ascii=False), "pretty-printed JSON"
    nonces: set = set()
    assert _unfence(parsed, nonces) == result.structured_content
    assert len(nonces) <= 1, nonces
    if not result.is_error:
        assert (result.meta or {}).get("amc/labels") == LABELS, result.meta
    return text


def amc_binary() -> str:
    explicit = os.environ.get("AMC_BIN")
    if explicit:
        return explicit
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return str(target / "debug" / "amc")


class Daemon:
    """`amc serve --test-sender` and the admin API over its socket."""

    def __init__(self, data_dir: Path, config: str = "", log: str = "warn", env: dict | None = None) -> None:
        self.data_dir = data_dir
        self.socket = data_dir / "run" / "amc.sock"
        data_dir.mkdir(parents=True, exist_ok=True)
        if config:
            (data_dir / "config.toml").write_text(config)
        self.log = open(data_dir.parent / f"{data_dir.name}-serve.log", "wb")
        self.proc = subprocess.Popen(
            [amc_binary(), "serve", "--test-sender"],
            env={**os.environ, **(env or {}), "AMC_DATA_DIR": str(data_dir), "AMC_LOG": log},
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        deadline = time.monotonic() + 30
        while not (self.socket.exists() and (data_dir / "admin-token").exists()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"amc serve did not start: {self.logs()}")
            time.sleep(0.02)
        self.admin_token = (data_dir / "admin-token").read_text().strip()
        self.http = httpx.Client(
            transport=httpx.HTTPTransport(uds=str(self.socket)),
            base_url="http://localhost",
            headers={"Authorization": f"Bearer {self.admin_token}"},
            timeout=30,
        )

    def logs(self) -> str:
        self.log.flush()
        return (self.data_dir.parent / f"{self.data_dir.name}-serve.log").read_text(errors="replace")

    def admin(self, method: str, path: str, body: dict | None = None) -> dict:
        r = self.http.request(method, path, json=body)
        assert r.status_code < 300, f"{method} {path}: {r.status_code} {r.text}"
        return r.json()

    def add_agent(self, agent_id: str) -> str:
        return self.admin("POST", "/admin/agents", {"id": agent_id})["token"]

    def chat(self, chat_id: str, texts: list[str], *, source: str = "imessage", approve: dict | None = None) -> tuple[str, list[str]]:
        """A conversation with these messages, approved as `approve` says (or left pending)."""
        messages = [{"id": f"{chat_id}-{i}", "text": t, "sender": "+15551234567", "sender_name": "Ada"} for i, t in enumerate(texts)]
        out = self.admin("POST", "/admin/test/ingest", {"source": source, "chat_id": chat_id, "chat_name": f"Chat {chat_id}", "messages": messages})
        if approve is not None:
            self.admin("POST", f"/admin/channels/{out['channel_id']}/approve", approve)
        return out["channel_id"], out["inserted"]

    def sent_texts(self) -> list[str]:
        log = self.data_dir / "test-sender.jsonl"
        if not log.exists():
            return []
        return [json.loads(line)["text"] for line in log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        self.http.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture
def daemon(tmp_path: Path):
    d = Daemon(tmp_path / "amc", config="rate_limit_burst = 2\nrate_limit_per_minute = 1\n")
    yield d
    d.stop()


@pytest.fixture
def inbox_spec() -> str:
    return (SPEC / "inbox-mcp-tools.md").read_text()
