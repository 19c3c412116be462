"""The tray UI in a real Chromium against the real daemon: what a person does and sees."""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from conftest import Agent, UiDaemon, open_page

pytestmark = pytest.mark.timeout(120)


def png(path: Path, rgb: tuple[int, int, int] = (0, 122, 255), size: int = 24) -> Path:
    """A small solid PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(rgb) * size for _ in range(size))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return path


def open_ui(page: Page, daemon: UiDaemon, screen: str | None = None) -> None:
    page.goto(daemon.ui_url())
    # The window opens on Setup while no conversation is approved and there is no agent.
    fresh = not daemon.admin("GET", "/admin/channels?state=allowed")["channels"] and not daemon.admin("GET", "/admin/agents")["agents"]
    expect(page.get_by_role("heading", name="Setup" if fresh else "Channels", level=1)).to_be_visible()
    screen = screen or ("Channels" if fresh else None)
    if screen:
        page.get_by_role("navigation", name="Sections").get_by_role("link", name=screen).click()
        expect(page.get_by_role("heading", name=screen, level=1)).to_be_visible()


def segment(page: Page, name: str):
    return page.locator(".segmented label", has_text=name)


def test_approving_a_channel_lets_an_agent_read_it_and_new_ones_appear_live(daemon: UiDaemon, page: Page):
    ch, _ = daemon.chat("ada", ["Dinner at 8?", "Bring the wine"])
    agent = daemon.agent("claude-code")
    assert agent.unread_texts() == []

    open_ui(page, daemon)
    row = page.locator(f'li[data-channel="{ch}"]')
    expect(row).to_contain_text("Chat ada")
    expect(row).to_contain_text("2 messages")
    expect(page.locator("#count-pending")).to_have_text("1")

    row.get_by_role("button", name="Approve…").click()
    dialog = page.get_by_role("dialog", name="Approve Chat ada")
    dialog.get_by_label("All history").check()
    dialog.get_by_label("When an agent sends here").select_option("auto")
    dialog.get_by_role("button", name="Approve", exact=True).click()

    expect(page.locator(".toast", has_text="Approved Chat ada")).to_be_visible()
    expect(row).to_have_count(0)
    expect(page.get_by_text("No pending channels")).to_be_visible()
    expect(page.locator("#count-pending")).to_be_hidden()
    assert agent.unread_texts() == ["Dinner at 8?", "Bring the wine"]

    segment(page, "Allowed").click()
    expect(page.get_by_label("Send policy for Chat ada")).to_have_value("auto")
    expect(page.locator(f'li[data-channel="{ch}"]')).to_contain_text("2 of 2 messages visible to agents")

    # A conversation AMC sees now shows up without a reload, and search finds it.
    daemon.chat("bob", ["hello?"])
    expect(page.locator("#count-pending")).to_have_text("1")
    segment(page, "Pending").click()
    page.get_by_label("Search channels").fill("nobody")
    expect(page.get_by_text("No pending channels match “nobody”")).to_be_visible()
    page.get_by_label("Search channels").fill("bob")
    expect(page.locator(".row .name")).to_have_text(["Chat bob"])


def test_a_channel_approved_for_one_agent_is_seen_by_that_agent_only(daemon: UiDaemon, page: Page):
    ch, _ = daemon.chat("family", ["Dinner at 8?"])
    assistant, coder = daemon.agent("assistant"), daemon.agent("coder")

    open_ui(page, daemon)
    page.locator(f'li[data-channel="{ch}"]').get_by_role("button", name="Approve…").click()
    dialog = page.get_by_role("dialog", name="Approve Chat family")
    dialog.get_by_label("All history").check()
    expect(dialog.get_by_label("assistant")).to_be_disabled()
    dialog.get_by_label("Only these agents:").check()
    dialog.get_by_label("assistant").check()
    dialog.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".toast", has_text="Approved Chat family")).to_be_visible()
    assert assistant.unread_texts() == ["Dinner at 8?"]
    assert coder.unread_texts() == []

    segment(page, "Allowed").click()
    row = page.locator(f'li[data-channel="{ch}"]')
    expect(row.locator(".seen-by")).to_have_text("Seen by assistant")
    # Later, from the channel: every agent.
    row.get_by_role("button", name="Agents…").click()
    who = page.get_by_role("dialog", name="Who sees Chat family")
    who.get_by_label("Every agent, and agents added later").check()
    who.get_by_role("button", name="Save").click()
    expect(row.locator(".seen-by")).to_have_text("Seen by every agent")
    assert coder.unread_texts() == ["Dinner at 8?"]

    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Agents").click()
    expect(page.locator('tr[data-agent="coder"] .agent-channels')).to_have_text("1 open to every agent")


def test_a_held_send_appears_live_with_its_attachment_and_approving_it_sends_it(daemon: UiDaemon, page: Page):
    ch, _ = daemon.chat("ada", ["Dinner at 8?"], approve={"history": "all", "send_policy": "review"})
    agent = daemon.agent("claude-code")
    picture = png(daemon.data_dir / "outbox" / "map.png")

    open_ui(page, daemon, "Review")
    expect(page.get_by_text("Nothing to review")).to_be_visible()

    r = agent.send(ch, "Yes! Here is the way", attachments=[{"path": str(picture)}])
    assert r.json()["status"] == "pending_review", r.text

    card = page.locator("article.send-card")
    expect(card).to_contain_text("claude-code → Chat ada")
    expect(card.locator(".conversation")).to_contain_text("Dinner at 8?")
    expect(card.locator(".draft-text")).to_have_text("Yes! Here is the way")
    expect(card.get_by_role("img", name="Preview of map.png")).to_have_attribute("src", re.compile(r"^data:image/png;base64,"))
    expect(page.locator("#count-held")).to_have_text("1")
    log_row = page.locator(f'tr[data-send="{r.json()["message_id"]}"]')
    expect(log_row).to_contain_text("Waiting for review")

    card.get_by_role("button", name="Approve and send").click()
    expect(page.locator(".toast", has_text="Sent to Chat ada")).to_be_visible()
    expect(card).to_have_count(0)
    expect(log_row.locator(".badge")).to_have_text("Sent")
    expect(page.locator("#count-held")).to_be_hidden()
    assert daemon.sent_texts() == ["Yes! Here is the way"]


def test_a_tool_request_appears_live_and_the_persons_answer_reaches_the_session(daemon: UiDaemon, page: Page):
    agent = daemon.agent("claude-code")
    open_ui(page, daemon, "Review")
    expect(page.get_by_text("No tool requests")).to_be_visible()

    # What `amc mcp` relays when Claude Code asks its channel (the channels reference).
    asked = agent.http.post("/tool-requests", json={
        "session": "s1", "request_id": "tbxkq", "tool_name": "Bash",
        "description": "Delete the build folder", "input_preview": "rm -rf build/\nls"})
    assert asked.status_code == 201, asked.text
    card = page.locator("article.tool-card")
    expect(card.get_by_role("heading")).to_have_text("claude-code asks to use Bash")
    expect(card).to_contain_text("Delete the build folder")
    expect(card.get_by_label("The tool's input")).to_have_text("rm -rf build/\nls")
    expect(page.locator("#count-held")).to_have_text("1")

    card.get_by_role("button", name="Allow").click()
    expect(page.locator(".toast", has_text="Allowed: Bash for claude-code")).to_be_visible()
    expect(card).to_have_count(0)
    row = page.locator(f'tr[data-tool-request="{asked.json()["id"]}"]')
    expect(row.locator(".badge")).to_have_text("Allowed")
    expect(page.locator("#count-held")).to_be_hidden()
    # The session that asked is told, once.
    told = agent.http.get("/messages/push", params={"timeout_seconds": 1, "session": "s1"}).json()
    assert told["items"] == [{"kind": "permission", "request_id": "tbxkq", "behavior": "allow"}], told


def test_rejecting_a_send_tells_the_agent_and_the_log(daemon: UiDaemon, page: Page):
    ch, _ = daemon.chat("ada", ["Are you coming?"], approve={"history": "all", "send_policy": "review"})
    agent = daemon.agent("claude-code")
    first = agent.send(ch, "Whatever.", key="reply-1")
    assert first.json()["status"] == "pending_review"

    open_ui(page, daemon, "Review")
    card = page.locator("article.send-card", has_text="Whatever.")
    card.get_by_role("button", name="Reject…").click()
    dialog = page.get_by_role("dialog", name="Reject the message to Chat ada?")
    dialog.get_by_label("Reason for the agent").fill("Not in that tone")
    dialog.get_by_role("button", name="Reject", exact=True).click()

    expect(page.locator(".toast", has_text="Rejected the message to Chat ada")).to_be_visible()
    expect(card).to_have_count(0)
    expect(page.get_by_text("Nothing to review")).to_be_visible()
    expect(page.locator(f'tr[data-send="{first.json()["message_id"]}"] .badge')).to_have_text("Rejected")

    replay = agent.send(ch, "Whatever.", key="reply-1")
    assert replay.json()["status"] == "rejected"
    assert daemon.sent_texts() == []


def test_the_log_flags_sends_whose_outcome_is_unknown_and_says_why_others_failed(daemon: UiDaemon, page: Page):
    ch, _ = daemon.chat("ada", ["Call me"], approve={"history": "all", "send_policy": "auto"})
    agent = daemon.agent("claude-code")
    daemon.admin("POST", "/admin/test/fail-next", {"error": "unknown"})
    unknown = agent.send(ch, "Calling now")
    assert unknown.json()["status"] == "unknown"
    daemon.admin("POST", "/admin/test/fail-next", {"error": "failed"})
    assert agent.send(ch, "Calling again").status_code == 502

    open_ui(page, daemon, "Review")
    flagged = page.locator(f'tr[data-send="{unknown.json()["message_id"]}"]')
    expect(flagged).to_have_class(re.compile(r"\bflag\b"))
    expect(flagged.locator(".badge")).to_have_text("Outcome unknown")
    expect(flagged).to_contain_text("Check the conversation before anyone sends it again")
    failed = page.locator("tr", has_text="Calling again")
    expect(failed.locator(".badge")).to_have_text("Failed")
    expect(failed).to_contain_text("the platform failed the send (test)")

    page.get_by_label("Show").select_option("unknown")
    expect(page.locator("table.log tbody tr")).to_have_count(1)


def test_an_agent_added_in_the_ui_works_with_the_copied_token_until_revoked(daemon: UiDaemon, page: Page):
    daemon.chat("ada", ["hi"], approve={"history": "all"})
    open_ui(page, daemon, "Agents")
    expect(page.get_by_text("No agents yet")).to_be_visible()

    # An id that does not fit is refused with the rule, not "Please match the requested format".
    field = page.get_by_label("New agent's id")
    field.fill("Claude Code!")
    page.get_by_role("button", name="Add agent").click()
    message = field.evaluate("el => el.validationMessage")
    assert "lowercase letters, digits, - and _" in message, message
    expect(page.get_by_text("No agents yet")).to_be_visible()

    page.get_by_label("New agent's id").fill("claude-code")
    page.get_by_role("button", name="Add agent").click()
    dialog = page.get_by_role("dialog", name="Agent “claude-code” added")
    shown = dialog.get_by_label("Token", exact=True).input_value()
    assert re.fullmatch(r"amc_agent_[0-9a-f]{64}", shown)
    dialog.get_by_role("button", name="Copy Token", exact=True).click()
    expect(page.locator(".toast", has_text="Copied")).to_be_visible()
    token = page.evaluate("navigator.clipboard.readText()")
    assert token == shown

    # Every configuration names the amc of this install by a path that exists: GUI hosts do
    # not see the shell's PATH.
    desktop = json.loads(dialog.get_by_label("Claude Desktop (claude_desktop_config.json)", exact=True).inner_text())
    # Each agent is a server of its own, named after it: a second one fits the same host.
    command = desktop["mcpServers"]["amc-claude-code"]["command"]
    assert os.path.isabs(command) and os.access(command, os.X_OK), command
    # This AMC does not use the default data folder: every configuration names it.
    env = {"AMC_AGENT_ID": "claude-code", "AMC_BEARER_TOKEN": token, "AMC_DATA_DIR": str(daemon.data_dir)}
    claude = shlex.split(dialog.get_by_label("Claude Code", exact=True).inner_text())
    assert claude[:6] == ["claude", "mcp", "add", "-s", "user", "amc-claude-code"] and claude[-2:] == [command, "mcp"], claude
    assert [claude[i + 1] for i, a in enumerate(claude) if a == "--env"] == [f"{k}={v}" for k, v in env.items()], claude
    codex = tomllib.loads(dialog.get_by_label("Codex CLI (~/.codex/config.toml)", exact=True).inner_text())
    assert codex["mcp_servers"]["amc-claude-code"] == {"command": command, "args": ["mcp", "--no-push"], "env": env}, codex
    assert desktop["mcpServers"]["amc-claude-code"]["args"] == ["mcp", "--no-push"]
    assert desktop["mcpServers"]["amc-claude-code"]["env"] == env
    # Claude Desktop in one click: the bundle downloads under the agent's name.
    with page.expect_download() as bundle:
        dialog.get_by_role("button", name="Download for Claude Desktop").click()
    assert bundle.value.suggested_filename == "amc-claude-code.mcpb"
    with zipfile.ZipFile(bundle.value.path()) as archive:
        assert json.loads(archive.read("manifest.json"))["server"]["mcp_config"]["env"]["AMC_BEARER_TOKEN"] == token
        # The icon at the size the bundle format recommends.
        assert struct.unpack(">II", archive.read("icon.png")[16:24]) == (512, 512)
    # How to have new messages pushed into a Claude Code session (docs/mcp.md, section 4).
    channel = dialog.get_by_label("Claude Code with new messages pushed", exact=True).input_value()
    assert shlex.split(channel) == ["claude", "--dangerously-load-development-channels", "server:amc-claude-code"], channel
    dialog.get_by_role("button", name="Done").click()
    expect(dialog).to_be_hidden()

    agent = Agent(daemon, "claude-code", token)
    assert agent.unread_texts() == ["hi"]
    row = page.locator('tr[data-agent="claude-code"]')
    expect(row).to_contain_text("Active")
    expect(row).not_to_contain_text("Live")
    # A session being pushed new messages (amc mcp's push request) shows as live.
    assert agent.http.get("/messages/push", params={"timeout_seconds": 1}).status_code == 200
    open_ui(page, daemon, "Agents")
    expect(row.locator(".status-live")).to_have_text("Live")

    # The API's own message explains a refusal.
    conflict = daemon.http.post("/admin/agents", json={"id": "claude-code"}).json()["error"]["message"]
    page.get_by_label("New agent's id").fill("claude-code")
    page.get_by_role("button", name="Add agent").click()
    expect(page.get_by_role("alert")).to_have_text(conflict)

    row.get_by_role("button", name="Revoke claude-code").click()
    confirm = page.get_by_role("dialog", name="Revoke claude-code?")
    confirm.get_by_role("button", name="Revoke").click()
    expect(row).to_contain_text("Revoked")
    expect(row.get_by_role("button")).to_have_count(0)
    assert agent.http.get("/messages/unread").status_code == 401


def test_pausing_all_agents_holds_sends_to_auto_channels_until_resumed(daemon: UiDaemon, page: Page):
    ch, _ = daemon.chat("ada", ["ping"], approve={"history": "all", "send_policy": "auto"})
    agent = daemon.agent("claude-code")
    open_ui(page, daemon, "Status")
    expect(page.get_by_role("heading", name="Agents are active")).to_be_visible()
    expect(page.locator('[data-source="imessage"]')).to_contain_text("Test mode")

    page.get_by_role("button", name="Pause all agents").click()
    expect(page.get_by_role("heading", name="Agents are paused")).to_be_visible()
    expect(page.get_by_role("link", name="Agents paused")).to_be_visible()

    held = agent.send(ch, "pong")
    assert held.status_code == 202 and held.json()["status"] == "pending_review"
    expect(page.locator("#count-held")).to_have_text("1")
    page.get_by_role("link", name="Review").click()
    expect(page.locator("article.send-card .draft-text")).to_have_text("pong")

    page.get_by_role("link", name="Status").click()
    page.get_by_role("button", name="Resume agents").click()
    expect(page.get_by_role("heading", name="Agents are active")).to_be_visible()
    expect(page.get_by_role("link", name="Agents paused")).to_be_hidden()
    sent = agent.send(ch, "pong again")
    assert sent.status_code == 200 and sent.json()["status"] == "sent"
    assert daemon.sent_texts() == ["pong again"], "the held send waits for review"


def test_threads_are_created_read_live_posted_to_and_shared(daemon: UiDaemon, page: Page):
    open_ui(page, daemon, "Threads")
    expect(page.get_by_text("No threads yet")).to_be_visible()
    page.get_by_role("button", name="New thread").click()
    page.get_by_role("dialog", name="New thread").get_by_label("Title").fill("Plan the trip")
    page.get_by_role("dialog", name="New thread").get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="Plan the trip", level=2)).to_be_visible()

    page.get_by_label("Post as you").fill("Flights first, then hotels")
    page.get_by_role("button", name="Post").click()
    messages = page.locator(".relay-msg")
    expect(messages).to_have_count(1)
    expect(messages.first).to_contain_text("You")
    expect(messages.first).to_contain_text("Flights first, then hotels")

    # A post made elsewhere shows up while the thread is open.
    thread_id = daemon.admin("GET", "/admin/relay/threads")["threads"][0]["thread_id"]
    daemon.admin("POST", f"/admin/relay/threads/{thread_id}/messages", {"body": "Booked the train", "idempotency_key": "t-2"})
    expect(messages).to_have_count(2)
    expect(messages.nth(1)).to_contain_text("Booked the train")

    page.get_by_label("Kind").select_option("read")
    page.get_by_role("button", name="Create", exact=True).click()
    shared = page.get_by_role("dialog", name="Read link created")
    token = shared.get_by_label("Access token", exact=True).input_value()
    assert token.startswith("amc_relay_read_")
    assert shared.get_by_label("Thread id", exact=True).input_value() == thread_id
    shared.get_by_role("button", name="Done").click()

    invite = page.locator(".sharing .row")
    expect(invite).to_contain_text("Read link")
    invite.get_by_role("button", name="Revoke").click()
    page.get_by_role("dialog", name="Revoke this token?").get_by_role("button", name="Revoke").click()
    expect(invite).to_contain_text("Revoked")
    invites = daemon.admin("GET", f"/admin/relay/threads/{thread_id}/invites")["invites"]
    assert invites[0]["revoked_at"] is not None


def test_the_inbox_shows_which_agents_read_each_message(daemon: UiDaemon, page: Page):
    daemon.chat("ada", ["First", "Second"], approve={"history": "all"})
    agent = daemon.agent("claude-code")
    unread = agent.http.get("/messages/unread").json()["messages"]
    agent.http.post("/messages/mark_read", json={"message_ids": [unread[0]["id"]]})

    open_ui(page, daemon, "Inbox")
    first = page.locator(".message", has_text="First")
    expect(first.locator(".chip")).to_have_text(["claude-code"])
    expect(page.locator(".message", has_text="Second")).to_contain_text("Not read by any agent yet")
    agent.http.post("/messages/mark_read", json={"message_ids": [unread[1]["id"]]})
    expect(page.locator(".message", has_text="Second").locator(".chip")).to_have_text(["claude-code"])


# The width an input's placeholder takes in the input's font, and the room the input has for it.
PLACEHOLDER_ROOM = """el => {
    const style = getComputedStyle(el);
    const ctx = document.createElement("canvas").getContext("2d");
    ctx.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    return [ctx.measureText(el.placeholder).width, el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)];
}"""


def test_the_inbox_says_nothing_of_agents_reading_the_persons_own_messages(daemon: UiDaemon, page: Page):
    out = daemon.admin("POST", "/admin/test/ingest", {"source": "imessage", "chat_id": "ada", "chat_name": "Ada", "messages": [
        {"id": "a1", "text": "Dinner at 8?", "sender": "+15551234567"},
        {"id": "a2", "text": "On my way", "sender": "me", "is_self": True}]})
    daemon.admin("POST", f"/admin/channels/{out['channel_id']}/approve", {"history": "all"})
    daemon.agent("claude-code")
    # The person's own messages are never unread for an agent: no "not read yet" under them.
    open_ui(page, daemon, "Inbox")
    expect(page.locator(".message", has_text="Dinner at 8?")).to_contain_text("Not read by any agent yet")
    own = page.locator(".message", has_text="On my way")
    expect(own).to_contain_text("You: On my way")
    expect(own).not_to_contain_text("read")


def test_the_inbox_search_box_shows_its_whole_placeholder(daemon: UiDaemon, page: Page):
    open_ui(page, daemon, "Inbox")
    # At the width the tests use and at the narrowest window.
    for width in (1180, 720):
        page.set_viewport_size({"width": width, "height": 800})
        needed, room = page.get_by_label("Search messages").evaluate(PLACEHOLDER_ROOM)
        assert needed <= room, f"at {width} px the placeholder needs {needed:.0f} px and has {room:.0f}"


def test_the_inbox_search_finds_words_without_accents_and_marks_them(daemon: UiDaemon, page: Page):
    daemon.chat("ada", ["Café at noon?", "The flight lands at 9"], approve={"history": "all"})
    daemon.chat("bob", ["café in secret"])  # pending: not searched
    open_ui(page, daemon, "Inbox")
    page.get_by_label("Search messages").fill("cafe")
    results = page.get_by_role("list", name="Messages matching cafe")
    expect(results.locator(".message")).to_have_count(1)
    expect(results.locator("mark")).to_have_text(["Café"])
    page.get_by_label("Search messages").fill("\"lands at\" flight")
    expect(page.get_by_role("list", name='Messages matching "lands at" flight').locator(".message")).to_have_count(1)
    page.get_by_label("Search messages").fill("nothing")
    expect(page.get_by_text("Nothing matches “nothing”")).to_be_visible()
    page.get_by_label("Search messages").fill("")
    expect(page.locator(".message")).to_have_count(2)


def test_the_token_leaves_the_address_bar_and_without_one_the_page_says_how_to_open_it(daemon: UiDaemon, browser, page: Page):
    daemon.chat("ada", ["hi"], approve={"history": "all"})  # set up: the window opens on Channels
    open_ui(page, daemon)
    assert "token" not in page.url
    assert page.evaluate("sessionStorage.getItem('amc.adminToken')") == daemon.admin_token
    page.reload()
    expect(page.get_by_role("heading", name="Channels", level=1)).to_be_visible()

    stranger, _ = open_page(browser)
    stranger.goto(f"{daemon.base}/ui/")
    expect(stranger.get_by_role("heading", name="AMC needs its admin token")).to_be_visible()
    expect(stranger.locator("main")).to_contain_text("amc ui --open")
    # Opening the link `amc ui` prints in that tab lets the person in.
    stranger.goto(daemon.ui_url())
    expect(stranger.get_by_role("heading", name="Channels", level=1)).to_be_visible()
    assert "token" not in stranger.url
    stranger.context.close()


def test_a_channel_is_approved_with_the_keyboard_alone(daemon: UiDaemon, page: Page):
    ch, _ = daemon.chat("ada", ["Keyboard?"])
    agent = daemon.agent("claude-code")
    open_ui(page, daemon)
    focused = page.locator(":focus")

    page.keyboard.press("Tab")
    expect(focused).to_have_text("Skip to content")
    for _ in range(30):
        page.keyboard.press("Tab")
        if focused.get_attribute("data-key") == f"approve-{ch}":
            break
    else:
        pytest.fail("Tab never reached the Approve button")
    # Focus is visible.
    assert focused.evaluate("el => getComputedStyle(el).boxShadow") != "none"

    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name="Approve Chat ada")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_label("From now on")).to_be_focused()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(focused).to_have_attribute("data-key", f"approve-{ch}")

    page.keyboard.press("Enter")
    expect(dialog.get_by_label("From now on")).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(dialog.get_by_label("All history")).to_be_checked()
    page.keyboard.press("Tab")  # the days field is disabled: on to who may read it
    expect(dialog.get_by_label("Every agent, and agents added later")).to_be_focused()
    page.keyboard.press("Tab")  # the agents' boxes are disabled while every agent may: the policy
    expect(dialog.get_by_label("When an agent sends here")).to_be_focused()
    page.keyboard.press("Tab")
    expect(focused).to_have_text("Cancel")
    page.keyboard.press("Tab")
    expect(focused).to_have_text("Approve")
    page.keyboard.press("Space")
    expect(dialog).to_be_hidden()
    expect(page.get_by_text("No pending channels")).to_be_visible()
    assert agent.unread_texts() == ["Keyboard?"]


def test_dark_mode_follows_the_system(daemon: UiDaemon, browser):
    colors = {}
    for scheme in ("light", "dark"):
        page, problems = open_page(browser, color_scheme=scheme)
        open_ui(page, daemon)
        colors[scheme] = page.evaluate(
            "[getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]")
        page.context.close()
        assert not problems
    assert colors["light"] == ["rgb(245, 245, 247)", "rgb(29, 29, 31)"]
    assert colors["dark"] == ["rgb(30, 30, 31)", "rgb(245, 245, 247)"]


def test_status_lists_each_permission_and_a_refused_one_shows_with_its_fix_live(daemon: UiDaemon, page: Page):
    ch, _ = daemon.chat("ada", ["ping"], approve={"history": "all", "send_policy": "auto"})
    agent = daemon.agent("claude-code")
    open_ui(page, daemon, "Status")
    panel = page.get_by_role("region", name="Permissions")
    for name in ["Full Disk Access", "Automation: Messages", "Discord bot"]:
        expect(panel).to_contain_text(name)
    automation = panel.locator('[data-permission="automation-messages"]')
    expect(automation).to_contain_text("Test mode: sends are only recorded")
    # No chat.db is read here: access to it is not claimed.
    expect(panel.locator('[data-permission="full-disk-access"]')).to_contain_text("Test mode: nothing read")
    expect(panel.locator('[data-permission="full-disk-access"]')).not_to_contain_text("Granted")
    # AMC runs with --test-sender here: nothing reaches Discord, and the page says so.
    expect(panel.locator('[data-permission="discord-bot"]')).to_contain_text("Test mode: sends are only recorded")
    # No source reaches anyone: each is in test mode, not a green "Connected".
    for source in ("imessage", "discord"):
        row = page.locator(f'[data-source="{source}"]')
        expect(row.locator(".badge")).to_have_text("Test mode")
        expect(row).to_contain_text("nothing reaches")
        assert row.locator(".dot").evaluate("el => getComputedStyle(el).backgroundColor") != "rgb(52, 199, 89)"

    # macOS refuses AMC control of Messages: the send fails with PLATFORM_AUTH, and the
    # page says what to change, without a reload.
    daemon.admin("POST", "/admin/test/fail-next", {
        "error": "auth",
        "message": "macOS did not let AMC control Messages (-1743): open System Settings → Privacy & Security → Automation",
    })
    refused = agent.send(ch, "pong")
    assert refused.status_code == 502 and refused.json()["error"]["code"] == "PLATFORM_AUTH"
    expect(automation).to_contain_text("Needed")
    expect(automation).to_contain_text("System Settings → Privacy & Security → Automation")
    expect(page.locator('[data-source="imessage"]')).to_contain_text("Needs attention")

    # Once a send goes through, the source is well again.
    assert agent.send(ch, "pong again").status_code == 200
    expect(page.locator('[data-source="imessage"] .badge')).to_have_text("Test mode")
    expect(automation).not_to_contain_text("Needed")


def test_a_review_card_opens_at_the_newest_message_and_names_a_message_without_text(daemon: UiDaemon, page: Page):
    # Ten messages: more than the card shows at once. The newest has no text and no file.
    ch, _ = daemon.chat("ben", [f"message {i}" for i in range(1, 10)] + [""], approve={"history": "all", "send_policy": "review"})
    agent = daemon.agent("claude-code")
    open_ui(page, daemon, "Review")
    r = agent.send(ch, "On my way")
    assert r.json()["status"] == "pending_review", r.text
    conversation = page.locator("article.send-card .conversation")
    expect(conversation).to_contain_text("message 9")
    expect(conversation.locator(".msg").last).to_contain_text("(no text)")
    expect(conversation).not_to_contain_text("(attachment)")
    # It overflows, and it is scrolled to its end: the message being answered shows.
    at = conversation.evaluate("el => [el.scrollHeight, el.clientHeight, el.scrollTop]")
    assert at[0] > at[1], at
    assert at[2] + at[1] >= at[0] - 2, at


def test_at_the_narrowest_window_the_log_and_the_token_dialog_fit(daemon: UiDaemon, page: Page):
    page.set_viewport_size({"width": 720, "height": 700})
    ch, _ = daemon.chat("ada", ["hi"], approve={"history": "all", "send_policy": "review"})
    agent = daemon.agent("a-rather-long-agent-name-for-a-narrow-window")
    agent.send(ch, "A reply long enough to need the whole width of the message column, and then some more words")
    open_ui(page, daemon, "Review")
    table = page.locator("table.log")
    expect(table.locator(".badge").first).to_be_visible()
    fits = table.evaluate("""t => {
        const panel = t.parentElement.getBoundingClientRect();
        const badges = [...t.querySelectorAll('.badge')].map((b) => b.getBoundingClientRect().right);
        return [t.scrollWidth <= t.parentElement.clientWidth + 1, Math.max(...badges) <= panel.right + 1];
    }""")
    sizes = table.evaluate("""t => { const chain = []; let e = t; while (e && chain.length < 6) { const r = e.getBoundingClientRect(); chain.push([e.tagName + '.' + e.className, Math.round(r.left), Math.round(r.right), e.scrollWidth, e.clientWidth]); e = e.parentElement; } return chain; }""")
    assert fits == [True, True], (fits, sizes)

    open_ui(page, daemon, "Agents")
    page.get_by_label("New agent's id").fill("claude-desktop")
    page.get_by_role("button", name="Add agent").click()
    dialog = page.get_by_role("dialog", name="Agent “claude-desktop” added")
    expect(dialog).to_be_visible()
    clipped = dialog.evaluate("""d => [...d.querySelectorAll('pre.code')].filter((p) =>
        p.scrollWidth > p.clientWidth + 1 || p.getBoundingClientRect().right > d.getBoundingClientRect().right + 1).length""")
    assert clipped == 0, clipped


# Where each character of the element's text starting with `text` is drawn, and how much
# of the element's box shows: [[top, right], …], and the box's right edge inside its padding.
DRAWN_CHARS = """(el, text) => {
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    while (walk.nextNode() && !walk.currentNode.data.startsWith(text));
    const node = walk.currentNode, range = document.createRange(), out = [];
    for (let i = 0; i < text.length; i++) {
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const at = range.getBoundingClientRect();
        out.push([Math.round(at.top), at.right]);
    }
    const box = el.getBoundingClientRect();
    return [out, box.right - parseFloat(getComputedStyle(el).paddingRight)];
}"""


def test_at_the_narrowest_window_the_log_keeps_numbers_whole_and_shows_the_message(daemon: UiDaemon, page: Page):
    page.set_viewport_size({"width": 720, "height": 700})
    agent = daemon.agent("claude-desktop")
    message = "Running ten minutes late, start without me and order the usual for the table"
    # Unknown senders' chats are named by their number: up to 15 digits after the +.
    numbers = ["+15551234567", "+447700900123456"]
    for number in numbers:
        out = daemon.admin("POST", "/admin/test/ingest", {"source": "imessage", "chat_id": f"any;-;{number}", "chat_name": number,
                                                          "messages": [{"id": number, "text": "hi", "sender": number}]})
        daemon.admin("POST", f"/admin/channels/{out['channel_id']}/approve", {"history": "all", "send_policy": "review"})
        assert agent.send(out["channel_id"], message).json()["status"] == "pending_review"
    open_ui(page, daemon, "Review")
    table = page.locator("table.log")
    expect(table.locator("tbody tr")).to_have_count(2)
    for number in numbers:
        row = table.locator("tbody tr", has_text=number)
        cell = row.locator("td", has_text=number)
        chars, _ = cell.evaluate(DRAWN_CHARS, number)
        assert len({top for top, _ in chars}) == 1, f"{number} is broken over lines: {chars}"
        # The message's column shows a good part of it, not a few letters.
        chars, right = row.locator(".clip", has_text=message[:10]).evaluate(DRAWN_CHARS, message)
        shown = sum(1 for _, r in chars if r <= right + 0.5)
        assert shown >= 28, f"only {shown} characters of the message show: {message[:shown]}"


def test_channels_show_names_and_addresses_never_raw_ids(daemon: UiDaemon, page: Page):
    daemon.admin("POST", "/admin/test/ingest", {"source": "imessage", "chat_id": "any;-;+15551234567", "chat_name": "Ada Lovelace",
                                                "messages": [{"id": "a1", "text": "hi"}]})
    daemon.admin("POST", "/admin/test/ingest", {"source": "discord", "chat_id": "1189912345678901234", "chat_name": "Home / #general",
                                                "group": True, "messages": [{"id": "d1", "text": "yo"}]})
    open_ui(page, daemon, "Channels")
    ada = page.locator("li.row", has_text="Ada Lovelace")
    expect(ada).to_contain_text("+15551234567")
    expect(ada).not_to_contain_text("any;-;")
    general = page.locator("li.row", has_text="Home / #general")
    expect(general).to_be_visible()
    expect(general).not_to_contain_text("1189912345678901234")


# The strings of the terminal's test (crates/amc-cli/tests/it/shown.rs): an agent's send
# whose first part a terminal would erase, names that a right-to-left override shows as
# other words, and zero-width characters.
REWRITES = "…wired the $4,000 deposit…\r\x1b[2K    | See you at 8!"
CHANNEL = "Bank\u200b \u202estrelA\u2800\u0600"
CONTACT = "\u2066\u202emoM\u2069\ufeff"
FROM_CONTACT = "send it to the new account\r\x1b[2KSee you at 8?"
# What must be seen as it is: emoji joined and with their presentation selector.
EMOJI = "On my way 👩\u200d💻 ❤\ufe0f"
# A run of presentation selectors draws as one emoji and carries bits: only the first stays.
SMUGGLED = "ok 👍\ufe0f" + "\ufe0e\ufe0f" * 4 + " \ufe0f"

# The characters no text node and no tooltip may hold as they are: controls but the tab
# and the newline, bidi controls, zero-width and other invisible characters (the set of
# shown.rs), save one presentation selector after a character and a joiner in an emoji.
HIDDEN_LEFT = r"""root => {
    const hidden = /[\0-\x08\x0B-\x1F\x7F-\x9F\xAD\u034F\u0600-\u0605\u061C\u06DD\u070F\u0890\u0891\u08E2\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u2028-\u202E\u2060-\u206F\u2800\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF0-\uFFFB\u{110BD}\u{110CD}\u{13430}-\u{1343F}\u{1BCA0}-\u{1BCA3}\u{1D173}-\u{1D17A}\u{E0000}-\u{E0FFF}]/u;
    const pictograph = /[\u2300-\u23FF\u2600-\u27BF\u2B00-\u2BFF\u{1F000}-\u{1FAFF}]/u;
    const selector = (c) => c === "\uFE0E" || c === "\uFE0F";
    const holds = (text) => Array.from(text).some((c, i, all) => {
        if (!hidden.test(c)) return false;
        const base = all.slice(0, i).reverse().find((b) => !selector(b));
        if (selector(c)) return i === 0 || hidden.test(all[i - 1]) || /\s/u.test(all[i - 1]);
        if (c === "\u200D") return !(base && pictograph.test(base) && pictograph.test(all[i + 1] ?? ""));
        return true;
    });
    const found = [];
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walk.nextNode()) if (holds(walk.currentNode.data)) found.push(walk.currentNode.data);
    for (const el of root.querySelectorAll("[title]")) if (holds(el.title)) found.push(el.title);
    return found;
}"""

# Where each letter of an element is drawn, in the order of the text: [[char, top, bottom, left], …].
LETTERS_DRAWN = """el => {
    const out = [];
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    while (walk.nextNode()) {
        const node = walk.currentNode;
        for (let i = 0; i < node.data.length; i++) {
            if (!/[A-Za-z]/.test(node.data[i])) continue;
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            const at = range.getBoundingClientRect();
            out.push([node.data[i], at.top, at.bottom, at.left]);
        }
    }
    return out;
}"""


def read_in_order(locator) -> None:
    """The Latin letters of an element are drawn line by line, left to right, in the order
    of its text: nothing reorders them."""
    drawn = locator.evaluate(LETTERS_DRAWN)
    # A line: letters whose middles lie within the first one's height (marks are smaller).
    lines: list[tuple[float, float]] = []
    places = []
    for _, top, bottom, left in drawn:
        middle = (top + bottom) / 2
        line = next((i for i, (t, b) in enumerate(lines) if t <= middle <= b), None)
        if line is None:
            lines.append((top, bottom))
            line = len(lines) - 1
        places.append((lines[line][0], left))
    order = sorted(range(len(drawn)), key=lambda i: places[i])
    assert order == sorted(order), "drawn as " + "".join(drawn[i][0] for i in order)


def test_text_that_would_hide_or_reorder_itself_is_shown_whole_and_in_order(daemon: UiDaemon, page: Page):
    out = daemon.admin("POST", "/admin/test/ingest", {
        "source": "imessage", "chat_id": "bank", "chat_name": CHANNEL,
        "messages": [{"id": "b1", "text": FROM_CONTACT, "sender": "+15551234567", "sender_name": CONTACT},
                     {"id": "b2", "text": EMOJI, "sender": "+15551234567", "sender_name": "Ada"},
                     {"id": "b3", "text": SMUGGLED, "sender": "+15551234567", "sender_name": "Ada"}]})
    ch = out["channel_id"]
    daemon.admin("POST", f"/admin/channels/{ch}/approve", {"history": "all", "send_policy": "review"})
    agent = daemon.agent("claude-code")
    r = agent.send(ch, REWRITES)
    assert r.json()["status"] == "pending_review", r.text

    open_ui(page, daemon, "Review")
    card = page.locator("article.send-card")
    # Where the person approves: the whole draft, each hidden character marked by its code point.
    draft = card.locator(".draft-text")
    expect(draft).to_have_text("…wired the $4,000 deposit…⟨U+000D⟩⟨U+001B⟩[2K    | See you at 8!")
    expect(draft.locator(".hidden-char")).to_have_count(2)
    expect(draft.locator(".hidden-char").first).to_have_attribute("title", re.compile("carriage return"))
    heading = card.get_by_role("heading")
    expect(heading).to_have_text("claude-code → Bank⟨U+200B⟩ ⟨U+202E⟩strelA⟨U+2800⟩⟨U+0600⟩")
    read_in_order(heading)
    conversation = card.locator(".conversation")
    expect(conversation.locator(".msg").first).to_contain_text("⟨U+2066⟩⟨U+202E⟩moM⟨U+2069⟩⟨U+FEFF⟩")
    read_in_order(conversation.locator(".msg-meta").first)
    expect(conversation.locator(".bubble").first).to_have_text("send it to the new account⟨U+000D⟩⟨U+001B⟩[2KSee you at 8?")
    expect(conversation.locator(".bubble").nth(1)).to_have_text(EMOJI)
    expect(conversation.locator(".bubble").nth(2)).to_have_text("ok 👍\ufe0f" + "⟨U+FE0E⟩⟨U+FE0F⟩" * 4 + " ⟨U+FE0F⟩")
    log_row = page.locator(f'tr[data-send="{r.json()["message_id"]}"]')
    expect(log_row).to_contain_text("wired the $4,000 deposit…⟨U+000D⟩⟨U+001B⟩[2K")
    read_in_order(log_row.locator(".log-channel"))
    assert page.locator("main").evaluate(HIDDEN_LEFT) == []

    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Inbox").click()
    message = page.locator(".message", has_text="send it to the new account")
    expect(message).to_contain_text("⟨U+2066⟩⟨U+202E⟩moM⟨U+2069⟩⟨U+FEFF⟩: send it to the new account⟨U+000D⟩")
    read_in_order(message.locator(".name"))
    assert page.locator("main").evaluate(HIDDEN_LEFT) == []

    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Channels").click()
    segment(page, "Allowed").click()
    name = page.locator(f'li[data-channel="{ch}"] .name')
    expect(name).to_have_text("Bank⟨U+200B⟩ ⟨U+202E⟩strelA⟨U+2800⟩⟨U+0600⟩")
    read_in_order(name)
    assert page.locator("main").evaluate(HIDDEN_LEFT) == []

    # Approving sends the text as the agent wrote it.
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Review").click()
    card.get_by_role("button", name="Approve and send").click()
    expect(page.locator(".toast").first).to_contain_text("Sent to Bank⟨U+200B⟩ ⟨U+202E⟩strelA")
    assert daemon.sent_texts() == [REWRITES]


def test_a_short_code_is_approved_only_when_confirmed_and_its_codes_shown_only_when_chosen(daemon: UiDaemon, page: Page):
    out = daemon.admin("POST", "/admin/test/ingest", {"source": "imessage", "chat_id": "any;-;72975", "chat_name": "72975", "messages": [
        {"id": "s1", "text": "Your Example code is 918273. Don't share it.", "sender": "72975"}]})
    ch = out["channel_id"]
    agent, other = daemon.agent("claude-code"), daemon.agent("codex")

    open_ui(page, daemon)
    row = page.locator(f'li[data-channel="{ch}"]')
    expect(row.locator(".tag.warn")).to_have_text("Short code")
    # Approving with its history asks a second time; saying no approves nothing.
    row.get_by_role("button", name="Approve…").click()
    page.get_by_role("dialog", name="Approve 72975").get_by_label("All history").check()
    page.get_by_role("dialog", name="Approve 72975").get_by_role("button", name="Approve", exact=True).click()
    second = page.get_by_role("dialog", name="72975 is a short code")
    expect(second).to_contain_text("one-time codes")
    second.get_by_role("button", name="Cancel").click()
    expect(row).to_be_visible()
    assert daemon.admin("GET", f"/admin/channels/{ch}")["state"] == "pending"
    assert agent.unread_texts() == []

    row.get_by_role("button", name="Approve…").click()
    page.get_by_role("dialog", name="Approve 72975").get_by_label("All history").check()
    page.get_by_role("dialog", name="Approve 72975").get_by_role("button", name="Approve", exact=True).click()
    page.get_by_role("dialog", name="72975 is a short code").get_by_role("button", name="Approve anyway").click()
    expect(page.locator(".toast", has_text="Approved 72975")).to_be_visible()
    assert agent.unread_texts() == ["Your Example code is [one-time code hidden by AMC]. Don't share it."]

    # Shown to one agent from the Channels screen: that agent alone gets the code.
    segment(page, "Allowed").click()
    expect(row.locator(".codes")).to_have_text("1 message holds a one-time code or sign-in link: hidden from agents")
    row.get_by_role("button", name="Codes…").click()
    codes = page.get_by_role("dialog", name="One-time codes in 72975")
    expect(codes.get_by_label("No agent")).to_be_checked()
    codes.get_by_label("Only these agents:").check()
    codes.get_by_role("button", name="Save").click()
    expect(codes.get_by_role("alert")).to_have_text("Choose at least one agent.")
    codes.get_by_label("claude-code").check()
    codes.get_by_role("button", name="Save").click()
    expect(row.locator(".codes")).to_have_text("1 message holds a one-time code or sign-in link: shown to claude-code only")
    assert agent.unread_texts() == ["Your Example code is 918273. Don't share it."]
    assert other.unread_texts() == ["Your Example code is [one-time code hidden by AMC]. Don't share it."]

    # The person sees the whole text, marked.
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Inbox").click()
    message = page.locator(".message", has_text="918273")
    expect(message.locator(".tag.secret")).to_have_text("One-time code")
    # The code itself is marked, with the rule that found it on hover.
    mark = message.locator("mark.secret")
    expect(mark).to_have_text("918273")
    expect(mark).to_have_attribute("data-rule", "called_the_code")
    expect(mark).to_have_attribute("title", "One-time code, hidden from agents: the words next to it call it the code")

    # The person says it is no code: agents are given it whole; then takes it back.
    message.get_by_role("button", name="Not a code").click()
    expect(message.get_by_text("Not a code (you said)")).to_be_visible()
    expect(message.locator("mark.secret")).to_have_count(0)
    assert other.unread_texts() == ["Your Example code is 918273. Don't share it."]
    # The Status screen counts it, by the rule that had found the code.
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Status").click()
    said = page.get_by_role("region", name="Not a code")
    expect(said).to_contain_text("1 message you said holds no code")
    expect(said.locator('[data-rule="called_the_code"]')).to_contain_text("the words next to it call it the code · 1")
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Inbox").click()
    message.get_by_role("button", name="It is a code").click()
    expect(message.locator("mark.secret")).to_have_text("918273")
    assert other.unread_texts() == ["Your Example code is [one-time code hidden by AMC]. Don't share it."]


def test_a_send_that_crosses_conversations_waits_with_where_it_was_read_and_a_channel_may_receive_anything(daemon: UiDaemon, page: Page):
    ada, _ = daemon.chat("ada", ["See you at six"], approve={"history": "all", "send_policy": "auto"})
    daemon.chat("bo", ["The door code at the cabin is on the fridge"], approve={"history": "all", "send_policy": "auto"})
    agent = daemon.agent("claude-code")
    assert sorted(agent.unread_texts()) == ["See you at six", "The door code at the cabin is on the fridge"]
    held = agent.send(ada, "Bo says the code is on the fridge")
    assert held.status_code == 202 and held.json()["held_reason"] == "crosses_conversations"

    open_ui(page, daemon, "Review")
    card = page.locator("article.send-card", has_text="Bo says the code is on the fridge")
    expect(card.locator(".crossing")).to_contain_text("Held because claude-code read other conversations")
    expect(card.get_by_role("list", name="Conversations the agent read")).to_contain_text("Chat bo")

    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Channels").click()
    segment(page, "Allowed").click()
    row = page.locator(f'li[data-channel="{ada}"]')
    # Asked twice: saying no changes nothing.
    row.get_by_role("button", name="Receives anything…").click()
    page.get_by_role("dialog", name="Let Chat ada receive anything?").get_by_role("button", name="Cancel").click()
    assert daemon.admin("GET", f"/admin/channels/{ada}")["receives_anything"] is False
    row.get_by_role("button", name="Receives anything…").click()
    page.get_by_role("dialog", name="Let Chat ada receive anything?").get_by_role("button", name="Receive anything").click()
    expect(row.locator(".readers")).to_contain_text("Receives anything")
    sent = agent.send(ada, "On my way")
    assert sent.status_code == 200 and sent.json()["status"] == "sent"
    row.get_by_role("button", name="Hold crossings again").click()
    expect(row.locator(".readers")).to_be_hidden()
    assert agent.send(ada, "And again").json()["status"] == "pending_review"


def test_the_person_chooses_their_own_conversation_for_phone_approvals_and_sends_a_test(daemon: UiDaemon, page: Page):
    me = "+15550001111"
    # A contact's conversation and the person's own, as the iMessage source gives them.
    daemon.chat("ada", ["ping"])
    daemon.admin("POST", "/admin/test/ingest", {
        "source": "imessage", "chat_id": f"any;-;{me}", "chat_name": "Me", "readers": [me], "own_addresses": [me],
        "messages": [{"id": "note-1", "text": "note to self", "is_self": True, "sender": "me"}],
    })
    open_ui(page, daemon, "Status")
    panel = page.get_by_role("region", name="Approve from your phone")
    expect(panel).to_contain_text("your own conversation with yourself")
    # Only the person's own conversation is offered.
    expect(panel.locator("[data-candidate]")).to_have_count(1)
    expect(panel.locator("[data-candidate]")).to_contain_text(me)
    panel.get_by_role("button", name="Ask me here").click()
    expect(panel).to_contain_text(f"your own conversation with {me}")
    expect(page.locator("[data-phone=on]")).to_be_visible()
    settings = daemon.admin("GET", "/admin/phone")
    assert settings["imessage"]["address"] == me, settings
    # Agents never see it now: it is blocked.
    channel = daemon.admin("GET", f"/admin/channels/{settings['imessage']['channel_id']}")
    assert channel["state"] == "blocked", channel
    panel.get_by_role("button", name="Send a test").click()
    expect(page.locator(".toast").last).to_contain_text("Sent: look in your own conversation")
    assert any("this is where AMC will ask you" in t for t in daemon.sent_texts())
    # Tool requests answered here only, then no phone at all.
    panel.get_by_label("Tool requests").uncheck()
    expect(panel.get_by_label("Tool requests")).not_to_be_checked()
    assert daemon.admin("GET", "/admin/phone")["tools"] is False
    panel.get_by_role("button", name="Stop asking").click()
    expect(page.locator("[data-phone=off]")).to_be_visible()
    assert daemon.admin("GET", "/admin/phone")["imessage"] is None


def test_an_agents_id_stays_on_one_line_at_the_narrowest_window(daemon: UiDaemon, browser):
    for i in range(3):
        daemon.chat(f"chat-{i}", ["hi"], approve={"history": "all"})
    daemon.add_agent("claude-code-reviewer")
    page, problems = open_page(browser)
    page.set_viewport_size({"width": 720, "height": 800})
    open_ui(page, daemon, "Agents")
    cell = page.locator('[data-agent="claude-code-reviewer"] th')
    expect(cell).to_have_text("claude-code-reviewer")
    lines = cell.evaluate("el => { const r = document.createRange(); r.selectNodeContents(el); "
                          "return new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size; }")
    assert lines == 1, f"the id wraps over {lines} lines"
    page.context.close()
    assert not [p for p in problems if not p.startswith("Failed to load resource")], problems


def test_check_this_mac_shows_the_deep_doctors_table(daemon: UiDaemon, page: Page):
    open_ui(page, daemon, "Status")
    panel = page.get_by_role("region", name="This Mac")
    panel.get_by_role("button", name="Check this Mac").click()
    rows = panel.locator("tr[data-check]")
    expect(rows.first).to_be_visible()
    # Here (Linux) what needs macOS is skipped, and says so; the table matches the command's.
    assert rows.count() >= 5, rows.count()
    outcomes = rows.evaluate_all("rs => rs.map((r) => r.dataset.outcome)")
    assert set(outcomes) <= {"ok", "FAILED", "skipped"}, outcomes
    expect(panel.locator('tr[data-outcome="skipped"]', has_text="needs macOS").first).to_be_visible()
    # This daemon follows no chat.db: the table says so rather than claiming it read one.
    expect(panel.locator('tr[data-check="chat.db, read-only"]')).to_contain_text("no chat.db configured")
