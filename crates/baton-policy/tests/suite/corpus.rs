//! Every command of `tests/corpus.txt` gets the decision written next to it.

use super::project;

struct Case {
    line: usize,
    command: String,
    /// `None`: must be allowed; `Some(s)`: must be refused with `s` in the message.
    refused: Option<String>,
}

fn cases() -> Vec<Case> {
    let text = include_str!("../corpus.txt");
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let unescape = |s: &str| s.replace('⏎', "\n");
        if let Some(cmd) = line.strip_prefix("+ ") {
            out.push(Case {
                line: i + 1,
                command: unescape(cmd),
                refused: None,
            });
        } else if let Some(rest) = line.strip_prefix("- ") {
            let (why, cmd) = rest
                .split_once(" :: ")
                .unwrap_or_else(|| panic!("corpus.txt:{}: `- REASON :: COMMAND`", i + 1));
            out.push(Case {
                line: i + 1,
                command: unescape(cmd),
                refused: Some(why.to_string()),
            });
        } else {
            assert!(
                line.is_empty() || line.starts_with('#'),
                "corpus.txt:{}: unknown line {line:?}",
                i + 1
            );
        }
    }
    out
}

#[test]
fn corpus_is_big_enough() {
    let c = cases();
    let allowed = c.iter().filter(|c| c.refused.is_none()).count();
    let refused = c.len() - allowed;
    assert!(c.len() >= 150, "{} cases", c.len());
    assert!(
        allowed >= 100 && refused >= 150,
        "{allowed} allowed, {refused} refused"
    );
}

#[test]
fn corpus_decisions() {
    let (_dir, policy) = project();
    let mut failures = Vec::new();
    for case in cases() {
        let verdict = policy.check(&case.command);
        let msg = verdict.message();
        match (&case.refused, verdict.is_allowed()) {
            (None, true) => {}
            (None, false) => failures.push(format!(
                "corpus.txt:{}: everyday command refused: {}\n    {}",
                case.line,
                case.command,
                msg.replace('\n', "\n    ")
            )),
            (Some(_), true) => failures.push(format!(
                "corpus.txt:{}: ATTACK ALLOWED: {}",
                case.line, case.command
            )),
            (Some(why), false) => {
                if !msg.contains(why.as_str()) {
                    failures.push(format!(
                        "corpus.txt:{}: refused, but not for {why:?}: {}\n    {}",
                        case.line,
                        case.command,
                        msg.replace('\n', "\n    ")
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_refusal_says_part_reason_and_instead() {
    let (_dir, policy) = project();
    for case in cases().into_iter().filter(|c| c.refused.is_some()) {
        for r in policy.check(&case.command).refusals() {
            assert!(!r.part.is_empty(), "line {}: empty part", case.line);
            assert!(r.reason.len() > 10, "line {}: thin reason {r:?}", case.line);
            assert!(
                r.instead.len() > 5,
                "line {}: thin instead {r:?}",
                case.line
            );
        }
    }
}
