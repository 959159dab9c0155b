//! The `Edit` tool: exact, unique replacement and the errors that guide the model.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Project, err, ok};

#[tokio::test]
async fn replaces_a_unique_occurrence() {
    let p = Project::new();
    p.file("src/lib.rs", "fn a() {}\nfn b() {}\n");
    let out = p
        .call(
            "Edit",
            json!({"file_path": "src/lib.rs", "old_string": "fn b() {}", "new_string": "fn b() -> u8 { 1 }"}),
        )
        .await;
    assert_eq!(out, ok("Edited src/lib.rs: replaced 1 occurrence"));
    assert_eq!(p.read("src/lib.rs"), "fn a() {}\nfn b() -> u8 { 1 }\n");
}

#[tokio::test]
async fn replacing_with_empty_text_deletes() {
    let p = Project::new();
    p.file("f.txt", "keep DELETE keep\n");
    let out = p
        .call(
            "Edit",
            json!({"file_path": "f.txt", "old_string": "DELETE ", "new_string": ""}),
        )
        .await;
    assert_eq!(out, ok("Edited f.txt: replaced 1 occurrence"));
    assert_eq!(p.read("f.txt"), "keep keep\n");
}

#[tokio::test]
async fn multiline_old_string_matches_exactly() {
    let p = Project::new();
    p.file("f.py", "def f():\n    return 1\n");
    let out = p
        .call(
            "Edit",
            json!({"file_path": "f.py", "old_string": "def f():\n    return 1", "new_string": "def f():\n    return 2"}),
        )
        .await;
    assert_eq!(out, ok("Edited f.py: replaced 1 occurrence"));
    assert_eq!(p.read("f.py"), "def f():\n    return 2\n");
}

#[tokio::test]
async fn not_found_names_the_file_and_leaves_it_alone() {
    let p = Project::new();
    p.file("f.py", "def f():\n    return 1\n");
    let out = p
        .call(
            "Edit",
            // Wrong indentation: must not match.
            json!({"file_path": "f.py", "old_string": "def f():\n  return 1", "new_string": "x"}),
        )
        .await;
    assert_eq!(
        out,
        err(
            "Edit: old_string was not found in f.py; it must match the file exactly, whitespace and indentation included (Read the file first)"
        )
    );
    assert_eq!(p.read("f.py"), "def f():\n    return 1\n");
}

#[tokio::test]
async fn multiple_occurrences_without_replace_all_is_an_error_with_the_count() {
    let p = Project::new();
    p.file("f.txt", "x = 1\ny = 1\nz = 1\n");
    let out = p
        .call(
            "Edit",
            json!({"file_path": "f.txt", "old_string": "= 1", "new_string": "= 2"}),
        )
        .await;
    assert_eq!(
        out,
        err(
            "Edit: old_string occurs 3 times in f.txt; include more surrounding text to make it unique, or set replace_all to true"
        )
    );
    assert_eq!(p.read("f.txt"), "x = 1\ny = 1\nz = 1\n");
    let out = p
        .call(
            "Edit",
            json!({"file_path": "f.txt", "old_string": "= 1", "new_string": "= 2", "replace_all": false}),
        )
        .await;
    assert!(out.is_error);
}

#[tokio::test]
async fn replace_all_replaces_every_occurrence() {
    let p = Project::new();
    p.file("f.txt", "x = 1\ny = 1\nz = 1\n");
    let out = p
        .call(
            "Edit",
            json!({"file_path": "f.txt", "old_string": "= 1", "new_string": "= 2", "replace_all": true}),
        )
        .await;
    assert_eq!(out, ok("Edited f.txt: replaced 3 occurrences"));
    assert_eq!(p.read("f.txt"), "x = 2\ny = 2\nz = 2\n");
}

#[tokio::test]
async fn replace_all_with_a_single_occurrence() {
    let p = Project::new();
    p.file("f.txt", "only once\n");
    let out = p
        .call(
            "Edit",
            json!({"file_path": "f.txt", "old_string": "once", "new_string": "twice", "replace_all": true}),
        )
        .await;
    assert_eq!(out, ok("Edited f.txt: replaced 1 occurrence"));
    assert_eq!(p.read("f.txt"), "only twice\n");
}

#[tokio::test]
async fn empty_old_string_is_refused() {
    let p = Project::new();
    p.file("f.txt", "content\n");
    let out = p
        .call(
            "Edit",
            json!({"file_path": "f.txt", "old_string": "", "new_string": "x"}),
        )
        .await;
    assert_eq!(
        out,
        err("Edit: old_string is empty; to create or replace all of f.txt use Write")
    );
    assert_eq!(p.read("f.txt"), "content\n");
}

#[tokio::test]
async fn identical_strings_are_refused() {
    let p = Project::new();
    p.file("f.txt", "same\n");
    let out = p
        .call(
            "Edit",
            json!({"file_path": "f.txt", "old_string": "same", "new_string": "same"}),
        )
        .await;
    assert_eq!(
        out,
        err("Edit: old_string and new_string are the same; nothing to change in f.txt")
    );
}

#[tokio::test]
async fn missing_file_is_an_error() {
    let p = Project::new();
    let out = p
        .call(
            "Edit",
            json!({"file_path": "missing.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert_eq!(out, err("Edit: file not found: missing.txt"));
    assert!(!p.path("missing.txt").exists());
}

#[tokio::test]
async fn binary_file_is_an_error() {
    let p = Project::new();
    p.file("blob.bin", b"a\0b");
    let out = p
        .call(
            "Edit",
            json!({"file_path": "blob.bin", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert_eq!(
        out,
        err("Edit: blob.bin is a binary file (3 bytes); Edit works on text files only")
    );
}

#[tokio::test]
async fn outside_the_project_is_refused() {
    let p = Project::new();
    let other = tempfile::tempdir().unwrap();
    let target = other.path().canonicalize().unwrap().join("f.txt");
    std::fs::write(&target, "a\n").unwrap();
    let out = p
        .call(
            "Edit",
            json!({"file_path": target.to_str().unwrap(), "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert_eq!(
        out,
        err(format!(
            "Edit refused: {} is outside the project directory {}; writes are allowed only inside the project",
            target.display(),
            p.root.display()
        ))
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "a\n");
}

#[tokio::test]
async fn protected_directory_is_refused() {
    let p = Project::new();
    p.file(".git/config", "[core]\n");
    let out = p
        .call(
            "Edit",
            json!({"file_path": ".git/config", "old_string": "core", "new_string": "x"}),
        )
        .await;
    assert_eq!(
        out,
        err(format!(
            "Edit refused: {} is inside .git/, which only git and baton may change; edit project files instead",
            p.path(".git/config").display()
        ))
    );
    assert_eq!(p.read(".git/config"), "[core]\n");
}
