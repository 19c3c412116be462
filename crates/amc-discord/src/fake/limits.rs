//! Discord's REST rate limits, as documented
//! (<https://discord.com/developers/docs/topics/rate-limits>): every answer carries
//! `X-RateLimit-Limit`, `-Remaining`, `-Reset`, `-Reset-After` and `-Bucket` for its
//! route's bucket, counted per top-level resource (the channel in the path). A request
//! over a bucket's limit, or over the global limit of 50 requests a second, is answered
//! `429` with `Retry-After`, `X-RateLimit-Scope` (`user` or `global`,
//! `X-RateLimit-Global` for the latter) and a body of `message`, `retry_after` (seconds)
//! and `global`. The limits here are the fake's: Discord says not to hard-code its own.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::FakeDiscord;

/// A limit: so many requests per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// Requests per window.
    pub requests: u32,
    /// The window.
    pub per: Duration,
}

/// How many requests of a window were made, and when it ends.
#[derive(Debug, Clone, Copy)]
struct Window {
    used: u32,
    ends: Instant,
}

impl Window {
    /// Counts a request under `limit` at `now`; `Err` with the wait when over it.
    fn take(&mut self, limit: Limit, now: Instant) -> Result<(), Duration> {
        if now >= self.ends {
            *self = Window { used: 0, ends: now + limit.per };
        }
        if self.used >= limit.requests {
            return Err(self.ends - now);
        }
        self.used += 1;
        Ok(())
    }
}

/// The fake's rate limits and what they refused.
pub(super) struct Limits {
    routes: HashMap<&'static str, Limit>,
    global: Limit,
    windows: HashMap<(&'static str, String), Window>,
    global_window: Window,
    /// 429s answered: per route bucket, and global.
    pub(super) refused: (u32, u32),
    /// Every request's route (`"GET /channels/{id}/messages"`) and top-level id, in the
    /// order they came.
    pub(super) log: Vec<(String, String)>,
}

impl Default for Limits {
    fn default() -> Self {
        let second = Duration::from_secs(1);
        Self {
            routes: HashMap::from([
                // Sends: 5 per 5 seconds per channel, as bots commonly meet them.
                ("POST /channels/{id}/messages", Limit { requests: 5, per: Duration::from_secs(5) }),
                ("GET /channels/{id}/messages", Limit { requests: 10, per: second }),
                ("GET /channels/{id}/messages/{id}", Limit { requests: 10, per: second }),
                // What the check that nothing was missed asks per period.
                ("GET /channels/{id}", Limit { requests: 5, per: second }),
                ("GET /guilds/{id}/channels", Limit { requests: 5, per: second }),
                ("GET /guilds/{id}/threads/active", Limit { requests: 5, per: second }),
                ("GET /gateway/bot", Limit { requests: 2, per: second }),
                ("GET /users/@me", Limit { requests: 5, per: second }),
            ]),
            global: Limit { requests: 50, per: second },
            windows: HashMap::new(),
            global_window: Window { used: 0, ends: Instant::now() },
            refused: (0, 0),
            log: Vec::new(),
        }
    }
}

impl Limits {
    /// Sets a route's limit (`"GET /channels/{id}/messages"`); false for an unknown route.
    pub(super) fn set(&mut self, route: &str, limit: Limit) -> bool {
        match self.routes.iter_mut().find(|(r, _)| **r == route) {
            Some((_, l)) => {
                *l = limit;
                true
            }
            None => false,
        }
    }

    pub(super) fn set_global(&mut self, limit: Limit) {
        self.global = limit;
    }
}

/// A route's bucket and its top-level resource: the path with ids as `{id}`, and the
/// first id (the channel).
fn bucket(method: &str, path: &str) -> (String, String) {
    let path = path.strip_prefix("/api/v10").unwrap_or(path);
    let mut major = String::new();
    let shape: Vec<String> = path
        .split('/')
        .map(|part| {
            if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
                if major.is_empty() {
                    major = part.to_owned();
                }
                "{id}".to_owned()
            } else {
                part.to_owned()
            }
        })
        .collect();
    (format!("{method} {}", shape.join("/")), major)
}

fn secs(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}

fn header(v: String) -> HeaderValue {
    HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("0"))
}

/// The middleware: counts the request in its bucket and globally, answers 429 over a
/// limit, and adds the bucket's headers to every answer.
pub(super) async fn limit(State(fake): State<FakeDiscord>, req: Request, next: Next) -> Response {
    let (route, major) = bucket(req.method().as_str(), req.uri().path());
    let now = Instant::now();
    let decided = {
        let mut inner = fake.lock();
        let limits = &mut inner.limits;
        limits.log.push((route.clone(), major.clone()));
        let global = limits.global;
        if let Err(wait) = limits.global_window.take(global, now) {
            limits.refused.1 += 1;
            Err((wait, None))
        } else if let Some((&key, &limit)) = limits.routes.get_key_value(route.as_str()) {
            let window = limits.windows.entry((key, major)).or_insert(Window { used: 0, ends: now });
            match window.take(limit, now) {
                Ok(()) => Ok(Some((key, limit, *window))),
                Err(wait) => {
                    let w = *window;
                    limits.refused.0 += 1;
                    Err((wait, Some((key, limit, w))))
                }
            }
        } else {
            Ok(None)
        }
    };
    let bucket_headers = |resp: &mut Response, (key, limit, w): (&str, Limit, Window)| {
        let reset_after = w.ends.saturating_duration_since(now);
        let reset_at = std::time::SystemTime::now() + reset_after;
        let epoch = reset_at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let h = resp.headers_mut();
        h.insert("x-ratelimit-limit", header(limit.requests.to_string()));
        h.insert("x-ratelimit-remaining", header(limit.requests.saturating_sub(w.used).to_string()));
        h.insert("x-ratelimit-reset", header(secs(epoch)));
        h.insert("x-ratelimit-reset-after", header(secs(reset_after)));
        h.insert("x-ratelimit-bucket", header(format!("{:016x}", fnv(key))));
    };
    match decided {
        Ok(bucket) => {
            let mut resp = next.run(req).await;
            if let Some(b) = bucket {
                bucket_headers(&mut resp, b);
            }
            resp
        }
        Err((wait, bucket)) => {
            let global = bucket.is_none();
            let body = json!({ "message": "You are being rate limited.", "retry_after": wait.as_secs_f64(), "global": global });
            let mut resp = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
            let h = resp.headers_mut();
            h.insert("retry-after", header(wait.as_secs_f64().ceil().max(1.0).to_string()));
            h.insert("x-ratelimit-scope", HeaderValue::from_static(if global { "global" } else { "user" }));
            if global {
                h.insert("x-ratelimit-global", HeaderValue::from_static("true"));
            }
            if let Some(b) = bucket {
                bucket_headers(&mut resp, b);
            }
            resp
        }
    }
}

/// A stable hash for the bucket's opaque id.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_is_the_route_and_its_channel() {
        assert_eq!(
            bucket("GET", "/api/v10/channels/123/messages/456"),
            ("GET /channels/{id}/messages/{id}".into(), "123".into())
        );
        assert_eq!(bucket("POST", "/api/v10/channels/9/messages"), ("POST /channels/{id}/messages".into(), "9".into()));
        assert_eq!(bucket("GET", "/api/v10/users/@me"), ("GET /users/@me".into(), String::new()));
    }

    #[test]
    fn a_window_refuses_past_its_limit_until_it_ends() {
        let now = Instant::now();
        let limit = Limit { requests: 2, per: Duration::from_secs(1) };
        let mut w = Window { used: 0, ends: now };
        assert!(w.take(limit, now).is_ok() && w.take(limit, now).is_ok());
        assert_eq!(w.take(limit, now + Duration::from_millis(400)), Err(Duration::from_millis(600)));
        assert!(w.take(limit, now + Duration::from_secs(1)).is_ok());
    }
}
