//! Every command of `tests/corpus.txt` (the default: no bubblewrap) and of
//! `tests/corpus-bubblewrap.txt` (judged as inside baton's bubblewrap sandbox) gets
//! the decision written next to it.

use baton_policy::Policy;

use super::{project, project_with_bubblewrap};

const CORPUS: &str = include_str!("../corpus.txt");
const BUBBLEWRAP: &str = include_str!("../corpus-bubblewrap.txt");

/// What a refusal says of a command bubblewrap would allow.
const INSTALL_BUBBLEWRAP: &str = "Landlock without bubblewrap";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    /// `+ COMMAND`: allowed.
    Allowed,
    /// `+! COMMAND` (bubblewrap corpus): allowed with bubblewrap, refused without it
    /// with a reason that names bubblewrap.
    OnlyInBubblewrap,
    /// `- SUBSTRING :: COMMAND`: refused, with SUBSTRING in the refusal.
    Refused(String),
}

struct Case {
    file: &'static str,
    line: usize,
    command: String,
    expect: Expect,
}

fn cases(file: &'static str, text: &str) -> Vec<Case> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let unescape = |s: &str| s.replace('⏎', "\n");
        let (command, expect) = if let Some(cmd) = line.strip_prefix("+! ") {
            (unescape(cmd), Expect::OnlyInBubblewrap)
        } else if let Some(cmd) = line.strip_prefix("+ ") {
            (unescape(cmd), Expect::Allowed)
        } else if let Some(rest) = line.strip_prefix("- ") {
            let (why, cmd) = rest
                .split_once(" :: ")
                .unwrap_or_else(|| panic!("{file}:{}: `- REASON :: COMMAND`", i + 1));
            (unescape(cmd), Expect::Refused(why.to_string()))
        } else {
            assert!(
                line.is_empty() || line.starts_with('#'),
                "{file}:{}: unknown line {line:?}",
                i + 1
            );
            continue;
        };
        out.push(Case {
            file,
            line: i + 1,
            command,
            expect,
        });
    }
    out
}

/// The failures of `policy` on `cases`, where `OnlyInBubblewrap` means allowed
/// (`bubblewrap`) or refused with the bubblewrap hint (not).
fn failures(policy: &Policy, cases: &[Case], bubblewrap: bool) -> Vec<String> {
    let mut out = Vec::new();
    for case in cases {
        let verdict = policy.check(&case.command);
        let msg = verdict.message();
        let at = format!("{}:{}", case.file, case.line);
        let expect = match (&case.expect, bubblewrap) {
            (Expect::OnlyInBubblewrap, true) => Expect::Allowed,
            (Expect::OnlyInBubblewrap, false) => Expect::Refused(INSTALL_BUBBLEWRAP.into()),
            (e, _) => e.clone(),
        };
        match (&expect, verdict.is_allowed()) {
            (Expect::Allowed, true) => {}
            (Expect::Allowed, false) => out.push(format!(
                "{at}: everyday command refused: {}\n    {}",
                case.command,
                msg.replace('\n', "\n    ")
            )),
            (_, true) => out.push(format!("{at}: ATTACK ALLOWED: {}", case.command)),
            (Expect::Refused(why), false) => {
                // The refusal goes to the agent, whom no person answers during
                // a run: it says what the agent can do, never to ask someone.
                let lower = msg.to_lowercase();
                if ["ask the user", "ask the person", "ask a person", "ask your"]
                    .iter()
                    .any(|p| lower.contains(p))
                {
                    out.push(format!(
                        "{at}: the refusal sends the agent to a person: {}\n    {}",
                        case.command,
                        msg.replace('\n', "\n    ")
                    ));
                }
                if !msg.contains(why.as_str()) {
                    out.push(format!(
                        "{at}: refused, but not for {why:?}: {}\n    {}",
                        case.command,
                        msg.replace('\n', "\n    ")
                    ));
                }
            }
            (Expect::OnlyInBubblewrap, false) => {}
        }
    }
    out
}

fn assert_none(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_is_big_enough() {
    let c = cases("corpus.txt", CORPUS);
    let allowed = c.iter().filter(|c| c.expect == Expect::Allowed).count();
    let refused = c.len() - allowed;
    assert!(c.len() >= 150, "{} cases", c.len());
    assert!(
        allowed >= 100 && refused >= 150,
        "{allowed} allowed, {refused} refused"
    );
    let b = cases("corpus-bubblewrap.txt", BUBBLEWRAP);
    let only = b
        .iter()
        .filter(|c| c.expect == Expect::OnlyInBubblewrap)
        .count();
    assert!(only >= 25 && b.len() - only >= 40, "{only} of {}", b.len());
}

#[test]
fn corpus_decisions() {
    let (_dir, policy) = project();
    assert_none(failures(&policy, &cases("corpus.txt", CORPUS), false));
}

/// Inside the bubblewrap sandbox: the bubblewrap corpus as written, and every
/// everyday command of the main corpus still allowed.
#[test]
fn corpus_decisions_with_bubblewrap() {
    let (_dir, policy) = project_with_bubblewrap();
    assert!(policy.bubblewrap());
    let mut f = failures(&policy, &cases("corpus-bubblewrap.txt", BUBBLEWRAP), true);
    let everyday: Vec<Case> = cases("corpus.txt", CORPUS)
        .into_iter()
        .filter(|c| c.expect == Expect::Allowed)
        .collect();
    f.extend(failures(&policy, &everyday, true));
    assert_none(f);
}

/// Without bubblewrap: what the bubblewrap corpus allows only inside it is refused
/// with a reason that says to install bubblewrap, and what it refuses is refused.
#[test]
fn corpus_of_bubblewrap_without_it() {
    let (_dir, policy) = project();
    assert!(!policy.bubblewrap());
    let strict: Vec<Case> = cases("corpus-bubblewrap.txt", BUBBLEWRAP)
        .into_iter()
        .filter(|c| c.expect != Expect::Allowed)
        .map(|c| match c.expect {
            Expect::Refused(_) => Case {
                expect: Expect::Refused(String::new()),
                ..c
            },
            _ => c,
        })
        .collect();
    assert_none(failures(&policy, &strict, false));
}

#[test]
fn every_refusal_says_part_reason_and_instead() {
    for (policy, file, text) in [
        (project(), "corpus.txt", CORPUS),
        (project(), "corpus-bubblewrap.txt", BUBBLEWRAP),
        (
            project_with_bubblewrap(),
            "corpus-bubblewrap.txt",
            BUBBLEWRAP,
        ),
    ] {
        let (_dir, policy) = policy;
        for case in cases(file, text)
            .into_iter()
            .filter(|c| c.expect != Expect::Allowed)
        {
            for r in policy.check(&case.command).refusals() {
                let at = format!("{file}:{}", case.line);
                assert!(!r.part.is_empty(), "{at}: empty part");
                assert!(r.reason.len() > 10, "{at}: thin reason {r:?}");
                assert!(r.instead.len() > 5, "{at}: thin instead {r:?}");
            }
        }
    }
}
