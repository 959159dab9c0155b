//! `git config`: which configuration the agent may set (plain settings only;
//! keys such as `core.hooksPath`, `core.pager` or `alias.*` make git run
//! programs).

use super::*;

/// Configuration keys the agent may set: none of them runs a program.
fn safe_config_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    const EXACT: &[&str] = &[
        "user.name",
        "user.email",
        "init.defaultbranch",
        "core.autocrlf",
        "core.eol",
        "core.filemode",
        "core.ignorecase",
        "core.quotepath",
        "core.safecrlf",
        "core.whitespace",
        "commit.gpgsign",
        "tag.gpgsign",
        "pull.rebase",
        "pull.ff",
        "push.default",
        "push.autosetupremote",
        "merge.ff",
        "merge.conflictstyle",
        "rebase.autostash",
        "rebase.autosquash",
        "fetch.prune",
        "color.ui",
        "diff.renames",
        "diff.algorithm",
        "status.showuntrackedfiles",
        "log.date",
        "gc.auto",
        "advice.detachedhead",
        "commit.verbose",
        "branch.autosetupmerge",
        "core.precomposeunicode",
        "help.autocorrect",
    ];
    if EXACT.contains(&k.as_str()) || k.starts_with("advice.") || k.starts_with("color.") {
        return true;
    }
    let parts: Vec<&str> = k.split('.').collect();
    match parts.as_slice() {
        // Not branch.*.remote, remote.*.url/pushurl/push/fetch/mirror: they change
        // where git pushes and fetches, and remote.*.push can force-push (+refs/…).
        ["branch", _, last] => matches!(*last, "merge" | "rebase" | "description"),
        ["remote", _, last] => matches!(*last, "tagopt" | "prune"),
        _ => false,
    }
}

/// `git config`: reading is free; writing is refused with `--edit`, outside the
/// project (`--global`, `--system`, `--file`), and for any key but the plain
/// settings of [`safe_config_key`].
pub(super) fn git_config(c: &mut Checker, cmd: &Cmd, lits: &[String]) {
    if cmd.args.iter().any(|w| w.literal().is_none()) {
        // Values may be computed (user.email "$EMAIL"), keys may not: checked below.
    }
    let mut write = false;
    let mut global = false;
    let mut positionals: Vec<&Word> = Vec::new();
    let mut i = 0;
    let args = &cmd.args;
    while i < args.len() {
        let w = &args[i];
        i += 1;
        let Some(l) = w.literal() else {
            positionals.push(w);
            continue;
        };
        let name = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
        match name {
            "--global" | "--system" | "--file" | "-f" | "--blob" => {
                global = true;
                if (name == "--file" || name == "-f" || name == "--blob") && !l.contains('=') {
                    i += 1;
                }
            }
            "--unset" | "--unset-all" | "--add" | "--replace-all" | "--rename-section"
            | "--remove-section" => write = true,
            "--edit" | "-e" => {
                c.refuse(
                    &cmd.part,
                    "git config --edit opens an editor",
                    "set keys with git config KEY VALUE",
                );
                return;
            }
            "--type" | "--default" | "--comment" | "--value" => {
                if !l.contains('=') {
                    i += 1;
                }
            }
            _ if l.starts_with('-') => {}
            _ => positionals.push(w),
        }
    }
    let mut pos: Vec<&Word> = positionals;
    if let Some(first) = pos.first().and_then(|w| w.literal()) {
        match first.as_str() {
            "get" | "list" => return,
            "set" | "unset" | "rename-section" | "remove-section" => {
                write = true;
                pos.remove(0);
            }
            "edit" => {
                c.refuse(
                    &cmd.part,
                    "git config edit opens an editor",
                    "set keys with git config KEY VALUE",
                );
                return;
            }
            _ => {}
        }
    }
    if pos.len() >= 2 {
        write = true;
    }
    let _ = lits;
    if !write {
        return;
    }
    if global {
        c.refuse(
            &cmd.part,
            "git config --global/--system/--file changes configuration outside the project",
            "set repository settings without --global (git config user.name NAME)",
        );
        return;
    }
    let Some(key) = pos.first() else { return };
    match key.literal() {
        Some(k) if safe_config_key(&k) => {}
        Some(k) => c.refuse(
            &cmd.part,
            format!("git config {k}: baton lets the agent set only plain settings; keys like core.hooksPath, core.pager, core.fsmonitor, core.sshCommand, alias.*, filters and diff drivers make git run programs"),
            "set only plain settings such as user.name, user.email, init.defaultBranch, pull.rebase, branch.*.merge; remotes are added with git remote add NAME URL (URLs allowed by [policy] remotes)",
        ),
        None => c.refuse(&cmd.part, "git config with a computed key", "write the key literally"),
    }
}
