//! Retries with backoff: a team server that is down, slow or refuses the login is tried again
//! after 1 s, 2 s, 4 s … up to 5 minutes, with a little jitter so that a team's machines do
//! not all knock at once when it comes back.

use std::time::Duration;

/// The delay before each retry of a failing sync.
#[derive(Debug, Clone, Default)]
pub struct Backoff {
    failures: u32,
}

/// The first retry's delay.
pub const FIRST: Duration = Duration::from_secs(1);
/// The longest delay between two tries.
pub const MAX: Duration = Duration::from_secs(300);

impl Backoff {
    /// A sync succeeded: the next failure starts over at [`FIRST`].
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// A sync failed: how long to wait before the next try. `jitter` in [0, 1) adds up to a
    /// tenth of the delay.
    pub fn next(&mut self, jitter: f64) -> Duration {
        let base = FIRST.saturating_mul(1u32 << self.failures.min(16)).min(MAX);
        self.failures = self.failures.saturating_add(1);
        let extra = base.mul_f64(jitter.clamp(0.0, 0.999) / 10.0);
        (base + extra).min(MAX)
    }

    /// Failures in a row.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

/// A jitter in [0, 1) from the clock (no random-number crate for this).
pub fn clock_jitter() -> f64 {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    f64::from(nanos % 1000) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_and_reset() {
        let mut b = Backoff::default();
        let got: Vec<u64> = (0..12).map(|_| b.next(0.0).as_secs()).collect();
        assert_eq!(got, vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(b.failures(), 12);
        b.reset();
        assert_eq!(b.next(0.5), Duration::from_millis(1050));
        assert!(b.next(0.999) <= Duration::from_millis(2200));
    }
}
