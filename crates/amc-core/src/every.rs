//! Periodic work that wakes an idle AMC as little as it can.
//!
//! tokio's timer keeps its timers in a wheel whose coarser levels hold far deadlines: a
//! timer 30 s away wakes the runtime's driver on the way (once per level it cascades
//! through) before it fires, and each wake is a round of context switches across the
//! runtime's threads. A period kept by a thread of its own that sleeps on a channel with a
//! timeout wakes once per tick, on that thread alone. [`Every`] runs a closure that way;
//! [`Ticks`] hands its ticks to async code.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// A closure run on a thread of its own: once at the start, then `period` after each run
/// ended, until it returns false or the `Every` is dropped (which wakes the thread, so it
/// ends at once unless a run is under way).
#[derive(Debug)]
pub struct Every {
    /// Dropped to stop the thread: its wait then ends with `Disconnected`.
    stop: mpsc::Sender<()>,
    /// The thread, joined by [`Every::stop`].
    thread: std::thread::JoinHandle<()>,
}

impl Every {
    /// Starts the thread, named `name`.
    ///
    /// # Errors
    /// When the system cannot start a thread.
    pub fn spawn(
        name: &str,
        period: Duration,
        mut run: impl FnMut() -> bool + Send + 'static,
    ) -> std::io::Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new().name(name.to_owned()).spawn(move || {
            loop {
                // A run that panics is logged and the next still comes: periodic work
                // that stopped for good would go unnoticed.
                let go = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut run)).unwrap_or_else(|_| {
                    tracing::error!("a periodic task panicked; running it again at its next period");
                    true
                });
                if !go {
                    break;
                }
                match stopped.recv_timeout(period) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                }
            }
        })?;
        Ok(Self { stop, thread })
    }

    /// Stops the thread and waits for it: a run under way finishes first. Blocks.
    pub fn stop(self) {
        let Self { stop, thread } = self;
        drop(stop);
        let _ = thread.join();
    }
}

/// Ticks for async code: the first at once, then one every `period` (a tick not yet
/// taken is not doubled: ticks missed while the owner was busy are one tick). Kept by an
/// [`Every`]; if no thread can be started, by tokio's timer.
#[derive(Debug)]
pub struct Ticks(Kept);

#[derive(Debug)]
enum Kept {
    /// The ticks, and the thread that sends them (it ends when dropped).
    Thread {
        ticks: tokio::sync::mpsc::Receiver<()>,
        _thread: Every,
    },
    Timer(tokio::time::Interval),
}

impl Ticks {
    /// Starts ticking; the thread is named `name`.
    pub fn new(name: &str, period: Duration) -> Self {
        Self::gated(name, period, || true)
    }

    /// Ticks that `gate` lets through: at each period, on the ticking thread, `gate` says
    /// whether this tick is worth waking the async side for (the first tick included).
    /// Without a thread every tick comes.
    pub fn gated(name: &str, period: Duration, mut gate: impl FnMut() -> bool + Send + 'static) -> Self {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let every = Every::spawn(name, period, move || {
            !gate() || !matches!(tx.try_send(()), Err(tokio::sync::mpsc::error::TrySendError::Closed(())))
        });
        match every {
            Ok(every) => Self(Kept::Thread { ticks: rx, _thread: every }),
            Err(e) => {
                tracing::warn!(error = %e, thread = name, "no thread for a timer; using the runtime's");
                let mut timer = tokio::time::interval(period);
                timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                Self(Kept::Timer(timer))
            }
        }
    }

    /// The next tick.
    pub async fn tick(&mut self) {
        match &mut self.0 {
            Kept::Thread { ticks, .. } => {
                if ticks.recv().await.is_none() {
                    // The thread ended (it does only when this side is gone): no more ticks.
                    std::future::pending::<()>().await;
                }
            }
            Kept::Timer(timer) => {
                timer.tick().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    // Each closure owns `alive`: `dropped.recv` ends with `Disconnected` once the closure
    // is dropped, that is once its thread ended.

    #[test]
    fn runs_at_once_then_every_period_and_ends_when_dropped() {
        let runs = Arc::new(AtomicUsize::new(0));
        let (ran, ticks) = mpsc::channel();
        let (alive, dropped) = mpsc::channel::<()>();
        let counted = runs.clone();
        let every = Every::spawn("amc-test-every", Duration::from_millis(5), move || {
            let _alive = &alive;
            counted.fetch_add(1, Ordering::SeqCst);
            ran.send(()).is_ok()
        })
        .expect("a thread");
        for _ in 0..3 {
            ticks.recv_timeout(Duration::from_secs(10)).expect("a run");
        }
        drop(every);
        assert_eq!(dropped.recv_timeout(Duration::from_secs(10)), Err(RecvTimeoutError::Disconnected));
        assert!(runs.load(Ordering::SeqCst) >= 3);
    }

    #[test]
    fn a_long_period_still_ends_at_once_when_dropped() {
        let (alive, dropped) = mpsc::channel::<()>();
        let (ran, first) = mpsc::channel();
        let every = Every::spawn("amc-test-every", Duration::from_secs(3600), move || {
            let _alive = &alive;
            ran.send(()).is_ok()
        })
        .expect("a thread");
        first.recv_timeout(Duration::from_secs(10)).expect("the first run, at once");
        drop(every);
        // An hour's wait is cut short: the disconnect wakes the thread.
        assert_eq!(dropped.recv_timeout(Duration::from_secs(10)), Err(RecvTimeoutError::Disconnected));
    }

    #[test]
    fn a_closure_returning_false_ends_its_thread() {
        let (alive, dropped) = mpsc::channel::<()>();
        let _every = Every::spawn("amc-test-every", Duration::from_millis(1), move || {
            let _alive = &alive;
            false
        })
        .expect("a thread");
        assert_eq!(dropped.recv_timeout(Duration::from_secs(10)), Err(RecvTimeoutError::Disconnected));
    }

    #[test]
    fn a_run_that_panics_is_followed_by_the_next_and_stop_waits_for_the_thread() {
        let (ran, runs) = mpsc::channel();
        let mut n = 0;
        let every = Every::spawn("amc-test-every", Duration::from_millis(1), move || {
            n += 1;
            let _ = ran.send(n);
            assert!(n != 1, "the first run panics");
            true
        })
        .expect("a thread");
        for want in 1..=3 {
            assert_eq!(runs.recv_timeout(Duration::from_secs(10)), Ok(want));
        }
        every.stop();
        // Joined: the closure, and its sender, are gone.
        while runs.try_recv().is_ok() {}
        assert_eq!(runs.recv_timeout(Duration::from_secs(10)), Err(RecvTimeoutError::Disconnected));
    }

    #[tokio::test]
    async fn ticks_come_first_at_once_then_each_period() {
        let mut ticks = Ticks::new("amc-test-ticks", Duration::from_millis(5));
        assert!(matches!(ticks.0, Kept::Thread { .. }), "kept by a thread");
        for _ in 0..3 {
            tokio::time::timeout(Duration::from_secs(10), ticks.tick()).await.expect("a tick");
        }
    }
}
