//! `[forge]`: the project's issues on a forge (GitHub, or Forgejo/Gitea), which
//! `baton issues pull` turns into features. baton holds the token; the agent
//! never does.

use serde::Deserialize;

/// Which forge's API.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ForgeKind {
    /// GitHub's REST API (`https://api.github.com`, or GitHub Enterprise's).
    #[default]
    Github,
    /// Forgejo's (and Gitea's) REST API (`https://<host>/api/v1`).
    Forgejo,
}

/// `[forge]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ForgeConfig {
    /// Which API.
    pub kind: ForgeKind,
    /// The API's base URL: `https://api.github.com` by default for GitHub;
    /// `https://<host>/api/v1` for Forgejo.
    pub api: String,
    /// The repository, `owner/name`.
    pub repo: String,
    /// Open issues with this label become features.
    pub label: String,
    /// The name of the environment variable holding the token (never the token:
    /// `baton.toml` is readable by the agent). The agent never gets the variable.
    pub token_env: String,
    /// The git remote baton pushes its branch to (`baton issues pr`).
    pub remote: String,
    /// baton's branch, whose one pull request carries the proven work.
    pub branch: String,
    /// `baton issues watch` merges baton's pull request once every check of its
    /// head passed (at least one ran). Off by default: a person merges.
    pub merge: bool,
    /// Seconds after a push within which a check must start; past them a person
    /// is told (`[notify]`) and the pull request is never merged so.
    pub checks_start_secs: u64,
    /// Review threads that become features on one pull request at most; past
    /// them a person is told instead (review loops that never converge).
    pub max_review_cycles: u32,
    /// Features to fix baton's pull request's failing CI, one a pushed commit, at
    /// most; past them a person is told instead (fixes that never make CI pass).
    pub max_ci_fixes: u32,
}

impl Default for ForgeConfig {
    fn default() -> Self {
        Self {
            kind: ForgeKind::Github,
            api: String::new(),
            repo: String::new(),
            label: "baton".into(),
            token_env: "GITHUB_TOKEN".into(),
            remote: "origin".into(),
            branch: "baton/batch".into(),
            merge: false,
            checks_start_secs: 600,
            max_review_cycles: 3,
            max_ci_fixes: 3,
        }
    }
}

impl ForgeConfig {
    /// The API's base URL, without a trailing slash.
    pub fn api_url(&self) -> String {
        let api = self.api.trim_end_matches('/');
        match (api.is_empty(), self.kind) {
            (false, _) => api.to_string(),
            (true, ForgeKind::Github) => "https://api.github.com".into(),
            (true, ForgeKind::Forgejo) => String::new(),
        }
    }

    /// What is wrong with it, as the dotted field and why.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if !self.repo.is_empty() {
            let parts: Vec<&str> = self.repo.split('/').collect();
            if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
                return Some(("forge.repo", format!("{:?} is not owner/name", self.repo)));
            }
        }
        if self.kind == ForgeKind::Forgejo && self.api.is_empty() && !self.repo.is_empty() {
            return Some((
                "forge.api",
                "a Forgejo or Gitea forge needs its API's URL: api = \"https://<host>/api/v1\""
                    .into(),
            ));
        }
        if self.token_env.contains("://") || self.token_env.contains(' ') {
            return Some((
                "forge.token_env",
                "names the environment variable that holds the token, not the token itself (baton.toml is readable by the agent): e.g. token_env = \"GITHUB_TOKEN\"".into(),
            ));
        }
        if self.label.trim().is_empty() {
            return Some((
                "forge.label",
                "must name the label of the issues to take".into(),
            ));
        }
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::{Config, ConfigError};

    fn field(toml: &str) -> Option<String> {
        match Config::from_toml_str(toml, "baton.toml") {
            Err(ConfigError::Invalid { field, .. }) => Some(field),
            _ => None,
        }
    }

    /// The token's variable is a secret the agent never gets; a token written in
    /// its place, a repository that is not owner/name, and a Forgejo forge
    /// without its API are refused with the field named.
    #[test]
    fn a_forge_is_checked_and_its_token_kept_from_the_agent() {
        let ok = Config::from_toml_str(
            "[forge]\nrepo = \"o/r\"\ntoken_env = \"MY_FORGE_TOKEN\"\n",
            "baton.toml",
        )
        .unwrap();
        assert!(ok.policy.secret_env.contains(&"MY_FORGE_TOKEN".to_string()));
        assert_eq!(ok.forge.api_url(), "https://api.github.com");
        assert_eq!(
            field("[forge]\nrepo = \"o/r\"\ntoken_env = \"https://x@github.com\"\n").as_deref(),
            Some("forge.token_env")
        );
        assert_eq!(
            field("[forge]\nrepo = \"just-a-name\"\n").as_deref(),
            Some("forge.repo")
        );
        assert_eq!(
            field("[forge]\nkind = \"forgejo\"\nrepo = \"o/r\"\n").as_deref(),
            Some("forge.api")
        );
        assert!(
            field("[forge]\nkind = \"gitlab\"\n").is_none(),
            "a parse error, not a field"
        );
        assert!(Config::from_toml_str("[forge]\nkind = \"gitlab\"\n", "baton.toml").is_err());
    }
}
