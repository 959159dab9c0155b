//! The `Read` tool: numbered lines, offset and limit, and every kind of file it refuses.

use baton_tools::files::{DEFAULT_READ_LINES, MAX_LINE_CHARS};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Project, err, ok};

#[tokio::test]
async fn numbers_every_line() {
    let p = Project::new();
    p.file("a.txt", "first\nsecond\n\n  indented\n");
    let out = p.call("Read", json!({"file_path": "a.txt"})).await;
    assert_eq!(
        out,
        ok("     1\tfirst\n     2\tsecond\n     3\t\n     4\t  indented\n")
    );
}

#[tokio::test]
async fn last_line_without_newline_is_shown() {
    let p = Project::new();
    p.file("a.txt", "one\ntwo");
    let out = p.call("Read", json!({"file_path": "a.txt"})).await;
    assert_eq!(out, ok("     1\tone\n     2\ttwo\n"));
}

#[tokio::test]
async fn crlf_line_endings_are_stripped() {
    let p = Project::new();
    p.file("dos.txt", "one\r\ntwo\r\n");
    let out = p.call("Read", json!({"file_path": "dos.txt"})).await;
    assert_eq!(out, ok("     1\tone\n     2\ttwo\n"));
}

#[tokio::test]
async fn absolute_paths_work_too() {
    let p = Project::new();
    let path = p.file("dir/a.txt", "x\n");
    let out = p
        .call("Read", json!({"file_path": path.to_str().unwrap()}))
        .await;
    assert_eq!(out, ok("     1\tx\n"));
}

#[tokio::test]
async fn reads_outside_the_project_are_allowed() {
    let p = Project::new();
    let other = tempfile::tempdir().unwrap();
    let path = other.path().join("elsewhere.txt");
    std::fs::write(&path, "outside\n").unwrap();
    let out = p
        .call("Read", json!({"file_path": path.to_str().unwrap()}))
        .await;
    assert_eq!(out, ok("     1\toutside\n"));
}

fn ten_lines() -> String {
    (1..=10).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn offset_and_limit_select_lines_with_a_footer() {
    let p = Project::new();
    p.file("ten.txt", ten_lines());
    let out = p
        .call(
            "Read",
            json!({"file_path": "ten.txt", "offset": 3, "limit": 2}),
        )
        .await;
    assert_eq!(
        out,
        ok(
            "     3\tline 3\n     4\tline 4\n(showing lines 3-4 of 10; use offset and limit to read more)\n"
        )
    );
}

#[tokio::test]
async fn reading_to_the_end_has_no_footer() {
    let p = Project::new();
    p.file("ten.txt", ten_lines());
    let out = p
        .call("Read", json!({"file_path": "ten.txt", "offset": 9}))
        .await;
    assert_eq!(out, ok("     9\tline 9\n    10\tline 10\n"));
    let out = p
        .call(
            "Read",
            json!({"file_path": "ten.txt", "offset": 8, "limit": 3}),
        )
        .await;
    assert_eq!(out, ok("     8\tline 8\n     9\tline 9\n    10\tline 10\n"));
}

#[tokio::test]
async fn limit_alone_starts_at_line_one() {
    let p = Project::new();
    p.file("ten.txt", ten_lines());
    let out = p
        .call("Read", json!({"file_path": "ten.txt", "limit": 1}))
        .await;
    assert_eq!(
        out,
        ok("     1\tline 1\n(showing lines 1-1 of 10; use offset and limit to read more)\n")
    );
}

#[tokio::test]
async fn offset_zero_is_treated_as_one() {
    let p = Project::new();
    p.file("two.txt", "a\nb\n");
    let out = p
        .call("Read", json!({"file_path": "two.txt", "offset": 0}))
        .await;
    assert_eq!(out, ok("     1\ta\n     2\tb\n"));
}

#[tokio::test]
async fn default_limit_shows_the_first_lines_and_a_footer() {
    let p = Project::new();
    let total = DEFAULT_READ_LINES + 5;
    let text: String = (1..=total).map(|i| format!("{i}\n")).collect();
    p.file("long.txt", text);
    let out = p.call("Read", json!({"file_path": "long.txt"})).await;
    let mut expected: String = (1..=DEFAULT_READ_LINES)
        .map(|i| format!("{i:>6}\t{i}\n"))
        .collect();
    expected.push_str(&format!(
        "(showing lines 1-{DEFAULT_READ_LINES} of {total}; use offset and limit to read more)\n"
    ));
    assert_eq!(out, ok(expected));
}

#[tokio::test]
async fn very_long_lines_are_cut() {
    let p = Project::new();
    let long = "é".repeat(MAX_LINE_CHARS + 10);
    p.file("wide.txt", format!("{long}\nshort\n"));
    let out = p.call("Read", json!({"file_path": "wide.txt"})).await;
    assert_eq!(
        out,
        ok(format!(
            "     1\t{} [line cut at {MAX_LINE_CHARS} characters]\n     2\tshort\n",
            "é".repeat(MAX_LINE_CHARS)
        ))
    );
}

#[tokio::test]
async fn empty_file_says_so() {
    let p = Project::new();
    p.file("empty.txt", "");
    let out = p.call("Read", json!({"file_path": "empty.txt"})).await;
    assert_eq!(out, ok("(the file is empty)"));
}

#[tokio::test]
async fn missing_file_is_an_error() {
    let p = Project::new();
    let out = p
        .call("Read", json!({"file_path": "nope/missing.txt"}))
        .await;
    assert_eq!(out, err("Read: file not found: nope/missing.txt"));
}

#[tokio::test]
async fn directory_is_an_error() {
    let p = Project::new();
    p.dir("src");
    let out = p.call("Read", json!({"file_path": "src"})).await;
    assert_eq!(
        out,
        err("Read: src is a directory; use Glob or `ls` to list it")
    );
}

#[tokio::test]
async fn binary_file_is_an_error() {
    let p = Project::new();
    p.file("blob.bin", b"text\0more\x01\x02");
    let out = p.call("Read", json!({"file_path": "blob.bin"})).await;
    assert_eq!(
        out,
        err("Read: blob.bin is a binary file (11 bytes); Read works on text files only")
    );
}

#[tokio::test]
async fn non_utf8_file_is_an_error() {
    let p = Project::new();
    p.file("latin1.txt", b"caf\xe9\n");
    let out = p.call("Read", json!({"file_path": "latin1.txt"})).await;
    assert_eq!(
        out,
        err(
            "Read: latin1.txt is not UTF-8 text (invalid byte at offset 3); Read works on text files only"
        )
    );
}

#[tokio::test]
async fn offset_past_the_end_is_an_error() {
    let p = Project::new();
    p.file("two.txt", "a\nb\n");
    let out = p
        .call("Read", json!({"file_path": "two.txt", "offset": 3}))
        .await;
    assert_eq!(
        out,
        err("Read: offset 3 is past the end of two.txt (2 lines)")
    );
}
