//! `[notify]`: where baton tells a person what happened, and in which format.

use serde::Deserialize;

/// `[notify]`: where baton tells a person what happened (the run ended, a
/// feature was blocked, a quota wait, most of the budget spent, the verifier
/// rejecting flips session after session). Nothing is sent unless a command or a
/// webhook is set.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NotifyConfig {
    /// A program and its arguments (no shell), run outside the sandbox with each
    /// event as one JSON object on stdin; it must live outside the project.
    pub command: Vec<String>,
    /// The name of an environment variable that holds a webhook URL (the URL is a
    /// secret: it is never read from a file, and the agent never gets the
    /// variable). Each event is POSTed to it.
    pub webhook_env: String,
    /// What the webhook gets: `json` (the event), `slack` (`{"text": …}`, for
    /// Slack, Mattermost and Discord's Slack-compatible URLs) or `ntfy` (the text
    /// as the body, a title header).
    pub format: String,
    /// Seconds one delivery (the command, or one webhook attempt) may take.
    pub timeout_secs: u64,
}

/// What a webhook gets, from `[notify] format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotifyFormat {
    /// The event as one JSON object.
    Json,
    /// `{"text": …}`: Slack, Mattermost and Discord's Slack-compatible URLs.
    Slack,
    /// The text as the body, a title header (ntfy.sh).
    Ntfy,
}

impl NotifyFormat {
    /// Every format, by the name `baton.toml` gives it.
    pub const ALL: [(&'static str, NotifyFormat); 3] = [
        ("json", Self::Json),
        ("slack", Self::Slack),
        ("ntfy", Self::Ntfy),
    ];

    /// The format `name` names, if any.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }
}

impl NotifyConfig {
    /// The webhook's format. `validate` has refused an unknown name, so the
    /// fallback (`json`) is only ever seen by a config built in code.
    pub fn format(&self) -> NotifyFormat {
        NotifyFormat::named(&self.format).unwrap_or(NotifyFormat::Json)
    }

    /// A known format, and a variable's name where the URL's variable goes.
    pub(crate) fn validate(&self, path: &std::path::Path) -> Result<(), crate::ConfigError> {
        let invalid = |field: &str, message: String| crate::ConfigError::Invalid {
            path: path.to_path_buf(),
            field: field.to_string(),
            message,
            at: String::new(),
        };
        if NotifyFormat::named(&self.format).is_none() {
            return Err(invalid(
                "notify.format",
                format!(
                    "{:?} is not a format: use \"json\", \"slack\" or \"ntfy\"",
                    self.format
                ),
            ));
        }
        if self.webhook_env.contains("://") {
            return Err(invalid(
                "notify.webhook_env",
                "names the environment variable that holds the webhook URL, not the URL itself (a URL in baton.toml is readable by the agent): e.g. webhook_env = \"BATON_WEBHOOK_URL\"".into(),
            ));
        }
        Ok(())
    }
}

impl Default for NotifyConfig {
    fn default() -> Self {
        Self {
            command: Vec::new(),
            webhook_env: String::new(),
            format: "json".into(),
            timeout_secs: 10,
        }
    }
}
