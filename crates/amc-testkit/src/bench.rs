//! Latency summaries for AMC's benchmark binaries, so every bench reports alike.

use std::time::Duration;

/// The percentiles of a set of latency samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latencies {
    /// How many samples.
    pub n: usize,
    /// The median.
    pub p50: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The slowest.
    pub max: Duration,
}

impl Latencies {
    /// Summarises samples (nearest-rank percentiles); all zero when there are none.
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        let at =
            |q: f64| samples.get(((samples.len().max(1) - 1) as f64 * q).round() as usize).copied().unwrap_or_default();
        Self { n: samples.len(), p50: at(0.5), p99: at(0.99), max: at(1.0) }
    }

    /// One report line: `name  n=…  p50=… ms  p99=… ms  max=… ms`.
    pub fn line(&self, name: &str) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        format!(
            "{name:<56} n={:<6} p50={:>8.3} ms  p99={:>8.3} ms  max={:>8.3} ms",
            self.n,
            ms(self.p50),
            ms(self.p99),
            ms(self.max)
        )
    }
}

/// The CPU time a process used so far (user and system), from `/proc` (Linux; zero
/// elsewhere).
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command's closing parenthesis; utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest.split_whitespace().skip(11).take(2).filter_map(|v| v.parse::<u64>().ok()).sum();
    Duration::from_millis(ticks * 10) // USER_HZ is 100 on Linux
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let l = Latencies::of((1..=100).rev().map(Duration::from_millis).collect());
        assert_eq!(
            (l.n, l.p50, l.p99, l.max),
            (100, Duration::from_millis(51), Duration::from_millis(99), Duration::from_millis(100))
        );
        assert_eq!(Latencies::of(Vec::new()).n, 0);
    }
}
