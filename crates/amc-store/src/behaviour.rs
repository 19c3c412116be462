//! The store's promises, checked on a real SQLite file below the service layer: ingest is
//! idempotent, nothing of a pending or blocked channel is unread, a late message is never
//! skipped, sends are recorded once and settle once.

use super::*;
use crate::error::ErrorCode;
use crate::model::{
    ChannelKind, ChannelSpec, ChannelState, CodesShown, DecidedVia, Direction, HistoryRelease, IncomingMessage,
    IngestReport, OutboxStatus, Reaction, ReactionChange, SendPolicy, SenderInfo, SentSend, Source,
};
use crate::time::now_ms;
use rusqlite::OptionalExtension;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&dir.path().join("amc.db")).expect("open");
    (dir, store)
}

fn spec(id: &str) -> ChannelSpec {
    ChannelSpec { platform_id: id.into(), name: id.into(), kind: ChannelKind::Dm, readers: None }
}

fn msg(id: &str, text: &str, sent_at: i64) -> IncomingMessage {
    amc_testkit::incoming(id, text).at(sent_at).from("+15550001111", Some("Ada")).build()
}

/// Stores `messages` in channel `chat` and returns the channel's id.
fn ingest(store: &Store, chat: &str, messages: Vec<IncomingMessage>) -> IngestReport {
    store.ingest(Source::Imessage, &spec(chat), &messages, None).expect("ingest")
}

fn unread(store: &Store, agent: &str) -> Vec<String> {
    let q = UnreadQuery { since: None, after: None, source: None, channel_id: None, limit: 100 };
    store.unread(agent, &q).expect("unread").0.into_iter().map(|m| m.text).collect()
}

#[test]
fn the_same_platform_message_is_stored_once_and_an_edit_updates_it() {
    let (_dir, store) = store();
    let now = now_ms();
    let first = ingest(&store, "a", vec![msg("g1", "hello", now)]);
    assert_eq!((first.inserted.len(), first.updated.len(), first.channel_created), (1, 0, true));
    let again = ingest(&store, "a", vec![msg("g1", "hello", now)]);
    assert_eq!((again.inserted.len(), again.updated.len(), again.channel_created), (0, 0, false));
    let edited = IncomingMessage { edited_at: Some(now + 5), ..msg("g1", "hello, world", now) };
    let changed = ingest(&store, "a", vec![edited]);
    assert_eq!((changed.inserted.len(), changed.updated), (0, first.inserted.clone()));
    let stored = store.channel_tail(&first.channel_id, 10).expect("tail");
    assert_eq!(stored.len(), 1);
    assert_eq!((stored[0].text.as_str(), stored[0].edited_at), ("hello, world", Some(now + 5)));
}

#[test]
fn nothing_of_a_pending_or_blocked_channel_is_unread() {
    let (_dir, store) = store();
    store.create_agent("bot").expect("agent");
    let report = ingest(&store, "a", vec![msg("g1", "secret", now_ms())]);
    assert!(unread(&store, "bot").is_empty(), "pending");
    assert!(store.visible_channels("bot", None).expect("channels").is_empty());
    store.approve_channel(&report.channel_id, HistoryRelease::All, None, false).expect("approve");
    assert_eq!(unread(&store, "bot"), ["secret"]);
    store.block_channel(&report.channel_id).expect("block");
    assert!(unread(&store, "bot").is_empty(), "blocked");
    assert!(store.visible_channels("bot", None).expect("channels").is_empty());
    assert_eq!(store.visible_message("bot", &report.inserted[0]).expect_err("hidden").code, ErrorCode::MessageNotFound);
    assert!(store.send_target("bot", &report.channel_id).expect("target").is_none(), "no sends to a blocked channel");
}

/// The unread list walks messages in time order with the channels open to the agent as a
/// list built once (`visible_in_scan_to`); it must select exactly what the per-message
/// test (`visible_to`) does, for every kind of channel and every agent.
#[test]
fn both_forms_of_visibility_select_the_same_messages() {
    let (_dir, store) = store();
    let now = now_ms();
    for agent in ["a1", "a2", "a3"] {
        store.create_agent(agent).expect("agent");
    }
    let mut channels = Vec::new();
    for chat in ["all", "listed", "nobody", "pending", "blocked", "from-now", "last-day", "listed-blocked"] {
        let old = msg(&format!("{chat}-old"), "old", now - 3 * 86_400_000);
        let new = msg(&format!("{chat}-new"), "new", now - 60_000);
        channels.push((chat, ingest(&store, chat, vec![old, new]).channel_id));
    }
    let listed = ["a1".to_owned(), "a2".to_owned()];
    for (chat, id) in &channels {
        let release = match *chat {
            "pending" => continue,
            "from-now" => HistoryRelease::FromNow,
            "last-day" => HistoryRelease::LastDays(1),
            _ => HistoryRelease::All,
        };
        store.approve_channel(id, release, None, false).expect("approve");
        match *chat {
            "listed" | "listed-blocked" => drop(store.set_channel_agents(id, Some(&listed)).expect("agents")),
            "nobody" => drop(store.set_channel_agents(id, Some(&[])).expect("agents")),
            _ => {}
        }
        if chat.ends_with("blocked") {
            store.block_channel(id).expect("block");
        }
    }
    ingest(&store, "from-now", vec![msg("from-now-later", "later", now + 1)]);
    let selected = |agent: &str, condition: String| -> Vec<i64> {
        store
            .database()
            .read(|tx| {
                let sql = format!(
                    "SELECT m.rowid FROM messages m JOIN channels c ON c.key = m.channel WHERE {condition} ORDER BY 1"
                );
                let rows = tx.prepare(&sql)?.query_map([agent], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
                Ok(rows)
            })
            .expect("select")
    };
    let mut seen = 0;
    for agent in ["a1", "a2", "a3", "nobody-at-all"] {
        let per_message = selected(agent, channels::visible_to("?1"));
        assert_eq!(selected(agent, channels::visible_in_scan_to("?1")), per_message, "{agent}");
        seen += per_message.len();
    }
    // Four agents (one unknown) see all's 2, from-now's 1 and last-day's 1; a1 and a2 see
    // listed's 2 too: 4 × 4 + 2 × 2.
    assert_eq!(seen, 20, "the store holds what the comparison needs");
}

/// The unread list of an agent with few open channels merges each channel's own walk
/// (`unread_merged_sql`); it must list exactly what the walk of every message in time
/// order lists, page by page, for every agent, filter and cursor, ties in time included.
#[test]
fn merging_the_channels_lists_what_the_walk_in_time_order_lists() {
    let (_dir, store) = store();
    let now = now_ms();
    for agent in ["a1", "a2", "a3"] {
        store.create_agent(agent).expect("agent");
    }
    let listed = ["a1".to_owned(), "a2".to_owned()];
    let mut ids = Vec::new();
    for (n, chat) in ["all", "listed", "nobody", "pending", "blocked", "from-now", "other"].iter().enumerate() {
        // Five messages each, two of them at the same times in every channel.
        let mut messages: Vec<IncomingMessage> =
            (0..3i64).map(|i| msg(&format!("{chat}-{i}"), "x", now - 3 * 86_400_000 + i * 1000 + n as i64)).collect();
        messages.push(msg(&format!("{chat}-tie-a"), "x", now - 60_000));
        messages.push(msg(&format!("{chat}-tie-b"), "x", now - 60_000));
        let mut own = msg(&format!("{chat}-own"), "x", now - 30_000);
        own.sender.is_self = true;
        messages.push(own);
        let report = ingest(&store, chat, messages);
        ids.extend(report.inserted.iter().cloned());
        let id = report.channel_id;
        if *chat == "pending" {
            continue;
        }
        let release = if *chat == "from-now" { HistoryRelease::FromNow } else { HistoryRelease::All };
        store.approve_channel(&id, release, None, false).expect("approve");
        match *chat {
            "listed" => drop(store.set_channel_agents(&id, Some(&listed)).expect("agents")),
            "nobody" => drop(store.set_channel_agents(&id, Some(&[])).expect("agents")),
            "blocked" => drop(store.block_channel(&id).expect("block")),
            _ => {}
        }
    }
    ingest(&store, "from-now", vec![msg("from-now-later", "later", now + 1)]);
    store.mark_read("a2", &ids[1..4]).expect("marks");
    let mut listed_total = 0;
    for agent in ["a1", "a2", "a3"] {
        for (source, since, limit) in
            [(None, None, 100), (None, None, 2), (Some(Source::Imessage), None, 3), (None, Some(now - 60_000), 1)]
        {
            // What is unread, by the per-message condition alone: no floor, no paging.
            let expected: Vec<String> = store
                .database()
                .read(|tx| {
                    let sql = format!(
                        "SELECT m.id FROM messages m JOIN channels c ON c.key = m.channel WHERE {} \
                         AND m.sent_at >= ?2 ORDER BY m.sent_at, m.id",
                        channels::unread_to("?1")
                    );
                    let rows = tx
                        .prepare(&sql)?
                        .query_map(rusqlite::params![agent, since.unwrap_or(i64::MIN)], |r| r.get(0))?
                        .collect::<rusqlite::Result<_>>()?;
                    Ok(rows)
                })
                .expect("expected");
            let mut q = UnreadQuery { since, after: None, source, channel_id: None, limit };
            let mut paged = Vec::new();
            loop {
                // The walk first: a page raises the agent's unread floor to its first
                // message, so a merge that skipped an older one would not be hidden.
                let (walked, walked_since) = store.unread_merging(agent, &q, 0).expect("walked");
                let (merged, merged_since) = store.unread_merging(agent, &q, 16).expect("merged");
                let list = |v: &[crate::model::Envelope]| v.iter().map(|m| m.id.clone()).collect::<Vec<_>>();
                assert_eq!(list(&merged), list(&walked), "{agent} {q:?}");
                assert_eq!(merged_since, walked_since, "{agent} {q:?}");
                let Some(last) = merged.last() else { break };
                listed_total += merged.len();
                paged.extend(list(&merged));
                q.after = Some((last.sent_at, last.id.clone()));
            }
            assert_eq!(paged, expected, "{agent} {since:?}: every unread message, once, in order");
        }
    }
    // all (5 unread, 2 of them a2's read), listed (a1, a2), other, from-now's later one.
    assert!(listed_total > 40, "the comparison covered pages: {listed_total}");
}

/// SQLite's plan for `sql` with `params` bound, one step a line.
fn query_plan(store: &Store, sql: &str, params: &[&str]) -> String {
    store
        .database()
        .read(|tx| {
            let mut stmt = tx.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
            let steps = stmt
                .query_map(rusqlite::params_from_iter(params), |r| r.get::<_, String>(3))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(steps.join("\n"))
        })
        .expect("plan")
}

/// Without statistics, SQLite's plans depend on the schema and the query alone, so a plan
/// here is the plan at a million messages. A query of messages an agent may see must walk
/// its own index, never start at the allowed channels (`channels_by_state`) and sort all
/// their messages: a search for a two-character Japanese word did, and took 650 ms.
#[test]
fn queries_of_visible_messages_never_start_at_the_allowed_channels() {
    let (_dir, store) = store();
    let shapes = [
        // The search for short terms: the indexed texts, newest first.
        format!(
            "SELECT m.rowid FROM messages_cjk JOIN messages m ON m.rowid = messages_cjk.rowid \
             JOIN channels c ON c.key = m.channel WHERE instr(lower(messages_cjk.text), 'ab') > 0 AND {} \
             AND NOT m.unsent ORDER BY messages_cjk.rowid DESC LIMIT 20",
            channels::visible_to("?1")
        ),
        // The unread list's walk in time order.
        format!(
            "SELECT m.rowid FROM messages m INDEXED BY messages_by_time JOIN channels c ON c.key = m.channel \
             WHERE (m.sent_at, m.id) >= (0, '') AND {} ORDER BY m.sent_at, m.id LIMIT 100",
            channels::unread_in_scan_to("?1")
        ),
    ];
    for sql in shapes {
        let plan = query_plan(&store, &sql, &["a1"]);
        let first = plan.lines().next().unwrap_or_default();
        assert!(first.contains("messages_cjk") || first.contains(" m "), "starts elsewhere:\n{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "sorts:\n{plan}");
    }
}

#[test]
fn marking_read_starts_at_the_ids() {
    let (_dir, store) = store();
    let plan = query_plan(&store, &super::messages::mark_read_sql(), &["a1", "[]", "0"]);
    let first = plan.lines().find(|l| l.contains("SCAN") || l.contains("SEARCH")).unwrap_or_default();
    assert!(first.contains("SCAN j"), "starts elsewhere:\n{plan}");
    assert!(
        plan.contains("SEARCH m USING INDEX sqlite_autoindex_messages_1 (id=?)"),
        "finds messages otherwise:\n{plan}"
    );
}

#[test]
fn from_now_hides_what_was_stored_before_the_approval() {
    let (_dir, store) = store();
    store.create_agent("bot").expect("agent");
    let report = ingest(&store, "a", vec![msg("g1", "before", now_ms())]);
    // Stored a second before the approval (within one millisecond, it would count as now).
    store
        .database()
        .write(|tx| Ok(tx.execute("UPDATE messages SET ingested_at = ingested_at - 1000", [])?))
        .expect("stored earlier");
    store.approve_channel(&report.channel_id, HistoryRelease::FromNow, None, false).expect("approve");
    assert!(unread(&store, "bot").is_empty());
    ingest(&store, "a", vec![msg("g2", "after", now_ms())]);
    assert_eq!(unread(&store, "bot"), ["after"]);
}

#[test]
fn a_message_that_arrives_late_with_an_older_time_is_still_unread() {
    let (_dir, store) = store();
    store.create_agent("bot").expect("agent");
    let now = now_ms();
    let report = ingest(&store, "a", vec![msg("g2", "newer", now)]);
    store.approve_channel(&report.channel_id, HistoryRelease::All, None, false).expect("approve");
    assert_eq!(unread(&store, "bot"), ["newer"]);
    assert_eq!(store.mark_read("bot", &report.inserted).expect("read"), 1);
    assert!(unread(&store, "bot").is_empty());
    // Synced late from another device, an hour older than what was read.
    ingest(&store, "a", vec![msg("g1", "older", now - 3_600_000)]);
    assert_eq!(unread(&store, "bot"), ["older"], "the floor moved back for it");
    // Read state is per agent.
    store.create_agent("other").expect("agent");
    assert_eq!(unread(&store, "other"), ["older", "newer"]);
}

#[test]
fn marking_read_moves_the_floor_only_over_what_was_read() {
    let (_dir, store) = store();
    store.create_agent("bot").expect("agent");
    let now = now_ms() - 1_000;
    let texts = ["one", "two", "three", "four", "five"];
    let msgs = texts.iter().enumerate().map(|(i, t)| msg(&format!("g{i}"), t, now + i as i64)).collect();
    let report = ingest(&store, "a", msgs);
    store.approve_channel(&report.channel_id, HistoryRelease::All, None, false).expect("approve");
    let ids = &report.inserted;
    let floor = || -> (i64, String) {
        store
            .database()
            .read(|tx| {
                Ok(tx.query_row("SELECT floor_at, floor_id FROM agents WHERE id = 'bot'", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?)
            })
            .expect("floor")
    };
    assert_eq!(unread(&store, "bot"), texts);
    let start = floor();
    // Read out of order: the oldest unread stays, and the floor does not pass it.
    store.mark_read("bot", &ids[1..3]).expect("read");
    assert_eq!(unread(&store, "bot"), ["one", "four", "five"]);
    assert!(floor() <= (now, ids[0].clone()), "the floor passed an unread message");
    // The oldest read too: the floor moves to the first message still unread.
    store.mark_read("bot", &ids[..1]).expect("read");
    assert_eq!(floor(), (now + 3, ids[3].clone()), "from {start:?}");
    assert_eq!(unread(&store, "bot"), ["four", "five"]);
    store.mark_read("bot", &ids[3..]).expect("read");
    assert!(unread(&store, "bot").is_empty());
    // A message that arrives late with an older time lowers it again.
    ingest(&store, "a", vec![msg("late", "late", now - 1)]);
    assert_eq!(unread(&store, "bot"), ["late"]);
}

#[test]
fn context_stays_inside_the_channel() {
    let (_dir, store) = store();
    let now = now_ms();
    let a =
        ingest(&store, "a", vec![msg("a1", "a one", now), msg("a2", "a two", now + 1), msg("a3", "a three", now + 2)]);
    let b = ingest(&store, "b", vec![msg("b1", "b one", now + 1)]);
    store.approve_channel(&a.channel_id, HistoryRelease::All, None, false).expect("approve");
    store.approve_channel(&b.channel_id, HistoryRelease::All, None, false).expect("approve");
    let around = &a.inserted[1];
    let ctx: Vec<String> =
        store.context("bot", &a.channel_id, around, 5, 5).expect("context").into_iter().map(|m| m.text).collect();
    assert_eq!(ctx, ["a one", "a two", "a three"]);
    let err = store.context("bot", &a.channel_id, &b.inserted[0], 5, 5).expect_err("another channel's message");
    assert_eq!(err.code, ErrorCode::MessageNotFound);
}

fn new_send<'a>(channel: &'a str, key: Option<(&'a str, [u8; 32])>, status: OutboxStatus) -> NewSend<'a> {
    NewSend {
        agent_id: "bot",
        idempotency: key,
        channel_id: channel,
        text: "hi",
        reply_to: None,
        attachments: &[],
        status,
        held_bounds: super::HELD_BOUNDS,
        held_reason: None,
        read_from: &[],
    }
}

#[test]
fn a_send_with_a_known_key_is_the_earlier_send() {
    let (_dir, store) = store();
    store.create_agent("bot").expect("agent");
    let ch = ingest(&store, "a", vec![msg("g1", "hello", now_ms())]).channel_id;
    let key = Some(("key-1", [7u8; 32]));
    let SendLookup::New(first) = store.record_send(&new_send(&ch, key, OutboxStatus::Held)).expect("first") else {
        panic!("a new send")
    };
    let SendLookup::Replay(again) = store.record_send(&new_send(&ch, key, OutboxStatus::Held)).expect("again") else {
        panic!("the earlier send")
    };
    assert_eq!(again.id, first.id);
    assert_eq!(store.outbox(None, 10).expect("outbox").len(), 1, "recorded once");
}

#[test]
fn a_held_send_is_claimed_once_and_settles_once() {
    let (_dir, store) = store();
    store.create_agent("bot").expect("agent");
    let ch = ingest(&store, "a", vec![msg("g1", "hello", now_ms())]).channel_id;
    store.approve_channel(&ch, HistoryRelease::All, Some(SendPolicy::Review), false).expect("approve");
    let SendLookup::New(held) = store.record_send(&new_send(&ch, None, OutboxStatus::Held)).expect("held") else {
        panic!("a new send")
    };
    assert_eq!(store.claim_held(&held.id, DecidedVia::Mac).expect("claim").status, OutboxStatus::Sending);
    assert_eq!(store.claim_held(&held.id, DecidedVia::Mac).expect_err("claimed twice").code, ErrorCode::Conflict);
    let sent = SendOutcome::Sent { platform_id: "p-1".into(), sent_at: now_ms(), other_parts: Vec::new() };
    assert_eq!(store.finish_send(&held.id, &sent).expect("sent").status, OutboxStatus::Sent);
    assert_eq!(store.finish_send(&held.id, &sent).expect_err("settled twice").code, ErrorCode::Conflict);
    // The delivered send is now the channel's outbound message, once.
    let tail = store.channel_tail(&ch, 10).expect("tail");
    let outbound: Vec<_> = tail.iter().filter(|m| m.direction == Direction::Outbound).collect();
    assert_eq!(outbound.len(), 1);
    assert_eq!((outbound[0].text.as_str(), outbound[0].agent_id.as_deref()), ("hi", Some("bot")));
}

/// Messages can mark a row it reported sent not delivered afterwards: a source finds the
/// recent sent sends with their parts, and the one it reports becomes `failed`, once, its
/// message saying why.
#[test]
fn a_sent_send_the_platform_fails_later_becomes_failed_and_its_message_says_why() {
    let (_dir, store) = store();
    store.create_agent("bot").expect("agent");
    let ch = ingest(&store, "a", vec![msg("g1", "hello", now_ms())]).channel_id;
    store.approve_channel(&ch, HistoryRelease::All, Some(SendPolicy::Auto), false).expect("approve");
    let since = now_ms();
    let mut ids = Vec::new();
    for (i, other_parts) in [vec![], vec!["p-1-file".to_owned()]].into_iter().enumerate() {
        let SendLookup::New(send) = store.record_send(&new_send(&ch, None, OutboxStatus::Sending)).expect("send")
        else {
            panic!("a new send")
        };
        let sent = SendOutcome::Sent { platform_id: format!("p-{i}"), sent_at: since + i as i64, other_parts };
        store.finish_send(&send.id, &sent).expect("sent");
        ids.push(send.id);
    }
    let recent = |since: i64, limit: u32| store.sent_since(Source::Imessage, since, limit).expect("recent");
    let newer = SentSend { id: ids[1].clone(), parts: vec!["p-1".into(), "p-1-file".into()] };
    let older = SentSend { id: ids[0].clone(), parts: vec!["p-0".into()] };
    assert_eq!(recent(since, 10), [newer.clone(), older.clone()]);
    assert_eq!(recent(since, 1), [newer]);
    assert_eq!(recent(since + 1, 10).len(), 1, "only those sent since");
    assert!(store.sent_since(Source::Discord, since, 10).expect("discord").is_empty());

    let why = "Messages could not deliver p-1-file (error 25: Not Delivered) after marking it sent";
    let failed = store.fail_after_sent(&ids[1], why).expect("fail").expect("it was sent");
    assert_eq!(failed.status, OutboxStatus::Failed);
    assert_eq!(failed.error_code.as_deref(), Some("PLATFORM_SEND_FAILED"));
    assert_eq!(failed.error_message.as_deref(), Some(why));
    assert_eq!(store.fail_after_sent(&ids[1], "again").expect("again"), None, "once");
    assert_eq!(recent(since, 10), [older], "a failed send is not looked at again");
    assert_eq!(store.visible_message("bot", &ids[1]).expect("message").delivery_failed.as_deref(), Some(why));
    assert_eq!(store.visible_message("bot", &ids[0]).expect("message").delivery_failed, None);
}

/// No unique index keeps platform ids apart since migration 0014: a second send the
/// platform reports under the first one's id fails instead of storing the message twice.
#[test]
fn two_sends_under_one_platform_id_store_one_message() {
    let (_dir, store) = store();
    store.create_agent("bot").expect("agent");
    let ch = ingest(&store, "a", vec![msg("g1", "hello", now_ms())]).channel_id;
    store.approve_channel(&ch, HistoryRelease::All, Some(SendPolicy::Auto), false).expect("approve");
    let sent = SendOutcome::Sent { platform_id: "p-1".into(), sent_at: now_ms(), other_parts: Vec::new() };
    let mut results = Vec::new();
    for _ in 0..2 {
        let SendLookup::New(send) = store.record_send(&new_send(&ch, None, OutboxStatus::Sending)).expect("send")
        else {
            panic!("a new send")
        };
        results.push(store.finish_send(&send.id, &sent).map(|item| item.status));
    }
    assert_eq!(results[0].as_ref().ok(), Some(&OutboxStatus::Sent));
    assert!(results[1].is_err(), "{:?}", results[1]);
    let tail = store.channel_tail(&ch, 10).expect("tail");
    assert_eq!(tail.iter().filter(|m| m.direction == Direction::Outbound).count(), 1);
}

#[test]
fn a_send_in_flight_when_amc_stopped_becomes_unknown_and_is_never_retried() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("amc.db");
    let (ch, id) = {
        let store = Store::open(&path).expect("open");
        store.create_agent("bot").expect("agent");
        let ch = ingest(&store, "a", vec![msg("g1", "hello", now_ms())]).channel_id;
        let SendLookup::New(s) = store.record_send(&new_send(&ch, None, OutboxStatus::Sending)).expect("send") else {
            panic!("a new send")
        };
        (ch, s.id)
    };
    let store = Store::open(&path).expect("reopen");
    assert_eq!(store.recover_interrupted_sends().expect("recover"), std::slice::from_ref(&id));
    assert_eq!(store.outbox_item(&id).expect("item").status, OutboxStatus::Unknown);
    assert!(store.recover_interrupted_sends().expect("again").is_empty());
    assert_eq!(store.claim_held(&id, DecidedVia::Mac).expect_err("not held").code, ErrorCode::Conflict);
    assert!(store.channel_tail(&ch, 10).expect("tail").iter().all(|m| m.direction == Direction::Inbound));
}

#[test]
fn settings_of_an_unknown_channel_are_not_found() {
    let (_dir, store) = store();
    for err in [
        store.set_send_policy("ch_nope", SendPolicy::Auto).expect_err("policy"),
        store.block_channel("ch_nope").expect_err("block"),
        store.approve_channel("ch_nope", HistoryRelease::All, None, false).expect_err("approve"),
    ] {
        assert_eq!(err.code, ErrorCode::NotFound);
    }
}

/// The rowids of the messages a search index finds for an FTS5 expression, after checking
/// that both indexes are intact. (`messages_fts` holds only the messages not unsent, so it
/// cannot be checked row for row against `messages`; the searches below do that.)
fn indexed(store: &Store, table: &str, matching: &str) -> Vec<i64> {
    store
        .database()
        .write(|tx| {
            for t in ["messages_fts", "messages_cjk"] {
                tx.execute(&format!("INSERT INTO {t} ({t}) VALUES ('integrity-check')"), [])?;
            }
            let mut stmt = tx.prepare(&format!("SELECT rowid FROM {table} WHERE {table} MATCH ?1 ORDER BY rowid"))?;
            let rows = stmt.query_map([matching], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
        .expect("intact, and searched")
}

#[test]
fn messages_stored_before_the_index_are_indexed_newest_first_and_kept_right_meanwhile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("amc.db");
    let now = now_ms();
    {
        let store = Store::open(&path).expect("open");
        let texts = ["alpha one", "東京に行く", "alpha to edit", "alpha to unsend", "ภาษาไทย alpha"];
        let messages = texts.iter().enumerate().map(|(i, t)| msg(&format!("g{i}"), t, now + i as i64)).collect();
        ingest(&store, "a", messages);
        // As a database from before migration 0010: its index is started over.
        super::back_to_0009(&path).expect("downgrade");
    }
    let store = Store::open(&path).expect("migrate");
    assert_eq!(indexed(&store, "messages_fts", "alpha"), Vec::<i64>::new(), "nothing indexed yet");
    // Edits and unsends of messages not indexed yet, and new messages, meanwhile.
    ingest(&store, "a", vec![IncomingMessage { edited_at: Some(now + 9), ..msg("g2", "alpha edited", now + 2) }]);
    ingest(&store, "a", vec![IncomingMessage { unsent: true, ..msg("g3", "", now + 3) }]);
    ingest(&store, "a", vec![msg("g5", "alpha new 大阪で会おう", now + 5)]);
    assert_eq!(indexed(&store, "messages_fts", "alpha"), [6], "a new message is indexed at once");

    let steps: Vec<_> = std::iter::from_fn(|| store.index_more(2).expect("index")).collect();
    assert_eq!(steps, [IndexProgress { done: 2, total: 5 }, IndexProgress { done: 4, total: 5 }]);
    assert_eq!(indexed(&store, "messages_fts", "alpha"), [1, 3, 5, 6], "the unsent one is not");
    assert_eq!(indexed(&store, "messages_fts", "edit"), Vec::<i64>::new(), "the text as edited");
    assert_eq!(indexed(&store, "messages_cjk", "\"東京に\""), [2]);
    assert_eq!(indexed(&store, "messages_cjk", "\"ภาษา\""), [5]);
    assert_eq!(indexed(&store, "messages_cjk", "\"大阪で\""), [6]);
    assert_eq!(indexed(&store, "messages_cjk", "\"alpha\""), [5, 6], "only texts in a spaceless script");
    assert_eq!(store.index_more(2).expect("done"), None);
    // Once indexed, edits and unsends keep both indexes right.
    ingest(&store, "a", vec![IncomingMessage { edited_at: Some(now + 10), ..msg("g1", "京都 instead", now + 1) }]);
    ingest(&store, "a", vec![IncomingMessage { unsent: true, ..msg("g4", "", now + 4) }]);
    assert_eq!(indexed(&store, "messages_cjk", "\"東京に\""), Vec::<i64>::new());
    assert_eq!(indexed(&store, "messages_fts", "instead"), [2]);
    assert_eq!(indexed(&store, "messages_cjk", "\"ภาษา\""), Vec::<i64>::new());
}

#[test]
fn the_envelope_width_is_the_number_of_envelope_columns() {
    let (_dir, store) = store();
    let count = store
        .database()
        .read(|tx| {
            let sql = format!(
                "SELECT {} FROM messages m JOIN channels c ON c.key = m.channel",
                super::messages::ENVELOPE_COLS
            );
            Ok(tx.prepare(&sql)?.column_count())
        })
        .expect("prepare");
    assert_eq!(count, super::messages::ENVELOPE_WIDTH);
}

#[test]
fn a_first_import_is_indexed_afterwards_in_bulk_and_nothing_is_missed() {
    let (_dir, store) = store();
    let now = now_ms();
    ingest(&store, "a", vec![msg("g0", "alpha before", now)]);
    store.defer_indexing().expect("defer");
    let imported: Vec<_> = (1..=5).map(|i| msg(&format!("g{i}"), &format!("alpha imported {i}"), now + i)).collect();
    ingest(&store, "a", imported);
    ingest(&store, "a", vec![IncomingMessage { edited_at: Some(now + 9), ..msg("g2", "alpha edited", now + 2) }]);
    ingest(&store, "a", vec![IncomingMessage { unsent: true, ..msg("g3", "", now + 3) }]);
    assert_eq!(indexed(&store, "messages_fts", "alpha"), [1], "the import waits for the end");
    store.end_deferral().expect("end");
    ingest(&store, "a", vec![msg("g6", "alpha after", now + 6)]);
    assert_eq!(indexed(&store, "messages_fts", "alpha"), [1, 7], "new messages are indexed at once again");
    while store.index_more(2).expect("index").is_some() {}
    assert_eq!(indexed(&store, "messages_fts", "alpha"), [1, 2, 3, 5, 6, 7]);
    assert_eq!(indexed(&store, "messages_fts", "edited"), [3]);

    // A deferral a crash never ended: the next start indexes it all the same.
    store.defer_indexing().expect("defer");
    ingest(&store, "a", vec![msg("g7", "beta during", now + 7)]);
    while store.index_more(1).expect("index").is_some() {}
    ingest(&store, "a", vec![msg("g8", "beta after", now + 8)]);
    assert_eq!(indexed(&store, "messages_fts", "beta"), [8, 9]);
}

#[test]
fn a_deferral_never_reopens_rows_the_indexer_already_indexed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("amc.db");
    let now = now_ms();
    {
        let store = Store::open(&path).expect("open");
        let texts = ["gamma one", "gamma two", "gamma secret three", "gamma four"];
        let messages = texts.iter().enumerate().map(|(i, t)| msg(&format!("g{i}"), t, now + i as i64)).collect();
        ingest(&store, "a", messages);
        super::back_to_0009(&path).expect("downgrade");
    }
    // A backlog from migration 0010, its top half already indexed.
    let store = Store::open(&path).expect("migrate");
    assert!(store.index_more(2).expect("index").is_some());
    // A first import begins now: it must not stretch the backlog over the indexed rows.
    store.defer_indexing().expect("defer");
    ingest(&store, "a", vec![IncomingMessage { unsent: true, ..msg("g2", "", now + 2) }]);
    ingest(&store, "a", vec![msg("g4", "gamma imported", now + 4)]);
    store.end_deferral().expect("end");
    while store.index_more(2).expect("index").is_some() {}
    assert_eq!(indexed(&store, "messages_fts", "secret"), Vec::<i64>::new(), "the unsent text is gone");
    assert_eq!(indexed(&store, "messages_fts", "gamma"), [1, 2, 4, 5]);
}

/// The insert trigger's text, if it is there.
fn insert_trigger_sql(store: &Store) -> Option<String> {
    store
        .database()
        .read(|tx| {
            Ok(tx
                .query_row(
                    "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'messages_fts_insert'",
                    [],
                    |r| r.get(0),
                )
                .optional()?)
        })
        .expect("schema")
}

#[test]
fn a_deferral_a_crash_never_ended_indexes_everything_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("amc.db");
    let now = now_ms();
    let migrated = {
        let store = Store::open(&path).expect("open");
        let migrated = insert_trigger_sql(&store).expect("the migration's trigger");
        ingest(&store, "a", vec![msg("g0", "delta before", now)]);
        store.defer_indexing().expect("defer");
        ingest(&store, "a", (1..=3).map(|i| msg(&format!("g{i}"), &format!("delta {i}"), now + i)).collect());
        migrated
        // Dropped here without end_deferral, as a crash would leave it.
    };
    let store = Store::open(&path).expect("reopen");
    ingest(&store, "a", vec![msg("g4", "delta while the backlog waits", now + 4)]);
    while store.index_more(2).expect("index").is_some() {}
    ingest(&store, "a", vec![msg("g5", "delta after", now + 5)]);
    assert_eq!(indexed(&store, "messages_fts", "delta"), [1, 2, 3, 4, 5, 6], "nothing missed, nothing twice");
    assert_eq!(insert_trigger_sql(&store).as_deref(), Some(migrated.as_str()), "the same trigger is back");

    // An ended deferral puts back the same trigger too.
    store.defer_indexing().expect("defer");
    ingest(&store, "a", vec![msg("g6", "delta imported", now + 6)]);
    store.end_deferral().expect("end");
    assert_eq!(insert_trigger_sql(&store).as_deref(), Some(migrated.as_str()));
    ingest(&store, "a", vec![msg("g7", "delta new", now + 7)]);
    assert_eq!(indexed(&store, "messages_fts", "delta"), [1, 2, 3, 4, 5, 6, 8], "the new one at once");
    while store.index_more(2).expect("index").is_some() {}
    assert_eq!(indexed(&store, "messages_fts", "delta"), [1, 2, 3, 4, 5, 6, 7, 8]);
}

/// The log of an agent's sends keeps its newest 10,000 once they are a day old, whatever
/// the agent sent: what waits for the person, what is younger than a day, what an
/// idempotency record still names, and other agents' sends all stay.
#[test]
fn the_send_log_keeps_each_agents_newest_sends() {
    let (_dir, store) = store();
    let ch = ingest(&store, "a", vec![msg("g1", "hello", now_ms())]).channel_id;
    let (kept, kept_bytes) = super::SEND_LOG_KEPT;
    let day_ago = now_ms() - super::outbox::IDEMPOTENCY_TTL_MS - 1;
    let old = kept as i64 + 500;
    store
        .database().write(|tx| {
            let mut insert = tx.prepare(
                "INSERT INTO outbox (id, agent_id, channel_id, text, status, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, 'hi', ?4, ?5, ?5)",
            )?;
            for i in 0..old {
                insert.execute(rusqlite::params![format!("msg_bot_{i:06}"), "bot", ch, "sent", day_ago - old + i])?;
            }
            for (id, agent, status, at) in [
                ("msg_held", "bot", "held", day_ago - old - 1),
                ("msg_other", "other", "sent", day_ago - old - 1),
                ("msg_young", "bot", "failed", now_ms()),
            ] {
                insert.execute(rusqlite::params![id, agent, ch, status, at])?;
            }
            tx.execute(
                "INSERT INTO idempotency (agent_id, key, request_hash, outbox_id, created_at) VALUES ('bot', 'k', x'00', 'msg_bot_000000', ?1)",
                [now_ms()],
            )?;
            Ok(())
        })
        .expect("insert");
    let pruned = store.prune_send_log(kept, kept_bytes).expect("prune");
    assert_eq!(pruned as i64, old - kept as i64);
    let left: Vec<String> = store
        .database()
        .read(|tx| {
            let mut q =
                tx.prepare("SELECT id FROM outbox WHERE id NOT LIKE 'msg_bot_%' OR id = 'msg_bot_000000' ORDER BY id")?;
            Ok(q.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?)
        })
        .expect("read");
    assert_eq!(left, ["msg_bot_000000", "msg_held", "msg_other", "msg_young"]);
    let bot: i64 = store
        .database()
        .read(|tx| Ok(tx.query_row("SELECT count(*) FROM outbox WHERE agent_id = 'bot'", [], |r| r.get(0))?))
        .expect("count");
    // The newest 10,000 (the young one among them), the held one, and the one still named.
    assert_eq!(bot, kept as i64 + 2);
    assert_eq!(store.prune_send_log(kept, kept_bytes).expect("again"), 0);
}

/// Each message's platform id and stored classification (`messages.secrets`), by rowid.
fn classified(store: &Store) -> Vec<(String, Option<i64>)> {
    store
        .database()
        .read(|tx| {
            let mut stmt = tx.prepare("SELECT platform_id, secrets FROM messages ORDER BY rowid")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .expect("classified")
}

#[test]
fn messages_stored_before_secrets_were_looked_for_are_classified_by_the_backlog() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("amc.db");
    let now = now_ms();
    // 3,000 messages: past one batch of the backlog (2,000). Every tenth holds a code.
    let text = |i: usize| {
        if i.is_multiple_of(10) {
            format!("Your verification code is {}", 100_000 + i)
        } else {
            format!("lunch at {i}")
        }
    };
    {
        let store = Store::open(&path).expect("open");
        let messages = (0..3_000).map(|i| msg(&format!("g{i}"), &text(i), now - 10_000 + i as i64)).collect();
        ingest(&store, "a", messages);
        // As a database from before migration 0020 (and 0010): nothing classified.
        super::back_to_0009(&path).expect("downgrade");
    }
    let store = Store::open(&path).expect("migrate");
    assert!(classified(&store).iter().all(|(_, c)| c.is_none()), "nothing classified yet");
    let channel =
        ingest(&store, "a", vec![msg("g-new", "Reset: https://example.com/reset?token=9f8e7d6c5b4a", now)]).channel_id;
    // Meanwhile an old message is edited to hold a code: it is classified at once.
    let edit = IncomingMessage { edited_at: Some(now), ..msg("g1", "code 424242 is your login code", now - 9_999) };
    ingest(&store, "a", vec![edit]);
    let rows = classified(&store);
    assert_eq!((rows[1].1, rows[3_000].1), (Some(1), Some(2)), "classified as written");

    // A row whose text SQLite holds as bytes that are not UTF-8 fails nothing.
    store
        .database()
        .write(|tx| Ok(tx.execute("UPDATE messages SET text = X'FF6C756E6368' WHERE platform_id = 'g2'", [])?))
        .expect("odd row");
    assert!(!store.reclassify_if_rules_changed().expect("rules"), "classified by these rules");
    let steps: Vec<_> = std::iter::from_fn(|| store.classify_more(2_000).expect("classify")).collect();
    assert_eq!(steps, [IndexProgress { done: 2_000, total: 3_000 }], "progress, then done");
    let rows = classified(&store);
    let expected = |i: usize| Some(if i == 1 || i.is_multiple_of(10) { 1 } else { 0 });
    for (i, (id, c)) in rows.iter().take(3_000).enumerate() {
        assert_eq!(*c, expected(i), "{id}");
    }
    assert_eq!(store.admin_channel(&channel).expect("channel").secret_count, 302);

    // Other rules: every message is looked at again.
    store.set_setting("secrets_rules", "0").expect("older rules");
    store.database().write(|tx| Ok(tx.execute("UPDATE messages SET secrets = NULL", [])?)).expect("forget");
    assert!(store.reclassify_if_rules_changed().expect("rules"));
    while store.classify_more(2_000).expect("classify").is_some() {}
    assert_eq!(store.admin_channel(&channel).expect("channel").secret_count, 302);
    assert!(classified(&store).iter().all(|(_, c)| c.is_some()));
}

#[test]
fn a_channels_codes_are_shown_to_the_agents_the_person_names() {
    let (_dir, store) = store();
    for agent in ["claude", "codex"] {
        store.create_agent(agent).expect("agent");
    }
    let a = ingest(&store, "a", vec![msg("a0", "hi", now_ms())]).channel_id;
    let b = ingest(&store, "b", vec![msg("b0", "hi", now_ms())]).channel_id;
    let shown = |agent: &str| {
        let mut ids: Vec<String> = store.codes_shown_to(agent).expect("shown").into_iter().collect();
        ids.sort();
        ids
    };
    assert_eq!(shown("claude"), Vec::<String>::new(), "hidden by default");
    store.set_channel_codes(&a, CodesShown::Some, &["claude".to_owned()]).expect("some");
    store.set_channel_codes(&b, CodesShown::Shown, &[]).expect("shown");
    // Ids made in one millisecond need not sort in the order they were made.
    let mut both = [a.clone(), b.clone()];
    both.sort();
    assert_eq!(shown("claude"), both);
    assert_eq!(shown("codex"), std::slice::from_ref(&b));
    // Shown to all, then back to some: the list is the one given last.
    store.set_channel_codes(&a, CodesShown::Shown, &[]).expect("shown");
    assert_eq!(store.admin_channel(&a).expect("a").codes_agents, Vec::<String>::new());
    store.set_channel_codes(&b, CodesShown::Hidden, &[]).expect("hidden");
    assert_eq!(shown("codex"), std::slice::from_ref(&a));
    let unknown = store.set_channel_codes(&a, CodesShown::Some, &["nobody".to_owned()]).expect_err("unknown");
    assert_eq!(unknown.code, ErrorCode::NotFound);
    assert_eq!(store.admin_channel(&a).expect("a").codes, CodesShown::Shown, "a refusal changes nothing");
    // No such channel.
    assert_eq!(
        store.set_channel_codes("ch_nope", CodesShown::Hidden, &[]).expect_err("no channel").code,
        ErrorCode::NotFound
    );
}

#[test]
fn a_short_code_senders_conversation_is_approved_only_when_confirmed() {
    let (_dir, store) = store();
    let short = ingest(&store, "any;-;72975", vec![msg("s0", "Your code is 918273", now_ms())]).channel_id;
    let named = ingest(&store, "any;-;AMAZON", vec![msg("n0", "Your code is 918273", now_ms())]).channel_id;
    let person = ingest(&store, "any;-;+15551234567", vec![msg("p0", "hi", now_ms())]).channel_id;
    for id in [&short, &named] {
        assert!(store.admin_channel(id).expect("channel").sensitive);
        let refused = store.approve_channel(id, HistoryRelease::All, None, false).expect_err("asked again");
        assert_eq!(refused.code, ErrorCode::ConfirmationRequired);
        assert_eq!(store.admin_channel(id).expect("channel").state, ChannelState::Pending);
        assert_eq!(
            store.approve_channel(id, HistoryRelease::All, None, true).expect("confirmed").state,
            ChannelState::Allowed
        );
    }
    assert!(!store.admin_channel(&person).expect("channel").sensitive);
    store.approve_channel(&person, HistoryRelease::All, None, false).expect("a person's number");
}

#[test]
fn the_person_is_never_taken_for_a_short_code_sender() {
    let (_dir, store) = store();
    let now = now_ms();
    // The person's iMessages are stored as from `me`, a name as short as a sender id.
    let own = |id: &str, text: &str| {
        let mut m = msg(id, text, now);
        m.sender = SenderInfo { id: "me".into(), display_name: None, is_self: true };
        m
    };
    let texts = ["The rent is 1850", "He was born in 1987", "Room 40213, floor 4", "Use 482913 as the door code"];
    let mut messages: Vec<IncomingMessage> = texts.iter().enumerate().map(|(i, t)| own(&format!("o{i}"), t)).collect();
    // The last says "code" by a number: a code whoever wrote it.
    let mut bank = msg("b0", "918273", now);
    bank.sender = SenderInfo { id: "72975".into(), display_name: None, is_self: false };
    messages.push(bank);
    let channel = ingest(&store, "any;-;72975", messages).channel_id;
    assert_eq!(store.admin_channel(&channel).expect("channel").secret_count, 2, "the door code and the bank's");
}

#[test]
fn a_one_to_one_message_stored_from_unknown_is_given_the_chats_handle_by_the_migration() {
    let (dir, store) = store();
    let unnamed = |id: &str, text: &str| amc_testkit::incoming(id, text).at(1).from("unknown", None).build();
    store.ingest(Source::Imessage, &spec("SMS;-;72975"), &[unnamed("u1", "661011")], None).expect("ingest");
    let group = ChannelSpec {
        platform_id: "iMessage;+;chat9".into(),
        name: "g".into(),
        kind: ChannelKind::Group,
        readers: None,
    };
    store.ingest(Source::Imessage, &group, &[unnamed("u2", "hi")], None).expect("ingest");
    // As a store of the release before left it: the migration not yet run (nor the later
    // ones that change a table's columns).
    store
        .database()
        .write(|tx| {
            tx.execute_batch(crate::UNDO_0024)?;
            tx.execute_batch("ALTER TABLE messages DROP COLUMN not_a_code; DROP TABLE not_a_code_report;")?;
            Ok(tx.pragma_update(None, "user_version", 20)?)
        })
        .expect("version");
    drop(store);
    let store = Store::open(&dir.path().join("amc.db")).expect("open");
    let senders: Vec<(String, String)> = store
        .database()
        .read(|tx| {
            let mut stmt = tx.prepare("SELECT platform_id, sender_id FROM messages ORDER BY platform_id")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .expect("read");
    assert_eq!(senders, [("u1".to_owned(), "72975".to_owned()), ("u2".to_owned(), "unknown".to_owned())]);
}

/// A message taken back keeps no reactions: not those it had, and none from a reaction
/// or a reading of chat.db's tapback rows that still name it (a sweep, the newest-rows
/// look), whichever way it was taken back (a platform's row read as unsent, a deletion).
#[test]
fn a_message_taken_back_gets_no_reactions_from_a_reading_of_its_tapbacks() {
    let (_dir, store) = store();
    let now = now_ms();
    let heart = |target: &str| ReactionChange {
        target_platform_id: target.into(),
        reaction: Reaction {
            emoji: "❤️".into(),
            sender: SenderInfo { id: "+15550002222".into(), display_name: None, is_self: false },
        },
        added: true,
    };
    let reactions = |id: &str| {
        store
            .database()
            .read(|tx| {
                Ok(tx.query_row("SELECT reactions FROM messages WHERE platform_id = ?1", [id], |r| {
                    r.get::<_, String>(0)
                })?)
            })
            .expect("reactions")
    };
    ingest(&store, "a", vec![msg("g1", "hello", now), msg("g2", "there", now + 1)]);
    for id in ["g1", "g2"] {
        store.reset_reactions(Source::Imessage, &[(id.into(), vec![heart(id)])]).expect("reset");
        assert!(reactions(id).contains("❤️"), "{}", reactions(id));
    }
    // g1 read again as chat.db has it now, unsent; g2 deleted (as Discord reports it).
    ingest(&store, "a", vec![IncomingMessage { unsent: true, ..msg("g1", "", now) }]);
    store.mark_unsent(Source::Imessage, &["g2".into()]).expect("unsend");
    for id in ["g1", "g2"] {
        assert_eq!(reactions(id), "[]", "{id}: taken back");
        let reset = store.reset_reactions(Source::Imessage, &[(id.into(), vec![heart(id)])]).expect("reset");
        let applied = store.apply_reactions(Source::Imessage, &[heart(id)]).expect("apply");
        assert_eq!((reactions(id).as_str(), reset.len(), applied.len()), ("[]", 0, 0), "{id}: keeps none");
    }
}

#[test]
fn an_edit_takes_back_the_persons_word_that_a_message_holds_no_code() {
    let (_dir, store) = store();
    let report = ingest(&store, "any;-;+15550001111", vec![msg("n0", "the code is 482913", 1_000)]);
    let channel = report.channel_id;
    let id = store.channel_tail(&channel, 1).expect("tail").remove(0).id;
    let count = |store: &Store| store.admin_channel(&channel).expect("channel").secret_count;
    assert_eq!(count(&store), 1);
    // Said of a text the person did not see: refused, nothing changed.
    let stale = store.set_not_a_code(&id, true, &["called_the_code"], "the code is 000000").expect_err("stale");
    assert_eq!(stale.code, crate::error::ErrorCode::Conflict);
    store.set_not_a_code(&id, true, &["called_the_code"], "the code is 482913").expect("said");
    assert!(store.message_for_person(&id).expect("message").not_a_code);
    assert_eq!(count(&store), 0);
    // Its reactions or a repeat of the same text keep it; an edit of the text takes it back.
    ingest(&store, "any;-;+15550001111", vec![msg("n0", "the code is 482913", 1_000)]);
    assert!(store.message_for_person(&id).expect("message").not_a_code);
    let edited =
        amc_testkit::incoming("n0", "the code is 771204").at(1_000).edited(2_000).from("+15550001111", Some("Ada"));
    ingest(&store, "any;-;+15550001111", vec![edited.build()]);
    let now = store.message_for_person(&id).expect("message");
    assert_eq!((now.text.as_str(), now.not_a_code), ("the code is 771204", false));
    assert_eq!(count(&store), 1, "the new text is read for codes again");
}
