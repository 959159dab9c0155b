//! The worker image (`deploy/`): no image can be built on CI machines (no registry
//! for base images), so what can be checked is: the Dockerfile installs every part
//! `baton doctor` looks for, at the versions `.ci/run` tests with, and the compose
//! and Kubernetes files parse and run that image with the sandbox's needs met.

use baton_testkit::Bounded as _;
use std::path::Path;

use yaml_rust2::{Yaml, YamlLoader};

fn repo(rel: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(rel)).unwrap()
}

/// The words after `marker` on each line of `text` that has it, up to a shell
/// operator; line continuations joined first.
fn words_after(text: &str, marker: &str) -> Vec<String> {
    let joined = text.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let mut rest = line;
        while let Some(at) = rest.find(marker) {
            rest = &rest[at + marker.len()..];
            for w in rest.split_whitespace() {
                if ["&&", "||", ";", "|"].contains(&w) || w.starts_with('(') {
                    break;
                }
                let word = w.trim_end_matches(';');
                if !word.starts_with('-') {
                    out.push(word.to_string());
                }
                if word != w {
                    break;
                }
            }
        }
    }
    out
}

/// What `baton doctor` says to install when nothing is there: its `apt-get
/// install` packages and its `npm install -g` packages.
fn what_doctor_installs() -> (Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("baton.toml"),
        "[browser]\nchromium = \"/nonexistent/chromium\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["doctor", "--browser"])
        .arg(dir.path())
        .env_clear()
        .env("HOME", dir.path())
        .env("PATH", "/nonexistent")
        .output_bounded()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (
        words_after(&said, "apt-get install"),
        words_after(&said, "npm install -g"),
    )
}

#[test]
fn the_worker_image_installs_every_part_baton_doctor_looks_for_at_cis_versions() {
    let docker = repo("deploy/Dockerfile");
    let ci = repo(".ci/run");
    let (apt, npm) = what_doctor_installs();
    // The doctor names them all (git, bash, node, the MCP server, Chromium, the
    // Claude Code and Codex CLIs, bubblewrap): the test cannot pass by reading nothing.
    for want in ["git", "bash", "nodejs", "chromium", "bubblewrap"] {
        assert!(apt.contains(&want.to_string()), "doctor said {apt:?}");
    }
    assert!(npm.iter().any(|p| p == "@playwright/mcp"), "{npm:?}");
    for cli in ["@anthropic-ai/claude-code", "@openai/codex"] {
        assert!(npm.iter().any(|p| p == cli), "{npm:?}");
    }
    let image_apt = words_after(&docker, "apt-get install");
    for p in &apt {
        assert!(
            image_apt.contains(p),
            "baton doctor looks for {p}, which deploy/Dockerfile does not install ({image_apt:?})"
        );
    }
    let image_npm = words_after(&docker, "npm install -g");
    let ci_npm: Vec<String> = words_after(&ci, "npm install")
        .into_iter()
        .filter(|w| w.starts_with('@'))
        .collect();
    for p in &npm {
        // The version the CI pins, and the image's ARG for it.
        let pinned = ci_npm
            .iter()
            .find(|w| w.starts_with(&format!("{p}@")))
            .unwrap_or_else(|| panic!(".ci/run does not pin {p}: {ci_npm:?}"));
        let version = &pinned[p.len() + 1..];
        let installed = image_npm
            .iter()
            .find(|w| w.starts_with(&format!("{p}@")))
            .unwrap_or_else(|| panic!("deploy/Dockerfile does not install {p}: {image_npm:?}"));
        let arg = installed[p.len() + 1..]
            .trim_start_matches("${")
            .trim_end_matches('}');
        assert!(
            docker.contains(&format!("ARG {arg}={version}\n")),
            "{p}: the image's {arg} is not {version}, the version .ci/run tests"
        );
    }
    assert!(docker.contains("cargo build --release --locked -p baton-cli"));
    assert!(docker.contains("\nUSER worker\n"), "the image runs as root");
}

#[test]
fn compose_and_kubernetes_files_parse_and_run_the_image_with_user_namespaces() {
    let compose = &YamlLoader::load_from_str(&repo("deploy/compose.yaml")).unwrap()[0];
    let worker = &compose["services"]["worker"];
    assert_eq!(worker["image"].as_str(), Some("baton:latest"));
    let opts: Vec<&str> = worker["security_opt"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    assert_eq!(opts, ["seccomp=unconfined"]);
    let entry = worker["entrypoint"].as_vec().unwrap();
    assert!(
        entry
            .iter()
            .filter_map(Yaml::as_str)
            .any(|a| a.contains("baton run") && a.contains("--remote")),
        "{entry:?}"
    );
    let job = &YamlLoader::load_from_str(&repo("deploy/k8s-indexed-job.yaml")).unwrap()[0];
    assert_eq!(job["kind"].as_str(), Some("Job"));
    assert_eq!(job["spec"]["completionMode"].as_str(), Some("Indexed"));
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"].as_str(), Some("baton:latest"));
    assert_eq!(
        c["securityContext"]["seccompProfile"]["type"].as_str(),
        Some("Unconfined")
    );
    // The key comes from a Secret, never from the manifest.
    let key = c["env"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|e| e["name"].as_str() == Some("ANTHROPIC_API_KEY"))
        .unwrap();
    assert!(key["value"].is_badvalue(), "{key:?}");
    assert!(!key["valueFrom"]["secretKeyRef"].is_badvalue());
}
