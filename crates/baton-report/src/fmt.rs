//! Small formatting helpers shared by the page and the charts.

/// `s` with the characters HTML gives meaning to escaped (text and attributes).
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Dollars with `places` decimals.
pub fn usd(v: f64, places: usize) -> String {
    format!("${v:.places$}")
}

/// Dollars as precise as the amount needs: four decimals under a dollar (so
/// small runs do not read `$0.01 + $0.03 = $0.03`), two above.
pub fn money(v: f64) -> String {
    if v.abs() < 1.0 && v != 0.0 {
        usd(v, 4)
    } else {
        usd(v, 2)
    }
}

/// The decimals an axis of dollars up to `max` in four steps needs for its five
/// labels to differ (two at least, six at most).
pub fn axis_places(max: f64) -> usize {
    (2..=6)
        .find(|&p| {
            let labels: Vec<String> = (0..=4).map(|k| usd(max * f64::from(k) / 4.0, p)).collect();
            labels.windows(2).all(|w| w[0] != w[1])
        })
        .unwrap_or(6)
}

/// A session's duration: tenths of a second under ten seconds (a scripted or
/// failed session is not `0s`), else as [`duration`].
pub fn seconds(secs: f64) -> String {
    if secs < 10.0 {
        format!("{:.1}s", secs.max(0.0))
    } else {
        duration(secs)
    }
}

pub use baton_records::human::{count, duration};

/// An axis tick: a count when whole, one decimal when not (`2.5`).
pub fn tick(v: f64) -> String {
    if v >= 0.0 && v.fract() == 0.0 {
        count(v as u64)
    } else {
        format!("{v:.1}")
    }
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM` UTC.
pub fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(usd(1.23456, 2), "$1.23");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(12_000.0), "12k");
        assert_eq!(utc(0), "1970-01-01 00:00");
        assert_eq!(utc(1_700_000_000_000), "2023-11-14 22:13");
        assert_eq!(utc(951_825_600_000), "2000-02-29 12:00");
    }
}
