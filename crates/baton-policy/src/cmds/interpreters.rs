//! Validators of interpreters and shells: `bash`/`sh`, `python`, `node`, `perl`,
//! `ruby`. Scripts in the project are allowed. Inline code (`-c`, `-e`, a program
//! read from standard input or a here-document) is allowed only inside baton's
//! bubblewrap sandbox ([`crate::Policy::with_bubblewrap`]), which bounds it as it
//! bounds a script file the agent writes and runs; without it, it is refused with a
//! reason that says so. Shell code is not: `bash -c` code is checked like any
//! command, and a shell reading its program from input is refused.

use super::*;

impl Checker<'_> {
    pub(super) fn shell(&mut self, c: &Cmd) {
        let mut i = 0;
        let mut inline = false;
        while i < c.args.len() {
            let w = &c.args[i];
            let Some(l) = w.literal() else {
                if !inline && w.may_start_with('-') {
                    self.unknown_option(c, w);
                }
                break;
            };
            if l == "--" || l == "-" {
                i += 1;
                break;
            }
            if let Some(long) = l.strip_prefix("--") {
                match long {
                    "rcfile" | "init-file" | "login" => {
                        self.refuse(
                            &c.part,
                            format!("{} --{long} runs startup files", c.name),
                            "run the script or command directly",
                        );
                        return;
                    }
                    _ => {}
                }
                i += 1;
                continue;
            }
            if l.len() > 1 && (l.starts_with('-') || l.starts_with('+')) {
                let flags = &l[1..];
                if flags.contains('c') {
                    inline = true;
                }
                if flags.contains('s') || flags.contains('i') || flags.contains('l') {
                    self.refuse(
                        &c.part,
                        format!(
                            "{} -{flags} reads commands from input or startup files",
                            c.name
                        ),
                        "run a script file or bash -c 'command'",
                    );
                    return;
                }
                if flags.contains('o') || flags.contains('O') {
                    i += 1;
                }
                i += 1;
                continue;
            }
            break;
        }
        if inline {
            match c.args.get(i) {
                Some(code) => self.inline(code, &c.cwd, &c.part, &format!("{} -c", c.name)),
                None => self.refuse(
                    &c.part,
                    format!("{} -c without code", c.name),
                    "give the command",
                ),
            }
            return;
        }
        if c.args.get(i).is_none() {
            self.refuse(
                &c.part,
                format!("{} without a script reads its program from standard input, which baton cannot check", c.name),
                "write the script to a file (in the temp dir when it is scratch, in the project when it belongs there) and run it (bash script.sh), or use bash -c 'command'",
            );
        }
    }

    pub(super) fn python(&mut self, c: &Cmd) {
        let mut i = 0;
        while i < c.args.len() {
            let w = &c.args[i];
            let Some(l) = w.literal() else {
                if w.may_start_with('-') {
                    self.unknown_option(c, w);
                }
                return;
            };
            if !l.starts_with('-') || l == "-" {
                if l == "-" {
                    break;
                }
                return; // a script file
            }
            i += 1;
            if l.starts_with("--") {
                if matches!(
                    l.as_str(),
                    "--version" | "--help" | "--help-all" | "--help-env" | "--help-xoptions"
                ) {
                    return;
                }
                if l == "--check-hash-based-pycs" {
                    i += 1;
                }
                continue;
            }
            let flags: Vec<char> = l[1..].chars().collect();
            for (k, f) in flags.iter().enumerate() {
                match f {
                    'c' => {
                        self.inline_code(
                            c,
                            "-c",
                            "write the code to a .py file (in the temp dir, $TMPDIR or /tmp, when it is scratch; in the project when it belongs there) and run python file.py",
                        );
                        return;
                    }
                    'm' => {
                        let module = if k + 1 < flags.len() {
                            Some(flags[k + 1..].iter().collect::<String>())
                        } else {
                            c.args.get(i).and_then(|w| w.literal())
                        };
                        let Some(module) = module else {
                            self.refuse(
                                &c.part,
                                "python -m with a computed module name",
                                "write the module name literally",
                            );
                            return;
                        };
                        let root = module.split('.').next().unwrap_or_default();
                        if matches!(
                            root,
                            "code"
                                | "timeit"
                                | "pdb"
                                | "idlelib"
                                | "IPython"
                                | "ipython"
                                | "ptpython"
                                | "runpy"
                                | "asyncio"
                                | "bdb"
                        ) && !self.policy.bubblewrap
                        {
                            self.refuse(
                                &c.part,
                                format!(
                                    "python -m {module} runs code given inline or on its input, which baton cannot check; {}",
                                    crate::BUBBLEWRAP_HINT
                                ),
                                "write the code to a file (in the temp dir, $TMPDIR or /tmp, when it is scratch; in the project when it belongs there) and run it",
                            );
                        }
                        if module == "pip" {
                            // `python -m pip ARGS` is pip: the same sources rules.
                            let start = if k + 1 < flags.len() { i } else { i + 1 };
                            let pip = Cmd {
                                name: "pip".into(),
                                args: c.args.get(start..).unwrap_or_default().to_vec(),
                                cwd: c.cwd.clone(),
                                part: c.part.clone(),
                            };
                            self.pip(&pip);
                        }
                        return;
                    }
                    'V' | 'h' => return,
                    'W' | 'X' | 'Q' => {
                        if k + 1 == flags.len() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        }
        self.stdin_program(
            c,
            "write the code to a .py file (in the temp dir, $TMPDIR or /tmp, when it is scratch; in the project when it belongs there) and run python file.py",
        );
    }

    pub(super) fn node(&mut self, c: &Cmd) {
        let takes = [
            "-r",
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
            "--input-type",
            "--conditions",
            "-C",
            "--env-file",
            "--title",
            "--stack-size",
            "--max-old-space-size",
            "--inspect-port",
            "--test-reporter",
            "--test-reporter-destination",
            "--test-name-pattern",
            "--watch-path",
        ];
        let mut i = 0;
        while i < c.args.len() {
            let w = &c.args[i];
            let Some(l) = w.literal() else {
                if w.may_start_with('-') {
                    self.unknown_option(c, w);
                }
                return;
            };
            if !l.starts_with('-') {
                return;
            }
            i += 1;
            let name = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
            match name {
                "-e" | "--eval" | "-p" | "--print" | "-pe" | "-ep" => {
                    self.inline_code(
                        c,
                        "-e/-p",
                        "write the code to a .js file (in the temp dir, $TMPDIR or /tmp, when it is scratch; in the project when it belongs there) and run node file.js",
                    );
                    return;
                }
                "-v" | "--version" | "-h" | "--help" | "--test" | "--run" | "--v8-options" => {
                    return;
                }
                "-" => break,
                _ => {}
            }
            if takes.contains(&name) && !l.contains('=') {
                i += 1;
            }
        }
        self.stdin_program(
            c,
            "write the code to a .js file (in the temp dir, $TMPDIR or /tmp, when it is scratch; in the project when it belongs there) and run node file.js",
        );
    }

    pub(super) fn perl(&mut self, c: &Cmd) {
        for w in &c.args {
            let Some(l) = w.literal() else { return };
            if !l.starts_with('-') || l == "--" {
                return;
            }
            if l.starts_with("--") {
                continue;
            }
            let flags = &l[1..];
            if flags.contains('e') || flags.contains('E') {
                let instead = format!(
                    "write the code to a file (in the temp dir, $TMPDIR or /tmp, when it is scratch; in the project when it belongs there) and run {} file; for substitutions in files use sed -i",
                    c.name
                );
                self.inline_code(c, "-e", &instead);
                return;
            }
            if flags == "v" || flags == "V" || flags == "h" || flags == "version" {
                return;
            }
        }
        self.stdin_program(
            c,
            "write the code to a file (in the temp dir, $TMPDIR or /tmp, when it is scratch; in the project when it belongs there) and run it",
        );
    }

    /// `python -c`, `node -e`, `perl -e`, `ruby -e`: allowed inside the bubblewrap
    /// sandbox, refused (saying so) outside it.
    fn inline_code(&mut self, c: &Cmd, flag: &str, instead: &str) {
        if !self.policy.bubblewrap {
            self.refuse(
                &c.part,
                format!(
                    "{} {flag} runs inline code, which baton cannot check; {}",
                    c.name,
                    crate::BUBBLEWRAP_HINT
                ),
                instead,
            );
        }
    }

    /// An interpreter without a script reads its program from standard input (a
    /// pipe, `<`, a here-document): as [`Checker::inline_code`].
    fn stdin_program(&mut self, c: &Cmd, instead: &str) {
        if !self.policy.bubblewrap {
            self.refuse(
                &c.part,
                format!(
                    "{} without a script reads its program from standard input, which baton cannot check; {}",
                    c.name,
                    crate::BUBBLEWRAP_HINT
                ),
                instead,
            );
        }
    }
}
