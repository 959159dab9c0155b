//! The git subcommands that work in the local repository and need a check of
//! their own: `init` (templates), `clean` (baton's records), `grep -O` (a pager),
//! `rebase --exec` and `bisect run` (commands they run), `worktree add` and the
//! output files of `log`, `diff`, `format-patch`, `archive` (places written).

use super::*;

/// `git init`: no `--template` (or `--separate-git-dir`), which installs hooks
/// from elsewhere.
pub(super) fn init(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
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
pub(super) fn clean(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
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
pub(super) fn grep(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
    if lits.has(&["--open-files-in-pager"]) || lits.words.iter().any(|l| l.starts_with("-O")) {
        c.refuse(
            &cmd.part,
            "git grep -O opens a pager program",
            "use git grep without -O",
        );
    }
}

/// `git rebase`: the shell code of `--exec` / `-x` is checked as inline code.
pub(super) fn rebase(c: &mut Checker, cmd: &Cmd) {
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
pub(super) fn bisect(c: &mut Checker, cmd: &Cmd) {
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
pub(super) fn worktree(c: &mut Checker, cmd: &Cmd, lits: &LiteralArgs) {
    if lits.words.first().map(String::as_str) == Some("add")
        && let Some(path) = cmd.args.iter().skip(1).find(|w| !w.may_start_with('-'))
    {
        c.write_target(path, &cmd.cwd, &cmd.part, false);
    }
}

/// `--output=FILE` / `-o DIR` write files.
pub(super) fn output_opts(c: &mut Checker, cmd: &Cmd) {
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
