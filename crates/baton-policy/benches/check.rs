//! Policy check speed: a typical one-line command and a 2,000-character command,
//! each printed next to a baseline measured in the same run (parsing the same text
//! with tree-sitter-bash alone, the floor any checker built on it pays).
//!
//! Targets (issue 4): one-line median < 100 µs, 2,000 characters < 2 ms.

use std::hint::black_box;
use std::time::{Duration, Instant};

use baton_config::PolicyConfig;
use baton_policy::Policy;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(n: usize, mut f: impl FnMut()) -> Duration {
    for _ in 0..n / 10 {
        f();
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    median(samples)
}

fn parse_only(src: &str) {
    let mut p = tree_sitter::Parser::new();
    let _ = p.set_language(&tree_sitter_bash::LANGUAGE.into());
    black_box(p.parse(src, None));
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let policy = Policy::new(&PolicyConfig::default(), dir.path())?;
    let typical = [
        "npm test 2>&1 | tail -20",
        "git add -A && git commit -m \"Add login form\"",
        "curl -s http://localhost:3000/api | jq .",
        "cd frontend && npm run build && cd ..",
        "grep -rn TODO src | head -20",
        "find . -name '*.ts' -not -path './node_modules/*' | xargs wc -l",
    ];
    let mut long = String::new();
    let pieces = [
        "npm run lint",
        "git status --short",
        "curl -sf http://localhost:3000/health",
        "grep -rn \"useState\" src/components | wc -l",
        "sed -n '1,20p' src/app.ts",
        "for f in src/*.ts; do wc -l \"$f\"; done",
        "test -f package.json && echo ok",
    ];
    let mut i = 0;
    while long.len() < 2000 {
        if !long.is_empty() {
            long.push_str(" && ");
        }
        long.push_str(pieces[i % pieces.len()]);
        i += 1;
    }
    assert!(
        policy.check(&long).is_allowed(),
        "{}",
        policy.check(&long).message()
    );
    println!(
        "baton-policy check (median of many runs; baseline = tree-sitter parse of the same text)"
    );
    let mut worst = Duration::ZERO;
    for cmd in typical {
        assert!(policy.check(cmd).is_allowed(), "{cmd}");
        let check = time(2000, || {
            black_box(policy.check(black_box(cmd)));
        });
        let base = time(2000, || parse_only(black_box(cmd)));
        worst = worst.max(check);
        println!(
            "  {:>9.1} µs  ({:.1}x parse {:.1} µs)  {cmd}",
            check.as_secs_f64() * 1e6,
            check.as_secs_f64() / base.as_secs_f64(),
            base.as_secs_f64() * 1e6
        );
    }
    let check = time(300, || {
        black_box(policy.check(black_box(&long)));
    });
    let base = time(300, || parse_only(black_box(&long)));
    println!(
        "  {:>9.1} µs  ({:.1}x parse {:.1} µs)  {}-character command",
        check.as_secs_f64() * 1e6,
        check.as_secs_f64() / base.as_secs_f64(),
        base.as_secs_f64() * 1e6,
        long.len()
    );
    println!(
        "one-line worst median {:.1} µs (target < 100 µs) · 2,000 characters {:.3} ms (target < 2 ms)",
        worst.as_secs_f64() * 1e6,
        check.as_secs_f64() * 1e3
    );
    Ok(())
}
