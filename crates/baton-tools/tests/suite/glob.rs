//! The `Glob` tool: glob semantics, .gitignore, ordering and errors.

use baton_tools::search::MAX_GLOB_RESULTS;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Project, err, ok};

/// A small Rust-like tree with distinct modification times (newest first:
/// build.rs, src/main.rs, src/lib.rs, src/deep/mod.rs).
fn rust_project() -> Project {
    let p = Project::new();
    p.file_at("build.rs", "", 4_000);
    p.file_at("src/main.rs", "", 3_000);
    p.file_at("src/lib.rs", "", 2_000);
    p.file_at("src/deep/mod.rs", "", 1_000);
    p.file_at("README.md", "", 5_000);
    p.file(".gitignore", "target/\n");
    p.file_at("target/debug/generated.rs", "", 9_000);
    p.file_at(".git/hooks/hook.rs", "", 9_000);
    p.file_at(".baton/background/x.rs", "", 9_000);
    p
}

#[tokio::test]
async fn double_star_recurses_and_newest_comes_first() {
    let p = rust_project();
    let out = p.call("Glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(
        out,
        ok("build.rs\nsrc/main.rs\nsrc/lib.rs\nsrc/deep/mod.rs")
    );
}

#[tokio::test]
async fn single_star_does_not_cross_slashes() {
    let p = rust_project();
    let out = p.call("Glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(out, ok("build.rs"));
    let out = p.call("Glob", json!({"pattern": "src/*.rs"})).await;
    assert_eq!(out, ok("src/main.rs\nsrc/lib.rs"));
}

#[tokio::test]
async fn path_sets_the_directory_patterns_are_relative_to() {
    let p = rust_project();
    let out = p
        .call("Glob", json!({"pattern": "*.rs", "path": "src"}))
        .await;
    assert_eq!(out, ok("src/main.rs\nsrc/lib.rs"));
    let abs = p.path("src/deep");
    let out = p
        .call(
            "Glob",
            json!({"pattern": "**/*", "path": abs.to_str().unwrap()}),
        )
        .await;
    assert_eq!(out, ok("src/deep/mod.rs"));
}

#[tokio::test]
async fn equal_times_are_ordered_by_path() {
    let p = Project::new();
    p.file_at("b.txt", "", 1_000);
    p.file_at("a.txt", "", 1_000);
    p.file_at("c/a.txt", "", 1_000);
    let out = p.call("Glob", json!({"pattern": "**/*.txt"})).await;
    assert_eq!(out, ok("a.txt\nb.txt\nc/a.txt"));
}

#[tokio::test]
async fn gitignore_is_honoured_without_a_git_repository() {
    let p = Project::new();
    assert!(!p.path(".git").exists());
    p.file(".gitignore", "*.log\nbuild/\n");
    p.file_at("keep.txt", "", 2_000);
    p.file_at("debug.log", "", 2_000);
    p.file_at("build/out.txt", "", 2_000);
    p.file("nested/.gitignore", "secret.txt\n");
    p.file_at("nested/secret.txt", "", 1_000);
    p.file_at("nested/public.txt", "", 1_000);
    let out = p.call("Glob", json!({"pattern": "**/*"})).await;
    let mut listed: Vec<&str> = out.content.lines().collect();
    listed.sort_unstable();
    assert_eq!(
        listed,
        vec![
            ".gitignore",
            "keep.txt",
            "nested/.gitignore",
            "nested/public.txt"
        ]
    );
}

#[tokio::test]
async fn git_and_baton_directories_are_never_listed() {
    let p = rust_project();
    let out = p.call("Glob", json!({"pattern": "**/hook.rs"})).await;
    assert_eq!(out, ok("No files match \"**/hook.rs\""));
    let out = p.call("Glob", json!({"pattern": ".baton/**"})).await;
    assert_eq!(out, ok("No files match \".baton/**\""));
}

#[tokio::test]
async fn no_matches_says_so() {
    let p = rust_project();
    let out = p.call("Glob", json!({"pattern": "**/*.zig"})).await;
    assert_eq!(out, ok("No files match \"**/*.zig\""));
}

#[tokio::test]
async fn invalid_pattern_is_an_error() {
    let p = rust_project();
    let out = p.call("Glob", json!({"pattern": "src/[a"})).await;
    assert!(out.is_error);
    assert!(
        out.content
            .starts_with("Glob: invalid pattern \"src/[a\": "),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn missing_path_is_an_error() {
    let p = rust_project();
    let out = p
        .call("Glob", json!({"pattern": "*.rs", "path": "nope"}))
        .await;
    assert_eq!(out, err("Glob: path not found: nope"));
}

#[tokio::test]
async fn many_results_are_cut_with_a_note() {
    let p = Project::new();
    let extra = 7;
    for i in 0..MAX_GLOB_RESULTS + extra {
        p.file_at(&format!("f{i:04}.txt"), "", 1_000);
    }
    let out = p.call("Glob", json!({"pattern": "*.txt"})).await;
    let mut expected: Vec<String> = (0..MAX_GLOB_RESULTS)
        .map(|i| format!("f{i:04}.txt"))
        .collect();
    expected.push(format!(
        "({extra} more files not shown; narrow the pattern or path)"
    ));
    assert_eq!(out, ok(expected.join("\n")));
}

#[tokio::test]
async fn dot_slash_and_absolute_patterns_match_under_the_root() {
    let p = Project::new();
    p.file("src/a.rs", "");
    let abs = format!("{}/src/*.rs", p.root.display());
    for pattern in ["./src/*.rs", abs.as_str()] {
        let out = p
            .call("Glob", serde_json::json!({"pattern": pattern}))
            .await;
        assert_eq!(out.content, "src/a.rs", "{pattern}");
        assert!(!out.is_error);
    }
}
