"""Screenshots of every screen for README, with realistic data (`scripts/screenshots`).

Marked `screenshots`, so `scripts/test` leaves it out: it writes docs/screenshots/ and
checks nothing beyond what the other tests check."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone

import pytest
from playwright.sync_api import expect

from conftest import ROOT, Agent, UiDaemon, open_page
from test_ui import open_ui, png

pytestmark = [pytest.mark.screenshots, pytest.mark.timeout(300)]

OUT = ROOT / "docs" / "screenshots"
NOW = datetime.now(timezone.utc)
ids = itertools.count(1)


def ago(**delta) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def conversation(d: UiDaemon, source: str, chat: str, name: str, lines: list[tuple], group: bool = False) -> str:
    messages = []
    for minutes, sender, text in lines:
        m = {"id": f"{chat}-{next(ids)}", "text": text, "sent_at": ago(minutes=minutes)}
        if sender == "me":
            m.update(is_self=True, sender="+15550000001", sender_name="Me")
        else:
            m.update(sender=f"+1555{abs(hash(sender)) % 10**7:07d}", sender_name=sender)
        messages.append(m)
    out = d.admin("POST", "/admin/test/ingest",
                  {"source": source, "chat_id": chat, "chat_name": name, "group": group, "messages": messages})
    return out["channel_id"]


def relay(agent: Agent, tool: str, arguments: dict) -> dict:
    r = agent.http.post("/mcp/relay", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                            "params": {"name": tool, "arguments": arguments}},
                        headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
    result = r.json()["result"]
    assert not result["isError"], result
    return result["structuredContent"]


def seed(d: UiDaemon) -> None:
    approve = lambda ch, policy, history="all": d.admin("POST", f"/admin/channels/{ch}/approve",
                                                        {"history": history, "send_policy": policy})
    ada = conversation(d, "imessage", "ada", "Ada Lovelace", [
        (190, "Ada Lovelace", "Are we still on for dinner Friday?"),
        (185, "me", "Yes! 8pm works for me"),
        (42, "Ada Lovelace", "Great. Should I bring anything?"),
    ])
    family = conversation(d, "imessage", "family", "Family", [
        (300, "Mom", "Sunday lunch at noon?"),
        (240, "Sam", "I'll bring dessert"),
        (12, "Mom", "Can someone pick up Grandma?"),
    ], group=True)
    general = conversation(d, "discord", "home-general", "Home / #general", [
        (95, "Alex", "Wi-Fi is slow again upstairs"),
        (30, "Jo", "I restarted the access point"),
    ], group=True)
    conversation(d, "imessage", "grace", "Grace Hopper", [(8, "Grace Hopper", "Got a minute to talk about the keynote?")])
    conversation(d, "discord", "book-club", "Book club / #march-pick", [(55, "Priya", "Vote closes tonight!")], group=True)
    conversation(d, "discord", "rust-meetup", "Rust meetup / #announcements",
                 [(1500, "Organizer", "Next meetup: April 12, talks welcome")], group=True)
    spam = conversation(d, "imessage", "spam", "+1 555 010 2299", [(600, "+1 555 010 2299", "Your package is waiting, click here")])
    approve(ada, "review")
    approve(family, "auto")
    approve(general, "review", "from_now")
    d.admin("POST", f"/admin/channels/{spam}/block")

    claude = d.agent("claude-code")
    codex = d.agent("codex")
    desktop = d.agent("claude-desktop")
    d.agent("old-laptop")
    d.admin("POST", "/admin/agents/old-laptop/revoke")

    # Sent before they read elsewhere: a send to "auto" after reading other conversations
    # waits for the person (the readers rule).
    assert claude.send(family, "Count me in for Sunday!").json()["status"] == "sent"
    d.admin("POST", "/admin/test/fail-next", {"error": "unknown"})
    assert codex.send(family, "I can pick up Grandma at 11:30").json()["status"] == "unknown"

    unread = claude.http.get("/messages/unread").json()["messages"]
    claude.http.post("/messages/mark_read", json={"message_ids": [m["id"] for m in unread[:4]]})
    codex.http.post("/messages/mark_read", json={"message_ids": [m["id"] for m in unread[:2]]})
    # Having read Ada's and the others' conversations, a send to the family waits.
    crossing = claude.send(family, "Ada can't make Sunday, she's at the keynote rehearsal.").json()
    assert crossing["held_reason"] == "crosses_conversations"
    rejected = desktop.send(ada, "K.").json()["message_id"]
    d.admin("POST", f"/admin/sends/{rejected}/reject", {"reason": "Too curt"})
    general_msg = conversation(d, "discord", "home-general", "Home / #general", [(1, "Alex", "Thanks, much better now")])
    assert general_msg == general
    codex.send(general, "Glad it works! I'll keep an eye on it tonight.")
    picture = png(d.data_dir / "outbox" / "restaurant-map.png", (52, 199, 89), 96)
    claude.send(ada, "Nothing needed, just bring yourself! Here's the map to the place.",
                attachments=[{"path": str(picture)}])

    thread = relay(codex, "create_thread", {"title": "Lisbon trip: research", "idempotency_key": "lisbon"})
    invite = relay(codex, "create_thread_invite", {"thread_id": thread["thread_id"], "kind": "write"})
    relay(claude, "join_thread", {"thread_id": thread["thread_id"], "access_token": invite["access_token"]})
    relay(codex, "send_message", {"thread_id": thread["thread_id"], "idempotency_key": "l1",
                                  "body": "Flights found: TAP direct on the 14th, back on the 21st."})
    relay(claude, "send_message", {"thread_id": thread["thread_id"], "idempotency_key": "l2", "reply_to_seq": "1",
                                   "body": "Hotels near Alfama are cheaper midweek. Shortlist:\n- Memmo Alfama\n- Santiago de Alfama"})
    d.admin("POST", f"/admin/relay/threads/{thread['thread_id']}/messages",
            {"body": "Thanks! Keep it under 1,200 in total, please.", "idempotency_key": "l3"})
    d.admin("POST", f"/admin/relay/threads/{thread['thread_id']}/invites", {"kind": "read"})
    relay(claude, "create_thread", {"title": "Inbox triage notes", "idempotency_key": "triage"})


def test_screenshots(daemon: UiDaemon, browser):
    seed(daemon)
    OUT.mkdir(parents=True, exist_ok=True)
    # Each screen, and what shows it is loaded.
    shots = [("channels", None, ".row"), ("review", "Review", "img.preview[src^='data:']"),
             ("inbox", "Inbox", ".message .chip"), ("threads", "Threads", ".relay-msg >> nth=2"),
             ("agents", "Agents", "tr[data-agent]"), ("status", "Status", "[data-source]")]
    for scheme in ("light", "dark"):
        page, problems = open_page(browser, color_scheme=scheme, reduced_motion="reduce")
        for name, screen, loaded in shots if scheme == "light" else shots[:2]:
            open_ui(page, daemon, screen)
            if name == "threads":
                page.locator(".thread-item", has_text="Lisbon").click()
            expect(page.locator(loaded).first).to_be_visible()
            # Review is taller, to show the log under the queue.
            page.set_viewport_size({"width": 1180, "height": 1440 if name == "review" else 800})
            page.mouse.move(1, 799)  # no hover highlight
            page.screenshot(path=OUT / f"{name}{'-dark' if scheme == 'dark' else ''}.png")
        page.context.close()
        assert not [p for p in problems if not p.startswith("Failed to load resource")]


def test_setup_screenshots(daemon: UiDaemon, browser):
    """Setup at the widest and the narrowest window people use: docs/screenshots/setup-*.png."""
    seed(daemon)
    OUT.mkdir(parents=True, exist_ok=True)
    page, problems = open_page(browser, reduced_motion="reduce")
    for width in (1280, 720):
        page.set_viewport_size({"width": width, "height": 1500 if width > 1000 else 1900})
        open_ui(page, daemon, "Setup")
        expect(page.get_by_label("Bot token")).to_be_visible()
        page.mouse.move(1, 1)  # no hover highlight
        page.screenshot(path=OUT / f"setup-{width}.png", full_page=True)
    page.context.close()
    assert not [p for p in problems if not p.startswith("Failed to load resource")]
