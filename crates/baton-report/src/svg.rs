//! Inline SVG charts, drawn here so the page needs no script library. Colours come
//! from CSS classes of the page, so the charts follow its light and dark themes.
//! Every chart's series carry `data-points` with the number of points or bars drawn.

use std::fmt::Write as _;

use crate::fmt::{count, escape, tick, usd};

const W: f64 = 880.0;
const LEFT: f64 = 52.0;
const RIGHT: f64 = 56.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 26.0;

/// The top of an axis of counts at or above `v`: four steps of a whole 1, 2 or 5
/// times a power of ten, so every label is a whole number (three features read
/// 0, 1, 2, 3, 4, never 1.2, 2.5, 3.8).
pub fn count_max(v: f64) -> f64 {
    let step = (v.max(1.0) / 4.0).max(1.0);
    let p = 10f64.powf(step.log10().floor());
    let m = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| m * p >= step * 0.999_999)
        .unwrap_or(10.0);
    4.0 * m * p
}

/// A round number at or above `v` (1, 2 or 5 times a power of ten).
pub fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 1.2, 1.6, 2.0, 2.4, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * p >= v * 0.999_999 {
            return m * p;
        }
    }
    10.0 * p
}

struct Frame {
    h: f64,
    n: usize,
}

impl Frame {
    fn plot_w(&self) -> f64 {
        W - LEFT - RIGHT
    }
    fn plot_h(&self) -> f64 {
        self.h - TOP - BOTTOM
    }
    fn y(&self, v: f64, max: f64) -> f64 {
        TOP + self.plot_h() * (1.0 - (v / max).clamp(0.0, 1.0))
    }
    /// Centre of slot `i` of `n` (bars).
    fn slot_x(&self, i: usize) -> f64 {
        LEFT + self.plot_w() * (i as f64 + 0.5) / self.n.max(1) as f64
    }
    fn slot_w(&self) -> f64 {
        self.plot_w() / self.n.max(1) as f64
    }
}

fn open(o: &mut String, id: &str, h: f64, label: &str) {
    let _ = write!(
        o,
        r#"<svg id="{id}" class="chart" viewBox="0 0 {W} {h}" preserveAspectRatio="xMidYMid meet" role="img" aria-label="{}">"#,
        escape(label)
    );
}

/// Horizontal grid lines with labels on the left (or right) axis.
fn y_axis(o: &mut String, f: &Frame, max: f64, right: bool, label: impl Fn(f64) -> String) {
    for k in 0..=4 {
        let v = max * f64::from(k) / 4.0;
        let y = f.y(v, max);
        if !right {
            let _ = write!(
                o,
                r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}"/>"#,
                W - RIGHT
            );
        }
        let (x, anchor) = if right {
            (W - RIGHT + 6.0, "start")
        } else {
            (LEFT - 6.0, "end")
        };
        let _ = write!(
            o,
            r#"<text class="tick" x="{x:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
            y + 4.0,
            escape(&label(v))
        );
    }
}

/// Session numbers under the x axis, at most about ten of them.
fn x_sessions(o: &mut String, f: &Frame, numbers: &[u32], at: impl Fn(usize) -> f64) {
    if numbers.is_empty() {
        return;
    }
    let step = numbers.len().div_ceil(10).max(1);
    let y = f.h - 8.0;
    let mut i = 0;
    while i < numbers.len() {
        let _ = write!(
            o,
            r#"<text class="tick" x="{:.1}" y="{y:.1}" text-anchor="middle">{}</text>"#,
            at(i),
            numbers[i]
        );
        i += step;
    }
}

fn axis_line(o: &mut String, f: &Frame) {
    let y = TOP + f.plot_h();
    let _ = write!(
        o,
        r#"<line class="axis" x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}"/>"#,
        W - RIGHT
    );
}

/// Features passing before the first session and after each one: a line with
/// `numbers.len() + 1` points, and the list's size as a dashed line.
pub fn passing(passing_after: &[usize], total: usize, numbers: &[u32]) -> String {
    let mut o = String::new();
    let f = Frame {
        h: 240.0,
        n: passing_after.len().saturating_sub(1),
    };
    let max = count_max(total.max(1) as f64);
    open(
        &mut o,
        "chart-passing",
        f.h,
        "Features passing after each session",
    );
    y_axis(&mut o, &f, max, false, tick);
    axis_line(&mut o, &f);
    let x_at = |i: usize| LEFT + f.plot_w() * i as f64 / f.n.max(1) as f64;
    let ty = f.y(total as f64, max);
    let _ = write!(
        o,
        r#"<line class="total" x1="{LEFT}" x2="{:.1}" y1="{ty:.1}" y2="{ty:.1}"><title>{total} features in the list</title></line>"#,
        W - RIGHT
    );
    let pts: Vec<String> = passing_after
        .iter()
        .enumerate()
        .map(|(i, &p)| format!("{:.1},{:.1}", x_at(i), f.y(p as f64, max)))
        .collect();
    if let (Some(first), Some(last)) = (pts.first(), pts.last()) {
        let base = TOP + f.plot_h();
        let fx = first.split(',').next().unwrap_or("0");
        let lx = last.split(',').next().unwrap_or("0");
        let _ = write!(
            o,
            r#"<polygon class="area" points="{fx},{base:.1} {} {lx},{base:.1}"/>"#,
            pts.join(" ")
        );
    }
    let _ = write!(
        o,
        r#"<polyline class="line passing" data-points="{}" points="{}"/>"#,
        pts.len(),
        pts.join(" ")
    );
    if passing_after.len() <= 80 {
        for (i, &p) in passing_after.iter().enumerate() {
            let label = if i == 0 {
                format!("before the first session: {p} passing")
            } else {
                format!(
                    "after session {}: {p} of {total} passing",
                    numbers.get(i - 1).copied().unwrap_or(0)
                )
            };
            let _ = write!(
                o,
                r#"<circle class="dot" cx="{:.1}" cy="{:.1}" r="3"><title>{}</title></circle>"#,
                x_at(i),
                f.y(p as f64, max),
                escape(&label)
            );
        }
    }
    let mut labels = vec![0u32];
    labels.extend_from_slice(numbers);
    x_sessions(&mut o, &f, &labels, x_at);
    o.push_str("</svg>");
    o
}

/// One session's bar: tokens by kind, and what it cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionBar {
    /// Session number.
    pub number: u32,
    /// Uncached input, output, cache read, cache write.
    pub tokens: [u64; 4],
    /// Cost (verifier included).
    pub cost_usd: f64,
}

const TOKEN_CLASSES: [&str; 4] = ["t-in", "t-out", "t-cr", "t-cw"];
const TOKEN_NAMES: [&str; 4] = ["input", "output", "cache read", "cache write"];

/// Tokens per session as stacked bars, one `g.bar` per session.
pub fn tokens(bars: &[SessionBar]) -> String {
    let mut o = String::new();
    let f = Frame {
        h: 220.0,
        n: bars.len(),
    };
    let max = count_max(
        bars.iter()
            .map(|b| b.tokens.iter().sum::<u64>())
            .max()
            .unwrap_or(0) as f64,
    );
    open(&mut o, "chart-tokens", f.h, "Tokens per session, by kind");
    y_axis(&mut o, &f, max, false, tick);
    axis_line(&mut o, &f);
    let bw = (f.slot_w() * 0.8).max(0.6);
    let _ = write!(o, r#"<g class="bars" data-points="{}">"#, bars.len());
    for (i, b) in bars.iter().enumerate() {
        let x = f.slot_x(i) - bw / 2.0;
        let total: u64 = b.tokens.iter().sum();
        let parts: Vec<String> = b
            .tokens
            .iter()
            .zip(TOKEN_NAMES)
            .filter(|(t, _)| **t > 0)
            .map(|(t, n)| format!("{} {n}", count(*t)))
            .collect();
        let _ = write!(
            o,
            r#"<g class="bar"><title>session {}: {} tokens ({})</title>"#,
            b.number,
            count(total),
            parts.join(", ")
        );
        let mut acc = 0u64;
        for (k, t) in b.tokens.iter().enumerate() {
            if *t == 0 {
                continue;
            }
            let y1 = f.y((acc + t) as f64, max);
            let y0 = f.y(acc as f64, max);
            acc += t;
            let _ = write!(
                o,
                r#"<rect class="{}" x="{x:.1}" y="{y1:.1}" width="{bw:.1}" height="{:.1}"/>"#,
                TOKEN_CLASSES[k],
                (y0 - y1).max(0.0)
            );
        }
        o.push_str("</g>");
    }
    o.push_str("</g>");
    let numbers: Vec<u32> = bars.iter().map(|b| b.number).collect();
    x_sessions(&mut o, &f, &numbers, |i| f.slot_x(i));
    o.push_str("</svg>");
    o
}

/// Cost per session as bars (left axis), the running total as a line with one
/// point per session (right axis), and the budget as a dashed line when set.
pub fn cost(bars: &[SessionBar], budget: Option<f64>) -> String {
    let mut o = String::new();
    let f = Frame {
        h: 220.0,
        n: bars.len(),
    };
    let max = nice_max(bars.iter().map(|b| b.cost_usd).fold(0.0, f64::max));
    let total: f64 = bars.iter().map(|b| b.cost_usd).sum();
    let cmax = nice_max(total.max(budget.unwrap_or(0.0)));
    open(
        &mut o,
        "chart-cost",
        f.h,
        "Cost per session and running total",
    );
    let places = crate::fmt::axis_places(max);
    y_axis(&mut o, &f, max, false, |v| usd(v, places));
    let cplaces = if cmax < 100.0 {
        crate::fmt::axis_places(cmax)
    } else {
        0
    };
    y_axis(&mut o, &f, cmax, true, |v| usd(v, cplaces));
    axis_line(&mut o, &f);
    let bw = (f.slot_w() * 0.8).max(0.6);
    let _ = write!(o, r#"<g class="bars" data-points="{}">"#, bars.len());
    let mut run = 0.0;
    let mut pts = Vec::with_capacity(bars.len());
    for (i, b) in bars.iter().enumerate() {
        run += b.cost_usd;
        let y = f.y(b.cost_usd, max);
        let _ = write!(
            o,
            r#"<rect class="bar cost" x="{:.1}" y="{y:.1}" width="{bw:.1}" height="{:.1}"><title>session {}: {} (total {})</title></rect>"#,
            f.slot_x(i) - bw / 2.0,
            (TOP + f.plot_h() - y).max(0.0),
            b.number,
            usd(b.cost_usd, 4),
            usd(run, 2)
        );
        pts.push(format!("{:.1},{:.1}", f.slot_x(i), f.y(run, cmax)));
    }
    o.push_str("</g>");
    if let Some(b) = budget {
        let y = f.y(b, cmax);
        let _ = write!(
            o,
            r#"<line class="budget" x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}"><title>budget {}</title></line>"#,
            W - RIGHT,
            usd(b, 2)
        );
    }
    let _ = write!(
        o,
        r#"<polyline class="line cumulative" data-points="{}" points="{}"/>"#,
        pts.len(),
        pts.join(" ")
    );
    let numbers: Vec<u32> = bars.iter().map(|b| b.number).collect();
    x_sessions(&mut o, &f, &numbers, |i| f.slot_x(i));
    o.push_str("</svg>");
    o
}

/// One session on the time line.
#[derive(Debug, Clone)]
pub struct Span {
    /// Session number.
    pub number: u32,
    /// Start and end, Unix ms.
    pub start_ms: u64,
    /// End, Unix ms.
    pub end_ms: u64,
    /// CSS class: `s-init`, `s-flip`, `s-none`, `s-warn`, `s-fail`.
    pub class: &'static str,
    /// Tooltip.
    pub title: String,
}

/// Sessions on a wall-clock axis, one `rect.span` per session.
pub fn timeline(spans: &[Span]) -> String {
    let mut o = String::new();
    let f = Frame { h: 92.0, n: 1 };
    open(
        &mut o,
        "chart-timeline",
        f.h,
        "Sessions over wall-clock time",
    );
    let t0 = spans.iter().map(|s| s.start_ms).min().unwrap_or(0);
    let t1 = spans
        .iter()
        .map(|s| s.end_ms.max(s.start_ms))
        .max()
        .unwrap_or(0)
        .max(t0 + 1);
    let span = (t1 - t0) as f64;
    let x = |t: u64| LEFT + f.plot_w() * (t.saturating_sub(t0)) as f64 / span;
    let _ = write!(
        o,
        r#"<rect class="lane" x="{LEFT}" y="{TOP}" width="{:.1}" height="{:.1}"/>"#,
        f.plot_w(),
        f.plot_h()
    );
    let _ = write!(o, r#"<g class="spans" data-points="{}">"#, spans.len());
    for s in spans {
        let x0 = x(s.start_ms);
        let w = (x(s.end_ms.max(s.start_ms)) - x0).max(1.0);
        let _ = write!(
            o,
            r#"<rect class="span {}" data-session="{}" x="{x0:.1}" y="{:.1}" width="{w:.1}" height="{:.1}"><title>{}</title></rect>"#,
            s.class,
            s.number,
            TOP + 4.0,
            f.plot_h() - 8.0,
            escape(&s.title)
        );
    }
    o.push_str("</g>");
    if !spans.is_empty() {
        // A run shorter than an hour: the start's time, then offsets from it (five
        // labels of the same minute said nothing).
        let short = t1.saturating_sub(t0) < 3_600_000;
        for k in 0..=4 {
            let t = t0 + ((t1 - t0) as f64 * f64::from(k) / 4.0) as u64;
            let label = if short && k > 0 {
                format!("+{}", crate::fmt::seconds((t - t0) as f64 / 1000.0))
            } else {
                crate::fmt::utc(t)
            };
            let anchor = match k {
                0 => "start",
                4 => "end",
                _ => "middle",
            };
            let _ = write!(
                o,
                r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
                x(t),
                f.h - 8.0,
                escape(&label)
            );
        }
    }
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_maxima() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(3.0), 3.0);
        assert_eq!(nice_max(10.0), 10.0);
        assert_eq!(nice_max(11.0), 12.0);
        assert_eq!(nice_max(60.0), 60.0);
        assert_eq!(nice_max(0.0042), 0.005);
        assert_eq!(nice_max(180.0), 200.0);
    }

    /// The labels of `svg`'s ticks, in order.
    fn ticks(svg: &str) -> Vec<String> {
        svg.split(r#"<text class="tick""#)
            .skip(1)
            .filter_map(|t| t.split_once('>').and_then(|(_, r)| r.split_once("</text>")))
            .map(|(label, _)| label.to_string())
            .collect()
    }

    #[test]
    fn axes_read_right_on_small_runs() {
        // Three features: whole numbers, never 1.2 / 2.5 / 3.8.
        let svg = passing(&[0, 1, 2, 3], 3, &[1, 2, 3]);
        let t = ticks(&svg);
        assert_eq!(&t[..5], ["0", "1", "2", "3", "4"], "{t:?}");
        // Cents: five different labels on each axis.
        let bars: Vec<SessionBar> = [0.012, 0.008, 0.004]
            .iter()
            .enumerate()
            .map(|(i, c)| SessionBar {
                number: i as u32 + 1,
                tokens: [100, 20, 0, 0],
                cost_usd: *c,
            })
            .collect();
        let t = ticks(&cost(&bars, None));
        // The left axis's five labels, then the right one's.
        let left: Vec<&String> = t.iter().take(5).collect();
        let right: Vec<&String> = t.iter().skip(5).take(5).collect();
        for axis in [&left, &right] {
            let mut distinct = (*axis).clone();
            distinct.dedup();
            assert_eq!(distinct.len(), 5, "{axis:?}");
        }
        assert_eq!(left[1], "$0.003", "{left:?}");
        assert_eq!(count_max(3.0), 4.0);
        assert_eq!(count_max(7.0), 8.0);
        assert_eq!(count_max(10.0), 20.0);
        assert_eq!(count_max(200.0), 200.0);
    }

    #[test]
    fn a_short_runs_timeline_counts_from_its_start() {
        assert_eq!(crate::fmt::seconds(0.34), "0.3s");
        assert_eq!(crate::fmt::seconds(75.0), "1m 15s");
        assert_eq!(crate::fmt::money(0.0312), "$0.0312");
        assert_eq!(crate::fmt::money(12.5), "$12.50");
    }

    #[test]
    fn point_counts_match_the_data() {
        let svg = passing(&[0, 1, 1, 3], 3, &[1, 2, 3]);
        assert!(svg.contains(r#"data-points="4""#), "{svg}");
        let bars = vec![
            SessionBar {
                number: 1,
                tokens: [1, 2, 3, 4],
                cost_usd: 0.5
            };
            7
        ];
        let t = tokens(&bars);
        assert_eq!(t.matches(r#"<g class="bar">"#).count(), 7);
        let c = cost(&bars, Some(10.0));
        assert_eq!(c.matches(r#"<rect class="bar cost""#).count(), 7);
        assert!(c.contains(r#"class="budget""#));
    }
}
