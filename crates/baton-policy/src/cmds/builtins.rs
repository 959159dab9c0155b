//! Shell builtins that assign variables, install traps or run other commands:
//! `read`, `mapfile`, `let`, declarations, `trap`, `hash`, `command`, `history`,
//! `popd`, `printf -v`, `test -v` and `compgen` (which expands words again).

use super::*;

impl Checker<'_> {
    /// `popd`.
    pub(super) fn popd(&mut self, c: &Cmd) -> Flow {
        self.cd_count += 1;
        Flow {
            ok: Cwd::Unknown,
            fail: c.cwd.clone(),
        }
    }

    /// `read`.
    pub(super) fn read_vars(&mut self, c: &Cmd) -> Flow {
        for a in parse_args(&c.args, "adinNptu", &[], false) {
            match a {
                Arg::Opt {
                    name,
                    value: Some(v),
                } if name == "-a" => {
                    let n = v.literal().unwrap_or_default();
                    self.assigned_var(&n, None, &c.part);
                }
                Arg::Pos(w) | Arg::Unknown(w) => match w.literal() {
                    Some(n) => self.assigned_var(&n, None, &c.part),
                    None => self.refuse(
                        &c.part,
                        "read into a computed variable name",
                        "name the variable literally",
                    ),
                },
                Arg::Opt { .. } => {}
            }
        }
        Flow::same(&c.cwd)
    }

    /// `wait`: `-p NAME` assigns the pid to NAME (a subscript in it is arithmetic).
    /// A computed word could be `-p`, making the next word a name: allowed when it
    /// is `$!`, a variable holding a number, or the last word.
    pub(super) fn wait(&mut self, c: &Cmd) -> Flow {
        for a in parse_args(&c.args, "p", &[], false) {
            match a {
                Arg::Opt {
                    name,
                    value: Some(v),
                } if name == "-p" => match v.literal() {
                    Some(n) => self.assigned_var(&n, None, &c.part),
                    None => self.refuse(
                        &c.part,
                        "wait -p into a computed variable name",
                        "name the variable literally",
                    ),
                },
                Arg::Unknown(w) => {
                    let last = c.args.last().is_some_and(|l| std::ptr::eq(l, w));
                    let name = w
                        .text
                        .trim_matches('"')
                        .trim_start_matches('$')
                        .trim_start_matches('{')
                        .trim_end_matches('}');
                    let number =
                        w.only == Some(Dynamic::LastBackground) || self.arith_safe.contains(name);
                    if !(last || number) {
                        self.refuse(
                            &c.part,
                            format!("wait gets a computed word {} that could be -p, which makes the next word a variable name bash evaluates", w.text),
                            "wait for $! or for variables set to $!, one per wait",
                        );
                    }
                }
                _ => {}
            }
        }
        Flow::same(&c.cwd)
    }

    /// `mapfile`, `readarray`.
    pub(super) fn mapfile(&mut self, c: &Cmd) -> Flow {
        for a in parse_args(&c.args, "dnOsuCc", &[], false) {
            if let Arg::Opt { name, .. } = &a
                && name == "-C"
            {
                self.refuse(
                    &c.part,
                    format!("{} -C runs its callback as shell code for every line read", c.name),
                    "read the lines, then run the command in a loop: while read -r l; do …; done < file",
                );
            }
            if let Arg::Pos(w) | Arg::Unknown(w) = a {
                match w.literal() {
                    Some(n) => self.assigned_var(&n, None, &c.part),
                    None => self.refuse(
                        &c.part,
                        "mapfile into a computed variable name",
                        "name the array literally",
                    ),
                }
            }
        }
        Flow::same(&c.cwd)
    }

    /// `let`.
    pub(super) fn let_arith(&mut self, c: &Cmd) -> Flow {
        for w in &c.args {
            match w.literal() {
                Some(e) => {
                    self.arith_text(&e, &c.part, 0);
                    let name: String = e
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty()
                        && e[name.len()..]
                            .trim_start()
                            .starts_with(|c: char| "=+-*/%<>&|^".contains(c))
                    {
                        self.assigned_var(&name, None, &c.part);
                        self.arith_safe.insert(name);
                    }
                }
                None => self.refuse(
                    &c.part,
                    "let with a computed expression cannot be checked",
                    "write the arithmetic literally: (( i = i + 1 ))",
                ),
            }
        }
        Flow::same(&c.cwd)
    }

    /// `local`, `export`, `declare`, `typeset`, `readonly`.
    pub(super) fn declare(&mut self, c: &Cmd) -> Flow {
        // Reached only through `command export …` and the like.
        for w in &c.args {
            match w.literal() {
                Some(l) if l.starts_with('-') => {
                    if l.contains('n') {
                        self.refuse(
                            &c.part,
                            "name references (-n) cannot be followed",
                            "assign variables directly",
                        );
                    }
                }
                Some(l) => {
                    let (n, v) = l
                        .split_once('=')
                        .map_or((l.as_str(), None), |(n, v)| (n, Some(v)));
                    self.assigned_var(n, Some(&Word::quoted(v.unwrap_or(""))), &c.part);
                }
                None => self.refuse(
                    &c.part,
                    "a declaration with a computed name cannot be checked",
                    "write it literally",
                ),
            }
        }
        Flow::same(&c.cwd)
    }

    /// `trap`.
    pub(super) fn trap(&mut self, c: &Cmd) -> Flow {
        let args: Vec<&Word> = c.args.iter().collect();
        let first = args.first().and_then(|w| w.literal());
        match first.as_deref() {
            None if args.is_empty() => {}
            Some("-l" | "-p" | "-" | "") => {}
            Some(l) if l.starts_with('-') && l != "--" => {}
            _ => {
                let code = if first.as_deref() == Some("--") {
                    args.get(1)
                } else {
                    args.first()
                };
                if let Some(code) = code {
                    self.inline(code, &c.cwd, &c.part, "trap");
                }
            }
        }
        Flow::same(&c.cwd)
    }

    /// `hash`.
    pub(super) fn hash(&mut self, c: &Cmd) -> Flow {
        if c.args.iter().any(|w| {
            w.literal()
                .is_none_or(|l| l.starts_with('-') && l.contains('p'))
        }) {
            self.refuse(
                &c.part,
                "hash -p makes a command name run another program",
                "call programs by their own names",
            );
        }
        Flow::same(&c.cwd)
    }

    /// `command`, `builtin`.
    pub(super) fn command_builtin(&mut self, c: &Cmd) -> Flow {
        let same = Flow::same(&c.cwd);
        let parsed = parse_args(&c.args, "", &[], true);
        let lookup = parsed
            .iter()
            .any(|a| matches!(a, Arg::Opt { name, .. } if name == "-v" || name == "-V"));
        if lookup {
            return same;
        }
        let rest: Vec<Word> = c
            .args
            .iter()
            .skip_while(|w| w.literal().is_some_and(|l| l.starts_with('-')))
            .cloned()
            .collect();
        self.wrapped(c, &rest, false)
    }

    /// `history`.
    pub(super) fn history(&mut self, c: &Cmd) -> Flow {
        if !c.args.is_empty() {
            self.refuse(
                &c.part,
                "history with options writes or replays shell history",
                "run the command again directly",
            );
        }
        Flow::same(&c.cwd)
    }
}

impl Checker<'_> {
    /// `printf -v NAME`: an assignment to NAME.
    pub(super) fn printf(&mut self, c: &Cmd) {
        let mut i = 0;
        while let Some(w) = c.args.get(i) {
            let Some(l) = w.literal() else { break };
            if l == "--" || !l.starts_with('-') {
                break;
            }
            if let Some(rest) = l.strip_prefix("-v") {
                let name = if rest.is_empty() {
                    i += 1;
                    c.args.get(i).map(|w| w.literal())
                } else {
                    Some(Some(rest.to_string()))
                };
                match name {
                    Some(Some(n)) => {
                        if self.var_name(&n, &c.part) {
                            let base = n.split('[').next().unwrap_or(&n).to_string();
                            self.assigned_var(&base, None, &c.part);
                        }
                    }
                    _ => self.refuse(
                        &c.part,
                        "printf -v into a computed variable name",
                        "name the variable literally",
                    ),
                }
            }
            i += 1;
        }
    }

    /// `test` / `[`: `-v NAME` looks up a possibly subscripted name.
    pub(super) fn test_builtin(&mut self, c: &Cmd) {
        for pair in c.args.windows(2) {
            if pair[0].literal().as_deref() == Some("-v") {
                match pair[1].literal() {
                    Some(n) => {
                        self.var_name(&n, &c.part);
                    }
                    None => self.refuse(
                        &c.part,
                        "test -v with a computed name: bash evaluates a subscript in it as arithmetic",
                        "test a plain variable name: test -v NAME",
                    ),
                }
            }
        }
    }

    /// `compgen`: `-W WORDS` expands WORDS again (running `$(…)`), `-C` runs a
    /// command and `-F` a function.
    pub(super) fn compgen(&mut self, c: &Cmd) {
        let mut it = c.args.iter();
        while let Some(w) = it.next() {
            let Some(l) = w.literal() else {
                self.refuse(
                    &c.part,
                    "compgen with a computed option",
                    "write compgen's options literally",
                );
                continue;
            };
            if !l.starts_with('-') || l == "--" {
                continue;
            }
            if l.contains('C') || l.contains('F') {
                self.refuse(
                    &c.part,
                    "compgen -C/-F runs a command or function",
                    "list names with compgen -c, -b or -v",
                );
            } else if l.contains('W') {
                let words = if l.len() > 2 && l.starts_with("-W") {
                    Some(l[2..].to_string())
                } else {
                    it.next().and_then(|w| w.literal())
                };
                if words.is_none_or(|s| s.contains(['$', '`'])) {
                    self.refuse(
                        &c.part,
                        "compgen -W expands its word list again, so $(…) or backticks in it run commands",
                        "give compgen -W a plain list of words",
                    );
                }
            }
        }
    }
}
