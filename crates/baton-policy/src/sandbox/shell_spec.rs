//! What `baton --sandbox-shell` is told through `BATON_SANDBOX`: the sandbox a
//! CLI's shell command runs in, the variables to take out of its environment and
//! the run's PID namespace to join. Written when baton sets up an agent CLI
//! (and made read-only for the verifier's session), read by the launcher; one
//! type for every end, so none can drift from the others.

use std::path::PathBuf;

use baton_config::SandboxNetwork;

use super::SandboxSpec;
use serde::{Deserialize, Serialize};

/// The launcher's orders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSpec {
    /// The sandbox the command runs in.
    pub spec: SandboxSpec,
    /// Variables taken out of the command's environment.
    pub unset: Vec<String>,
    /// The run's PID namespace (its holder's pid), when the command joins it.
    pub join: Option<i32>,
}

/// The JSON form: paths as text, the network as `"loopback"` or `"open"`.
#[derive(Serialize, Deserialize)]
struct Wire {
    join: Option<i32>,
    project: String,
    #[serde(default)]
    writable: Vec<String>,
    #[serde(default)]
    network: Option<String>,
    #[serde(default)]
    read_only: bool,
    #[serde(default)]
    home: Option<String>,
    #[serde(default)]
    readable: Vec<String>,
    #[serde(default)]
    unset: Vec<String>,
}

fn texts(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

impl ShellSpec {
    /// The value of `BATON_SANDBOX`.
    pub fn to_env(&self) -> String {
        let s = &self.spec;
        let wire = Wire {
            join: self.join,
            project: s.project.display().to_string(),
            writable: texts(&s.writable),
            network: Some(s.network.name().to_string()),
            read_only: s.read_only,
            home: Some(s.home.display().to_string()),
            readable: texts(&s.readable),
            unset: self.unset.clone(),
        };
        serde_json::to_string(&wire).unwrap_or_default()
    }

    /// Read back from the value of `var`; a spec without a home gets the
    /// project's private one.
    pub fn from_env(var: &str, raw: &str) -> Result<Self, String> {
        let w: Wire =
            serde_json::from_str(raw).map_err(|e| format!("--sandbox-shell: bad ${var}: {e}"))?;
        let project = PathBuf::from(w.project);
        let spec = SandboxSpec {
            home: w
                .home
                .map_or_else(|| super::private_home(&project), PathBuf::from),
            project,
            writable: w.writable.into_iter().map(PathBuf::from).collect(),
            network: w
                .network
                .as_deref()
                .and_then(SandboxNetwork::from_name)
                .unwrap_or(SandboxNetwork::Open),
            read_only: w.read_only,
            readable: w.readable.into_iter().map(PathBuf::from).collect(),
        };
        Ok(Self {
            spec,
            unset: w.unset,
            join: w.join,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_setup_writes_the_launcher_reads_back_whole() {
        let spec = ShellSpec {
            spec: SandboxSpec {
                project: PathBuf::from("/p/it's"),
                writable: vec![PathBuf::from("/w")],
                network: SandboxNetwork::Loopback,
                read_only: true,
                home: PathBuf::from("/h"),
                readable: vec![PathBuf::from("/r1"), PathBuf::from("/r2")],
            },
            unset: vec!["ANTHROPIC_API_KEY".into()],
            join: Some(42),
        };
        let back = ShellSpec::from_env("V", &spec.to_env()).unwrap();
        assert_eq!(back, spec);
    }

    #[test]
    fn a_spec_without_a_project_or_in_bad_json_is_refused_by_name() {
        let e = ShellSpec::from_env("BATON_SANDBOX", "{\"join\": null}").unwrap_err();
        assert!(e.contains("bad $BATON_SANDBOX"), "{e}");
        assert!(e.contains("project"), "{e}");
        assert!(ShellSpec::from_env("BATON_SANDBOX", "not json").is_err());
    }
}
