//! Build tools whose options can run other programs: `cargo`, `go`, `make` and C
//! compilers (`gcc -wrapper`, `-fplugin`, `-B`, `-specs`, `@file`).

use super::*;

impl Checker<'_> {
    /// `cargo`.
    pub(super) fn cargo(&mut self, c: &Cmd) -> Flow {
        for w in &c.args {
            match w.literal() {
                Some(l) if l == "--" => break,
                Some(l) if l == "--config" || l.starts_with("--config=") => {
                    self.refuse(
                        &c.part,
                        "cargo --config can set runners and wrappers that run other programs",
                        "put settings in the project's Cargo.toml",
                    );
                }
                _ => {}
            }
        }
        Flow::same(&c.cwd)
    }

    /// `go`.
    pub(super) fn go(&mut self, c: &Cmd) -> Flow {
        let mut prev = String::new();
        for w in &c.args {
            let l = w.literal().unwrap_or_default();
            let flag = l.trim_start_matches('-');
            if l.starts_with('-')
                && (flag == "exec"
                    || flag.starts_with("exec=")
                    || flag == "toolexec"
                    || flag.starts_with("toolexec="))
            {
                self.refuse(
                    &c.part,
                    "go -exec and -toolexec run other programs",
                    "run go build/test/run without them",
                );
            }
            if prev == "env" && (l == "-w" || l == "-u") {
                self.refuse(
                    &c.part,
                    "go env -w changes go's settings for every later command",
                    "set variables for one command, e.g. CGO_ENABLED=0 go build",
                );
            }
            prev = l;
        }
        Flow::same(&c.cwd)
    }

    /// `make`.
    pub(super) fn make(&mut self, c: &Cmd) -> Flow {
        for a in parse_args(
            &c.args,
            "CfIjlWoE",
            &[
                "directory",
                "file",
                "makefile",
                "include-dir",
                "jobs",
                "load-average",
                "what-if",
                "new-file",
                "old-file",
                "assume-old",
                "assume-new",
                "eval",
            ],
            false,
        ) {
            match a {
                Arg::Opt { name, .. } if name == "--eval" || name == "-E" => {
                    self.refuse(
                        &c.part,
                        "make --eval runs makefile text given on the command line",
                        "put rules in the project's Makefile",
                    );
                }
                Arg::Pos(w) => {
                    if let Some(l) = w.literal()
                        && let Some((var, _)) = l.split_once('=')
                        && matches!(
                            var.trim_end_matches([':', '+', '?']),
                            "SHELL" | ".SHELLFLAGS" | "MAKESHELL" | "MAKEFLAGS"
                        )
                    {
                        self.refuse(
                            &c.part,
                            format!("make {var}=… changes the shell that runs every recipe"),
                            "run make with the project's own settings",
                        );
                    }
                }
                _ => {}
            }
        }
        Flow::same(&c.cwd)
    }
}

impl Checker<'_> {
    /// C compilers: options that run another program or load code into the compiler.
    pub(super) fn cc(&mut self, c: &Cmd) {
        let mut prev_xlinker = false;
        for w in &c.args {
            let Some(l) = w.literal() else {
                if w.may_start_with('-') || w.may_start_with('@') {
                    self.refuse(
                        &c.part,
                        format!("{} gets a computed argument {} that could be an option (some run programs)", c.name, w.text),
                        "write compiler options literally",
                    );
                }
                prev_xlinker = false;
                continue;
            };
            let runs = l == "-wrapper"
                || l.starts_with("-fplugin")
                || l.starts_with("-iplugindir")
                || (l.starts_with("-B")
                    && !l.starts_with("-Bstatic")
                    && !l.starts_with("-Bdynamic")
                    && !l.starts_with("-Bsymbolic"))
                || l.starts_with("-specs")
                || l.starts_with("--specs")
                || (l.starts_with("-fuse-ld=") && l.contains('/'))
                || l.starts_with("--ld-path")
                || (l.starts_with("-Wl,") && l.contains("plugin"))
                || (prev_xlinker && l.contains("plugin"))
                || l.starts_with("-fcompare-debug=")
                || (l.starts_with('@') && l.len() > 1);
            if runs {
                self.refuse(
                    &c.part,
                    format!("{} {l} runs another program or loads code into the compiler (or reads more options from a file)", c.name),
                    "compile with ordinary options (-O2, -g, -I, -L, -l, -o, -std=…); write all options on the command line",
                );
            }
            prev_xlinker = l == "-Xlinker";
        }
    }
}
