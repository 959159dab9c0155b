//! The scripted sessions most harness tests share: a three-feature list, an
//! initializer that writes it with `init.sh` and notes and commits, and an honest
//! coding session that implements one feature, flips only it and commits.

use serde_json::{Value, json};

use crate::{Reply, Step};

/// A feature list of `passes.len()` features (the third is `style`), as the agent
/// would write it.
pub fn features(passes: &[bool]) -> String {
    let list: Vec<Value> = passes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({"category": if i == 2 { "style" } else { "functional" },
                   "description": format!("Feature {}", i + 1),
                   "steps": [format!("open the app for feature {}", i + 1), "check the result"],
                   "passes": p})
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap_or_default() + "\n"
}

/// The initializer: writes `list`, `init.sh` and the notes, and commits them.
pub fn initializer(list: &str) -> Vec<Step> {
    vec![
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": list}),
            ),
            (
                "Write",
                json!({"file_path": "init.sh", "content": "#!/usr/bin/env bash\necho 'app ready on http://127.0.0.1:0'\n"}),
            ),
            (
                "Write",
                json!({"file_path": "claude-progress.txt", "content": "Session 1: wrote the feature list and init.sh.\n"}),
            ),
            (
                "Bash",
                json!({"command": "chmod +x init.sh && git add -A && git commit -qm 'Initial feature list, init.sh and notes'"}),
            ),
        ])),
        Step::Reply(Reply::text("The project is initialized.")),
    ]
}

/// An honest coding session: start the app, implement feature `n`, flip only its
/// own feature (the list becomes `passes_after`), commit, write notes.
pub fn honest(n: usize, passes_after: &[bool]) -> Vec<Step> {
    vec![
        Step::Reply(Reply::tools(&[
            ("Bash", json!({"command": "./init.sh"})),
            (
                "Write",
                json!({"file_path": format!("src/feature{n}.txt"), "content": format!("feature {n}\n")}),
            ),
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": features(passes_after)}),
            ),
            (
                "Bash",
                json!({"command": format!("echo 'Session: implemented and verified feature {n}.' >> claude-progress.txt && git add -A && git commit -qm 'Implement feature {n}'")}),
            ),
        ])),
        Step::Reply(Reply::text(&format!("Feature {n} works."))),
    ]
}
