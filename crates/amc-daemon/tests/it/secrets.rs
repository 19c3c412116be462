//! One-time codes and sign-in links never reach an agent, by any route: each route and
//! tool that gives messages is asked, over REST and MCP, and none answers with a secret.
//! The person sees the whole text.

use serde_json::{Value, json};

use amc_client::Connection;

use super::harness::{Daemon, msg};
use super::mcp::{call, connect};
use amc_core::model::{SenderInfo, Source};
use amc_core::time::now_ms;

/// The secrets of the conversation below, and no other text of it.
const SECRETS: [&str; 4] = ["482913", "7f3a9c2e1b4d", "accounts.example.com/reset", "73109"];

/// The bank's conversation, approved with all its history: its channel and message ids.
async fn bank(d: &Daemon) -> (String, Vec<String>) {
    let now = now_ms();
    let mut from_bank = msg("b-3", "73109", now - 1000);
    from_bank.sender = SenderInfo { id: "72975".into(), display_name: None, is_self: false };
    let (ch, ids) = d
        .ingest(
            Source::Imessage,
            "bank",
            vec![
                msg("b-0", "Your verification code is 482913. Don't share it.", now - 4000),
                msg("b-1", "Reset your password: https://accounts.example.com/reset?token=7f3a9c2e1b4d", now - 3000),
                msg("b-2", "See you at the bank at 5", now - 2000),
                from_bank,
            ],
        )
        .await;
    assert_eq!(d.approve(&ch, json!({ "history": "all" })).await.status, 200);
    (ch, ids)
}

/// What every route and tool that gives messages answers the agent `name` (whose
/// connection is `agent`), each with its route.
async fn every_answer(
    d: &Daemon,
    agent: &mut Connection,
    token: &str,
    name: &str,
    ch: &str,
    ids: &[String],
) -> Vec<(String, String)> {
    let mut answers: Vec<(String, String)> = Vec::new();
    let context = format!("/messages/context?channel_id={ch}&around_message_id={}&after=5", ids[0]);
    for route in [
        "/messages/unread".to_owned(),
        "/messages/unread/wait?timeout_seconds=1".to_owned(),
        context,
        format!("/messages/{}", ids[0]),
        format!("/messages/{}", ids[1]),
        format!("/messages/{}", ids[3]),
        "/messages/search?query=verification".to_owned(),
        "/messages/search?query=482913".to_owned(),
        "/messages/search?query=reset".to_owned(),
        "/messages/search?query=7f3a9c2e1b4d".to_owned(),
        "/messages/push?timeout_seconds=1".to_owned(),
    ] {
        let r = agent.get(&route).await.expect("get");
        assert_eq!(r.status, 200, "{route}: {:?}", r.json());
        answers.push((route, String::from_utf8_lossy(&r.body).into_owned()));
    }
    let mcp = connect(d, token, Some(name)).await;
    for (tool, args) in [
        ("list_unread_messages", json!({})),
        ("wait_for_unread_messages", json!({ "timeout_seconds": 1 })),
        ("get_message_context", json!({ "channel_id": ch, "around_message_id": ids[1], "before": 5, "after": 5 })),
        ("search_messages", json!({ "query": "verification" })),
        ("search_messages", json!({ "query": "482913" })),
    ] {
        let r = call(&mcp, tool, args).await;
        answers.push((format!("MCP {tool}"), serde_json::to_string(&r).expect("json")));
    }
    answers
}

/// The secrets an answer holds.
fn leaked(body: &str) -> Vec<&'static str> {
    SECRETS.into_iter().filter(|s| body.contains(s)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_or_tool_gives_an_agent_a_one_time_code_or_a_sign_in_link() {
    let d = Daemon::start().await;
    let (mut agent, token) = d.agent("claude").await;
    let now = now_ms();
    let (ch, ids) = bank(&d).await;
    let answers = every_answer(&d, &mut agent, &token, "claude", &ch, &ids).await;
    for (route, body) in &answers {
        assert_eq!(leaked(body), Vec::<&str>::new(), "{route} gives an agent a secret: {body}");
    }

    // What was hidden is said, and the rest of the text stays.
    let unread: Value = serde_json::from_str(&answers[0].1).expect("json");
    let said = |i: usize| (unread["messages"][i]["text"].clone(), unread["messages"][i]["redacted"].clone());
    assert_eq!(
        said(0),
        (json!("Your verification code is [one-time code hidden by AMC]. Don't share it."), json!(["one_time_code"]))
    );
    assert_eq!(said(1), (json!("Reset your password: [sign-in link hidden by AMC]"), json!(["sign_in_link"])));
    assert_eq!(said(2), (json!("See you at the bank at 5"), Value::Null));
    assert_eq!(said(3).1, json!(["one_time_code"]), "a short code's number is a code");
    // Found by its other words, never by the code.
    let found = |i: usize| -> Vec<Value> {
        let v: Value = serde_json::from_str(&answers[i].1).expect("json");
        v["results"].as_array().cloned().unwrap_or_default()
    };
    assert_eq!(found(6).len(), 1, "by its words: {:?}", found(6));
    assert!(found(7).is_empty() && found(9).is_empty(), "by the code or the token: nothing");

    // A code beside text in a script without spaces is never found by a part of it, nor
    // does the cursor say a hidden match was skipped.
    let (cjk, _) = d
        .ingest(Source::Imessage, "cn", vec![msg("c-0", "验证码482913，请勿泄露。客服 400-123-4567", now - 500)])
        .await;
    d.approve(&cjk, json!({ "history": "all" })).await;
    // The code's first and last digits stand elsewhere in the text too (the phone number):
    // a term is looked for whole in what the agent is given, not piece by piece.
    for probe in ["码4", "码48", "4829", "482-913", "验证码482913", "3，请", "\"3，请勿\""] {
        let r = agent.get(&format!("/messages/search?limit=1&query={}", encode(probe))).await.expect("search");
        let v = r.json();
        assert_eq!((v["results"].as_array().map(Vec::len), &v["next_cursor"]), (Some(0), &Value::Null), "{probe}: {v}");
    }
    let v = agent.get(&format!("/messages/search?query={}", encode("验证码"))).await.expect("search").json();
    assert_eq!(v["results"].as_array().map(Vec::len), Some(1), "by its other words: {v}");

    // The person sees the whole text.
    let inbox = d.admin().await.get("/admin/inbox").await.expect("inbox");
    let whole = String::from_utf8_lossy(&inbox.body);
    assert!(whole.contains("482913") && whole.contains("7f3a9c2e1b4d"), "{whole}");
}

/// `s` as a query string's value.
fn encode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_shows_a_channels_codes_to_one_agent_or_to_all() {
    let d = Daemon::start().await;
    let (mut claude, claude_token) = d.agent("claude").await;
    let (mut codex, codex_token) = d.agent("codex").await;
    let (ch, ids) = bank(&d).await;
    let mut admin = d.admin().await;
    let codes = format!("/admin/channels/{ch}/codes");

    // Shown to claude alone: claude is given every secret by every route, codex none.
    let r = admin.post(&codes, &json!({ "codes": "some", "agents": ["claude"] })).await.expect("codes");
    assert_eq!(r.status, 200, "{:?}", r.json());
    assert_eq!((&r.json()["codes"], &r.json()["codes_agents"]), (&json!("some"), &json!(["claude"])));
    let answers = every_answer(&d, &mut claude, &claude_token, "claude", &ch, &ids).await;
    let unread: Value = serde_json::from_str(&answers[0].1).expect("json");
    assert_eq!(unread["messages"][0]["text"], "Your verification code is 482913. Don't share it.");
    assert_eq!(unread["messages"][0]["redacted"], Value::Null);
    assert_eq!(leaked(&answers[0].1), SECRETS, "the unread list holds them all");
    // (The push gives only what arrives after an agent's first push: below.)
    for (route, body) in answers.iter().filter(|(route, _)| !route.contains("push")) {
        assert!(!leaked(body).is_empty(), "{route} hides what the person shows claude: {body}");
    }
    let by_code: Value = serde_json::from_str(&answers[7].1).expect("json");
    assert_eq!(by_code["results"].as_array().map(Vec::len), Some(1), "found by its code: {by_code}");
    for (route, body) in every_answer(&d, &mut codex, &codex_token, "codex", &ch, &ids).await {
        assert_eq!(leaked(&body), Vec::<&str>::new(), "{route} gives codex a secret: {body}");
    }

    // A code arriving now is pushed to claude whole, and to codex hidden.
    let late = msg("b-4", "Your login code is 554433", now_ms());
    d.ingest(Source::Imessage, "bank", vec![late]).await;
    let mut pushed = Vec::new();
    for conn in [&mut claude, &mut codex] {
        let r = conn.get("/messages/push?timeout_seconds=5").await.expect("push");
        pushed.push(String::from_utf8_lossy(&r.body).into_owned());
    }
    let (to_claude, to_codex) = (&pushed[0], &pushed[1]);
    assert!(to_claude.contains("554433"), "{to_claude}");
    assert!(
        to_codex.contains("login code is [one-time code hidden by AMC]") && !to_codex.contains("554433"),
        "{to_codex}"
    );

    // Shown to every agent the channel is open to.
    assert_eq!(admin.post(&codes, &json!({ "codes": "shown" })).await.expect("codes").status, 200);
    let r = codex.get(&format!("/messages/{}", ids[0])).await.expect("get");
    assert!(String::from_utf8_lossy(&r.body).contains("482913"), "{:?}", r.json());

    // Hidden again: from the next request on, nobody is given them.
    assert_eq!(admin.post(&codes, &json!({ "codes": "hidden" })).await.expect("codes").status, 200);
    for (agent, token, name) in [(&mut claude, &claude_token, "claude"), (&mut codex, &codex_token, "codex")] {
        for (route, body) in every_answer(&d, agent, token, name, &ch, &ids).await {
            assert_eq!(leaked(&body), Vec::<&str>::new(), "{route} gives {name} a secret once hidden: {body}");
        }
    }

    // Refused: agents named without "some", "some" without agents, an unknown agent, a
    // made-up setting; none changes what is set.
    for (body, code) in [
        (json!({ "codes": "shown", "agents": ["claude"] }), "VALIDATION_FAILED"),
        (json!({ "codes": "some" }), "VALIDATION_FAILED"),
        (json!({ "codes": "some", "agents": ["nobody"] }), "NOT_FOUND"),
        (json!({ "codes": "everyone" }), "VALIDATION_FAILED"),
    ] {
        let r = admin.post(&codes, &body).await.expect("codes");
        assert_eq!(r.json()["error"]["code"], code, "{body}: {:?}", r.json());
    }
    let now = admin.get(&format!("/admin/channels/{ch}")).await.expect("channel").json();
    assert_eq!((&now["codes"], &now["codes_agents"], &now["secret_count"]), (&json!("hidden"), &json!([]), &json!(4)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_a_short_code_sender_asks_a_second_time() {
    let d = Daemon::start().await;
    let now = now_ms();
    let mut code = msg("s-0", "Your code is 918273", now - 1000);
    code.sender = SenderInfo { id: "72975".into(), display_name: None, is_self: false };
    let (ch, _) = d.ingest(Source::Imessage, "any;-;72975", vec![code]).await;
    let (friend, _) = d.ingest(Source::Imessage, "any;-;+15551234567", vec![msg("f-0", "hi", now)]).await;
    let mut admin = d.admin().await;
    let channel = admin.get(&format!("/admin/channels/{ch}")).await.expect("channel").json();
    assert_eq!((&channel["state"], &channel["sensitive"]), (&json!("pending"), &json!(true)));

    // Approving with its history, as for any channel: asked again, and nothing released.
    let r = d.approve(&ch, json!({ "history": "all" })).await;
    assert_eq!(
        (r.status.as_u16(), r.json()["error"]["code"].clone()),
        (409, json!("CONFIRMATION_REQUIRED")),
        "{:?}",
        r.json()
    );
    // Nor with the agents it would open to: refused, it changes nothing.
    d.agent("claude").await;
    let r = d.approve(&ch, json!({ "history": "all", "agents": ["claude"] })).await;
    assert_eq!(r.json()["error"]["code"], "CONFIRMATION_REQUIRED", "{:?}", r.json());
    let channel = admin.get(&format!("/admin/channels/{ch}")).await.expect("channel").json();
    assert_eq!((&channel["state"], &channel["agents"]), (&json!("pending"), &Value::Null));
    let r = d.approve(&ch, json!({ "history": "all", "sensitive": true })).await;
    assert_eq!((r.status.as_u16(), &r.json()["state"]), (200, &json!("allowed")), "{:?}", r.json());

    // A person's number is not sensitive.
    let r = d.approve(&friend, json!({ "history": "all" })).await;
    assert_eq!((r.status.as_u16(), &r.json()["sensitive"]), (200, &json!(false)), "{:?}", r.json());
}

/// Whether an agent's search ranks its matches or lists the newest first is decided over
/// what the agent is given: thousands of messages that match only through a hidden code
/// must not change the order of its results (nor tell it they exist).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matches_through_hidden_codes_never_change_how_results_are_ordered() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let t0 = now_ms() - 600_000;
    // Ranked, the message with the number three times in few words comes first; newest
    // first, it comes last.
    let seen = vec![
        msg("v0", "order 482913 482913 482913", t0),
        msg("v1", "the order number is 482913, call the shop about it when you can please", t0 + 1_000),
    ];
    let (ch, _) = d.ingest(Source::Imessage, "shop", seen).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let search = "/messages/search?query=482913&limit=5";
    let ranked = agent.get(search).await.expect("search").json();
    assert_eq!(ranked["results"][0]["message"]["text"], "order 482913 482913 482913", "{ranked}");

    // More matches than are ranked, each only through a code the agent is not given.
    let codes: Vec<_> = (0..=amc_store::RANK_UP_TO as i64)
        .map(|i| msg(&format!("c{i}"), "Your verification code is 482913. Don't share it.", t0 + 2_000 + i))
        .collect();
    let (bank, _) = d.ingest(Source::Imessage, "bank", codes).await;
    d.approve(&bank, json!({ "history": "all" })).await;
    let after = agent.get(search).await.expect("search").json();
    assert_eq!(after, ranked, "matches through hidden codes changed the answer");
}

/// Nor are its words weighed in what is hidden: a sign-in link that says "reset" five
/// times ranks as the one "reset" the agent is given of its message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_hidden_never_weighs_an_agents_search_terms() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let t0 = now_ms() - 60_000;
    let link = "Reset your password: https://accounts.example.com/reset/reset/reset?token=reset-9f8e7d6c5b4a";
    let msgs = vec![msg("l", link, t0), msg("r", "reset the router, then reset it again", t0 - 1_000)];
    let (ch, _) = d.ingest(Source::Imessage, "home", msgs).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let v = agent.get("/messages/search?query=reset").await.expect("search").json();
    let texts: Vec<&str> =
        v["results"].as_array().expect("results").iter().filter_map(|h| h["message"]["text"].as_str()).collect();
    assert_eq!(texts, ["reset the router, then reset it again", "Reset your password: [sign-in link hidden by AMC]"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_made_from_a_message_holds_no_code_for_an_agent() {
    // Discord names a thread after the message that started it; a person names a group.
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let spec = amc_core::model::ChannelSpec {
        platform_id: "guild/1/661013".into(),
        name: "Your verification code is 661013".into(),
        kind: amc_core::model::ChannelKind::Group,
        readers: None,
    };
    let report =
        d.amc.ingest(Source::Discord, spec, vec![msg("n-0", "see above", now_ms())], None).await.expect("ingest");
    d.approve(&report.channel_id, json!({ "history": "all" })).await;
    for route in ["/messages/unread", "/channels"] {
        let body = String::from_utf8_lossy(&agent.get(route).await.expect("get").body).into_owned();
        assert!(!body.contains("661013") && body.contains("hidden by AMC"), "{route}: {body}");
    }
    let unread = agent.get("/messages/unread").await.expect("get").json();
    assert_eq!(unread["messages"][0]["redacted"], json!(["one_time_code"]), "{unread}");
    // The person sees the name whole.
    let admin = String::from_utf8_lossy(&d.admin().await.get("/admin/channels").await.expect("get").body).into_owned();
    assert!(admin.contains("Your verification code is 661013"), "{admin}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_by_sender_answers_for_a_hidden_name_as_for_an_unknown_one() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let now = now_ms();
    let mut named = msg("s-0", "meet at noon", now - 2_000);
    named.sender = SenderInfo { id: "user-7".into(), display_name: Some("Code 551902".into()), is_self: false };
    let (ch, _) = d.ingest(Source::Discord, "chat", vec![named]).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let hits = |v: Value| v["results"].as_array().expect("results").len();
    // A guess at the hidden name finds what a guess at nobody finds: nothing.
    for guess in ["Code%20551902", "code%20551902", "Nobody"] {
        let v = agent.get(&format!("/messages/search?query=noon&sender={guess}")).await.expect("search").json();
        assert_eq!(hits(v), 0, "sender={guess}");
    }
    // The name as the agent is given it, and the sender's id, find the message.
    let shown = encode("Code [one-time code hidden by AMC]");
    for sender in [shown.as_str(), "user-7"] {
        let v = agent.get(&format!("/messages/search?query=noon&sender={sender}")).await.expect("search").json();
        assert_eq!(hits(v), 1, "sender={sender}");
    }
    // Shown the channel's codes, the agent finds the message by the whole name.
    let r = d.admin().await.post(&format!("/admin/channels/{ch}/codes"), &json!({ "codes": "shown" })).await;
    assert_eq!(r.expect("codes").status, 200);
    let v = agent.get("/messages/search?query=noon&sender=code%20551902").await.expect("search").json();
    assert_eq!(hits(v), 1, "shown the whole name");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_sees_where_each_secret_is_and_which_rule_found_it() {
    let d = Daemon::start().await;
    bank(&d).await;
    let inbox = d.admin().await.get("/admin/inbox").await.expect("inbox").json();
    let messages = inbox["messages"].as_array().expect("messages");
    let spans = |text: &str| -> Vec<Value> {
        let m = messages.iter().find(|m| m["text"] == text).unwrap_or_else(|| panic!("{text} in {inbox}"));
        m["secret_spans"].as_array().cloned().unwrap_or_default()
    };
    // Offsets in characters: the span is the code, as the person's screens mark it.
    let code = "Your verification code is 482913. Don't share it.";
    let [span] = &spans(code)[..] else { panic!("one span in {inbox}") };
    let (start, end) = (span["start"].as_u64().expect("start") as usize, span["end"].as_u64().expect("end") as usize);
    assert_eq!(code.chars().skip(start).take(end - start).collect::<String>(), "482913");
    assert_eq!((&span["kind"], &span["rule"]), (&json!("one_time_code"), &json!("called_the_code")));
    assert!(span["why"].as_str().is_some_and(|w| !w.is_empty()), "{span}");
    let link = "Reset your password: https://accounts.example.com/reset?token=7f3a9c2e1b4d";
    assert_eq!(spans(link)[0]["rule"], "link_address");
    assert_eq!(spans("See you at the bank at 5"), Vec::<Value>::new());
    // Agents are never given the spans.
    let (mut agent, _) = d.agent("claude").await;
    let body = String::from_utf8_lossy(&agent.get("/messages/unread").await.expect("unread").body).into_owned();
    assert!(!body.contains("secret_spans") && !body.contains("called_the_code"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_says_a_message_holds_no_code_and_agents_are_given_it_whole() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let text = "Raffle tonight! The code is 551902, bring it to the desk";
    let now = now_ms();
    let msgs = vec![msg("f-0", text, now - 2_000), msg("f-1", "see you there", now - 1_000)];
    let (ch, ids) = d.ingest(Source::Imessage, "friends", msgs).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let given = |v: &Value| v["text"].as_str().unwrap_or_default().to_owned();
    let message = format!("/messages/{}", ids[0]);
    assert!(!given(&agent.get(&message).await.expect("get").json()).contains("551902"));

    let mut admin = d.admin().await;
    let said = format!("/admin/messages/{}/not-a-code", ids[0]);
    let r = admin.post(&said, &json!({})).await.expect("not a code");
    assert_eq!(r.status, 200, "{:?}", r.json());
    let person = r.json();
    assert_eq!((&person["not_a_code"], &person["secret_spans"][0]["rule"]), (&json!(true), &json!("called_the_code")));
    // Given whole, by id, in context and by a search for the number; nothing says why.
    let v = agent.get(&message).await.expect("get").json();
    assert_eq!((given(&v), &v["redacted"], &v["not_a_code"]), (text.to_owned(), &Value::Null, &Value::Null), "{v}");
    let found = agent.get("/messages/search?query=551902").await.expect("search").json();
    assert_eq!(found["results"].as_array().map(Vec::len), Some(1), "{found}");
    let context = agent.get(&format!("/messages/context?channel_id={ch}&around_message_id={}", ids[1])).await;
    assert!(String::from_utf8_lossy(&context.expect("context").body).contains("551902"));
    // The channel counts it as holding none; the report keeps it, with its rule.
    let channel = admin.get(&format!("/admin/channels/{ch}")).await.expect("channel").json();
    assert_eq!(channel["secret_count"], 0, "{channel}");
    let report = admin.get("/admin/codes/report").await.expect("report").json();
    let by_rule = json!([{ "rule": "called_the_code", "why": "the words next to it call it the code", "messages": 1 }]);
    assert_eq!((&report["marked"], &report["by_rule"]), (&json!(1), &by_rule), "{report}");
    assert_eq!(
        (&report["messages"][0]["message_id"], &report["messages"][0]["channel_name"]),
        (&json!(ids[0]), &json!("Chat friends"))
    );

    // Taken back: hidden again, counted again, out of the report.
    let r = admin.post(&said, &json!({ "not_a_code": false })).await.expect("take back");
    assert_eq!((r.status.as_u16(), &r.json()["not_a_code"]), (200, &Value::Null));
    assert!(!given(&agent.get(&message).await.expect("get").json()).contains("551902"));
    let channel = admin.get(&format!("/admin/channels/{ch}")).await.expect("channel").json();
    assert_eq!(channel["secret_count"], 1, "{channel}");
    assert_eq!(admin.get("/admin/codes/report").await.expect("report").json()["marked"], 0);

    // Refused: a message AMC found nothing in, an unknown one, a malformed id, a bad body.
    for (path, body, code) in [
        (format!("/admin/messages/{}/not-a-code", ids[1]), json!({}), "VALIDATION_FAILED"),
        ("/admin/messages/msg_00000000000000000000000000/not-a-code".to_owned(), json!({}), "NOT_FOUND"),
        ("/admin/messages/nope/not-a-code".to_owned(), json!({}), "NOT_FOUND"),
        (said.clone(), json!({ "not_a_code": "yes" }), "VALIDATION_FAILED"),
    ] {
        let r = admin.post(&path, &body).await.expect("post");
        assert_eq!(r.json()["error"]["code"], code, "{path} {body}: {:?}", r.json());
    }
}
