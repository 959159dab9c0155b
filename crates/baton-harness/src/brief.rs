//! The brief: what a coding session needs to know, computed by baton so the agent
//! spends no turns rediscovering it. Kept compact: well under 2,000
//! tokens for a 200-feature project with long notes.

use std::fmt::Write as _;

use baton_records::human::features;

use baton_records::FeatureList;

use crate::files::Files;
pub use crate::running::Running;
use crate::{git, queue};
use baton_records::CheckRun;
use baton_records::{SessionOutcome, State};

/// Lines of the progress notes' tail shown.
const NOTES_LINES: usize = 40;
/// Bytes of the notes' tail shown at most.
const NOTES_BYTES: usize = 2_000;
/// Failing features listed (the first with its steps, the rest one line each).
const NEXT_FEATURES: usize = 5;
/// Steps of the first failing feature shown.
const STEPS_SHOWN: usize = 10;
/// Blocked or deferred features named in the "Set aside" section, each.
const SET_ASIDE_SHOWN: usize = 5;

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let c: String = s.chars().take(max).collect();
    format!("{c}…")
}

/// The brief for session `number`.
pub fn brief(
    files: &Files,
    list: &FeatureList,
    state: &State,
    number: u32,
    sweep: Option<&CheckRun>,
) -> String {
    brief_with(files, list, state, number, sweep, &Extras::default())
}

/// What the brief shows beyond the project's records.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// Processes the run started that still run (dev servers).
    pub running: Vec<Running>,
    /// This session's turn budget (0 = not shown).
    pub max_turns: u32,
    /// A person's guidance queued with `baton tell`.
    pub told: Vec<crate::tell::Told>,
    /// The target's check as baton ran it on the session's base commit, before the
    /// work.
    pub base_check: Option<baton_records::BaseCheck>,
    /// The port baton set for the session's commands, `init.sh` and the checks
    /// (`PORT`), where it set one.
    pub port: Option<String>,
    /// Features baton found passing their checks where they entered the list,
    /// before any session worked on them, and recorded as passing just now.
    pub accepted_working: Vec<usize>,
}

/// Processes shown at most.
const RUNNING_SHOWN: usize = 5;
/// Refused calls of the last session shown at most.
const REFUSALS_SHOWN: usize = 3;
/// Bytes of the notes' "Project facts" section shown at most.
const FACTS_BYTES: usize = 1_500;

/// The brief for session `number`, with `extras`: one section after another.
pub fn brief_with(
    files: &Files,
    list: &FeatureList,
    state: &State,
    number: u32,
    sweep: Option<&CheckRun>,
    extras: &Extras,
) -> String {
    let mut b = String::new();
    header(&mut b, files, list, number, extras);
    b.push_str(&crate::tell::section(&extras.told));
    if !extras.accepted_working.is_empty() {
        let _ = writeln!(
            b,
            "\nAlready working: {} passed {} verify command{} where {} entered the list, before any session worked on {}, so baton recorded {} as passing. Keep {} working.",
            baton_records::human::features(&extras.accepted_working),
            if extras.accepted_working.len() == 1 {
                "its"
            } else {
                "their"
            },
            if extras.accepted_working.len() == 1 {
                ""
            } else {
                "s"
            },
            if extras.accepted_working.len() == 1 {
                "it"
            } else {
                "they"
            },
            if extras.accepted_working.len() == 1 {
                "it"
            } else {
                "them"
            },
            if extras.accepted_working.len() == 1 {
                "it"
            } else {
                "them"
            },
            if extras.accepted_working.len() == 1 {
                "it"
            } else {
                "them"
            },
        );
    }
    running_now(&mut b, &extras.running);
    last_session(&mut b, files, state);
    if let Some(run) = sweep {
        sweep_found(&mut b, files, run);
    }
    next_features(&mut b, list, state, extras.base_check.as_ref());
    set_aside(&mut b, list, state);
    recent_commits(&mut b, files);
    progress_notes(&mut b, files);
    b
}

/// Where the project stands: passing features, categories, file names, turns.
fn header(b: &mut String, files: &Files, list: &FeatureList, number: u32, extras: &Extras) {
    let total = list.features.len();
    let _ = writeln!(b, "# Brief from baton (session {number})\n");
    let _ = writeln!(b, "Project directory: {}", files.dir.display());
    let _ = writeln!(b, "Features passing: {}/{total}", list.passing());
    let cats: Vec<String> = list
        .by_category()
        .iter()
        .map(|(c, p, t)| format!("{c} {p}/{t}"))
        .collect();
    let _ = writeln!(b, "By category: {}", cats.join(", "));
    let _ = writeln!(
        b,
        "Files: spec {}, features {}, notes {}, start script {}",
        files.names.spec, files.names.feature_list, files.names.progress, files.names.init_script
    );
    if let Some(port) = &extras.port {
        let _ = writeln!(
            b,
            "Port: $PORT is {port} for your commands, init.sh and baton's checks; the app listens on it."
        );
    }
    if extras.max_turns > 0 {
        let _ = writeln!(
            b,
            "This session: at most {} turns (baton warns at 80 %).",
            extras.max_turns
        );
    }
}

/// Processes the run started that still run (dev servers), with their ports.
fn running_now(b: &mut String, running: &[Running]) {
    if !running.is_empty() {
        let _ = writeln!(
            b,
            "\n## Running now (started by baton just before this session, from the current code)"
        );
        for r in running.iter().take(RUNNING_SHOWN) {
            let ports = if r.ports.is_empty() {
                String::new()
            } else {
                format!(
                    " · listening on {}",
                    r.ports
                        .iter()
                        .map(|p| format!("127.0.0.1:{p}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let log = r
                .log
                .as_deref()
                .map(|l| format!(" · log {l}"))
                .unwrap_or_default();
            let _ = writeln!(
                b,
                "- pid {}: `{}`{ports}{log}",
                r.pid,
                cut(&one_line(&r.command), 100)
            );
        }
        if running.len() > RUNNING_SHOWN {
            let _ = writeln!(b, "- … and {} more", running.len() - RUNNING_SHOWN);
        }
    }
}

/// What baton found after the last session: how it ended, what its gates did.
fn last_session(b: &mut String, files: &Files, state: &State) {
    let _ = writeln!(b, "\n## After the last session, baton found");
    let Some(last) = state.sessions.last() else {
        let _ = writeln!(
            b,
            "- Nothing yet: this is the first session of this record."
        );
        return;
    };
    let _ = writeln!(
        b,
        "- Session {} ({}) ended: {}.",
        last.number,
        last.kind.name(),
        last.outcome
    );
    match last.outcome {
        SessionOutcome::ContextFull => {
            let _ = writeln!(
                b,
                "- It filled its context window and was told to wrap up: read the end of its notes and its last commit, and finish anything it left half-done first."
            );
        }
        SessionOutcome::UsageLimit => {
            let _ = writeln!(
                b,
                "- The provider's usage limit stopped it; baton waited for the reset. Carry on where it left off."
            );
        }
        o if o.cut_off() => {
            let _ = writeln!(
                b,
                "- It was cut off before it finished: check for half-done work first."
            );
        }
        _ => {}
    }
    gate_findings(b, files, &last.gates);
    let said = crate::summary::summarize(&files.dir, last.number);
    refusals(b, last.gates.refusals, &said.refused);
    if !said.final_text.trim().is_empty() {
        let _ = writeln!(
            b,
            "- Its last words, quoted:\n{}",
            quoted(&cut(&one_line(&said.final_text), 300), "  ")
        );
    }
}

/// `text` as a quote: every line behind `> ` (after `indent`), so nothing in it
/// can end the quote and go on in baton's voice, as a line of baton's own or a
/// heading of the brief would. For what the sessions wrote (notes, last words).
fn quoted(text: &str, indent: &str) -> String {
    text.lines()
        .map(|l| {
            if l.trim().is_empty() {
                format!("{indent}>")
            } else {
                format!("{indent}> {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The last session's gates: flips, set-backs, violations undone, proof,
/// leftovers, notes.
fn gate_findings(b: &mut String, files: &Files, g: &baton_records::GateReport) {
    if g.flipped.is_empty() {
        let _ = writeln!(b, "- No feature newly passing.");
    } else {
        let _ = writeln!(b, "- Newly passing: {}.", features(&g.flipped));
    }
    if !g.unflipped.is_empty() {
        let _ = writeln!(b, "- Set back to failing: {}.", features(&g.unflipped));
    }
    for v in &g.violations {
        let _ = writeln!(
            b,
            "- VIOLATION, undone by baton: {v}. Only \"passes\" may change in {}.",
            files.names.feature_list
        );
    }
    for v in &g.boundary {
        let _ = writeln!(
            b,
            "- VIOLATION, undone by baton: {v}. git's config, hooks and info files and baton.toml are baton's; nothing in a session may change them."
        );
    }
    for f in &g.verify_failed {
        let _ = writeln!(
            b,
            "- The flip of #{} was REVERTED: its verify command `{}` failed: {}",
            f.feature,
            cut(&f.command, 100),
            cut(&one_line(&f.reason), 300)
        );
    }
    if !g.verified.is_empty() {
        let _ = writeln!(
            b,
            "- Confirmed by their verify commands: {}.",
            features(&g.verified)
        );
    }
    for (n, why) in &g.verifier_rejected {
        // A pass whose own check did not hold up is the verifier's shortfall as
        // much as the work's: not told to the coder as a fault it made.
        if why.starts_with("the verifier's check") {
            let _ = writeln!(
                b,
                "- #{n} was not proven and its flip was reverted: the independent verifier passed it, but the check it left did not hold up in baton's replay ({}). That may be the check's fault rather than your work's: if the feature works as its steps say, flip it again and another verifier judges it.",
                cut(&one_line(why), 300)
            );
            continue;
        }
        let _ = writeln!(
            b,
            "- The independent verifier REJECTED #{n} and its flip was reverted: {}",
            cut(&one_line(why), 300)
        );
    }
    if let Some(r) = &g.rewound {
        let _ = writeln!(
            b,
            "- VIOLATION, undone by baton: {}. Never rewrite or throw away history (no git reset to an earlier commit, rebase, amend): check that the work of the dropped commits is still in the tree.",
            cut(&one_line(r), 300)
        );
    }
    for n in &g.vacuous {
        let _ = writeln!(
            b,
            "- #{n}'s verify command already passed before the work (in a clean checkout of the commit before it), so it proves nothing about that work."
        );
    }
    for (n, why) in &g.unproven {
        let _ = writeln!(
            b,
            "- The flip of #{n} was REVERTED because nothing proved it: {}.",
            cut(&one_line(why), 300)
        );
    }
    if !g.left_out.is_empty() {
        let _ = writeln!(
            b,
            "- baton did not commit these leftovers (dependencies, logs, data, build output, big files; add them to .gitignore): {}",
            cut(&g.left_out.join(", "), 300)
        );
    }
    if !g.leftover_files.is_empty() {
        let shown: Vec<&str> = g
            .leftover_files
            .iter()
            .take(8)
            .map(String::as_str)
            .collect();
        let _ = writeln!(
            b,
            "- The session left uncommitted work; baton committed it as {}: {}{}. Check it is complete and working.",
            g.leftover_commit
                .as_deref()
                .map_or("a labelled commit", |c| &c[..c.len().min(9)]),
            shown.join(", "),
            if g.leftover_files.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        );
    }
    if !g.notes_updated {
        let _ = writeln!(
            b,
            "- The progress notes were not updated. Write them this time."
        );
    }
}

/// The last session's calls the policy refused (up to [`REFUSALS_SHOWN`]).
fn refusals(b: &mut String, count: u32, refused: &[(String, String)]) {
    if count == 0 {
        return;
    }
    let _ = writeln!(
        b,
        "- {count} tool call(s) were refused by baton's policy{}",
        if refused.is_empty() { "." } else { ":" }
    );
    for (what, why) in refused.iter().take(REFUSALS_SHOWN) {
        // The policy's reasons name the refused part first (`part`: why).
        if why.starts_with('`') {
            let _ = writeln!(b, "  - {}", cut(&one_line(why), 240));
        } else {
            let _ = writeln!(
                b,
                "  - `{}`: {}",
                cut(&one_line(what), 80),
                cut(&one_line(why), 200)
            );
        }
    }
}

/// The regression sweep baton ran before this session.
fn sweep_found(b: &mut String, files: &Files, run: &CheckRun) {
    let _ = writeln!(b, "\n## Regression sweep baton ran just now");
    if let Some(e) = &run.init_error {
        let _ = writeln!(
            b,
            "- ./{} failed: {}",
            files.names.init_script,
            cut(&one_line(e), 300)
        );
    }
    if let Some(said) = &run.init_output {
        let _ = writeln!(
            b,
            "- ./{} ran first and ended with: {}",
            files.names.init_script,
            cut(&one_line(said), 300)
        );
    }
    if run.failed.is_empty() {
        let _ = writeln!(
            b,
            "- {} passing feature(s) re-checked with their verify commands: all still pass.",
            run.passed.len()
        );
    }
    for f in &run.failed {
        let _ = writeln!(
            b,
            "- #{} BROKE and was set back to failing: `{}` failed: {}. Fix it first.",
            f.feature,
            cut(&f.command, 100),
            cut(&one_line(&f.reason), 300)
        );
    }
    if !run.skipped.is_empty() {
        let _ = writeln!(
            b,
            "- {} check(s) not run: the sweep's time box ran out.",
            run.skipped.len()
        );
    }
}

/// The feature to take (the claimed one in a parallel run), with its steps,
/// verify command and earlier attempts, and the next few after it.
fn next_features(
    b: &mut String,
    list: &FeatureList,
    state: &State,
    base: Option<&baton_records::BaseCheck>,
) {
    if state.claim.is_some() {
        let _ = writeln!(
            b,
            "\n## Your feature (claimed for you: other agents work on the others at the same time, in working copies of their own; do not start another)"
        );
    } else {
        let _ = writeln!(
            b,
            "\n## Next failing features (in priority order; take the first)"
        );
    }
    let order = queue::order(list, state);
    let failing: Vec<(usize, &baton_records::Feature)> = order
        .iter()
        .take(NEXT_FEATURES)
        .filter_map(|&n| list.features.get(n - 1).map(|f| (n - 1, f)))
        .collect();
    if failing.is_empty() {
        let _ = writeln!(b, "- None: every feature passes or is blocked.");
    }
    for (k, (i, f)) in failing.into_iter().enumerate() {
        if k > 0 {
            let _ = writeln!(
                b,
                "{}. [{}] {}",
                i + 1,
                f.category,
                cut(&f.description, 120)
            );
            continue;
        }
        let _ = writeln!(
            b,
            "{}. [{}] {}",
            i + 1,
            f.category,
            cut(&f.description, 300)
        );
        for s in f.steps.iter().take(STEPS_SHOWN) {
            let _ = writeln!(b, "   - {}", cut(s, 140));
        }
        match crate::checks::command_of(list, i) {
            Some(v) => {
                let _ = writeln!(
                    b,
                    "   verify: `{}` (baton runs it to confirm the flip)",
                    cut(&v, 200)
                );
                match base.filter(|c| c.feature == i + 1 && c.command == v) {
                    Some(c) if c.refused.is_some() => {
                        let _ = writeln!(
                            b,
                            "   #{}'s check cannot run here (baton's policy refuses it), so it proves nothing: the independent verifier will judge your flip",
                            i + 1
                        );
                    }
                    Some(c) if c.passed => {
                        let _ = writeln!(
                            b,
                            "   #{}'s check already passes before your work (baton ran it just now), so it cannot prove the flip: the independent verifier will judge it",
                            i + 1
                        );
                    }
                    Some(_) => {
                        let _ = writeln!(
                            b,
                            "   #{}'s check fails before your work (baton ran it just now): make it pass, without changing what it runs",
                            i + 1
                        );
                    }
                    None => {}
                }
            }
            None => {
                let _ = writeln!(
                    b,
                    "   verify: none yet (you may add a deterministic one when you flip it)"
                );
            }
        }
        if f.steps.len() > STEPS_SHOWN {
            let _ = writeln!(
                b,
                "   - … {} more steps in the feature list",
                f.steps.len() - STEPS_SHOWN
            );
        }
        if let Some(r) = state.features.get(&(i + 1)).filter(|r| r.attempts > 0) {
            let _ = writeln!(
                b,
                "   Tried in {} earlier session(s) without passing; last time: {}. Find out why before repeating the same approach.",
                r.attempts,
                cut(r.last_reason.as_deref().unwrap_or("unknown"), 200)
            );
        }
    }
}

/// The last 20 commits.
fn recent_commits(b: &mut String, files: &Files) {
    let _ = writeln!(b, "\n## Recent commits (git log --oneline -20)");
    let log = git::log_oneline(&files.dir, 20);
    b.push_str(if log.trim().is_empty() {
        "(none)\n"
    } else {
        &log
    });
}

/// The notes' "Project facts" section, and the end of the progress notes.
fn progress_notes(b: &mut String, files: &Files) {
    let mut notes = files.read_notes();
    if let Some((facts, rest)) = project_facts(&notes) {
        let _ = writeln!(
            b,
            "\n## Project facts (from {}, written by the sessions, quoted)",
            files.names.progress
        );
        let _ = writeln!(b, "{}", quoted(&cut_bytes(&facts, FACTS_BYTES), ""));
        notes = rest;
    }
    let _ = writeln!(
        b,
        "\n## Progress notes (end of {}, written by the sessions, quoted)",
        files.names.progress
    );
    if notes.trim().is_empty() {
        let _ = writeln!(b, "(none yet)");
    } else {
        let lines: Vec<&str> = notes.lines().collect();
        let mut tail = lines[lines.len().saturating_sub(NOTES_LINES)..].join("\n");
        if tail.len() > NOTES_BYTES {
            let mut start = tail.len() - NOTES_BYTES;
            while !tail.is_char_boundary(start) {
                start += 1;
            }
            tail = format!("…{}", &tail[start..]);
        }
        let _ = writeln!(b, "{}", quoted(&tail, ""));
    }
}

/// The notes' "Project facts" section (a heading containing "project facts", up to
/// the next heading of the same or a higher level) without its heading, and the notes
/// without that section.
fn project_facts(notes: &str) -> Option<(String, String)> {
    let lines: Vec<&str> = notes.lines().collect();
    let start = lines.iter().position(|l| {
        let t = l.trim_start();
        t.starts_with('#') && t.to_ascii_lowercase().contains("project facts")
    })?;
    let level = lines[start]
        .trim_start()
        .chars()
        .take_while(|&c| c == '#')
        .count();
    let end = lines[start + 1..]
        .iter()
        .position(|l| {
            let t = l.trim_start();
            let hashes = t.chars().take_while(|&c| c == '#').count();
            hashes > 0 && hashes <= level && t[hashes..].starts_with(' ')
        })
        .map_or(lines.len(), |i| start + 1 + i);
    let text = lines[start + 1..end].join("\n").trim().to_string();
    let rest = [&lines[..start], &lines[end..]].concat().join("\n");
    (!text.is_empty()).then_some((text, rest))
}

fn cut_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Blocked features (not the agent's to work on) and deferred ones (they come back).
fn set_aside(b: &mut String, list: &FeatureList, state: &State) {
    let blocked = queue::blocked(list, state);
    let deferred = queue::deferred(list, state);
    if blocked.is_empty() && deferred.is_empty() {
        return;
    }
    let more = |n: usize| {
        if n > SET_ASIDE_SHOWN {
            format!("; … and {} more", n - SET_ASIDE_SHOWN)
        } else {
            String::new()
        }
    };
    let _ = writeln!(b, "\n## Set aside");
    if !blocked.is_empty() {
        let shown: Vec<String> = blocked
            .iter()
            .take(SET_ASIDE_SHOWN)
            .map(|n| {
                let why = state.features.get(n).and_then(|r| r.blocked.as_deref());
                format!("#{n} ({})", cut(&one_line(why.unwrap_or_default()), 60))
            })
            .collect();
        let _ = writeln!(
            b,
            "- Blocked, waiting for a person; not yours to work on: {}{}.",
            shown.join("; "),
            more(blocked.len())
        );
    }
    if !deferred.is_empty() {
        let shown: Vec<String> = deferred
            .iter()
            .take(SET_ASIDE_SHOWN)
            .map(|n| {
                let tries = state.features.get(n).map_or(0, |r| r.attempts);
                format!("#{n} ({tries} attempts)")
            })
            .collect();
        let _ = writeln!(
            b,
            "- Deferred after failed attempts; they come back after every other failing feature: {}{}.",
            shown.join(", "),
            more(deferred.len())
        );
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
