//! The checker fails closed on any input: it never panics, its work is bounded (counted
//! in steps, never timed), and what is too large, too deep or too costly to check is
//! refused.

use proptest::prelude::*;

use super::project;

/// Upper bound on the steps of one check (the checker's own limit plus the short
/// unwinding of walks in progress when it is reached).
const WORK_BOUND: u64 = 1_000_000;

/// Shell fragments that open and close a nesting construct.
const WRAPS: &[(&str, &str)] = &[
    ("( ", " )"),
    ("{ ", "; }"),
    ("$( ", " )"),
    ("echo \"$(", ")\""),
    ("`", "`"),
    ("<(", ")"),
    ("if true; then ", "; fi"),
    ("for i in 1 2; do cd src; ", "; done"),
    ("while false; do ", "; done"),
    ("bash -c '", "'"),
    ("echo $((", "))"),
    ("f() { ", "; }; f"),
    ("case x in x) ", ";; esac"),
    ("[[ -n ", " ]]"),
];

const ATOMS: &[&str] = &[
    "true",
    "ls -la",
    "echo {1..99999999999}",
    "x={-9223372036854775808..9223372036854775807}",
    "echo {a..z}{0..9}{0..9}",
    "cat ~/.ssh/id_rsa",
    "v='a[$(id)]'; echo $((v))",
    "cd /tmp",
    "1",
    "$x",
    "\"$(",
    "'",
    "<<EOF",
    "\\",
    "${x@P}",
];

fn nested() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(0..WRAPS.len(), 0..400),
        0..ATOMS.len(),
    )
        .prop_map(|(wraps, atom)| {
            let mut s = ATOMS[atom].to_string();
            for w in wraps {
                let (open, close) = WRAPS[w];
                s = format!("{open}{s}{close}");
            }
            s
        })
}

fn chain() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(0..ATOMS.len(), 1..3000),
        prop::sample::select(vec![" && ", " || ", "; ", " | ", "\n", " & "]),
    )
        .prop_map(|(atoms, op)| {
            atoms
                .into_iter()
                .map(|a| ATOMS[a])
                .collect::<Vec<_>>()
                .join(op)
        })
}

fn any_input() -> impl Strategy<Value = String> {
    prop_oneof![
        nested(),
        chain(),
        any::<String>(),
        prop::collection::vec(any::<u8>(), 0..2000)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        "[(){}$`'\"\\\\;&|<> a-z0-9.\\n-]{0,3000}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_checker_never_panics_and_its_work_is_bounded(cmd in any_input()) {
        let (_dir, policy) = project();
        let (verdict, work) = policy.check_counted(&cmd);
        prop_assert!(work <= WORK_BOUND, "{work} steps for {:?}", &cmd[..cmd.len().min(200)]);
        // A refusal always says why.
        for r in verdict.refusals() {
            prop_assert!(!r.reason.is_empty());
        }
    }
}

fn refused_with(cmd: &str, what: &str) {
    let (_dir, policy) = project();
    let (verdict, work) = policy.check_counted(cmd);
    assert!(
        !verdict.is_allowed(),
        "allowed: {}",
        &cmd[..cmd.len().min(200)]
    );
    assert!(
        verdict.message().contains(what),
        "{what:?} not in {}",
        verdict.message()
    );
    assert!(work <= WORK_BOUND, "{work} steps");
}

#[test]
fn a_huge_and_chain_is_refused_not_a_crash() {
    refused_with(&vec!["true"; 8000].join(" && "), "levels deep");
}

#[test]
fn deep_subshells_and_substitutions_are_refused_not_a_crash() {
    refused_with(
        &format!("{}true{}", "(".repeat(5000), ")".repeat(5000)),
        "levels deep",
    );
    refused_with(
        &format!("echo {}x{}", "$(echo ".repeat(2000), ")".repeat(2000)),
        "levels deep",
    );
}

#[test]
fn a_long_flat_list_is_refused_by_its_size() {
    refused_with(&vec!["true"; 40_000].join("\n"), "too many to check");
}

#[test]
fn a_command_longer_than_the_limit_is_refused_unread() {
    refused_with(&format!("echo {}", "a".repeat(300 * 1024)), "bytes long");
}

#[test]
fn nested_loops_that_change_directory_stay_bounded() {
    // Each loop body is walked up to 3 times: 3^n without the work limit.
    let mut s = "cd src".to_string();
    for _ in 0..40 {
        s = format!("for i in 1 2; do cd src/a; cd ../b; {s}; done");
    }
    let (_dir, policy) = project();
    let (_, work) = policy.check_counted(&s);
    assert!(work <= WORK_BOUND, "{work} steps");
}

#[test]
fn huge_brace_ranges_are_refused_without_expanding_them() {
    refused_with("echo {1..99999999999}", "brace expansion");
    refused_with(
        "echo {-9223372036854775808..9223372036854775807}",
        "brace expansion",
    );
    refused_with("touch f{0..999}{0..999}", "brace expansion");
    let (_dir, policy) = project();
    assert!(policy.check("touch f{1..20}.txt").is_allowed());
    // An assignment is not brace-expanded by bash, and not by the checker either.
    let (_, work) = policy.check_counted("x={-9223372036854775808..9223372036854775807}");
    assert!(work <= WORK_BOUND);
}

#[test]
fn modest_everyday_commands_are_within_the_limits() {
    let (_dir, policy) = project();
    let long_heredoc = format!(
        "cat > notes.txt <<'EOF'\n{}\nEOF",
        "a line of notes\n".repeat(5000)
    );
    let chain = vec!["npm run lint"; 50].join(" && ");
    // Close to the depth limit (500 levels): judged in full, on the checker's own
    // stack, without overflowing it.
    let deep_chain = vec!["true"; 450].join(" && ");
    let nested = format!("{}true{}", "( ".repeat(150), " )".repeat(150));
    for cmd in [long_heredoc, chain, deep_chain, nested] {
        let v = policy.check(&cmd);
        assert!(v.is_allowed(), "{}", v.message());
    }
}

#[test]
fn limit_refusals_are_marked_as_unjudged_and_judgements_are_not() {
    let (_dir, policy) = project();
    assert!(
        policy
            .check(&vec!["true"; 8000].join(" && "))
            .beyond_limits()
    );
    assert!(
        policy
            .check(&format!("echo {}", "a".repeat(300 * 1024)))
            .beyond_limits()
    );
    let judged = policy.check("echo {1..99999999999}; rm -rf .git");
    assert!(!judged.is_allowed());
    assert!(!judged.beyond_limits());
}

/// Issue #24: brace lists longer than the checker once expanded (64) skipped every
/// check. Whatever their length, the members that are paths are judged as if
/// written alone, wherever they stand in the list.
#[test]
fn brace_lists_of_any_length_are_judged_by_their_members() {
    let (_dir, policy) = project();
    for n in [3, 63, 64, 65, 70, 255, 300, 5000, 99_999] {
        for (cmd, what) in [
            (format!("rm -rf {{.git/objects,x{{1..{n}}}}}"), ".git"),
            (format!("rm -rf {{x{{1..{n}}},.git/objects}}"), ".git"),
            (format!("rm -rf {{x{{1..{n}}},y}}{{/../.git,}}"), ".git"),
            (format!("cat {{/proc/1/environ,x{{1..{n}}}}}"), "secret"),
            (format!("cat {{x{{1..{n}}},~/.ssh/id_rsa}}"), "secret"),
            (
                format!("chmod +x {{~/.bashrc,x{{1..{n}}}}}"),
                "outside the project",
            ),
            (
                format!("touch -d 2020-01-01 {{x{{1..{n}}},~/.profile}}"),
                "outside the project",
            ),
        ] {
            let v = policy.check(&cmd);
            assert!(!v.is_allowed(), "allowed: {cmd}");
            assert!(v.message().contains(what), "{cmd}: {}", v.message());
        }
        let ok = format!("touch notes/{{1..{n}}}.md");
        assert!(policy.check(&ok).is_allowed(), "{ok}");
    }
}

#[test]
fn brace_expansions_too_large_to_judge_are_refused_unjudged() {
    let (_dir, policy) = project();
    let paths = "{a/b,c/d,e/f,g/h}".repeat(5);
    let v = policy.check(&format!("rm -rf {paths}"));
    assert!(!v.is_allowed());
    assert!(v.beyond_limits(), "{}", v.message());
    assert!(v.message().contains("one by one"), "{}", v.message());
    // Products of lists bash itself cannot hold in memory.
    let bomb = "{a,b,c,d,e,f,g,h,i,j}".repeat(6);
    refused_with(&format!("echo {bomb}"), "exhausts memory");
    // Deeply nested braces.
    let nested = format!("{}x{}", "{a,".repeat(100), "}".repeat(100));
    refused_with(&format!("rm -rf {nested}"), "nest too deeply");
    assert!(policy.check(&format!("rm -rf {nested}")).beyond_limits());
}
