//! The validator of `git`: which subcommands run, the options that run programs,
//! configuration keys, remotes (`[policy] remotes`), force and delete pushes.

use super::*;

impl Checker<'_> {
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

/// `git push`: the remote it reaches, then no computed refspec, no force, mirror
/// or delete, and no program run on the remote side.
fn push(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
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
fn program_options(c: &mut Checker, cmd: &Cmd, sub: &str, lits: &LiteralArgs) {
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
fn remote_sub(c: &mut Checker, cmd: &Cmd) {
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
fn submodule(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
    if lits
        .words
        .iter()
        .any(|w| matches!(w.as_str(), "add" | "update" | "sync"))
        && !c.remote_allowed("*")
    {
        c.refuse(
            &cmd.part,
            "git submodule add/update/sync fetches from the submodules' remotes",
            "ask the user to add \"*\" to [policy] remotes, or vendor the code",
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

/// `git init`: no `--template` (or `--separate-git-dir`), which installs hooks
/// from elsewhere.
fn init(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
    if lits.has(&["--template", "--separate-git-dir"]) {
        c.refuse(
            &cmd.part,
            "git init --template installs hooks from another directory",
            "run git init without --template",
        );
    }
}

/// `git clean`: `-x`/`-X` only when `.baton/` is excluded (it is ignored, and
/// holds baton's records).
fn clean(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
    let x = lits.short_has('x') || lits.short_has('X');
    let keeps = cmd.args.windows(2).any(|p| {
        p[0].literal().as_deref() == Some("-e")
            && p[1]
                .literal()
                .is_some_and(|v| v.trim_matches('/') == ".baton")
    }) || lits.words.iter().any(|l| {
        matches!(
            l.as_str(),
            "--exclude=.baton" | "--exclude=.baton/" | "-e.baton" | "-e.baton/"
        )
    });
    if x && !keeps {
        c.refuse(
            &cmd.part,
            "git clean -x also deletes ignored files, including baton's .baton/ records",
            "use git clean -fd (without -x), or add -e .baton",
        );
    }
}

/// `git grep`: no `-O`, which opens the matches in a pager program.
fn grep(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
    if lits.has(&["--open-files-in-pager"]) || lits.words.iter().any(|l| l.starts_with("-O")) {
        c.refuse(
            &cmd.part,
            "git grep -O opens a pager program",
            "use git grep without -O",
        );
    }
}

/// `git rebase`: the shell code of `--exec` / `-x` is checked as inline code.
fn rebase(c: &mut Checker, cmd: &Cmd) {
    let parsed = parse_args(
        &cmd.args,
        "xsX",
        &["exec", "strategy", "strategy-option", "onto"],
        false,
    );
    for a in parsed {
        if let Arg::Opt {
            name,
            value: Some(v),
        } = a
            && (name == "-x" || name == "--exec")
        {
            c.inline(&v.word(), &cmd.cwd, &cmd.part, "git rebase --exec");
        }
    }
}

/// `git bisect run CMD ARGS`: the command is checked as if run directly.
fn bisect(c: &mut Checker, cmd: &Cmd) {
    if let Some(pos) = cmd
        .args
        .iter()
        .position(|w| w.literal().as_deref() == Some("run"))
    {
        let rest = &cmd.args[pos + 1..];
        if let Some(name) = rest.first().and_then(|w| w.literal()) {
            let inner = Cmd {
                name,
                args: rest[1..].to_vec(),
                cwd: cmd.cwd.clone(),
                part: cmd.part.clone(),
            };
            c.run(&inner);
        } else if !rest.is_empty() {
            c.refuse(
                &cmd.part,
                "git bisect run with a computed command",
                "write the command literally",
            );
        }
    }
}

/// `git worktree add PATH`: the new worktree's directory is written like any
/// other target.
fn worktree(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
    if lits.words.first().map(String::as_str) == Some("add")
        && let Some(path) = cmd.args.iter().skip(1).find(|w| !w.may_start_with('-'))
    {
        c.write_target(path, &cmd.cwd, &cmd.part, false);
    }
}

/// `--output=FILE` / `-o DIR` write files.
fn output_opts(c: &mut Checker, cmd: &Cmd) {
    for a in parse_args(&cmd.args, "o", &["output", "output-directory"], false) {
        if let Arg::Opt {
            name,
            value: Some(v),
        } = a
            && matches!(name.as_str(), "-o" | "--output" | "--output-directory")
        {
            c.write_target(&v.word(), &cmd.cwd, &cmd.part, false);
        }
    }
}

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

fn git_config(c: &mut Checker, cmd: &Cmd, lits: &[String]) {
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

/// `git push/fetch/pull/ls-remote/clone`: the repository they reach (the first
/// operand; none means the current branch's remote, taken to be `origin`) must be a
/// local path or allowed by `[policy] remotes`. Inside baton's bubblewrap sandbox
/// (where `.git/config` is read-only), a remote named in the repository's
/// configuration is allowed too, and so are no operand (the branch's remote, from
/// that configuration) and `fetch --all`; never a URL given on the command line.
fn remote_args(c: &mut Checker, cmd: &Cmd, sub: &str, forced: bool) {
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
