//! The git subcommands that reach other repositories: which remote they reach
//! (`[policy] remotes`, or inside bubblewrap the repository's own), `push`
//! (no force, mirror or delete), `git remote`, `git submodule`, and the options
//! of these subcommands that run programs; the remotes a repository's
//! configuration names.

use super::*;

/// `git push`: the remote it reaches, then no computed refspec, no force, mirror
/// or delete, and no program run on the remote side.
pub(super) fn push(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
    let computed = cmd.args.iter().any(|w| w.literal().is_none());
    // A push refused below for what it does is not one bubblewrap allows.
    let forced = computed || pushes_force(lits);
    remote_args(c, cmd, "push", forced);
    if computed {
        c.refuse(
            &cmd.part,
            "git push with a computed argument: a refspec computed as +ref or :ref would force or delete remote history",
            "write the remote and branch literally: git push origin main",
        );
    }
    if pushes_force(lits) {
        c.refuse(
            &cmd.part,
            "git push may not force, mirror or delete remote history",
            "push new commits without --force (integrate with git pull --rebase first)",
        );
    }
    if lits.has(&["--receive-pack", "--exec"]) {
        c.refuse(
            &cmd.part,
            "git push --receive-pack/--exec runs a program",
            "push without it",
        );
    }
}

/// Whether `git push` with these literal arguments forces, mirrors or deletes
/// remote history.
fn pushes_force(lits: &LiteralArgs) -> bool {
    lits.has(&[
        "--force",
        "--force-with-lease",
        "--force-if-includes",
        "--mirror",
        "--delete",
        "--prune",
    ]) || lits.short_has('f')
        || lits.short_has('d')
        || lits
            .words
            .iter()
            .any(|l| !l.starts_with('-') && (l.starts_with('+') || l.starts_with(':')))
}

/// Options of the subcommands that reach remotes (`clone`, `fetch`, `pull`,
/// `ls-remote`, `archive`, `remote`, `submodule`) that run programs or set
/// configuration: `--upload-pack`, `--exec`, `-c`, `--template`, …
pub(super) fn program_options(c: &mut Checker, cmd: &Cmd, sub: &str, lits: &LiteralArgs) {
    if lits.has(&[
        "--upload-pack",
        "--receive-pack",
        "--exec",
        "--config",
        "--template",
        "--remote",
    ]) || (matches!(sub, "clone" | "fetch" | "pull" | "ls-remote")
        && (lits.short_has('u') || lits.short_has('c')))
    {
        c.refuse(&cmd.part, format!("git {sub} with --upload-pack/--exec/-c/--template runs programs or sets configuration"), format!("run git {sub} with a plain URL"));
    }
}

/// `git remote`: `add`/`set-url` only with a URL the project may reach;
/// `show`/`prune`/`update` only for remotes it may reach (or, inside bubblewrap,
/// the repository's own).
pub(super) fn remote_sub(c: &mut Checker, cmd: &Cmd) {
    let words: Vec<Option<String>> = cmd.args.iter().map(|w| w.literal()).collect();
    let pos: Vec<&Option<String>> = words
        .iter()
        .filter(|w| !w.as_deref().is_some_and(|l| l.starts_with('-')))
        .collect();
    match pos.first().and_then(|w| w.as_deref()) {
        Some("add") | Some("set-url") => {
            // git remote add NAME URL / set-url NAME URL [OLD]
            match pos.get(2).and_then(|w| w.as_deref()) {
                Some(url) if c.remote_allowed(url) => {}
                Some(url) => c.refuse(
                    &cmd.part,
                    format!("git remote: {url} is not a remote this project may reach"),
                    REMOTE_INSTEAD,
                ),
                None => c.refuse(&cmd.part, "git remote with a computed URL", REMOTE_INSTEAD),
            }
        }
        Some("show") | Some("prune") | Some("update") => {
            let names: Vec<&str> = pos[1..].iter().filter_map(|w| w.as_deref()).collect();
            let all_ok = if names.is_empty() {
                c.remote_allowed("*")
            } else {
                names.iter().all(|n| c.remote_allowed(n))
            };
            // The repository's own remotes: allowed inside the bubblewrap
            // sandbox, as for fetch.
            let own = names
                .iter()
                .all(|n| c.policy.configured_remotes.iter().any(|r| r == n));
            let reachable = all_ok || (own && c.policy.bubblewrap);
            if !reachable {
                let hint = if own {
                    format!("; {}", crate::BUBBLEWRAP_HINT)
                } else {
                    String::new()
                };
                c.refuse(
                    &cmd.part,
                    format!("git remote show/prune/update contacts remotes this project may not reach{hint}"),
                    REMOTE_INSTEAD,
                );
            }
        }
        _ => {}
    }
}

/// `git submodule`: `add`/`update`/`sync` fetch from the submodules' remotes (only
/// when every remote is allowed); `foreach` runs a shell command.
pub(super) fn submodule(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
    if lits
        .words
        .iter()
        .any(|w| matches!(w.as_str(), "add" | "update" | "sync"))
        && !c.remote_allowed("*")
    {
        c.refuse(
            &cmd.part,
            "git submodule add/update/sync fetches from the submodules' remotes",
            "vendor the code, or say in the progress notes that the project needs its submodules (a person can run `git submodule update --init` before the run, or add \"*\" to [policy] remotes)",
        );
    }
    program_options(c, cmd, "submodule", lits);
    if lits.words.iter().any(|l| l == "foreach") {
        c.refuse(
            &cmd.part,
            "git submodule foreach runs a shell command in each submodule",
            "run the command in each submodule directory yourself",
        );
    }
}

/// `git push/fetch/pull/ls-remote/clone`: the repository they reach (the first
/// operand; none means the current branch's remote, taken to be `origin`) must be a
/// local path or allowed by `[policy] remotes`. Inside baton's bubblewrap sandbox
/// (where `.git/config` is read-only), a remote named in the repository's
/// configuration is allowed too, and so are no operand (the branch's remote, from
/// that configuration) and `fetch --all`; never a URL given on the command line.
pub(super) fn remote_args(c: &mut Checker, cmd: &Cmd, sub: &str, forced: bool) {
    let mut repo: Option<Option<String>> = None;
    let mut all = false;
    let mut multiple = false;
    let mut operands: Vec<Option<String>> = Vec::new();
    let mut recurse = false;
    let mut i = 0;
    while let Some(w) = cmd.args.get(i) {
        i += 1;
        let Some(l) = w.literal() else {
            if repo.is_none() {
                repo = Some(None);
            }
            operands.push(None);
            continue;
        };
        if l == "--" {
            if repo.is_none() {
                repo = Some(cmd.args.get(i).and_then(|w| w.literal()));
            }
            operands.extend(cmd.args[i..].iter().map(|w| w.literal()));
            break;
        }
        if let Some(r) = l.strip_prefix("--repo=") {
            repo = Some(Some(r.to_string()));
            continue;
        }
        if l == "--repo" {
            repo = Some(cmd.args.get(i).and_then(|w| w.literal()));
            i += 1;
            continue;
        }
        if l == "--all" || l == "--multiple" {
            all = sub != "push";
            multiple |= l == "--multiple";
            continue;
        }
        if l.starts_with("--recurse-submodules") && !l.ends_with("=no") {
            recurse = true;
        }
        if l.starts_with('-') {
            if REMOTE_VALUE_OPTS.contains(&l.as_str()) {
                i += 1;
            }
            continue;
        }
        operands.push(Some(l.clone()));
        if repo.is_none() {
            repo = Some(Some(l));
        }
    }
    let target = if all {
        Some("*".to_string())
    } else {
        match &repo {
            Some(r) => r.clone(),
            None => Some("origin".to_string()),
        }
    };
    if let Some(t) = &target
        && (local_repo(t) || c.remote_allowed(t))
    {
        return;
    }
    // Inside the bubblewrap sandbox: the repository's own remotes. `--multiple`
    // names several (each must be one); `--all` and no operand reach only those.
    let configured = |name: &Option<String>| {
        name.as_ref()
            .is_some_and(|n| c.policy.configured_remotes.contains(n))
    };
    let own = sub != "clone"
        && if multiple {
            !operands.is_empty() && operands.iter().all(configured)
        } else {
            all || repo.is_none() || repo.as_ref().is_some_and(configured)
        };
    if own {
        if !c.policy.bubblewrap {
            // Said only of what bubblewrap would allow.
            let hint = if forced || recurse {
                String::new()
            } else {
                format!("; {}", crate::BUBBLEWRAP_HINT)
            };
            c.refuse(
                &cmd.part,
                format!(
                    "git {sub} reaches {}, a remote of the repository but not a remote this project may reach ([policy] remotes){hint}",
                    target.as_deref().unwrap_or("origin").replace('*', "(all)"),
                ),
                REMOTE_INSTEAD,
            );
        } else if recurse {
            c.refuse(
                &cmd.part,
                format!("git {sub} --recurse-submodules reaches the submodules' remotes, whose addresses the agent can change (.git/modules/ is writable)"),
                format!("run git {sub} without --recurse-submodules"),
            );
        }
        return;
    }
    match target {
        Some(t) => c.refuse(
            &cmd.part,
            format!("git {sub} reaches {t}, which is not a remote this project may reach (git without a remote means the branch's remote, taken as origin)"),
            REMOTE_INSTEAD,
        ),
        None => c.refuse(
            &cmd.part,
            format!("git {sub} with a computed remote"),
            REMOTE_INSTEAD,
        ),
    }
}

/// A repository given as a local path (not a URL or `host:path`).
fn local_repo(r: &str) -> bool {
    if r.starts_with("file://") {
        return true;
    }
    if r.contains("://") {
        return false;
    }
    let looks_path = r.starts_with('/') || r.starts_with('.') || r.starts_with('~');
    // `host:path` and `user@host:path` are ssh URLs; a local path has no ':' before
    // its first '/'.
    let colon_first = r
        .find(':')
        .is_some_and(|c| r.find('/').is_none_or(|s| c < s));
    !colon_first && (looks_path || r.contains('/'))
}

impl Checker<'_> {
    /// Whether `[policy] remotes` lets git, npm or pip reach `target` (a remote name
    /// or a URL; `"*"` asks whether every remote is allowed).
    pub fn remote_allowed(&self, target: &str) -> bool {
        self.policy.remotes.iter().any(|r| {
            r == "*"
                || r == target
                || ((r.contains(':') || r.contains('/')) && target.starts_with(r.as_str()))
        })
    }
}

/// What to do instead when git would reach a remote the project may not reach.
const REMOTE_INSTEAD: &str = "work with the local repository (commit, branch, merge); reaching a remote needs the user to list it in [policy] remotes of baton.toml (e.g. remotes = [\"origin\"])";

/// Options of push/fetch/pull/ls-remote/clone that take the next word as a value.
const REMOTE_VALUE_OPTS: &[&str] = &[
    "--depth",
    "-j",
    "--jobs",
    "-o",
    "--push-option",
    "--server-option",
    "--shallow-since",
    "--shallow-exclude",
    "--deepen",
    "--negotiation-tip",
    "--refmap",
    "--origin",
    "-b",
    "--branch",
    "--reference",
    "--reference-if-able",
    "--filter",
    "--separate-git-dir",
    "--recurse-submodules-default",
    "--signed",
    "--sort",
];

/// The remotes named in the configuration of the repository at `project`
/// (`[remote "NAME"]` sections of `.git/config`, following a `.git` file and a
/// `commondir` to the shared configuration). Included files are not read: a remote
/// defined only there is not counted.
pub(crate) fn configured_remotes(project: &Path) -> Vec<String> {
    let dot_git = project.join(".git");
    let git_dir = if dot_git.is_file() {
        let Ok(text) = std::fs::read_to_string(&dot_git) else {
            return Vec::new();
        };
        let Some(dir) = text.lines().find_map(|l| l.strip_prefix("gitdir:")) else {
            return Vec::new();
        };
        project.join(dir.trim())
    } else {
        dot_git
    };
    let common = std::fs::read_to_string(git_dir.join("commondir"))
        .map(|c| git_dir.join(c.trim()))
        .unwrap_or(git_dir);
    let Ok(config) = std::fs::read_to_string(common.join("config")) else {
        return Vec::new();
    };
    remote_sections(&config)
}

/// The names of the `[remote "NAME"]` (and old-style `[remote.NAME]`) sections of
/// a git configuration file.
pub(crate) fn remote_sections(config: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in config.lines() {
        let line = line.trim_start();
        let Some(rest) = line.strip_prefix('[') else {
            continue;
        };
        let Some(head) = rest.get(..6).filter(|h| h.eq_ignore_ascii_case("remote")) else {
            continue;
        };
        let rest = &rest[head.len()..];
        let name = if let Some(q) = rest.trim_start().strip_prefix('"') {
            // A quoted subsection name: `\"` and `\\` are escapes, it ends at `"]`.
            let mut name = String::new();
            let mut it = q.chars();
            let mut closed = false;
            while let Some(c) = it.next() {
                match c {
                    '\\' => name.extend(it.next()),
                    '"' => {
                        closed = it.next() == Some(']');
                        break;
                    }
                    c => name.push(c),
                }
            }
            if !closed {
                continue;
            }
            name
        } else if let Some(dotted) = rest.strip_prefix('.') {
            match dotted.split_once(']') {
                Some((n, _)) => n.to_ascii_lowercase(),
                None => continue,
            }
        } else {
            continue;
        };
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}
