//! The `Write` tool: creating and overwriting files, and confinement to the project.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Project, err, ok};

#[tokio::test]
async fn creates_a_file_and_its_parent_directories() {
    let p = Project::new();
    let out = p
        .call(
            "Write",
            json!({"file_path": "a/b/c.txt", "content": "one\ntwo\n"}),
        )
        .await;
    assert_eq!(out, ok("Created a/b/c.txt (8 bytes, 2 lines)"));
    assert_eq!(p.read("a/b/c.txt"), "one\ntwo\n");
}

#[tokio::test]
async fn overwrites_an_existing_file() {
    let p = Project::new();
    p.file("f.txt", "old content that is longer\n");
    let out = p
        .call("Write", json!({"file_path": "f.txt", "content": "new"}))
        .await;
    assert_eq!(out, ok("Overwrote f.txt (3 bytes, 1 lines)"));
    assert_eq!(p.read("f.txt"), "new");
}

#[tokio::test]
async fn writes_an_empty_file() {
    let p = Project::new();
    let out = p
        .call("Write", json!({"file_path": "empty", "content": ""}))
        .await;
    assert_eq!(out, ok("Created empty (0 bytes, 0 lines)"));
    assert_eq!(p.read("empty"), "");
}

#[tokio::test]
async fn absolute_path_inside_the_project_is_allowed() {
    let p = Project::new();
    let path = p.path("abs.txt");
    let out = p
        .call(
            "Write",
            json!({"file_path": path.to_str().unwrap(), "content": "x"}),
        )
        .await;
    assert_eq!(out, ok("Created abs.txt (1 bytes, 1 lines)"));
    assert_eq!(p.read("abs.txt"), "x");
}

#[tokio::test]
async fn dotdot_that_stays_inside_is_allowed() {
    let p = Project::new();
    p.dir("src");
    let out = p
        .call(
            "Write",
            json!({"file_path": "src/../top.txt", "content": "x"}),
        )
        .await;
    assert_eq!(out, ok("Created top.txt (1 bytes, 1 lines)"));
    assert_eq!(p.read("top.txt"), "x");
}

#[tokio::test]
async fn writing_a_directory_is_an_error() {
    let p = Project::new();
    p.dir("src");
    let out = p
        .call("Write", json!({"file_path": "src", "content": "x"}))
        .await;
    assert_eq!(out, err("Write: src is a directory"));
}

#[tokio::test]
async fn the_project_directory_itself_is_refused() {
    let p = Project::new();
    let out = p
        .call("Write", json!({"file_path": ".", "content": "x"}))
        .await;
    assert_eq!(
        out,
        err(format!(
            "Write refused: {} is the project directory itself, not a file",
            p.root.display()
        ))
    );
}

fn outside_message(p: &Project, shown: &std::path::Path) -> String {
    format!(
        "Write refused: {} is outside the project directory {}; writes are allowed only inside the project",
        shown.display(),
        p.root.display()
    )
}

#[tokio::test]
async fn relative_escape_is_refused() {
    let p = Project::new();
    let out = p
        .call(
            "Write",
            json!({"file_path": "../escape.txt", "content": "x"}),
        )
        .await;
    let target = p.root.parent().unwrap().join("escape.txt");
    assert_eq!(out, err(outside_message(&p, &target)));
    assert!(!target.exists());
}

#[tokio::test]
async fn absolute_path_outside_is_refused() {
    let p = Project::new();
    let target = std::path::Path::new("/tmp/baton-tools-write-test-outside.txt");
    let out = p
        .call(
            "Write",
            json!({"file_path": target.to_str().unwrap(), "content": "x"}),
        )
        .await;
    assert_eq!(out, err(outside_message(&p, target)));
    assert!(!target.exists());
}

#[tokio::test]
async fn symlinked_directory_escape_is_refused() {
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    let outside_real = outside.path().canonicalize().unwrap();
    std::os::unix::fs::symlink(&outside_real, p.path("link")).unwrap();
    let out = p
        .call("Write", json!({"file_path": "link/f.txt", "content": "x"}))
        .await;
    assert_eq!(
        out,
        err(format!(
            "Write refused: link/f.txt resolves through a symlink to {}, outside the project directory {}; \
             writes are allowed only inside the project",
            outside_real.join("f.txt").display(),
            p.root.display()
        ))
    );
    assert!(!outside_real.join("f.txt").exists());
}

#[tokio::test]
async fn symlinked_file_escape_is_refused() {
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().canonicalize().unwrap().join("victim.txt");
    std::fs::write(&target, "original").unwrap();
    std::os::unix::fs::symlink(&target, p.path("innocent.txt")).unwrap();
    let out = p
        .call(
            "Write",
            json!({"file_path": "innocent.txt", "content": "pwned"}),
        )
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("resolves through a symlink"),
        "{}",
        out.content
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original");
}

#[tokio::test]
async fn dangling_symlink_escape_is_refused() {
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().canonicalize().unwrap().join("not-yet.txt");
    std::os::unix::fs::symlink(&target, p.path("dangling")).unwrap();
    let out = p
        .call("Write", json!({"file_path": "dangling", "content": "x"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("resolves through a symlink"),
        "{}",
        out.content
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn symlink_inside_the_project_is_followed() {
    let p = Project::new();
    p.dir("real");
    std::os::unix::fs::symlink(p.path("real"), p.path("alias")).unwrap();
    let out = p
        .call("Write", json!({"file_path": "alias/f.txt", "content": "x"}))
        .await;
    assert_eq!(out, ok("Created alias/f.txt (1 bytes, 1 lines)"));
    assert_eq!(p.read("real/f.txt"), "x");
}

#[tokio::test]
async fn git_directory_is_refused() {
    let p = Project::new();
    let out = p
        .call(
            "Write",
            json!({"file_path": ".git/hooks/pre-commit", "content": "x"}),
        )
        .await;
    assert_eq!(
        out,
        err(format!(
            "Write refused: {} is inside .git/, which only git and baton may change; edit project files instead",
            p.path(".git/hooks/pre-commit").display()
        ))
    );
    assert!(!p.path(".git").exists());
}

#[tokio::test]
async fn baton_directory_is_refused() {
    let p = Project::new();
    let out = p
        .call(
            "Write",
            json!({"file_path": "./.baton/state.json", "content": "{}"}),
        )
        .await;
    assert_eq!(
        out,
        err(format!(
            "Write refused: {} is inside .baton/, which only git and baton may change; edit project files instead",
            p.path(".baton/state.json").display()
        ))
    );
}

#[tokio::test]
async fn symlink_into_a_protected_directory_is_refused() {
    let p = Project::new();
    p.dir(".git");
    std::os::unix::fs::symlink(p.path(".git"), p.path("sneaky")).unwrap();
    let out = p
        .call(
            "Write",
            json!({"file_path": "sneaky/config", "content": "x"}),
        )
        .await;
    assert!(out.is_error);
    assert!(out.content.contains("inside .git/"), "{}", out.content);
    assert!(!p.path(".git/config").exists());
}

#[tokio::test]
async fn names_that_only_start_like_protected_dirs_are_allowed() {
    let p = Project::new();
    let out = p
        .call(
            "Write",
            json!({"file_path": ".gitignore", "content": "target/\n"}),
        )
        .await;
    assert_eq!(out, ok("Created .gitignore (8 bytes, 1 lines)"));
    let out = p
        .call(
            "Write",
            json!({"file_path": "docs/.baton-notes", "content": "x"}),
        )
        .await;
    assert_eq!(out, ok("Created docs/.baton-notes (1 bytes, 1 lines)"));
}
