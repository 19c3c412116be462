//! What the readers rule costs a send, end to end over the socket.
//!
//! `cargo bench -p amc-daemon --bench readers` stores 10,000 group conversations that
//! each include Ada, and a DM with her under `auto`. One agent read 10,000 reads in the
//! last 50 minutes, a page at a time, of 200 of the groups (as an agent reads); another
//! was given messages of all 10,000 groups (the worst case: every one a conversation the
//! rule must look at); a third read nothing. None of the reads holds the send. They send
//! to Ada through the real daemon (`POST /messages/send`, the recording sender behind it),
//! taking turns, and the bench prints each one's p50/p99 and the difference from the one
//! that read nothing: the rule's cost per send. Then the rule's own look at the store
//! (`Store::crossings`) alone.

#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use std::sync::Arc;
use std::time::{Duration, Instant};

use amc_client::Connection;
use amc_core::config::Config;
use amc_core::model::{ChannelKind, ChannelSpec, HistoryRelease, SendPolicy, Source};
use amc_core::ratelimit::RateLimit;
use amc_core::sender::{RecordingSender, Senders};
use amc_core::service::Amc;
use amc_core::time::now_ms;
use amc_testkit::Stored;
use serde_json::json;

const GROUPS: usize = 10_000;
const SAMPLES: usize = 1_000;
const ADA: &str = "+15550000001";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let dir = tempfile::tempdir()?;
    let mut config = Config::new(dir.path().to_owned());
    config.rate_limit = RateLimit { burst: 10_000, per_minute: 10_000 };
    let senders = Senders::default().with(Source::Imessage, Arc::new(RecordingSender::default()));
    let amc = Amc::start(config.clone(), senders)?;
    let store = amc.store().clone();

    let started = Instant::now();
    let msg = |id: String| amc_testkit::incoming(&id, "see you there").at(now_ms() - 60_000).from(ADA, None).build();
    let dm = ChannelSpec {
        readers: Some(vec![ADA.to_owned()]),
        ..ChannelSpec::new("any;-;+15550000001", "Ada", ChannelKind::Dm)
    };
    let ada = store.ingest(Source::Imessage, &dm, &[msg("dm-1".into())], None)?.channel_id;
    store.approve_channel(&ada, HistoryRelease::All, Some(SendPolicy::Auto), false)?;
    let mut given = Vec::with_capacity(GROUPS);
    for g in 0..GROUPS {
        let spec = ChannelSpec {
            readers: Some(vec![ADA.to_owned(), format!("+1555{g:07}")]),
            ..ChannelSpec::new(format!("any;+;chat{g}"), format!("Group {g}"), ChannelKind::Group)
        };
        let id = store.ingest(Source::Imessage, &spec, &[msg(format!("g-{g}"))], None)?.channel_id;
        given.push((id, format!("Group {g}")));
    }
    let (_, reader) = store.create_agent("reader")?;
    let (_, busy) = store.create_agent("busy")?;
    let (_, fresh) = store.create_agent("fresh")?;
    store.record_reads("reader", &given, now_ms())?;
    // 10,000 reads as an agent makes them, one page at a time, of the 200 newest groups:
    // spread over the last 50 minutes (one every 0.3 s).
    let start = now_ms() - 3_000_000;
    for i in 0..GROUPS {
        store.record_reads("busy", &given[i % 200..i % 200 + 1], start + i as i64 * 300)?;
    }
    println!("{GROUPS} groups stored and read: {:.1} s", started.elapsed().as_secs_f64());

    let times = rt.block_on(async {
        let socket = amc_daemon::bind_socket(&config.run_dir(), &config.socket_path())?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(amc_daemon::serve(amc.clone(), socket, None, async move {
            let _ = stopped.await;
        }));
        let connect = |id: &'static str, token: String| {
            let path = config.socket_path();
            async move {
                Ok::<_, Box<dyn std::error::Error>>(
                    Connection::connect(&path).await?.with_bearer(&token).with_header("x-agent-id", id),
                )
            }
        };
        let mut conns =
            [connect("reader", reader).await?, connect("busy", busy).await?, connect("fresh", fresh).await?];
        let mut times: [Vec<Duration>; 3] = [Vec::new(), Vec::new(), Vec::new()];
        for i in 0..SAMPLES * 3 + 150 {
            let who = i % 3;
            let started = Instant::now();
            let r = conns[who]
                .post("/messages/send", &json!({ "channel_id": ada, "text": format!("on my way {i}") }))
                .await?;
            let took = started.elapsed();
            assert_eq!(r.json()["status"], "sent", "{:?}", r.json());
            if i >= 150 {
                times[who].push(took);
            }
        }
        let _ = stop.send(());
        server.await??;
        Ok::<_, Box<dyn std::error::Error>>(times)
    })?;
    let none = ms(pct(&times[2], 50));
    for (who, what) in [(0, "10,000 conversations read"), (1, "10,000 reads of 200 conversations"), (2, "nothing read")]
    {
        println!(
            "POST /messages/send under auto, {SAMPLES} each, {what}: p50 {:.2} ms, p99 {:.2} ms; the rule's cost p50 {:.3} ms",
            ms(pct(&times[who], 50)),
            ms(pct(&times[who], 99)),
            ms(pct(&times[who], 50)) - none
        );
    }

    for (agent, what) in [("reader", "10,000 conversations read"), ("busy", "10,000 reads of 200 conversations")] {
        let mut looks = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            let started = Instant::now();
            let looked = store.crossings(agent, &ada, now_ms() - 3_600_000, 50)?;
            looks.push(started.elapsed());
            assert!(looked.crossed.is_empty(), "every group holds Ada");
        }
        println!("Store::crossings, {what}: p50 {:.3} ms, p99 {:.3} ms", ms(pct(&looks, 50)), ms(pct(&looks, 99)));
    }
    Ok(())
}

fn pct(samples: &[Duration], p: usize) -> Duration {
    let mut s = samples.to_vec();
    s.sort();
    s[(s.len() * p / 100).min(s.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
