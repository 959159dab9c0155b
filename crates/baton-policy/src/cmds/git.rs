//! The validator of `git` (config that runs programs, remotes, force pushes; see
//! also `scripts.rs` for git's hooks in commands).

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
        crate::scripts::git_sub(self, &sc, &sub);
        same
    }
}
