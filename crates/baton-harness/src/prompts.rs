//! The prompts of baton's sessions, in our own words.

use baton_config::ProjectConfig;

/// The system prompt of every session.
pub const SYSTEM: &str = "You are an expert software engineer working alone in a project directory on a Linux machine, \
one of many sessions that build this project over time. Act through the tools: inspect before you change, make small \
verified changes, run the project's own checks, and report plainly what you did and what you could not do. \
The working directory is {dir}.";

const INITIALIZER: &str = r#"You are the first engineer on a new software project. Nothing exists yet but the specification in {spec}. This session lays the foundation that many later sessions, each starting with no memory of this one, will build on one feature at a time.

Do these, in order:

1. Read {spec} carefully, all of it.
2. Write {feature_list}: a JSON array of about {features} end-to-end test cases that together cover everything the specification asks for. Each entry is an object:
   {"category": "functional", "description": "what a user can do or see", "steps": ["step 1", "step 2"], "passes": false}
   - category is "functional" for behaviour and "style" for look and feel.
   - Order the list by priority: what a user meets first and what everything else depends on (the app starts, the main page loads, the core actions) comes before refinements.
   - Mix narrow tests of two to five steps with long journeys of ten steps or more.
   - Every entry starts with "passes": false: nothing has been verified yet.
   - Where a feature can be checked by a shell command, add "verify": "<command>" (exit code 0 means it works).
   - This list is the contract for the whole project. Later sessions may only change "passes"; no one may edit, reorder, add or remove entries afterwards, so make it complete and precise now. At least {min_features} entries are required.
   - Write it in parts: one response has an output limit, and a tool call cut off by it is not run. Write the first 30 to 40 entries as a complete JSON array with Write, then add each further part of 30 to 40 entries with Edit, replacing the array's closing `]` at the end of the file by `,` followed by the new entries and a new closing `]`. When all parts are written, check that the file parses and count its entries with a one-line command (for example `python3 -c "import json; print(len(json.load(open('{feature_list}'))))"`), and fix what it reports.
3. Write {init_script}: an idempotent bash script that installs dependencies, starts the development server(s) in the background, and prints how to reach them (URLs, ports). Running it twice must be harmless. Make it executable.
4. Create the skeleton the specification implies (directories, manifest, a minimal app that starts), so that {init_script} works.
5. Write {progress}: notes for the next session: what you did, how the project is laid out, how to run it, what to do next.
6. Commit everything with git, with a message that says what the commit holds.

Do not implement features beyond the skeleton; that is the coding sessions' work. Stop when all six steps are done."#;

const CODING: &str = r#"You are continuing a long-running software project. You remember nothing of earlier sessions: everything you need is in the project directory and in the brief below, which baton computed just before this session.

Work in this order:

1. Get your bearings from the brief: progress notes, recent commits, which features pass, and what baton found after the last session (fix anything it reports first). Read {spec} when you need the whole picture.
2. Start the app with ./{init_script}; run long-lived servers in the background.
3. Smoke-test one or two features already marked passing. If one is broken, fix it before anything else, and set its "passes" back to false until it works again.
4. Take the first failing feature in the brief's list and implement it: that one only.
5. Verify it end to end as a user would: run the app and walk through every step of the feature{browser}. Reading the code or passing unit tests is not verification.
6. Only when every step works, change that feature's "passes" from false to true in {feature_list}. Change nothing else in that file: no description, step, order or entry. baton checks and restores any other change.
7. Commit your work with a message that says what changed and how you verified it.
8. Append to {progress}: what you did, what you verified and how, what is unfinished or broken, and what the next session should do.

Leave the project mergeable: everything committed, the app starting cleanly, nothing half-done. If you run out of room before the feature is verified, leave its "passes" false and say so in the notes. Do not claim work you did not verify: baton decides from the feature list and the tree, not from what you say."#;

const HANDOFF: &str = "baton: your context window is nearly full. Wrap up now, in at most {turns} more turns, and start nothing new:\n1. Leave \"passes\" in {feature_list} as it truthfully stands: set nothing to true that you have not verified end to end.\n2. Append to {progress} what you did, what is verified and how, what is half-done or broken, and exactly what the next session should do first.\n3. Commit everything (code, notes, any flip) with git in one commit whose message says what it holds.\nThen stop: the next session starts with a fresh context and your notes.";

/// The note a coding session gets when its context window is nearly full.
pub fn handoff_note(names: &ProjectConfig) -> String {
    fill(HANDOFF, names)
}

fn fill(template: &str, names: &ProjectConfig) -> String {
    template
        .replace("{spec}", &names.spec)
        .replace("{feature_list}", &names.feature_list)
        .replace("{init_script}", &names.init_script)
        .replace("{progress}", &names.progress)
        .replace("{features}", &names.features.to_string())
        .replace("{min_features}", &names.min_features.to_string())
}

/// The initializer's first message; `problem` is what was wrong with the previous attempt.
pub fn initializer(names: &ProjectConfig, problem: Option<&str>) -> String {
    let mut p = fill(INITIALIZER, names);
    if let Some(problem) = problem {
        p.push_str(&format!(
            "\n\nA previous initializer session did not leave a usable {}: {problem}\nFix exactly this: the file must be a JSON array of objects with \"category\" (string), \"description\" (string), \"steps\" (array of strings) and \"passes\" (false), with at least {} entries.",
            names.feature_list, names.min_features
        ));
    }
    p
}

/// What a coding session is told about `BlockFeature` (baton's own agent loop only).
const BLOCK_FEATURE: &str = "\n\nIf a feature truly cannot be made to pass in this environment (an external service or account it needs is not available, or it contradicts the specification), call BlockFeature with its number and a reason a person can act on, note it in the progress notes and end the session. Never use it to skip hard work: a feature that is difficult is not blocked.";

/// A coding session's first message: the prompt, then the brief. `block_feature`:
/// the session offers the `BlockFeature` tool.
pub fn coding(names: &ProjectConfig, brief: &str, browser: bool, block_feature: bool) -> String {
    format!(
        "{}{}\n\n{brief}",
        fill(CODING, names).replace("{browser}", how_to_verify(&names.kind, browser)),
        if block_feature { BLOCK_FEATURE } else { "" }
    )
}

/// How a user would exercise a feature, by project kind.
pub fn how_to_verify(kind: &str, browser: bool) -> &'static str {
    match (kind, browser) {
        ("web", true) => {
            " in the real browser through the mcp__playwright__ tools (browser_navigate, then browser_snapshot to read the page and its element refs, browser_type, browser_click), taking a screenshot of each state you verified"
        }
        ("web", false) => {
            ", exercising the running app over HTTP against the dev server (curl, or browser-automation scripts the project has)"
        }
        ("cli", _) => {
            ", running the program the way its users would, with real arguments, input and files"
        }
        ("library", _) => {
            ", through a small program or test that uses the library's public interface the way its users would"
        }
        ("service", _) => {
            ", sending real requests to the running service and checking its responses"
        }
        _ => "",
    }
}
