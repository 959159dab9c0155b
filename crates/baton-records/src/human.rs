//! How records read to people, the same in the live view, `baton status`, `baton
//! log`, the report and every message: durations and counts.

/// A duration: `42s`, `3m 05s`, `2h 07m` (rounded to the second).
pub fn duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// A wait, never shorter than it is: the duration rounded up to the second
/// (`retrying in 12m 00s`; a wait under a second reads `1s`).
pub fn wait(d: std::time::Duration) -> String {
    duration(d.as_secs_f64().ceil())
}

/// Feature numbers as people read them: `#1, #4, #7` (empty for none). The one
/// "#N" formatter of every line, brief and report.
pub fn features(ns: &[usize]) -> String {
    ns.iter()
        .map(|n| format!("#{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `n` and a noun that agrees with it: `1 turn`, `2 turns`, `0 lines` (`word` is
/// the singular; the plural adds `s`).
pub fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// A count in at most six characters: `950`, `12.3k`, `123k`, `2M`, `4.5M`, `1.2B`.
pub fn count(n: u64) -> String {
    let v = n as f64;
    let (d, suffix) = if v >= 1e9 {
        (1e9, "B")
    } else if v >= 1e6 {
        (1e6, "M")
    } else if v >= 1e3 {
        (1e3, "k")
    } else {
        return n.to_string();
    };
    let x = v / d;
    // Rounded to one decimal first, so 99_999 reads `100k`, never `100.0k`.
    let tenths = (x * 10.0).round() / 10.0;
    if tenths >= 100.0 {
        format!("{x:.0}{suffix}")
    } else if tenths.fract() == 0.0 {
        format!("{tenths:.0}{suffix}")
    } else {
        format!("{tenths:.1}{suffix}")
    }
}

/// Dollars for people, never hiding a limit: cents when the amount is whole cents
/// (`$20.00`), else up to four places (`$0.002`, not `$0.00`).
pub fn usd(v: f64) -> String {
    let cents = v * 100.0;
    if (cents - cents.round()).abs() < 1e-9 {
        return format!("${v:.2}");
    }
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0');
    format!("${s}")
}

/// What `tokens` tokens cost, as session lines, `status` and `log` show it
/// (`$0.0012`): `$0 (unpriced)` where tokens were spent and nothing was
/// counted, since the model has no price (the start line says how to add one),
/// so a $0 is never taken for a free session.
pub fn cost(usd: f64, tokens: u64) -> String {
    unpriced(usd, tokens).map_or_else(|| format!("${usd:.4}"), str::to_string)
}

/// `$0 (unpriced)` where `tokens` were spent and `usd` counts nothing (the
/// model has no price); `None` otherwise. Every place that shows a cost in its
/// own format (the report) marks an unpriced one the same way.
pub fn unpriced(usd: f64, tokens: u64) -> Option<&'static str> {
    (usd == 0.0 && tokens > 0).then_some("$0 (unpriced)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unpriced_cost_is_marked() {
        assert_eq!(cost(0.0012, 240), "$0.0012");
        assert_eq!(cost(0.0, 240), "$0 (unpriced)");
        assert_eq!(cost(0.0, 0), "$0.0000");
    }

    #[test]
    fn durations_and_counts_read_the_same_everywhere() {
        assert_eq!(duration(0.4), "0s");
        assert_eq!(duration(42.0), "42s");
        assert_eq!(duration(185.0), "3m 05s");
        assert_eq!(duration(7_620.0), "2h 07m");
        assert_eq!(wait(std::time::Duration::from_millis(300)), "1s");
        assert_eq!(wait(std::time::Duration::from_secs(12 * 60)), "12m 00s");
        assert_eq!(count(950), "950");
        assert_eq!(count(12_345), "12.3k");
        assert_eq!(count(123_456), "123k");
        assert_eq!(count(2_000_000), "2M");
        assert_eq!(count(4_500_000), "4.5M");
        assert_eq!(count(1_234_000_000), "1.2B");
        assert_eq!(count(99_999), "100k");
        assert!(count(999_999).len() <= 6, "{}", count(999_999));
    }

    #[test]
    fn dollars_keep_what_cents_would_round_away() {
        assert_eq!(usd(20.0), "$20.00");
        assert_eq!(usd(0.5), "$0.50");
        assert_eq!(usd(0.002), "$0.002");
        assert_eq!(usd(1.2345), "$1.2345");
    }
}

/// Whether `c` would act on a terminal rather than be shown: a control
/// character (C0 but a newline and a tab, DEL, C1) or a bidirectional-text
/// control, which reorders what follows it on the line.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` safe for a terminal: every character that would act on it rather than
/// be shown (an escape sequence's `ESC`, a bell, a carriage return, a C1
/// control, a bidirectional override) is written as its escape (`\u{1b}`), so
/// text baton did not write — a block reason, a tool's output, a feature's
/// words — cannot move the cursor, rewrite a line, recolour, retitle the
/// window, write the clipboard or disguise a link. The one sanitizer of every
/// string bound for a terminal: the live view, `baton status`, `baton log`.
pub fn terminal(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(acts) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if acts(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod terminal_tests {
    use super::terminal;

    #[test]
    fn what_would_act_on_a_terminal_is_shown_escaped() {
        assert_eq!(terminal("plain\ttext\nnext"), "plain\ttext\nnext");
        let forged = "\u{1b}]52;c;cm0gLXJmIH4=\u{7}\r\u{1b}[2Kall 40 features pass \u{9b}31m \u{202e}gpj.exe";
        let shown = terminal(forged);
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{shown:?}"
        );
        assert!(!shown.contains('\u{202e}'), "{shown:?}");
        assert!(shown.contains("\\u{1b}]52;c;"), "{shown:?}");
        assert!(
            shown.contains("\\u{d}\\u{1b}[2Kall 40 features pass"),
            "{shown:?}"
        );
    }
}
