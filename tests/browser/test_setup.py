"""Setup, from an empty data folder, by clicks alone: the window opens on it, iMessage
reads a chat.db stand-in written as Messages writes it and finds the person's own
conversation, a pasted
Discord token is checked with the local Discord (which refuses a token it does not know,
as Discord does), kept in the Secret Service of a D-Bus of the test's own and in no file,
and the bot connects without a restart; its conversation is approved, and an agent added
and connected; disconnecting forgets the token."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from conftest import UiDaemon

pytestmark = pytest.mark.timeout(120)

TOKEN = "MTA5ODc2NTQzMjEw.browser-setup.never-in-a-file"


class SecretService:
    """A private D-Bus session bus with GNOME Keyring's secrets component, its login
    keyring unlocked with a password on standard input (Debian: dbus-daemon,
    gnome-keyring, libsecret-tools)."""

    def __init__(self, home: Path) -> None:
        (home / "run").mkdir(parents=True)
        self.bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        address = self.bus.stdout.readline().strip()
        self.env = {"DBUS_SESSION_BUS_ADDRESS": address, "XDG_RUNTIME_DIR": str(home / "run"),
                    "XDG_DATA_HOME": str(home / "data"), "HOME": str(home)}
        subprocess.run(["gnome-keyring-daemon", "--unlock", "--components=secrets", "--daemonize"],
                       input=b"amc-test-login", env={**os.environ, **self.env}, check=True, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while b"boolean true" not in subprocess.run(
                ["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                 "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"],
                env={**os.environ, **self.env}, capture_output=True).stdout:
            assert time.monotonic() < deadline, "the keyring never answered on the test's D-Bus"
            time.sleep(0.02)

    def lookup(self) -> str | None:
        out = subprocess.run(["secret-tool", "lookup", "service", "AMC", "username", "discord"],
                             env={**os.environ, **self.env}, capture_output=True, text=True)
        return out.stdout if out.returncode == 0 and out.stdout else None

    def stop(self) -> None:
        # The keyring leaves with its bus.
        self.bus.kill()
        self.bus.wait()


def example(name: str) -> str:
    """A program of the workspace's examples, beside the amc binary the tests run."""
    amc = Path(os.environ.get("AMC_BIN") or Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "debug" / "amc")
    return str(amc.parent / "examples" / name)


class LocalDiscord:
    """amc-discord's local Discord as a program (examples/local-discord.rs)."""

    def __init__(self, token: str, *channels: str) -> None:
        program = os.environ.get("AMC_LOCAL_DISCORD") or example("local-discord")
        self.proc = subprocess.Popen([program, token, *channels], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.info = json.loads(self.proc.stdout.readline())

    def ask(self, line: str):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def channel(self, name: str) -> str:
        return next(c["id"] for c in self.info["channels"] if c["name"] == name)

    def stop(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture
def secrets(tmp_path: Path):
    s = SecretService(tmp_path / "secret-service")
    yield s
    s.stop()


@pytest.fixture
def discord():
    d = LocalDiscord(TOKEN, "general")
    yield d
    d.stop()


@pytest.fixture
def fresh(tmp_path: Path, secrets: SecretService, discord: LocalDiscord):
    """AMC on an empty data folder, reaching the local Discord and the test's Secret
    Service; stopped after the page is closed."""
    messages = tmp_path / "Messages"
    messages.mkdir()
    chat_db = messages / "chat.db"
    program = os.environ.get("AMC_CHAT_DB_STANDIN") or example("chat-db")
    subprocess.run([program, str(chat_db)], check=True, stdout=subprocess.DEVNULL)
    d = UiDaemon(tmp_path / "amc", config=f'discord_api_url = "{discord.info["api_url"]}"\nimessage_chat_db = "{chat_db}"\n',
                 env=secrets.env)
    yield d
    d.stop()


def files_holding(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_discord_and_an_agent_are_set_up_by_clicks_and_the_token_is_kept_only_in_the_secret_store(
        tmp_path: Path, secrets: SecretService, discord: LocalDiscord, fresh: UiDaemon, page: Page):
    daemon = fresh
    page.goto(daemon.ui_url())
    # Nothing is set up: the window opens on Setup.
    expect(page.get_by_role("heading", name="Setup", level=1)).to_be_visible()
    # iMessage: chat.db is read, and the person's own conversation found in it.
    imessage = page.get_by_role("region", name="iMessage")
    expect(imessage.locator('[data-step="chat-db"][data-ok="true"]')).to_be_visible()
    expect(imessage.locator('[data-step="self-chat"][data-ok="true"]')).to_contain_text("+15550001111")
    panel = page.get_by_role("region", name="Discord")
    expect(panel.get_by_role("link", name="Discord Developer Portal")).to_have_attribute(
        "href", "https://discord.com/developers/applications")

    # A token Discord does not know is refused, and nothing is kept.
    panel.get_by_label("Bot token").fill("MTA5ODc2NTQzMjEw.not-the-token.x")
    panel.get_by_role("button", name="Connect").click()
    expect(page.locator(".toast", has_text="Discord refused this token")).to_be_visible()
    assert secrets.lookup() is None

    # The real one connects at once, without a restart.
    panel.get_by_label("Bot token").fill(f" {TOKEN} ")
    panel.get_by_role("button", name="Connect").click()
    expect(page.locator(".toast", has_text=f"Connected as {discord.info['bot']['name']}")).to_be_visible()
    expect(panel.locator('[data-step="bot"][data-ok="true"]')).to_contain_text(f"Bot {discord.info['bot']['name']}")
    expect(panel.locator('[data-step="intent"][data-ok="true"]')).to_be_visible()
    invite = panel.get_by_role("link", name="Invite the bot")
    expect(invite).to_have_attribute(
        "href", f"https://discord.com/oauth2/authorize?client_id={discord.info['bot']['id']}&scope=bot&permissions=274878008384")
    expect(panel).to_contain_text("Its token is in the Keychain.")
    assert secrets.lookup() == TOKEN
    assert "discord_token_keychain = true" in (daemon.data_dir / "config.toml").read_text()

    # The bot's channel and Ada's conversation appear and are approved by clicks.
    discord.ask(f"post {discord.channel('general')} alice hello from discord")
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Channels").click()
    for name in ("general", "+15551234567"):
        row = page.locator("li[data-channel]", has_text=name)
        row.get_by_role("button", name="Approve…").click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_label("All history").check()
        dialog.get_by_role("button", name="Approve", exact=True).click()
        expect(page.locator(".toast", has_text="Approved").last).to_be_visible()
        expect(row).to_have_count(0)

    # An agent, added from Setup, connects with the token the window shows.
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Setup").click()
    agents = page.get_by_role("region", name="Agents")
    expect(agents.locator('[data-step="agent-connected"][data-ok="false"]')).to_be_visible()
    agents.get_by_role("link", name="Add an agent").click()
    page.get_by_label("New agent's id").fill("claude-code")
    page.get_by_role("button", name="Add agent").click()
    token = page.get_by_role("dialog", name="Agent “claude-code” added").get_by_label("Token", exact=True).input_value()
    page.get_by_role("dialog").get_by_role("button", name="Done").click()
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(daemon.socket)), base_url="http://localhost",
                      headers={"Authorization": f"Bearer {token}", "X-Agent-ID": "claude-code"}) as agent:
        unread = agent.get("/messages/unread").json()["messages"]
    assert sorted(m["text"] for m in unread) == ["Bring the wine", "Dinner at 8?", "hello from discord"]
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Setup").click()
    expect(agents.locator('[data-step="agent-connected"][data-ok="true"]')).to_contain_text("claude-code used AMC")

    # Disconnecting stops the bot and forgets the token.
    panel.get_by_role("button", name="Disconnect").click()
    expect(page.locator(".toast", has_text="Discord disconnected")).to_be_visible()
    expect(panel.get_by_label("Bot token")).to_be_visible()
    assert secrets.lookup() is None
    assert daemon.admin("GET", "/healthz")["sources"]["discord"]["state"] == "disabled"
    # Not in AMC's data folder, its log or anywhere else the test wrote (the keyring keeps
    # its secrets encrypted).
    assert files_holding(tmp_path, TOKEN.encode()) == []


def test_settings_changed_in_the_window_hold_at_once_and_refusals_say_why(daemon: UiDaemon, page: Page, tmp_path: Path):
    shared = tmp_path / "for-agents"
    shared.mkdir()
    daemon.chat("ada", ["hi"])
    page.goto(daemon.ui_url())
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Setup").click()
    panel = page.get_by_role("region", name="Settings")
    # A folder that is not one is refused with why, and nothing changes.
    panel.get_by_label("Add a folder").fill("/no/such/folder")
    panel.get_by_role("button", name="Add folder").click()
    expect(page.locator(".toast", has_text="/no/such/folder is not a folder")).to_be_visible()
    panel.get_by_label("Add a folder").fill(str(shared))
    panel.get_by_role("button", name="Add folder").click()
    expect(panel.locator(f'[data-folder="{shared}"]')).to_be_visible()
    assert str(shared) in daemon.admin("GET", "/admin/settings")["attachment_dirs"]
    # A number out of range: start-up's words.
    panel.get_by_label("Sends at once, per conversation").fill("0")
    panel.get_by_role("button", name="Save sends").click()
    # The browser's own check refuses it first (min 1); past it, the daemon would.
    assert panel.get_by_label("Sends at once, per conversation").evaluate("el => el.validity.rangeUnderflow")
    panel.get_by_label("Sends at once, per conversation").fill("2")
    panel.get_by_label("Seconds a platform has to confirm a send").fill("45")
    panel.get_by_role("button", name="Save sends").click()
    expect(page.locator(".toast", has_text="Settings saved")).to_be_visible()
    settings = daemon.admin("GET", "/admin/settings")
    assert (settings["rate_limit_burst"], settings["send_timeout_seconds"]) == (2, 45), settings
    assert "rate_limit_burst = 2" in (daemon.data_dir / "config.toml").read_text()
    panel.get_by_role("button", name=f"Remove {shared}").click()
    expect(panel.locator(f'[data-folder="{shared}"]')).to_have_count(0)
    # iMessage off from the window, and the daemon says so.
    panel.get_by_label("Messages database (chat.db)").fill("")
    panel.get_by_role("button", name="Save chat.db").click()
    expect(page.locator(".toast", has_text="iMessage is off")).to_be_visible()
    assert daemon.admin("GET", "/admin/settings")["imessage_chat_db"] is None
