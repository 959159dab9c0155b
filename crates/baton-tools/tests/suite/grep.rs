//! The `Grep` tool: output modes, options, filters, ignored and binary files, errors.

use baton_tools::search::MAX_GREP_LINES;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Project, err, ok};

fn corpus() -> Project {
    let p = Project::new();
    p.file("a.txt", "hello world\nbye\n");
    p.file("b/c.txt", "say Hello\nhello again\nHELLO\n");
    p.file("b/d.md", "# hello docs\n");
    p.file("e.txt", "nothing here\n");
    p
}

fn sorted(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.lines().collect();
    v.sort_unstable();
    v
}

#[tokio::test]
async fn files_with_matches_is_the_default_and_sorted() {
    let p = corpus();
    let out = p.call("Grep", json!({"pattern": "hello"})).await;
    assert_eq!(out, ok("a.txt\nb/c.txt\nb/d.md"));
    let out = p
        .call(
            "Grep",
            json!({"pattern": "hello", "output_mode": "files_with_matches"}),
        )
        .await;
    assert_eq!(out, ok("a.txt\nb/c.txt\nb/d.md"));
}

#[tokio::test]
async fn content_mode_with_line_numbers() {
    let p = corpus();
    let out = p
        .call(
            "Grep",
            json!({"pattern": "hello", "path": "b/c.txt", "output_mode": "content", "-n": true}),
        )
        .await;
    assert_eq!(out, ok("b/c.txt:2:hello again"));
}

#[tokio::test]
async fn content_mode_without_line_numbers() {
    let p = corpus();
    let out = p
        .call(
            "Grep",
            json!({"pattern": "^(hello|say)", "path": "b", "output_mode": "content"}),
        )
        .await;
    assert_eq!(out, ok("b/c.txt:say Hello\nb/c.txt:hello again"));
}

#[tokio::test]
async fn content_mode_across_files_keeps_each_file_in_order() {
    let p = corpus();
    let out = p
        .call(
            "Grep",
            json!({"pattern": "(?i)hello", "output_mode": "content", "-n": true}),
        )
        .await;
    assert_eq!(
        sorted(&out.content),
        vec![
            "a.txt:1:hello world",
            "b/c.txt:1:say Hello",
            "b/c.txt:2:hello again",
            "b/c.txt:3:HELLO",
            "b/d.md:1:# hello docs",
        ]
    );
    let c_lines: Vec<&str> = out
        .content
        .lines()
        .filter(|l| l.starts_with("b/c.txt"))
        .collect();
    assert_eq!(
        c_lines,
        vec![
            "b/c.txt:1:say Hello",
            "b/c.txt:2:hello again",
            "b/c.txt:3:HELLO"
        ]
    );
}

#[tokio::test]
async fn count_mode() {
    let p = corpus();
    let out = p
        .call("Grep", json!({"pattern": "hello", "output_mode": "count"}))
        .await;
    assert!(!out.is_error);
    assert_eq!(
        sorted(&out.content),
        vec!["a.txt:1", "b/c.txt:1", "b/d.md:1"]
    );
}

#[tokio::test]
async fn case_insensitive() {
    let p = corpus();
    let out = p
        .call(
            "Grep",
            json!({"pattern": "HELLO", "output_mode": "count", "-i": true}),
        )
        .await;
    assert_eq!(
        sorted(&out.content),
        vec!["a.txt:1", "b/c.txt:3", "b/d.md:1"]
    );
    let out = p.call("Grep", json!({"pattern": "HELLO"})).await;
    assert_eq!(out, ok("b/c.txt"));
}

#[tokio::test]
async fn glob_filters_files() {
    let p = corpus();
    let out = p
        .call("Grep", json!({"pattern": "hello", "glob": "*.md"}))
        .await;
    assert_eq!(out, ok("b/d.md"));
    let out = p
        .call("Grep", json!({"pattern": "hello", "glob": "*.txt"}))
        .await;
    assert_eq!(out, ok("a.txt\nb/c.txt"));
}

#[tokio::test]
async fn no_matches_says_so() {
    let p = corpus();
    let out = p.call("Grep", json!({"pattern": "zzz"})).await;
    assert_eq!(out, ok("No matches for \"zzz\""));
}

#[tokio::test]
async fn invalid_regex_is_an_error() {
    let p = corpus();
    let out = p.call("Grep", json!({"pattern": "(unclosed"})).await;
    assert!(out.is_error);
    assert!(
        out.content
            .starts_with("Grep: invalid regex \"(unclosed\": "),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn invalid_glob_is_an_error() {
    let p = corpus();
    let out = p
        .call("Grep", json!({"pattern": "hello", "glob": "[a"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.starts_with("Grep: invalid glob \"[a\": "),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn unknown_output_mode_is_an_error() {
    let p = corpus();
    let out = p
        .call("Grep", json!({"pattern": "hello", "output_mode": "lines"}))
        .await;
    assert_eq!(
        out,
        err(
            "Grep: unknown output_mode \"lines\"; use \"files_with_matches\", \"content\" or \"count\""
        )
    );
}

#[tokio::test]
async fn missing_path_is_an_error() {
    let p = corpus();
    let out = p
        .call("Grep", json!({"pattern": "hello", "path": "nope"}))
        .await;
    assert_eq!(out, err("Grep: path not found: nope"));
}

#[tokio::test]
async fn gitignored_files_are_skipped() {
    let p = corpus();
    p.file(".gitignore", "*.log\ngen/\n");
    p.file("debug.log", "hello from a log\n");
    p.file("gen/out.txt", "hello generated\n");
    let out = p.call("Grep", json!({"pattern": "hello"})).await;
    assert_eq!(out, ok("a.txt\nb/c.txt\nb/d.md"));
}

#[tokio::test]
async fn git_and_baton_directories_are_skipped() {
    let p = corpus();
    p.file(".git/config", "hello\n");
    p.file(".baton/background/0001.log", "hello\n");
    p.file(".hidden/notes.txt", "hello\n");
    let out = p.call("Grep", json!({"pattern": "hello"})).await;
    assert_eq!(out, ok(".hidden/notes.txt\na.txt\nb/c.txt\nb/d.md"));
}

#[tokio::test]
async fn binary_files_are_skipped() {
    let p = corpus();
    p.file("blob.bin", b"\0\x01\x02hello binary\n");
    // A NUL after the matching line still marks the file binary.
    p.file("late.bin", b"hello text\nmore\n\0\x01tail");
    let out = p.call("Grep", json!({"pattern": "hello"})).await;
    assert_eq!(out, ok("a.txt\nb/c.txt\nb/d.md"));
}

#[tokio::test]
async fn many_lines_are_cut_with_a_note() {
    let p = Project::new();
    let text: String = (1..=MAX_GREP_LINES + 100)
        .map(|i| format!("match {i}\n"))
        .collect();
    p.file("big.txt", text);
    let out = p
        .call(
            "Grep",
            json!({"pattern": "match", "output_mode": "content", "-n": true}),
        )
        .await;
    let mut expected: Vec<String> = (1..=MAX_GREP_LINES)
        .map(|i| format!("big.txt:{i}:match {i}"))
        .collect();
    expected.push(format!(
        "(output cut at {MAX_GREP_LINES} lines after 1 files; narrow the pattern, path or glob)"
    ));
    assert_eq!(out, ok(expected.join("\n")));
}
