//! The validator of `git`: which subcommands run, the options that run programs,
//! configuration keys, remotes (`[policy] remotes`), force and delete pushes.
//!
//! Here: git's own options (before the subcommand), the table of subcommands
//! and the checks common to all of them, and `git_sub`, which hands each
//! subcommand to its family: `remotes` (push, fetch, pull, clone, ls-remote,
//! remote, submodule), `config`, and `local` (init, clean, grep, rebase, bisect,
//! worktree and the files history commands write).

use super::*;

mod config;
mod local;
mod remotes;

use config::git_config;
use local::{bisect, clean, grep, init, output_opts, rebase, worktree};
pub(crate) use remotes::configured_remotes;
use remotes::{program_options, push, remote_args, remote_sub, submodule};

impl Checker<'_> {
    /// `git [OPTIONS] SUB ARGS`: git's own options (no `-c`, no other repository or
    /// exec path), then the subcommand ([`git_sub`]) in the directories `-C` names.
    pub(super) fn git(&mut self, c: &Cmd) -> Flow {
        let same = Flow::same(&c.cwd);
        let mut i = 0;
        let mut cwd = c.cwd.clone();
        while i < c.args.len() {
            let Some(l) = c.args[i].literal() else {
                self.refuse(
                    &c.part,
                    "git with a computed option or subcommand",
                    "write git's options and subcommand literally",
                );
                return same;
            };
            if !l.starts_with('-') {
                break;
            }
            i += 1;
            let name = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
            match name {
                _ if l.starts_with("-c") || name == "--config-env" || name == "--config" => {
                    self.refuse(
                        &c.part,
                        "git -c / --config-env sets configuration for this command, and configuration can run programs (core.pager, core.sshCommand, core.fsmonitor, aliases)",
                        "run git without -c; settings that are safe can be made with git config user.name/user.email",
                    );
                    return same;
                }
                "-C" => {
                    match c.args.get(i).and_then(|w| w.literal()) {
                        Some(d) => cwd = self.cd_target(&d, &cwd),
                        None => {
                            self.refuse(
                                &c.part,
                                "git -C with a computed directory",
                                "write the directory literally",
                            );
                            return same;
                        }
                    }
                    i += 1;
                }
                "--exec-path" if l.contains('=') => {
                    self.refuse(
                        &c.part,
                        "git --exec-path=DIR runs git's subcommands from another directory",
                        "run git with its defaults",
                    );
                    return same;
                }
                "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix"
                | "--attr-source" => {
                    self.refuse(
                        &c.part,
                        format!("git {name} points git at another repository or tree"),
                        "run git inside the project (cd or git -C DIR)",
                    );
                    return same;
                }
                "--no-pager"
                | "-P"
                | "--paginate"
                | "-p"
                | "--no-replace-objects"
                | "--literal-pathspecs"
                | "--glob-pathspecs"
                | "--noglob-pathspecs"
                | "--icase-pathspecs"
                | "--no-optional-locks"
                | "--version"
                | "--help"
                | "-h"
                | "--no-advice"
                | "--html-path"
                | "--man-path"
                | "--info-path"
                | "--exec-path"
                | "--bare"
                | "--no-lazy-fetch" => {}
                _ => {
                    self.refuse(
                        &c.part,
                        format!("git option {name} is not one baton knows"),
                        "use git's common options (-C DIR, --no-pager) before the subcommand",
                    );
                    return same;
                }
            }
        }
        let Some(sub) = c.args.get(i).and_then(|w| w.literal()) else {
            return same;
        };
        let rest = &c.args[i + 1..];
        let sc = Cmd {
            name: format!("git {sub}"),
            args: rest.to_vec(),
            cwd,
            part: c.part.clone(),
        };
        git_sub(self, &sc, &sub);
        same
    }
}

/// git subcommands baton lets through (with the checks below).
const GIT_SUBCOMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "commit",
    "commit-tree",
    "config",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "fetch",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "hash-object",
    "init",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "merge",
    "merge-base",
    "merge-file",
    "merge-tree",
    "mktag",
    "mktree",
    "mv",
    "name-rev",
    "notes",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "reflog",
    "remote",
    "repack",
    "replace",
    "rerere",
    "reset",
    "restore",
    "revert",
    "rev-list",
    "rev-parse",
    "rm",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "update-index",
    "update-ref",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
    "maintenance",
    "prune",
    "citool",
    "shortlog",
];

/// Options whose value may be computed (it cannot be taken for an option).
const GIT_VALUE_OPTS: &[&str] = &[
    "-m",
    "--message",
    "-F",
    "--file",
    "--author",
    "--date",
    "-b",
    "-B",
    "--format",
    "--pretty",
    "--grep",
    "--since",
    "--until",
    "--after",
    "--before",
    "-t",
    "--template-message",
    "-n",
    "--max-count",
    "-e",
];

/// `git SUB ARGS`: the subcommand's own escape hatches. The checks common to
/// every subcommand (a known subcommand, computed words that could be options,
/// transports that run commands), then those of the subcommand's family.
pub(crate) fn git_sub(c: &mut Checker, cmd: &Cmd, sub: &str) {
    if !GIT_SUBCOMMANDS.contains(&sub) {
        refuse_unknown_sub(c, cmd, sub);
        return;
    }
    computed_options(c, cmd, sub);
    let lits = LiteralArgs::of(cmd);
    command_transports(c, cmd, &lits);
    match sub {
        "config" => git_config(c, cmd, &lits.words),
        "push" => push(c, cmd, &lits),
        "fetch" | "pull" | "ls-remote" | "clone" => {
            remote_args(c, cmd, sub, false);
            program_options(c, cmd, sub, &lits);
        }
        "remote" => {
            remote_sub(c, cmd);
            program_options(c, cmd, sub, &lits);
        }
        "submodule" => submodule(c, cmd, &lits),
        "archive" => {
            program_options(c, cmd, sub, &lits);
            output_opts(c, cmd);
        }
        "init" => init(c, cmd, &lits),
        "clean" => clean(c, cmd, &lits),
        "grep" => grep(c, cmd, &lits),
        "rebase" => rebase(c, cmd),
        "bisect" => bisect(c, cmd),
        "log" | "diff" | "show" | "format-patch" | "whatchanged" | "range-diff" | "shortlog" => {
            output_opts(c, cmd);
        }
        "worktree" => worktree(c, cmd, &lits),
        _ => {}
    }
}

/// Refuse a git subcommand not in [`GIT_SUBCOMMANDS`], saying what it does when
/// it is a known escape (filters, servers, credentials, mail, external tools).
fn refuse_unknown_sub(c: &mut Checker, cmd: &Cmd, sub: &str) {
    let (reason, instead) = match sub {
        "filter-branch" | "filter-repo" => (
            "git filter-branch runs shell filters over history",
            "change files and commit",
        ),
        "daemon" | "instaweb" | "http-backend" | "upload-pack" | "receive-pack" | "shell"
        | "upload-archive" => (
            "this git subcommand serves the repository or runs a server",
            "use local git commands",
        ),
        "credential" | "credential-store" | "credential-cache" => (
            "git credential reads stored credentials",
            "credentials are never available to the agent",
        ),
        "send-email" | "request-pull" | "imap-send" => {
            ("this git subcommand sends mail", "commit locally")
        }
        "difftool" | "mergetool" | "web--browse" | "help" | "gui" | "gitk" => (
            "this git subcommand starts other programs (tools, browsers, pagers)",
            "use git diff and git merge",
        ),
        _ => (
            "not a git subcommand baton knows; git aliases are refused because an alias can run shell commands",
            "use git's own subcommand (status, add, commit, log, diff, branch, checkout, …)",
        ),
    };
    c.refuse(&cmd.part, format!("git {sub}: {reason}"), instead);
}

/// Refuse computed arguments that could be options (some git options run
/// programs): allowed after `--`, as the value of an option in
/// [`GIT_VALUE_OPTS`], or when they cannot start with `-`.
fn computed_options(c: &mut Checker, cmd: &Cmd, sub: &str) {
    let mut prev: Option<String> = None;
    let mut dashdash = false;
    for w in &cmd.args {
        match w.literal() {
            Some(l) => {
                if l == "--" {
                    dashdash = true;
                }
                prev = Some(l);
            }
            None => {
                let value_of = prev.as_deref().is_some_and(|p| GIT_VALUE_OPTS.contains(&p));
                let inline_value = w.static_text().is_none() && {
                    let lit: String = w
                        .chars
                        .iter()
                        .map_while(|ch| match ch {
                            crate::word::Ch::Quoted(x) | crate::word::Ch::Bare(x) => Some(*x),
                            crate::word::Ch::Dyn => None,
                        })
                        .collect();
                    lit.starts_with('-')
                        && lit
                            .split_once('=')
                            .is_some_and(|(o, _)| GIT_VALUE_OPTS.contains(&o))
                };
                if !(dashdash || value_of || inline_value || !w.may_start_with('-')) {
                    c.refuse(
                        &cmd.part,
                        format!("git {sub} gets a computed argument {} that could be an option (some git options run programs)", w.text),
                        "write git's options literally; computed messages go after -m, computed paths after --",
                    );
                }
                prev = None;
            }
        }
    }
}

/// The literal arguments of a git subcommand, asked which options they hold.
struct LiteralArgs {
    words: Vec<String>,
}

impl LiteralArgs {
    /// The literal words among `cmd`'s arguments, in order.
    fn of(cmd: &Cmd) -> LiteralArgs {
        LiteralArgs {
            words: cmd.args.iter().filter_map(|w| w.literal()).collect(),
        }
    }

    /// Whether one argument is one of `names` (alone or as `NAME=value`).
    fn has(&self, names: &[&str]) -> bool {
        self.words.iter().any(|l| {
            let n = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
            names.contains(&n)
        })
    }

    /// Whether a cluster of short options (`-fd`) holds `flag`.
    fn short_has(&self, flag: char) -> bool {
        self.words
            .iter()
            .any(|l| l.starts_with('-') && !l.starts_with("--") && l[1..].contains(flag))
    }
}

/// Refuse the `ext::` and `fd::` transports, which run commands, in any
/// subcommand.
fn command_transports(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
    for l in &lits.words {
        if l.starts_with("ext::") || l.starts_with("fd::") {
            c.refuse(
                &cmd.part,
                "the ext:: and fd:: transports run commands",
                "use https:// or a local path as the remote",
            );
        }
    }
}
