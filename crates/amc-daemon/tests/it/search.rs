//! `GET /messages/search` (the REST twin of `search_messages`): words and phrases, accents,
//! emoji and CJK, injection attempts, edits and unsends, what an agent may not see, and
//! paging.

use serde_json::{Value, json};

use amc_core::model::Source;
use amc_core::time::now_ms;

use super::harness::{Daemon, code, msg};

fn query(q: &str) -> String {
    amc_client::encode_query_value(q)
}

/// The texts found, best first.
async fn found(agent: &mut amc_client::Connection, q: &str) -> Vec<String> {
    let r = agent.get(&format!("/messages/search?query={}", query(q))).await.expect("search");
    assert_eq!(r.status, 200, "{q}: {:?}", r.json());
    let v: Value = r.json();
    v["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|h| h["message"]["text"].as_str().expect("text").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_phrases_accents_emoji_and_cjk_are_found() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let texts = [
        "Alex: the flight to Lisbon lands at 9",
        "Café at noon? 🎉",
        "see you at noon",
        "noon works, see you",
        "明日東京に行きます",
        "서울에서 만나요",
        "ไปกินข้าวที่ร้านนี้ไหม",
        "Tokyo flight 東京タワー",
        "nothing here",
    ];
    let msgs: Vec<_> = texts.iter().enumerate().map(|(i, t)| msg(&format!("m{i}"), t, now_ms())).collect();
    let (ch, _) = d.ingest(Source::Imessage, "a", msgs).await;
    d.approve(&ch, json!({ "history": "all" })).await;

    assert_eq!(found(&mut agent, "flight alex").await, ["Alex: the flight to Lisbon lands at 9"]);
    assert_eq!(found(&mut agent, "cafe").await, ["Café at noon? 🎉"], "accents are folded");
    assert_eq!(found(&mut agent, "CAFÉ noon").await, ["Café at noon? 🎉"]);
    assert_eq!(found(&mut agent, "\"see you at noon\"").await, ["see you at noon"], "a phrase keeps its order");
    let mut both = found(&mut agent, "see noon").await;
    both.sort();
    assert_eq!(both, ["noon works, see you", "see you at noon"]);
    assert_eq!(found(&mut agent, "🎉 cafe").await, ["Café at noon? 🎉"], "an emoji alone is no word");
    // Scripts written without spaces: any substring is found, short or long.
    let mut tokyo = found(&mut agent, "東京").await;
    tokyo.sort();
    assert_eq!(tokyo, ["Tokyo flight 東京タワー", "明日東京に行きます"]);
    assert_eq!(found(&mut agent, "東京に行").await, ["明日東京に行きます"]);
    assert_eq!(found(&mut agent, "に").await, ["明日東京に行きます"], "one character");
    assert_eq!(found(&mut agent, "서울").await, ["서울에서 만나요"], "a Korean word with its particle");
    assert_eq!(found(&mut agent, "กินข้าว").await, ["ไปกินข้าวที่ร้านนี้ไหม"]);
    assert_eq!(found(&mut agent, "flight 東京").await, ["Tokyo flight 東京タワー"], "mixed scripts");
    assert_eq!(found(&mut agent, "lisbon 東京").await, Vec::<String>::new(), "every term must match");
    assert_eq!(found(&mut agent, "京都").await, Vec::<String>::new());
    let r = agent.get(&format!("/messages/search?query={}", query("東京に行"))).await.expect("search").json();
    assert_eq!(r["results"][0]["excerpt"], "明日[東京に行]きます");
    let r = agent.get(&format!("/messages/search?query={}", query("東京"))).await.expect("search").json();
    let excerpts: Vec<&str> =
        r["results"].as_array().expect("results").iter().filter_map(|h| h["excerpt"].as_str()).collect();
    assert!(excerpts.contains(&"明日[東京]に行きます"), "{excerpts:?}");
    // The result carries the message with its channel, and an excerpt with the match marked.
    let r = agent.get(&format!("/messages/search?query={}", query("lisbon"))).await.expect("search").json();
    let hit = &r["results"][0];
    assert_eq!(hit["message"]["channel_id"], json!(ch));
    assert!(hit["excerpt"].as_str().is_some_and(|e| e.contains("[Lisbon]")), "{hit}");
    assert_eq!(r["next_cursor"], Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fts_syntax_from_an_agent_is_only_text_to_look_for() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let msgs = vec![
        msg("m1", "plan a OR b for the trip", now_ms()),
        msg("m2", "trip notes", now_ms()),
        msg("m3", "price: 20 - 5", now_ms()),
    ];
    let (ch, _) = d.ingest(Source::Imessage, "a", msgs).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    for hostile in [
        "\"",
        "*",
        "NEAR(trip",
        "trip OR",
        "-trip",
        "text:trip",
        "trip*",
        "\"trip",
        "trip\" OR \"x",
        "^trip",
        "{text}: trip",
    ] {
        let r = agent.get(&format!("/messages/search?query={}", query(hostile))).await.expect("search");
        assert!(r.status == 200 || code(&r) == "VALIDATION_FAILED", "{hostile}: {} {:?}", r.status, r.json());
    }
    // OR is a word to find, not an operator: only the message holding "OR" (and "trip").
    assert_eq!(found(&mut agent, "trip OR").await, ["plan a OR b for the trip"]);
    assert_eq!(found(&mut agent, "NEAR(trip").await, Vec::<String>::new(), "no message holds the word NEAR");
    assert_eq!(found(&mut agent, "price: 20").await, ["price: 20 - 5"]);
    for bad in ["", "*", "\"\"", "-"] {
        let r = agent.get(&format!("/messages/search?query={}", query(bad))).await.expect("search");
        assert_eq!(code(&r), "VALIDATION_FAILED", "{bad:?}");
    }
    // The other text parameter, like the query, never holds NUL.
    let r = agent.get("/messages/search?query=trip&sender=Ada%00").await.expect("search");
    assert_eq!(code(&r), "VALIDATION_FAILED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_replace_the_indexed_text_and_unsends_remove_it() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = d.ingest(Source::Imessage, "a", vec![msg("m1", "meet at the station", now_ms())]).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    assert_eq!(found(&mut agent, "station").await, ["meet at the station"]);
    let mut edited = msg("m1", "meet at the harbour", now_ms());
    edited.edited_at = Some(now_ms());
    d.ingest(Source::Imessage, "a", vec![edited]).await;
    assert_eq!(found(&mut agent, "station").await, Vec::<String>::new());
    assert_eq!(found(&mut agent, "harbour").await, ["meet at the harbour"]);
    let mut unsent = msg("m1", "", now_ms());
    unsent.unsent = true;
    d.ingest(Source::Imessage, "a", vec![unsent]).await;
    assert_eq!(found(&mut agent, "harbour").await, Vec::<String>::new(), "an unsent message is not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_finds_only_what_the_agent_may_see_and_pages() {
    let d = Daemon::start().await;
    let (mut coder, _) = d.agent("coder").await;
    d.agent("assistant").await;
    let note = |id: &str| msg(id, &format!("secret plan {id}"), now_ms());
    let (open, _) = d.ingest(Source::Imessage, "open", vec![note("o1"), note("o2"), note("o3")]).await;
    let (mine, _) = d.ingest(Source::Imessage, "only-assistant", vec![note("a1")]).await;
    let (pending, _) = d.ingest(Source::Imessage, "pending", vec![note("p1")]).await;
    let (blocked, _) = d.ingest(Source::Imessage, "blocked", vec![note("b1")]).await;
    let (later, _) = d.ingest(Source::Imessage, "from-now", vec![note("f1")]).await;
    d.approve(&open, json!({ "history": "all" })).await;
    d.approve(&mine, json!({ "history": "all", "agents": ["assistant"] })).await;
    d.approve(&later, json!({ "history": "from_now" })).await;
    d.admin().await.post(&format!("/admin/channels/{blocked}/block"), &json!({})).await.expect("block");
    let _ = pending;
    let mut all = found(&mut coder, "secret plan").await;
    all.sort();
    assert_eq!(all, ["secret plan o1", "secret plan o2", "secret plan o3"]);
    // The person sees every approved channel (from its released history).
    let r = d.admin().await.get(&format!("/admin/search?query={}", query("secret"))).await.expect("search").json();
    assert_eq!(r["results"].as_array().map(Vec::len), Some(4), "{r}");

    // Pages: two, then one, each message once.
    let first = coder.get("/messages/search?query=secret&limit=2").await.expect("search").json();
    assert_eq!(first["results"].as_array().map(Vec::len), Some(2));
    let cursor = first["next_cursor"].as_str().expect("a next page").to_owned();
    let second =
        coder.get(&format!("/messages/search?query=secret&limit=2&cursor={cursor}")).await.expect("search").json();
    assert_eq!(second["results"].as_array().map(Vec::len), Some(1));
    // A cursor from another search, a forged one, and out-of-range limits are refused.
    for q in [
        format!("query=plan&limit=2&cursor={cursor}"),
        "query=secret&cursor=abc".to_owned(),
        "query=secret&limit=0".into(),
        "query=secret&limit=51".into(),
        "limit=5".into(),
        format!("query=secret&channel_id={}", "x"),
    ] {
        let r = coder.get(&format!("/messages/search?{q}")).await.expect("search");
        assert_eq!(code(&r), "VALIDATION_FAILED", "{q}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_word_in_nearly_every_message_lists_the_newest_first_and_pages() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let n = amc_store::RANK_UP_TO as usize + 10;
    let base = now_ms() - n as i64 * 1000;
    let msgs: Vec<_> =
        (0..n).map(|i| msg(&format!("m{i}"), &format!("status update {i}"), base + i as i64 * 1000)).collect();
    let (ch, _) = d.ingest(Source::Imessage, "busy", msgs).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let first = agent.get("/messages/search?query=status&limit=3").await.expect("search").json();
    let texts: Vec<&str> =
        first["results"].as_array().expect("results").iter().filter_map(|h| h["message"]["text"].as_str()).collect();
    let newest: Vec<String> = (1..=3).map(|k| format!("status update {}", n - k)).collect();
    assert_eq!(texts, newest, "past the ranking limit, the newest first");
    let cursor = first["next_cursor"].as_str().expect("more");
    let next =
        agent.get(&format!("/messages/search?query=status&limit=3&cursor={cursor}")).await.expect("search").json();
    assert_eq!(next["results"][0]["message"]["text"], json!(format!("status update {}", n - 4)));
    // A rare word among them is still ranked, and found.
    assert_eq!(found(&mut agent, "\"update 42\"").await, ["status update 42"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_stored_before_the_index_are_found_once_indexed() {
    let d = Daemon::start().await;
    let (ch, _) = d.ingest(Source::Imessage, "a", vec![msg("old", "the boarding pass 搭乗券", now_ms())]).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    // As a database written before search existed (migration 0010 starts its index over).
    let db = d.config.db_path();
    let dir = d.stop().await;
    amc_store::back_to_0009(&db).expect("downgrade");

    let d = Daemon::start_in(dir, |_| {}, None).await;
    let (mut agent, _) = d.agent("claude").await;
    assert_eq!(found(&mut agent, "boarding").await, Vec::<String>::new(), "not indexed yet");
    d.amc.index_search_backlog().await;
    assert_eq!(found(&mut agent, "boarding").await, ["the boarding pass 搭乗券"]);
    assert_eq!(found(&mut agent, "搭乗").await, ["the boarding pass 搭乗券"]);
    let health = d.anon().await.get("/healthz").await.expect("health").json();
    assert!(health.get("search_index").is_none(), "{health}");
}

/// Whether a search ranks its matches or lists the newest first is decided over what the
/// agent may see: a word in thousands of messages of a hidden channel (pending, blocked,
/// or open only to another agent) must not change the order of the agent's own results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_channels_never_change_how_an_agents_results_are_ordered() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    d.agent("other").await;
    // Ranked, the message that says "parcel" three times in few words comes first; newest
    // first, it comes last.
    let t0 = now_ms() - 60_000;
    let visible = [
        (0, "parcel parcel parcel"),
        (1, "the parcel is somewhere in the building, ask at the front desk after nine"),
        (2, "a parcel came for you today, it is at the door next to the plants and the bike"),
    ];
    let msgs = visible.iter().map(|(i, t)| msg(&format!("v{i}"), t, t0 + i * 1_000)).collect();
    let (ch, _) = d.ingest(Source::Imessage, "seen", msgs).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let ranked = found(&mut agent, "parcel").await;
    assert_eq!(ranked[0], "parcel parcel parcel", "{ranked:?}");

    // More matches than are ranked, in a pending channel, a blocked one, and one open only
    // to another agent.
    let many = |chat: &str| -> Vec<_> {
        (0..=amc_store::RANK_UP_TO).map(|i| msg(&format!("{chat}-{i}"), &format!("parcel {i}"), now_ms())).collect()
    };
    d.ingest(Source::Imessage, "pending", many("pending")).await;
    let (blocked, _) = d.ingest(Source::Imessage, "blocked", many("blocked")).await;
    let r = d.admin().await.post(&format!("/admin/channels/{blocked}/block"), &json!({})).await.expect("block");
    assert!(r.status.is_success());
    let (others, _) = d.ingest(Source::Imessage, "others", many("others")).await;
    d.approve(&others, json!({ "history": "all", "agents": ["other"] })).await;
    assert_eq!(found(&mut agent, "parcel").await, ranked, "hidden matches changed the order");
}

/// Nor do they weigh its words: bm25 over the whole index would give "alpha" less weight
/// once a hidden channel holds it a thousand times, and put the message with more "beta"
/// first. Ranked over the agent's own matches, the order stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_channels_never_weigh_an_agents_search_terms() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let t0 = now_ms() - 60_000;
    let msgs = vec![msg("b", "alpha beta beta beta", t0), msg("a", "alpha alpha alpha beta", t0 + 1_000)];
    let (ch, _) = d.ingest(Source::Imessage, "seen", msgs).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let before = found(&mut agent, "alpha beta").await;
    assert_eq!(before, ["alpha alpha alpha beta", "alpha beta beta beta"], "equal weights: the newest first");
    let hidden: Vec<_> = (0..1_000).map(|i| msg(&format!("h{i}"), &format!("alpha {i}"), now_ms())).collect();
    d.ingest(Source::Imessage, "pending", hidden).await;
    assert_eq!(found(&mut agent, "alpha beta").await, before, "a hidden channel weighed the words");
}
