//! The one list of credential locations. The command policy refuses any command that
//! reads, writes or lists them ([`crate::places`]), `Read` of them is refused, and the
//! OS sandbox leaves them out of what sandboxed processes may read
//! ([`crate::sandbox::rules`]). Adding an entry here protects it in both.

/// Where a secret location is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Under the user's home directory.
    Home,
    /// Under the home directory, and a secret wherever this sequence of names
    /// appears in a path (a copied `~/.ssh` is still keys).
    Anywhere,
    /// An absolute path; `*` stands for any one name (e.g. a process id).
    System,
}

/// Every secret location: the path (relative to the home directory for
/// [`Scope::Home`] and [`Scope::Anywhere`], absolute for [`Scope::System`]) and its
/// scope.
pub const SECRET_LOCATIONS: &[(&str, Scope)] = &[
    // Keys and cloud credentials.
    (".ssh", Scope::Anywhere),
    (".gnupg", Scope::Anywhere),
    (".aws", Scope::Anywhere),
    (".azure", Scope::Anywhere),
    (".config/gcloud", Scope::Anywhere),
    (".kube", Scope::Anywhere),
    (".docker/config.json", Scope::Anywhere),
    // Contexts and machine certificates too (the sandbox hid all of it before).
    (".docker", Scope::Home),
    (".password-store", Scope::Anywhere),
    (".vault-token", Scope::Anywhere),
    // Agent CLIs' logins.
    (".claude/.credentials.json", Scope::Anywhere),
    (".claude.json", Scope::Home),
    (".codex/auth.json", Scope::Anywhere),
    // Forges, git and package registries.
    (".config/gh", Scope::Anywhere),
    (".config/hub", Scope::Home),
    (".git-credentials", Scope::Anywhere),
    (".config/git/credentials", Scope::Anywhere),
    (".netrc", Scope::Anywhere),
    // Credential brokers' sockets: git's credential cache, and the per-user
    // runtime directories where ssh-agent, gpg-agent, the session bus and
    // keyrings listen.
    (".cache/git/credential", Scope::Home),
    (".git-credential-cache", Scope::Home),
    (".npmrc", Scope::Home),
    (".pypirc", Scope::Home),
    (".cargo/credentials", Scope::Home),
    (".cargo/credentials.toml", Scope::Home),
    // Databases.
    (".my.cnf", Scope::Home),
    (".pgpass", Scope::Anywhere),
    // Histories: typed passwords, tokens and connection strings.
    (".bash_history", Scope::Home),
    (".zsh_history", Scope::Home),
    (".psql_history", Scope::Home),
    (".mysql_history", Scope::Home),
    (".python_history", Scope::Home),
    (".node_repl_history", Scope::Home),
    (".sqlite_history", Scope::Home),
    (".rediscli_history", Scope::Home),
    (".lesshst", Scope::Home),
    (".viminfo", Scope::Home),
    // The system.
    ("/etc/shadow", Scope::System),
    ("/etc/gshadow", Scope::System),
    ("/etc/shadow-", Scope::System),
    ("/etc/gshadow-", Scope::System),
    ("/etc/sudoers", Scope::System),
    ("/etc/sudoers.d", Scope::System),
    ("/etc/ssh", Scope::System),
    ("/etc/security", Scope::System),
    // Other processes: environments (API keys), memory, open files.
    ("/proc/*/environ", Scope::System),
    ("/proc/*/task/*/environ", Scope::System),
    ("/proc/*/mem", Scope::System),
    ("/proc/*/task/*/mem", Scope::System),
    ("/proc/*/root", Scope::System),
    ("/proc/*/cwd", Scope::System),
    ("/proc/*/fd", Scope::System),
    ("/proc/*/task/*/fd", Scope::System),
    ("/proc/*/map_files", Scope::System),
    ("/run/user", Scope::System),
    ("/var/run/user", Scope::System),
    ("/var/run/docker.sock", Scope::System),
    ("/run/docker.sock", Scope::System),
    ("/run/podman", Scope::System),
    ("/run/containerd", Scope::System),
];

/// The locations under the home directory, as paths relative to it.
pub fn home_relative() -> impl Iterator<Item = &'static str> {
    SECRET_LOCATIONS
        .iter()
        .filter(|(_, s)| matches!(s, Scope::Home | Scope::Anywhere))
        .map(|(p, _)| *p)
}

/// The name sequences that are secret anywhere in a path.
pub fn anywhere() -> impl Iterator<Item = &'static str> {
    SECRET_LOCATIONS
        .iter()
        .filter(|(_, s)| *s == Scope::Anywhere)
        .map(|(p, _)| *p)
}

/// The absolute secret locations (patterns where they contain `*`).
pub fn system() -> impl Iterator<Item = &'static str> {
    SECRET_LOCATIONS
        .iter()
        .filter(|(_, s)| *s == Scope::System)
        .map(|(p, _)| *p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_entries_are_relative_and_system_ones_absolute() {
        for p in home_relative() {
            assert!(!p.starts_with('/') && !p.contains('*'), "{p}");
        }
        for p in system() {
            assert!(p.starts_with('/'), "{p}");
        }
    }
}
