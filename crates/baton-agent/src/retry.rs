//! Capped exponential backoff with jitter.

use std::time::Duration;

use baton_config::RetryConfig;
use rand::Rng as _;

/// Delay before retry number `attempt` (1 = the first retry): `base * 2^(attempt-1)`,
/// capped at `max`, scaled by a random factor in `[0.5, 1.0]`. A server's
/// `retry-after` replaces the computed delay (still capped).
pub fn delay(cfg: &RetryConfig, attempt: u32, retry_after: Option<Duration>) -> Duration {
    let cap = Duration::from_millis(cfg.max_delay_ms);
    if let Some(ra) = retry_after {
        return ra.min(cap);
    }
    let exp = cfg
        .base_delay_ms
        .saturating_mul(1u64 << attempt.saturating_sub(1).min(30));
    let capped = exp.min(cfg.max_delay_ms);
    let factor: f64 = rand::rng().random_range(0.5..=1.0);
    Duration::from_millis((capped as f64 * factor) as u64)
}

/// Wait before the `n`-th probe (0-based) of a quota wall whose server named no reset
/// time: `quota_probe_secs` (5 minutes by default), doubling, at most six times that,
/// so a long wall costs few requests.
pub fn probe_delay(cfg: &RetryConfig, n: u32) -> Duration {
    let first = cfg.quota_probe_secs.max(1);
    Duration::from_secs((first << n.min(3)).min(first * 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_and_caps() {
        let cfg = RetryConfig {
            max_attempts: 10,
            base_delay_ms: 100,
            max_delay_ms: 1_000,
            stream_idle_timeout_secs: 1,
            quota_probe_secs: 300,
        };
        assert_eq!(probe_delay(&cfg, 0), Duration::from_secs(300));
        assert_eq!(probe_delay(&cfg, 1), Duration::from_secs(600));
        assert_eq!(probe_delay(&cfg, 5), Duration::from_secs(1_800));
        for _ in 0..50 {
            let d1 = delay(&cfg, 1, None).as_millis();
            assert!((50..=100).contains(&d1), "{d1}");
            let d3 = delay(&cfg, 3, None).as_millis();
            assert!((200..=400).contains(&d3), "{d3}");
            let d9 = delay(&cfg, 9, None).as_millis();
            assert!((500..=1_000).contains(&d9), "{d9}");
        }
        assert_eq!(
            delay(&cfg, 1, Some(Duration::from_secs(30))),
            Duration::from_secs(1)
        );
        assert_eq!(
            delay(&cfg, 1, Some(Duration::from_millis(7))),
            Duration::from_millis(7)
        );
    }
}
