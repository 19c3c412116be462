"""Fixtures: the real `amc serve --test-sender` on a loopback port, Debian's Chromium
driven by Playwright, and an agent that talks to the daemon's REST API."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parents[2]

# The daemon of the Python suite (tests/python/conftest.py), loaded under its own name.
_spec = importlib.util.spec_from_file_location("amc_python_fixtures", ROOT / "tests" / "python" / "conftest.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)
Daemon = _fixtures.Daemon

CHROMIUM_FLAGS = [
    "--no-sandbox",  # Chromium runs as root in CI.
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

expect.set_options(timeout=10_000)


def pytest_configure(config):
    config.addinivalue_line("markers", "screenshots: writes docs/screenshots/ (scripts/screenshots); not a check")


def chromium_path() -> str:
    path = os.environ.get("AMC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail("Chromium is needed for the browser tests: apt-get install chromium (or set AMC_CHROMIUM)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UiDaemon(Daemon):
    """The daemon, also serving on a loopback port, with the UI's address."""

    def __init__(self, data_dir: Path, config: str = "", env: dict | None = None) -> None:
        self.port = free_port()
        super().__init__(data_dir, config=f'listen = "127.0.0.1:{self.port}"\n{config}', env=env)
        self.base = f"http://127.0.0.1:{self.port}"

    def ui_url(self) -> str:
        # The token rides in the fragment, as `amc ui` prints it.
        return f"{self.base}/ui/#token={self.admin_token}"

    def agent(self, agent_id: str) -> "Agent":
        return Agent(self, agent_id, self.add_agent(agent_id))


class Agent:
    """An agent using the REST API with its token, over the daemon's socket."""

    def __init__(self, daemon: Daemon, agent_id: str, token: str) -> None:
        self.id = agent_id
        self.token = token
        self.http = httpx.Client(
            transport=httpx.HTTPTransport(uds=str(daemon.socket)),
            base_url="http://localhost",
            headers={"Authorization": f"Bearer {token}", "X-Agent-ID": agent_id},
            timeout=30,
        )

    def unread_texts(self) -> list[str]:
        r = self.http.get("/messages/unread")
        assert r.status_code == 200, r.text
        return [m["text"] for m in r.json()["messages"]]

    def send(self, channel_id: str, text: str, *, key: str | None = None, attachments: list | None = None) -> httpx.Response:
        body = {"channel_id": channel_id, "text": text}
        if attachments:
            body["attachments"] = attachments
        headers = {"Idempotency-Key": key} if key else {}
        return self.http.post("/messages/send", json=body, headers=headers)


@pytest.fixture
def daemon(tmp_path: Path):
    d = UiDaemon(tmp_path / "amc")
    yield d
    d.stop()


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        yield b
        b.close()


def open_page(browser: Browser, *, color_scheme: str = "light", **context_args) -> tuple[Page, list[str]]:
    """A page in a fresh context (its own storage), and the list its console errors and
    uncaught exceptions land in (a CSP violation is a console error)."""
    context = browser.new_context(viewport={"width": 1180, "height": 800}, color_scheme=color_scheme, **context_args)
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    return page, problems


@pytest.fixture
def page(browser: Browser):
    page, problems = open_page(browser, permissions=["clipboard-read", "clipboard-write"])
    yield page
    page.context.close()
    # Chromium logs every HTTP error answer; the tests check those the page shows. Any
    # other error (an exception, a CSP violation) is a bug.
    unexpected = [p for p in problems if not p.startswith("Failed to load resource: the server responded")]
    assert not unexpected, f"the page logged errors: {unexpected}"
