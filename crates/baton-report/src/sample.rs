//! A synthetic project's records, made deterministically from a seed: for the
//! benchmark (hundreds of sessions, thousands of features), the tests that render
//! the page in a browser, and the screenshots in the docs. The records have the
//! shapes baton writes (state, ledger, accepted list, evidence images) and agree
//! with each other: the list's `passes` are what the ledger's flips leave.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

/// What to make.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Sessions, the initializer first.
    pub sessions: u32,
    /// Features in the list.
    pub features: usize,
    /// Of the features, how many pass at the end (about).
    pub passing: usize,
    /// Write an evidence image for every `evidence_every`-th flipping session (0: none).
    pub evidence_every: u32,
    /// Seed of the generator.
    pub seed: u64,
    /// Start of the first session, Unix ms.
    pub start_ms: u64,
}

impl Default for Sample {
    fn default() -> Self {
        Self {
            sessions: 24,
            features: 60,
            passing: 41,
            evidence_every: 4,
            seed: 7,
            start_ms: 1_736_154_000_000, // 2025-01-06 09:00 UTC
        }
    }
}

/// The sample's deterministic random numbers (xorshift64*), from a non-zero seed.
struct Rng(u64);

impl Rng {
    /// The next 64 random bits.
    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number from 0 up to `n` (exclusive; 0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// A made-up 40-digit commit hash.
    fn hex(&mut self) -> String {
        format!(
            "{:016x}{:016x}{:08x}",
            self.next(),
            self.next(),
            self.next() as u32
        )
    }
}

/// The categories features are spread over, in list order.
const CATEGORIES: [&str; 5] = [
    "functional",
    "style",
    "accessibility",
    "performance",
    "security",
];
/// What a feature lets a user do, taken in turn.
const ACTIONS: [&str; 8] = [
    "add a todo from the input box",
    "mark a todo done and see it struck through",
    "filter todos by status",
    "rename a list inline",
    "undo the last deletion",
    "sync changes across two tabs",
    "export the lists as JSON",
    "search todos by text",
];

/// Write the sample's records into `dir` (which must exist).
pub fn write(dir: &Path, s: &Sample) -> std::io::Result<()> {
    let baton = dir.join(".baton");
    std::fs::create_dir_all(&baton)?;
    let mut rng = Rng(s.seed.max(1));
    let n = s.features;
    let features = feature_texts(n);
    let coding = s.sessions.saturating_sub(1).max(1) as usize;
    let per = (s.passing * 5 / 4).div_ceil(coding).max(1);
    let target = s.passing.min(n);
    let mut passes = vec![false; n];
    let mut sessions: Vec<Value> = Vec::new();
    let mut ledger = String::new();
    let mut t = s.start_ms;
    let mut stalled = 0u32;
    for number in 1..=s.sessions {
        let init = number == 1;
        let minutes = if init { 9 } else { 6 + rng.below(22) };
        let start = t;
        let end = start + minutes * 60_000 + rng.below(59_000);
        // An overnight pause after two thirds of the sessions (a resumed run).
        t = end
            + if number == s.sessions * 2 / 3 {
                9 * 3_600_000
            } else {
                3_000
            };
        let slot = Slot {
            number,
            start,
            end,
            commit: rng.hex(),
        };
        let gates = if init {
            let _ = writeln!(
                ledger,
                "{}",
                json!({"t_ms": end, "session": 1, "kind": "accepted",
                       "detail": format!("initial feature list ({n} features)"), "commit": slot.commit})
            );
            Gates::default()
        } else {
            coding_gates(&mut rng, number, &passes, per, target)
        };
        for &f in &gates.flipped {
            passes[f - 1] = true;
        }
        for &f in &gates.unflipped {
            passes[f - 1] = false;
        }
        record_gates(&mut ledger, dir, s, &slot, &features, &gates)?;
        if !init {
            stalled = if gates.flipped.is_empty() {
                stalled + 1
            } else {
                0
            };
        }
        sessions.push(session_json(&mut rng, &slot, &gates));
    }
    write_records(dir, &features, &passes, ledger, &sessions, stalled)
}

/// When one session ran and the commit it ended on.
struct Slot {
    /// The session's number, 1 for the initializer.
    number: u32,
    /// Start, Unix ms.
    start: u64,
    /// End, Unix ms.
    end: u64,
    /// The commit the session ended on.
    commit: String,
}

/// What a session did to the list and what the gates found after it.
struct Gates {
    /// Features (1-based) the session made pass.
    flipped: Vec<usize>,
    /// Features (1-based) set back to failing.
    unflipped: Vec<usize>,
    /// Edits of the feature list that were restored.
    violations: Vec<String>,
    /// Files the session left uncommitted.
    leftover: Vec<String>,
    /// How the session ended.
    outcome: &'static str,
}

impl Default for Gates {
    /// A completed session that changed nothing.
    fn default() -> Self {
        Self {
            flipped: Vec::new(),
            unflipped: Vec::new(),
            violations: Vec::new(),
            leftover: Vec::new(),
            outcome: "completed",
        }
    }
}

/// The `n` features' categories and descriptions, in list order.
fn feature_texts(n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            (
                CATEGORIES[i * 7 / n.max(1) % CATEGORIES.len()].to_string(),
                format!(
                    "Feature {}: a user can {}",
                    i + 1,
                    ACTIONS[i % ACTIONS.len()]
                ),
            )
        })
        .collect()
}

/// What coding session `number` does, given what passes before it: it flips
/// about `per` failing features (never past `target` passing) unless it is a
/// quiet or failed session, and every so often it sets a feature back, edits
/// the list beyond `passes` or leaves files uncommitted.
fn coding_gates(rng: &mut Rng, number: u32, passes: &[bool], per: usize, target: usize) -> Gates {
    let n = passes.len();
    let mut g = Gates::default();
    let quiet = number.is_multiple_of(9) || number.is_multiple_of(14);
    if number.is_multiple_of(17) {
        g.outcome = "error";
    } else if number.is_multiple_of(19) {
        g.outcome = "max_turns";
    }
    if !quiet && g.outcome == "completed" {
        let k = per + rng.below(2) as usize;
        let have = passes.iter().filter(|p| **p).count();
        for (i, p) in passes.iter().enumerate() {
            if g.flipped.len() >= k || have + g.flipped.len() >= target {
                break;
            }
            if !p {
                g.flipped.push(i + 1);
            }
        }
    }
    if number.is_multiple_of(11)
        && let Some(f) = (0..n).rev().find(|&i| passes[i])
    {
        g.unflipped.push(f + 1);
    }
    if number.is_multiple_of(13) {
        g.violations.push(format!(
            "feature {}: \"description\", \"steps\" was changed",
            1 + rng.below(n as u64)
        ));
    }
    if number.is_multiple_of(5) {
        g.leftover = vec!["src/app.js".to_string(), "src/styles.css".to_string()];
    }
    g
}

/// The ledger lines of one session's flips (writing their evidence images
/// into `dir` every `s.evidence_every`-th session), flip-backs and restores.
fn record_gates(
    ledger: &mut String,
    dir: &Path,
    s: &Sample,
    slot: &Slot,
    features: &[(String, String)],
    gates: &Gates,
) -> std::io::Result<()> {
    let (number, end, commit) = (slot.number, slot.end, &slot.commit);
    for &f in &gates.flipped {
        let evidence: Vec<String> = if s.evidence_every > 0 && number % s.evidence_every == 0 {
            vec![format!(".baton/evidence/{number:04}/feature-{f}.png")]
        } else {
            Vec::new()
        };
        let _ = writeln!(
            ledger,
            "{}",
            json!({"t_ms": end, "session": number, "kind": "flip", "feature": f,
                   "detail": features[f - 1].1, "commit": commit, "evidence": evidence})
        );
        if let Some(p) = evidence.first() {
            let path = dir.join(p);
            if let Some(d) = path.parent() {
                std::fs::create_dir_all(d)?;
            }
            std::fs::write(&path, png(120, 75, f as u32))?;
        }
    }
    for &f in &gates.unflipped {
        let _ = writeln!(
            ledger,
            "{}",
            json!({"t_ms": end, "session": number, "kind": "unflip", "feature": f,
                   "detail": features[f - 1].1, "commit": commit})
        );
    }
    for v in &gates.violations {
        let _ = writeln!(
            ledger,
            "{}",
            json!({"t_ms": end, "session": number, "kind": "violation", "detail": v, "commit": commit})
        );
    }
    Ok(())
}

/// One session's entry in the state file: its turns, token usage and cost
/// (made up from `rng`) and its gates.
fn session_json(rng: &mut Rng, slot: &Slot, gates: &Gates) -> Value {
    let init = slot.number == 1;
    let (number, start, end) = (slot.number, slot.start, slot.end);
    let Gates {
        flipped,
        unflipped,
        violations,
        leftover,
        outcome,
    } = gates;
    let turns = if init { 14 } else { 8 + rng.below(40) };
    let input = turns * (1_800 + rng.below(900));
    let output = turns * (350 + rng.below(400));
    let cache_read = turns * turns * (900 + rng.below(300));
    let cache_write = turns * (1_200 + rng.below(600));
    let cost = (input as f64 * 3.0
        + output as f64 * 15.0
        + cache_read as f64 * 0.3
        + cache_write as f64 * 3.75)
        / 1e6;
    json!({
        "number": number,
        "kind": if init { "initializer" } else { "coding" },
        "started_ms": start,
        "ended_ms": end,
        "outcome": outcome,
        "turns": turns,
        "usage": {"input_tokens": input, "output_tokens": output,
                  "cache_read_tokens": cache_read, "cache_write_tokens": cache_write},
        "cost_usd": cost,
        "gates": {
            "flipped": flipped, "unflipped": unflipped, "violations": violations,
            "restore_commit": if violations.is_empty() { Value::Null } else { json!(rng.hex()) },
            "leftover_files": leftover,
            "leftover_commit": if leftover.is_empty() { Value::Null } else { json!(rng.hex()) },
            "notes_updated": number % 8 != 0,
            "refusals": u32::from(number % 7 == 0) + u32::from(number % 21 == 0),
        },
        "commits": 1 + rng.below(3),
    })
}

/// Write the feature list (as the project's and as baton's accepted copy),
/// the ledger and the state file.
fn write_records(
    dir: &Path,
    features: &[(String, String)],
    passes: &[bool],
    ledger: String,
    sessions: &[Value],
    stalled: u32,
) -> std::io::Result<()> {
    let baton = dir.join(".baton");
    let list: Vec<Value> = features
        .iter()
        .zip(passes)
        .map(|((c, d), p)| {
            json!({"category": c, "description": d,
                   "steps": ["open the app", "do it", "see the result"], "passes": p})
        })
        .collect();
    let list = serde_json::to_string_pretty(&list).unwrap_or_default() + "\n";
    std::fs::write(dir.join("feature_list.json"), &list)?;
    std::fs::write(baton.join("accepted_feature_list.json"), &list)?;
    std::fs::write(baton.join("ledger.jsonl"), ledger)?;
    let state =
        json!({"version": 1, "sessions": sessions, "in_progress": null, "stalled": stalled});
    std::fs::write(
        baton.join("state.json"),
        serde_json::to_string_pretty(&state).unwrap_or_default(),
    )
}

/// The CRC-32 of `bytes`, as PNG chunks carry it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Append a PNG chunk of `kind` holding `data` (length, kind, data, CRC) to `out`.
fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
}

/// A small valid PNG (an app-window mock in a colour picked by `tint`), stored
/// without compression so no codec is needed.
pub fn png(w: u32, h: u32, tint: u32) -> Vec<u8> {
    let hue = [
        [37u8, 99, 235],
        [21, 128, 61],
        [180, 83, 9],
        [124, 58, 237],
        [13, 148, 136],
    ][tint as usize % 5];
    let mut raw = Vec::with_capacity(((w * 3 + 1) * h) as usize);
    for y in 0..h {
        raw.push(0);
        for x in 0..w {
            let px = if y < 14 {
                hue
            } else if (20..26).contains(&(y % 20)) && x > 12 && x < w - 30 {
                [200, 204, 210]
            } else if x < 10 || x >= w - 10 {
                [236, 238, 241]
            } else {
                [252, 252, 252]
            };
            raw.extend_from_slice(&px);
        }
    }
    // zlib with stored (uncompressed) deflate blocks.
    let mut z = vec![0x78, 0x01];
    let mut chunks = raw.chunks(65_535).peekable();
    while let Some(c) = chunks.next() {
        z.push(u8::from(chunks.peek().is_none()));
        let len = c.len() as u16;
        z.extend_from_slice(&len.to_le_bytes());
        z.extend_from_slice(&(!len).to_le_bytes());
        z.extend_from_slice(c);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &x in &raw {
        a = (a + u32::from(x)) % 65_521;
        b = (b + a) % 65_521;
    }
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut out = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &z);
    chunk(&mut out, b"IEND", &[]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Analysis, Records};

    #[test]
    fn the_sample_agrees_with_itself() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &Sample::default()).unwrap();
        let r = Records::load(dir.path(), "feature_list.json").unwrap();
        assert_eq!(r.sessions.len(), 24);
        assert_eq!(r.features.len(), 60);
        let a = Analysis::new(&r);
        // Counting forward from zero gives what the list says at the end.
        assert_eq!(a.passing_after[0], 0);
        assert!(!r.evidence.is_empty());
        let passing = r.features.iter().filter(|f| f.passes).count();
        assert!(passing > 20, "{passing}");
    }

    #[test]
    fn crc_of_iend_is_the_known_one() {
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    }
}
