//! Requests written by hand, where a client library would refuse to send them: targets
//! over 64 KiB, too many header lines, huge or malformed headers, malformed request lines
//! and versions, contradictory framing. Each is a whole request, so every one must get an
//! answer rather than a wait.

use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;

/// A request, and the kind it is counted under.
pub(super) struct Head {
    pub kind: &'static str,
    pub bytes: Vec<u8>,
}

/// Who the request says it is from: the Host that passes on loopback TCP, and the agent's
/// credentials, so that a request the parser lets through reaches a route.
pub(super) struct Caller<'a> {
    pub host: &'a str,
    pub token: &'a str,
}

const PATHS: &[&str] = &["/channels", "/messages/unread", "/messages/search", "/healthz", "/admin/channels", "/mcp"];

pub(super) fn head(rng: &mut StdRng, caller: &Caller<'_>) -> Head {
    let path = PATHS.choose(rng).copied().unwrap_or("/healthz");
    let creds = format!("host: {}\r\nauthorization: Bearer {}\r\nx-agent-id: fuzz\r\n", caller.host, caller.token);
    let (kind, bytes) = match rng.random_range(0..8) {
        0 => {
            let n = rng.random_range(30 * 1024..120 * 1024);
            ("long target", format!("GET {path}?q={} HTTP/1.1\r\n{creds}\r\n", "a".repeat(n)).into_bytes())
        }
        1 => {
            let lines: String = (0..rng.random_range(80..300)).map(|i| format!("x-line-{i}: v\r\n")).collect();
            ("many header lines", format!("GET {path} HTTP/1.1\r\n{creds}{lines}\r\n").into_bytes())
        }
        2 => {
            let n = *[16 * 1024, 40 * 1024, 300 * 1024, 1536 * 1024].choose(rng).unwrap_or(&1024);
            ("a huge header", format!("GET {path} HTTP/1.1\r\n{creds}x-pad: {}\r\n\r\n", "z".repeat(n)).into_bytes())
        }
        3 => {
            let method = ["GE T", "G(ET", "", "GET\0", "\u{1}", "GÉT", "get", "CONNECT", "PRI"].choose(rng).copied();
            let target =
                ["/a b", "/\u{7f}", "*", "", "http://evil.example/", "//", "/%zz", "/\u{0}"].choose(rng).copied();
            let line = format!("{} {} HTTP/1.1\r\n{creds}\r\n", method.unwrap_or(""), target.unwrap_or(""));
            ("a malformed request line", line.into_bytes())
        }
        4 => {
            let bad = ["bad name: v", ": v", "x\0y: v", "é: v", "(x): v", "novalue", "x: a\r\n folded", "x:\u{0}"]
                .choose(rng)
                .copied()
                .unwrap_or("x");
            ("a bad header", format!("GET {path} HTTP/1.1\r\n{creds}{bad}\r\n\r\n").into_bytes())
        }
        5 => {
            let version = ["HTTP/1.2", "HTTP/2.0", "HTTP/9.9", "HTTP/1", "http/1.1", "HTTP/1.1 x", "HTTP/1.10", ""]
                .choose(rng)
                .copied()
                .unwrap_or("");
            ("a bad version", format!("GET {path} {version}\r\n{creds}\r\n").into_bytes())
        }
        6 => {
            // Framing that contradicts itself or the body that follows (always whole).
            let (framing, body) = *[
                ("content-length: 2\r\ncontent-length: 3\r\n", "{}"),
                ("content-length: -1\r\n", ""),
                ("content-length: x\r\n", ""),
                ("content-length: 99999999999999999999\r\n", ""),
                ("content-length: 18446744073709551615\r\n", ""),
                ("transfer-encoding: chunked\r\ncontent-length: 2\r\n", "2\r\n{}\r\n0\r\n\r\n"),
                ("transfer-encoding: gzip\r\n", ""),
                ("transfer-encoding: chunked\r\n", "zz\r\n{}\r\n0\r\n\r\n"),
                ("transfer-encoding: chunked\r\n", "ffffffffffffffffff\r\n{}\r\n0\r\n\r\n"),
                ("transfer-encoding: chunked\r\n", "2\r\n{}\r\n0\r\nx-trailer: y\r\n\r\n"),
            ]
            .choose(rng)
            .unwrap_or(&("", ""));
            let line = format!("POST /messages/mark_read HTTP/1.1\r\n{creds}content-type: application/json\r\n");
            ("contradictory framing", format!("{line}{framing}\r\n{body}").into_bytes())
        }
        _ => {
            // A request that parses, with random header names and values from the allowed bytes.
            let lines: String = (0..rng.random_range(0..20))
                .map(|_| {
                    let name: String =
                        (0..rng.random_range(1..12)).map(|_| rng.random_range(b'a'..=b'z') as char).collect();
                    let value: Vec<u8> = (0..rng.random_range(0..40)).map(|_| rng.random_range(0x20..0x7f)).collect();
                    format!("{name}: {}\r\n", String::from_utf8_lossy(&value))
                })
                .collect();
            ("random headers", format!("GET {path} HTTP/1.1\r\n{creds}{lines}\r\n").into_bytes())
        }
    };
    Head { kind, bytes }
}
