//! A token bucket per channel, so that no agent can flood a conversation.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many sends a channel takes at once, and how fast it refills.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Sends allowed in a burst.
    pub burst: u32,
    /// Sends per minute after the burst.
    pub per_minute: u32,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self { burst: 5, per_minute: 20 }
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Per-channel token buckets.
#[derive(Debug)]
pub struct RateLimiter {
    /// The limit, and each channel's bucket under it.
    state: Mutex<(RateLimit, HashMap<String, Bucket>)>,
}

impl RateLimiter {
    /// A limiter with the given limit for every channel.
    pub fn new(limit: RateLimit) -> Self {
        Self { state: Mutex::new((limit, HashMap::new())) }
    }

    /// Changes the limit while AMC runs: each channel keeps its tokens, up to the new burst.
    pub fn set_limit(&self, limit: RateLimit) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let burst = f64::from(limit.burst.max(1));
        for bucket in state.1.values_mut() {
            bucket.tokens = bucket.tokens.min(burst);
        }
        state.0 = limit;
    }

    /// The limit in force.
    pub fn limit(&self) -> RateLimit {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    /// Takes a token for `channel_id`, or says how long until one is free.
    pub fn take(&self, channel_id: &str) -> Result<(), Duration> {
        self.take_at(channel_id, Instant::now())
    }

    fn take_at(&self, channel_id: &str, now: Instant) -> Result<(), Duration> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (limit, buckets) = &mut *state;
        let burst = f64::from(limit.burst.max(1));
        let per_sec = f64::from(limit.per_minute.max(1)) / 60.0;
        let bucket = buckets.entry(channel_id.to_owned()).or_insert(Bucket { tokens: burst, at: now });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_sec).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / per_sec))
        }
    }

    /// Gives back a token taken for a send that did not happen (a replay, a refusal).
    pub fn refund(&self, channel_id: &str) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (limit, buckets) = &mut *state;
        let burst = f64::from(limit.burst.max(1));
        if let Some(b) = buckets.get_mut(channel_id) {
            b.tokens = (b.tokens + 1.0).min(burst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_refill_rate() {
        let rl = RateLimiter::new(RateLimit { burst: 2, per_minute: 60 });
        let t0 = Instant::now();
        assert!(rl.take_at("a", t0).is_ok());
        assert!(rl.take_at("a", t0).is_ok());
        let wait = rl.take_at("a", t0).expect_err("limited");
        assert!(wait > Duration::from_millis(900) && wait <= Duration::from_secs(1), "{wait:?}");
        // Other channels have their own bucket.
        assert!(rl.take_at("b", t0).is_ok());
        assert!(rl.take_at("a", t0 + Duration::from_secs(1)).is_ok());
        assert!(rl.take_at("a", t0 + Duration::from_secs(1)).is_err());
    }

    #[test]
    fn a_new_limit_holds_at_once_and_keeps_what_each_channel_used() {
        let rl = RateLimiter::new(RateLimit { burst: 5, per_minute: 1 });
        let t0 = Instant::now();
        assert!(rl.take_at("a", t0).is_ok());
        // A smaller burst caps the tokens left; a channel never seen starts at the new burst.
        rl.set_limit(RateLimit { burst: 2, per_minute: 1 });
        assert!(rl.take_at("a", t0).is_ok() && rl.take_at("a", t0).is_ok());
        assert!(rl.take_at("a", t0).is_err());
        assert!(rl.take_at("b", t0).is_ok() && rl.take_at("b", t0).is_ok() && rl.take_at("b", t0).is_err());
        assert_eq!(rl.limit(), RateLimit { burst: 2, per_minute: 1 });
    }
}
