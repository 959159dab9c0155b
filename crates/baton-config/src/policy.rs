//! `[policy]` and `[sandbox]`: which commands the agent may run and how the
//! processes it starts are confined. The rules themselves live in `baton-policy`;
//! these are the settings a project can change.

use serde::Deserialize;

/// How `Bash` commands are judged.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PolicyMode {
    /// Every command is parsed and must be proven safe by the allowlist and its
    /// validators (the default).
    #[default]
    Allowlist,
    /// No command is checked (the sandbox, when enabled, still applies).
    Off,
}

/// `[policy]`: the command policy of the `Bash` tool.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// `"allowlist"` (default) or `"off"`.
    pub mode: PolicyMode,
    /// Command names allowed in addition to the built-in allowlist. A name with a
    /// built-in validator keeps it; other names are allowed with any arguments.
    pub allow: Vec<String>,
    /// Command names removed from the allowlist (built-in or added).
    pub deny: Vec<String>,
    /// Packages `npx` / `npm exec` / `yarn dlx` / `pnpm dlx` may run, besides the
    /// built-in list.
    pub npx_packages: Vec<String>,
    /// No longer used: `kill` accepts only processes this run started, and
    /// `pkill`/`killall` (which pick processes by name) are refused. Still accepted
    /// so that existing `baton.toml` files load.
    pub dev_server_names: Vec<String>,
    /// Where git, npm and pip may fetch from or push to: git remote names
    /// (`"origin"`) and URL prefixes (`"https://github.com/me/"`); `"*"` allows every
    /// remote. Empty (the default): `git push/fetch/pull/ls-remote/clone` of
    /// anything but a local path, and npm/pip installs from URLs, are refused
    /// (installs from the default registries stay allowed).
    pub remotes: Vec<String>,
    /// Environment variables removed from every agent process, besides the provider
    /// API keys.
    pub secret_env: Vec<String>,
    /// Let `WebFetch` and the browser's `browser_navigate` open `file://` URLs
    /// (default false: a file URL reads outside the file tools' rules, e.g. `~/.ssh`).
    pub allow_file_urls: bool,
}

/// Which network the sandboxed processes may reach (with bubblewrap, enforced by
/// the kernel: the commands run in a network namespace of their own).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// The host's network, unrestricted.
    Open,
    /// A loopback of their own, and the hosts of `[sandbox] allow` through
    /// baton's egress proxy (HTTP and HTTPS, by name); nothing else.
    #[default]
    Allowlist,
    /// A loopback of their own and nothing else.
    Loopback,
}

impl SandboxNetwork {
    /// The setting named `name` (as in `baton.toml`), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            SandboxNetwork::Open,
            SandboxNetwork::Allowlist,
            SandboxNetwork::Loopback,
        ]
        .into_iter()
        .find(|n| n.name() == name)
    }

    /// Its name in `baton.toml`.
    pub fn name(self) -> &'static str {
        match self {
            SandboxNetwork::Open => "open",
            SandboxNetwork::Allowlist => "allowlist",
            SandboxNetwork::Loopback => "loopback",
        }
    }
}

/// `[sandbox]`: the OS-level confinement of every process baton starts for the agent.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// Confine agent processes with Landlock and `no_new_privs` (Linux; a warning
    /// where the kernel lacks Landlock).
    pub enabled: bool,
    /// `"allowlist"` (default), `"loopback"` or `"open"`.
    pub network: SandboxNetwork,
    /// The hosts commands may reach through baton's egress proxy under
    /// `network = "allowlist"`: names (`registry.npmjs.org`), a name and every
    /// name under it (`*.github.com`), or IP addresses, each on every port or,
    /// written `name:8443` (`[::1]:8080`), on that one only. `None`: the package
    /// registries of the project's kind (see `docs/policy.md`).
    pub allow: Option<Vec<String>>,
    /// Addresses the egress proxy uses for names instead of asking DNS
    /// (`"registry.local" = "127.0.0.1"`), as `/etc/hosts` would: a local
    /// mirror, a registry in the next room.
    pub hosts: std::collections::BTreeMap<String, String>,
    /// Ports of this machine's loopback the commands reach at the same port of
    /// theirs (a database or a queue started before the run), whatever `network`.
    pub host_ports: Vec<u16>,
    /// Extra directories the agent's processes may write (absolute, or `~/...`).
    pub writable: Vec<String>,
    /// More of the user's home the agent's processes may read (absolute, or
    /// `~/...`): the rest of it is hidden from them, but for the toolchains.
    pub readable: Vec<String>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            network: SandboxNetwork::Allowlist,
            allow: None,
            hosts: std::collections::BTreeMap::new(),
            host_ports: Vec::new(),
            writable: Vec::new(),
            readable: Vec::new(),
        }
    }
}

/// One entry of `[sandbox] allow`: its host (lower case, without a trailing
/// dot or the brackets of an IPv6 address; `*.name` kept as written) and the
/// one port it allows, if it names one (`name:8443`, `[::1]:8080`). Else what
/// is wrong with it, said so the person can write it right.
pub fn allow_entry(e: &str) -> Result<(String, Option<u16>), String> {
    let t = e.trim();
    if t.contains("://") || t.contains('/') {
        return Err(format!(
            "{e:?} is a URL; write the host alone (\"registry.example.com\"), or host:port"
        ));
    }
    if t == "*" || t == "*.*" {
        return Err(format!(
            "{e:?} would allow every host; for that, set network = \"open\""
        ));
    }
    let (host, port) = if let Some(rest) = t.strip_prefix('[') {
        match rest.split_once(']') {
            Some((h, "")) => (h, None),
            Some((h, tail)) => (h, Some(tail.strip_prefix(':').unwrap_or(tail))),
            None => (rest, None),
        }
    } else if t.matches(':').count() == 1 {
        let (h, p) = t.split_once(':').unwrap_or((t, ""));
        (h, Some(p))
    } else {
        (t, None)
    };
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Some(n),
            _ => {
                return Err(format!("{e:?}: the port must be a number from 1 to 65535"));
            }
        },
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.parse::<std::net::IpAddr>().is_ok() {
        return Ok((host, port));
    }
    let name = host.strip_prefix("*.").unwrap_or(&host);
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(format!(
            "{e:?} is not a host name: use letters, digits, - and dots (\"registry.npmjs.org\"), \"*.\" before a name for every name under it, or an IP address, each with :port for that port only"
        ));
    }
    Ok((host, port))
}

impl SandboxConfig {
    /// The first entry of `allow` that is not a host, and why.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        self.allow
            .iter()
            .flatten()
            .find_map(|e| allow_entry(e).err())
            .map(|why| ("sandbox.allow", why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;
    use pretty_assertions::assert_eq;

    #[test]
    fn policy_and_sandbox_parse() {
        let cfg = Config::from_toml_str(
            "[policy]\nmode = \"off\"\nallow = [\"docker\"]\nnpx_packages = [\"cowsay\"]\n\
             [sandbox]\nenabled = false\nnetwork = \"loopback\"\nwritable = [\"~/.gradle\"]\nreadable = [\"~/.m2\"]\n",
            "baton.toml",
        )
        .unwrap();
        assert_eq!(cfg.policy.mode, PolicyMode::Off);
        assert_eq!(cfg.policy.allow, vec!["docker".to_string()]);
        assert_eq!(cfg.policy.npx_packages, vec!["cowsay".to_string()]);
        assert_eq!(
            cfg.sandbox,
            SandboxConfig {
                enabled: false,
                network: SandboxNetwork::Loopback,
                allow: None,
                hosts: std::collections::BTreeMap::new(),
                host_ports: Vec::new(),
                writable: vec!["~/.gradle".into()],
                readable: vec!["~/.m2".into()],
            }
        );
    }

    #[test]
    fn defaults_are_allowlist_and_sandbox_on() {
        let cfg = Config::from_toml_str("", "baton.toml").unwrap();
        assert_eq!(cfg.policy.mode, PolicyMode::Allowlist);
        assert!(cfg.sandbox.enabled);
        assert_eq!(cfg.sandbox.network, SandboxNetwork::Allowlist);
    }

    #[test]
    fn unknown_mode_names_the_line() {
        let err = Config::from_toml_str("[policy]\nmode = \"strict\"\n", "baton.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains("allowlist"), "{err}");
    }

    #[test]
    fn a_malformed_allow_entry_is_said_with_how_to_write_it() {
        for ok in [
            "registry.npmjs.org",
            "*.github.com",
            "10.0.0.5",
            "h.test:8443",
            "[::1]:80",
            "fd00::5",
            "Mirror.Local.",
        ] {
            assert!(allow_entry(ok).is_ok(), "{ok}");
        }
        for (bad, says) in [
            ("https://registry.npmjs.org", "is a URL"),
            ("registry.npmjs.org/pkg", "is a URL"),
            ("*", "every host"),
            ("host.test:0", "the port"),
            ("host.test:http", "the port"),
            ("host.test:70000", "the port"),
            ("[::1]:x", "the port"),
            ("bad host", "not a host name"),
            ("", "not a host name"),
            ("*evil.com", "not a host name"),
        ] {
            let why = allow_entry(bad).err().unwrap_or_default();
            assert!(why.contains(says), "{bad}: {why}");
        }
    }
}
