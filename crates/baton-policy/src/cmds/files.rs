//! Validators of programs that change files and directories: `cd`, `source`, `rm`,
//! `cp`/`mv`/`ln`, `chmod`, `find`.

use super::*;

impl Checker<'_> {
    pub(super) fn cd(&mut self, c: &Cmd) -> Flow {
        self.cd_count += 1;
        let ops: Vec<&Word> = c
            .args
            .iter()
            .filter(|w| {
                !w.literal()
                    .is_some_and(|l| matches!(l.as_str(), "-P" | "-L" | "-e" | "-@" | "--"))
            })
            .collect();
        let target = match ops.as_slice() {
            [] => self
                .policy
                .places
                .home
                .as_ref()
                .map(|h| Cwd::Known(vec![h.clone()]))
                .unwrap_or(Cwd::Unknown),
            [w] => match w.literal() {
                Some(l) if l == "-" => Cwd::Unknown,
                Some(l) => self.cd_target(&l, &c.cwd),
                None => match w.patterns(self.policy.places.home.as_deref()) {
                    Some(p) if p.len() == 1 && !crate::word::pattern_has_glob(&p[0]) => {
                        self.cd_target(&crate::word::unescape(&p[0]), &c.cwd)
                    }
                    _ => Cwd::Unknown,
                },
            },
            _ => Cwd::Unknown,
        };
        Flow {
            ok: target,
            fail: c.cwd.clone(),
        }
    }

    pub(super) fn source_file(&mut self, c: &Cmd) -> Flow {
        self.cd_count += 1;
        let unknown = Flow {
            ok: Cwd::Unknown,
            fail: Cwd::Unknown,
        };
        let Some(file) = c.args.first() else {
            return Flow::same(&c.cwd);
        };
        let Some(l) = file.literal() else {
            self.refuse(
                &c.part,
                format!("{} of a computed file name cannot be checked", c.name),
                "source a literal path inside the project",
            );
            return unknown;
        };
        let home = self.policy.places.home.clone();
        let known_env = home.as_ref().is_some_and(|h| {
            [".cargo/env", ".nvm/nvm.sh"]
                .iter()
                .any(|f| Path::new(&l) == h.join(f))
        });
        if known_env {
            return unknown;
        }
        let dirs = match &c.cwd {
            Cwd::Known(v) => v.clone(),
            Cwd::Unknown => vec![PathBuf::from("/")],
        };
        for d in dirs {
            match self.policy.places.place(&crate::word::escape(&l), &d) {
                Place::Project => {}
                _ => {
                    self.refuse(
                        &c.part,
                        format!("{} runs {l} in this shell, and it is not a file of the project", c.name),
                        "source files inside the project (e.g. . .venv/bin/activate), or ~/.cargo/env and ~/.nvm/nvm.sh",
                    );
                    return unknown;
                }
            }
        }
        unknown
    }

    pub(super) fn rm(&mut self, c: &Cmd) {
        for a in parse_args(&c.args, "", &[], false) {
            match a {
                Arg::Opt { name, .. } if name == "--no-preserve-root" => {
                    self.refuse(
                        &c.part,
                        "rm --no-preserve-root",
                        "remove files inside the project",
                    );
                }
                Arg::Opt { .. } => {}
                Arg::Pos(w) | Arg::Unknown(w) => {
                    if let Some((reason, instead)) = self.write_problem(w, &c.cwd, true, true) {
                        self.refuse(&c.part, format!("{}: {reason}", c.name), format!("remove only files inside the project (never .git/ or .baton/); {instead}"));
                    }
                }
            }
        }
    }

    pub(super) fn copy(&mut self, c: &Cmd) {
        let parsed = parse_args(
            &c.args,
            "tSV",
            &[
                "target-directory",
                "suffix",
                "backup",
                "sparse",
                "reflink",
                "preserve",
                "no-preserve",
                "context",
            ],
            false,
        );
        let mut target: Option<Word> = None;
        let mut ops: Vec<&Word> = Vec::new();
        let mut symbolic = false;
        let mut recursive = false;
        for a in &parsed {
            match a {
                Arg::Opt {
                    name,
                    value: Some(v),
                } if name == "-t" || name == "--target-directory" => target = Some(v.word()),
                Arg::Opt { name, .. } => {
                    symbolic |= name == "-s" || name == "--symbolic";
                    recursive |= matches!(
                        name.as_str(),
                        "-r" | "-R" | "-a" | "--recursive" | "--archive"
                    );
                }
                Arg::Pos(w) => ops.push(w),
                Arg::Unknown(w) => {
                    self.unknown_option(c, w);
                    return;
                }
            }
        }
        let (sources, dest): (Vec<&Word>, Option<Word>) = match target {
            Some(t) => (ops.clone(), Some(t)),
            None if ops.len() >= 2 || c.name != "ln" => match ops.split_last() {
                Some((last, rest)) => (rest.to_vec(), Some((*last).clone())),
                None => (Vec::new(), None),
            },
            None => (
                Vec::new(),
                ops.first().map(|w| Word::quoted(&basename_of(w))),
            ),
        };
        if let Some(d) = &dest {
            self.write_target(d, &c.cwd, &c.part, false);
        }
        for s in &sources {
            match c.name.as_str() {
                "mv" => {
                    if let Some((reason, instead)) = self.write_problem(s, &c.cwd, true, true) {
                        self.refuse(&c.part, format!("mv removes its source: {reason}"), instead);
                    }
                }
                "ln" => {
                    self.link_target(c, s, dest.as_ref(), true);
                }
                _ => {
                    if recursive && let Some(what) = self.secret_in(s, &c.cwd, true) {
                        self.refuse(
                            &c.part,
                            format!("copying {} recursively reaches {what}", s.text),
                            "copy files of the project",
                        );
                    }
                }
            }
        }
        if c.name == "ln"
            && sources.is_empty()
            && let Some(first) = ops.first()
        {
            self.link_target(c, first, None, symbolic);
        }
    }

    /// `ln` targets must be inside the project or a temp dir: a link is a path
    /// that reads and writes through to its target.
    pub(super) fn link_target(
        &mut self,
        c: &Cmd,
        target: &Word,
        _link: Option<&Word>,
        _symbolic: bool,
    ) {
        if let Some((reason, _)) = self.write_problem(target, &c.cwd, false, false) {
            self.refuse(
                &c.part,
                format!(
                    "a link to {} would reach outside the project ({reason})",
                    target.text
                ),
                "link only to files inside the project",
            );
        }
    }

    pub(super) fn chmod(&mut self, c: &Cmd) {
        let mut mode_seen = false;
        for w in &c.args {
            let Some(l) = w.literal() else {
                if mode_seen {
                    self.write_target(w, &c.cwd, &c.part, true);
                } else {
                    self.refuse(&c.part, "chmod with a computed mode", "use chmod +x FILE");
                }
                continue;
            };
            if matches!(
                l.as_str(),
                "-R" | "-v"
                    | "-f"
                    | "-c"
                    | "--recursive"
                    | "--verbose"
                    | "--silent"
                    | "--quiet"
                    | "--changes"
            ) {
                continue;
            }
            if !mode_seen {
                mode_seen = true;
                let ok = l.split(',').all(|m| {
                    let who = m.trim_start_matches(['u', 'g', 'o', 'a']);
                    who == "+x"
                });
                if !ok {
                    self.refuse(
                        &c.part,
                        format!("chmod {l}: baton allows only adding execute permission"),
                        "use chmod +x FILE (or u+x) to make a script executable",
                    );
                }
                continue;
            }
            self.write_target(w, &c.cwd, &c.part, true);
        }
    }

    pub(super) fn find(&mut self, c: &Cmd) {
        let mut i = 0;
        let mut starts: Vec<&Word> = Vec::new();
        while i < c.args.len() {
            let w = &c.args[i];
            let l = w.literal();
            if l.as_deref()
                .is_some_and(|l| l.starts_with('-') || l == "(" || l == "!" || l == ")")
            {
                break;
            }
            if matches!(l.as_deref(), Some("-H" | "-L" | "-P")) {
                i += 1;
                continue;
            }
            starts.push(w);
            i += 1;
        }
        let mut delete = false;
        while i < c.args.len() {
            let w = &c.args[i];
            i += 1;
            let Some(l) = w.literal() else {
                if w.may_start_with('-') {
                    self.unknown_option(c, w);
                }
                continue;
            };
            match l.as_str() {
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let end = c.args[i..]
                        .iter()
                        .position(|w| matches!(w.literal().as_deref(), Some(";" | "+")))
                        .map_or(c.args.len(), |p| i + p);
                    let inner: Vec<Word> = c.args[i..end]
                        .iter()
                        .map(|w| {
                            if w.literal().as_deref() == Some("{}") {
                                Word {
                                    chars: vec![Ch::Dyn],
                                    text: "{}".into(),
                                    only: Some(Dynamic::Other),
                                    quoted_dyn_only: false,
                                }
                            } else {
                                w.clone()
                            }
                        })
                        .collect();
                    let before = self.refusals.len();
                    self.wrapped(c, &inner, false);
                    if self.refusals.len() > before {
                        self.refuse(
                            &c.part,
                            format!("find {l} runs a command that is refused (above)"),
                            "list the files with find, then act on them with allowed commands and literal paths",
                        );
                    }
                    i = end + 1;
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    if let Some(f) = c.args.get(i) {
                        self.write_target(f, &c.cwd, &c.part, false);
                    }
                    i += if l == "-fprintf" { 2 } else { 1 };
                }
                "-delete" => delete = true,
                _ => {}
            }
        }
        // `find . -name '*.pyc' -delete`: one name pattern of build leftovers that
        // neither git nor baton ever names their files with, and no operator that
        // could widen the match.
        let cleanup = {
            let lits: Vec<Option<String>> = c.args.iter().map(|w| w.literal()).collect();
            let mut names = 0;
            let mut ok = true;
            let mut k = 0;
            while k < lits.len() {
                match lits[k].as_deref() {
                    Some("-name" | "-iname") => {
                        names += 1;
                        ok &= lits
                            .get(k + 1)
                            .and_then(|p| p.as_deref())
                            .is_some_and(|p| CLEANUP_PATTERNS.contains(&p));
                        k += 2;
                        continue;
                    }
                    Some(
                        "-o" | "-or" | "!" | "-not" | "," | "-path" | "-wholename" | "-regex"
                        | "-iregex" | "-ipath" | "-iwholename" | "-lname" | "-ilname",
                    )
                    | None => ok = false,
                    _ => {}
                }
                k += 1;
            }
            ok && names == 1
        };
        if delete {
            let starts: Vec<Word> = if starts.is_empty() {
                vec![Word::quoted(".")]
            } else {
                starts.into_iter().cloned().collect()
            };
            for s in &starts {
                let problem = self.write_problem(s, &c.cwd, false, true);
                let root = s.literal().is_some_and(|l| {
                    let dirs = match &c.cwd {
                        Cwd::Known(v) => v.clone(),
                        Cwd::Unknown => vec![],
                    };
                    dirs.iter().any(|d| {
                        self.policy.places.place(&crate::word::escape(&l), d) == Place::ProjectRoot
                    })
                });
                if root && cleanup {
                    // Build leftovers only; see CLEANUP_PATTERNS.
                } else if let Some((reason, _)) = problem {
                    self.refuse(&c.part, format!("find -delete: {reason}"), "delete inside a subdirectory of the project, e.g. find build -name '*.o' -delete");
                } else if root {
                    self.refuse(
                        &c.part,
                        "find -delete from the project root can reach .git/ and .baton/",
                        "start find in a subdirectory (find src -name '*.pyc' -delete) or remove files with rm and literal paths",
                    );
                }
            }
        }
    }
}

/// Name patterns `find PROJECT -name P -delete` may remove from the project root:
/// build leftovers that git's and baton's own files never match.
pub(super) const CLEANUP_PATTERNS: &[&str] = &[
    "*.pyc",
    "*.pyo",
    "*.o",
    "*.obj",
    "*.class",
    "*.orig",
    "*.rej",
    "*.swp",
    "*~",
    ".DS_Store",
    "*.tsbuildinfo",
];

impl Checker<'_> {
    /// `tee`, `truncate`.
    pub(super) fn tee(&mut self, c: &Cmd) -> Flow {
        for a in parse_args(&c.args, "sr", &["size", "reference", "output-error"], false) {
            match a {
                Arg::Pos(w) => self.write_target(w, &c.cwd, &c.part, false),
                Arg::Unknown(w) => self.write_target(w, &c.cwd, &c.part, false),
                Arg::Opt { .. } => {}
            }
        }
        Flow::same(&c.cwd)
    }

    /// `mkdir`, `touch`.
    pub(super) fn mkdir(&mut self, c: &Cmd) -> Flow {
        for a in parse_args(
            &c.args,
            "mdtrA",
            &["mode", "date", "reference", "time", "context"],
            false,
        ) {
            match a {
                Arg::Pos(w) | Arg::Unknown(w) => self.write_target(w, &c.cwd, &c.part, true),
                Arg::Opt { .. } => {}
            }
        }
        Flow::same(&c.cwd)
    }
}
