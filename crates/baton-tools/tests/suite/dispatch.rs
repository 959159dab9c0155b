//! `Toolbox::call` dispatch: tool names, input validation and the offered specs.

use baton_tools::{AllowAll, BUILTIN_TOOLS, GateDecision, ToolGate};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Project, err};

#[tokio::test]
async fn unknown_tool_lists_the_available_tools() {
    let p = Project::new();
    let out = p.call("Frobnicate", json!({})).await;
    assert_eq!(
        out,
        err("Unknown tool \"Frobnicate\". Available tools: Bash, Read, Write, Edit, Glob, Grep.")
    );
}

#[tokio::test]
async fn tool_names_are_case_sensitive() {
    let p = Project::new();
    let out = p.call("bash", json!({"command": "true"})).await;
    assert!(out.is_error);
    assert!(
        out.content.starts_with("Unknown tool \"bash\"."),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn input_that_is_not_an_object_is_an_error() {
    let p = Project::new();
    let out = p.call("Read", json!("file.txt")).await;
    assert_eq!(
        out,
        err(
            "Invalid input for Read: expected a JSON object, got a string. \
             Expected fields: {file_path: string, limit?: integer, offset?: integer}"
        )
    );
    let out = p.call("Bash", json!(["echo", "hi"])).await;
    assert_eq!(
        out,
        err(
            "Invalid input for Bash: expected a JSON object, got an array. \
             Expected fields: {command: string, description?: string, run_in_background?: boolean, timeout?: integer}"
        )
    );
    let out = p.call("Glob", Value::Null).await;
    assert_eq!(
        out,
        err("Invalid input for Glob: expected a JSON object, got null. \
             Expected fields: {path?: string, pattern: string}")
    );
}

#[tokio::test]
async fn missing_required_field_names_it_and_lists_expected_fields() {
    let p = Project::new();
    let out = p.call("Write", json!({"file_path": "a.txt"})).await;
    assert_eq!(
        out,
        err("Invalid input for Write: missing field `content`. \
             Expected fields: {content: string, file_path: string}")
    );
    assert!(!p.path("a.txt").exists());
    let out = p
        .call("Edit", json!({"file_path": "a.txt", "old_string": "x"}))
        .await;
    assert_eq!(
        out,
        err("Invalid input for Edit: missing field `new_string`. \
             Expected fields: {file_path: string, new_string: string, old_string: string, replace_all?: boolean}")
    );
    let out = p.call("Grep", json!({})).await;
    assert_eq!(
        out,
        err("Invalid input for Grep: missing field `pattern`. \
             Expected fields: {-i?: boolean, -n?: boolean, glob?: string, output_mode?: string, path?: string, pattern: string}")
    );
}

#[tokio::test]
async fn mistyped_field_is_an_error() {
    let p = Project::new();
    let out = p
        .call("Bash", json!({"command": "touch ran", "timeout": "5000"}))
        .await;
    assert_eq!(
        out,
        err(
            "Invalid input for Bash: invalid type: string \"5000\", expected u64. \
             Expected fields: {command: string, description?: string, run_in_background?: boolean, timeout?: integer}"
        )
    );
    assert!(!p.path("ran").exists(), "the command must not run");
    let out = p
        .call(
            "Edit",
            json!({"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"}),
        )
        .await;
    assert!(out.is_error);
    assert!(
        out.content.starts_with(
            "Invalid input for Edit: invalid type: string \"yes\", expected a boolean."
        ),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn unknown_extra_fields_are_ignored() {
    let p = Project::new();
    let out = p
        .call("Bash", json!({"command": "echo hi", "sandbox": true}))
        .await;
    assert_eq!(out, super::ok("hi\nExit code: 0"));
}

#[test]
fn specs_offer_every_builtin_tool_in_order() {
    let p = Project::new();
    let specs = p.tools.specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, BUILTIN_TOOLS.to_vec());
    for spec in &specs {
        assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
        assert!(!spec.description.is_empty(), "{}", spec.name);
        let props = spec.input_schema["properties"].as_object().unwrap();
        for req in spec.input_schema["required"].as_array().unwrap() {
            let req = req.as_str().unwrap();
            assert!(
                props.contains_key(req),
                "{}: required {req} not in properties",
                spec.name
            );
        }
    }
}

#[test]
fn allow_all_gate_allows() {
    assert_eq!(
        AllowAll.check("Bash", &json!({"command": "rm -rf /"})),
        GateDecision::Allow
    );
}
