//! Validators of archivers and copiers that can write anywhere or run programs:
//! `tar`, `zip`, `rsync`.

use super::*;

impl Checker<'_> {
    pub(super) fn tar(&mut self, c: &Cmd) {
        let mut args = c.args.clone();
        if let Some(first) = args.first().and_then(|w| w.literal())
            && !first.starts_with('-')
            && first.chars().all(|c| c.is_ascii_alphabetic())
        {
            args[0] = Word::quoted(&format!("-{first}"));
        }
        let parsed = parse_args(
            &args,
            "fCTXbgHIKLNVF",
            &[
                "file",
                "directory",
                "files-from",
                "exclude-from",
                "blocking-factor",
                "listed-incremental",
                "format",
                "use-compress-program",
                "starting-file",
                "tape-length",
                "newer",
                "label",
                "info-script",
                "new-volume-script",
                "to-command",
                "checkpoint-action",
                "rsh-command",
                "rmt-command",
                "index-file",
                "transform",
                "xform",
                "exclude",
                "owner",
                "group",
                "mode",
                "mtime",
                "strip-components",
                "suffix",
                "volno-file",
                "checkpoint",
                "backup",
                "occurrence",
            ],
            false,
        );
        let mut create = false;
        let mut extract = false;
        let mut file: Option<Word> = None;
        let mut dir: Option<Word> = None;
        let mut members: Vec<&Word> = Vec::new();
        for a in &parsed {
            match a {
                Arg::Opt { name, value } => match name.as_str() {
                    "-c" | "--create" | "-r" | "--append" | "-u" | "--update" => create = true,
                    "-x" | "--extract" | "--get" => extract = true,
                    "-f" | "--file" => file = value.as_ref().map(|v| v.word()),
                    "-C" | "--directory" => dir = value.as_ref().map(|v| v.word()),
                    "-I"
                    | "--use-compress-program"
                    | "--to-command"
                    | "--checkpoint-action"
                    | "-F"
                    | "--info-script"
                    | "--new-volume-script"
                    | "--rsh-command"
                    | "--rmt-command" => {
                        self.refuse(
                            &c.part,
                            format!("tar {name} runs another program"),
                            "use tar -czf / -xzf with its built-in compression (z, j, J)",
                        );
                    }
                    "-P" | "--absolute-names" => self.refuse(
                        &c.part,
                        "tar -P writes members to absolute paths",
                        "extract without -P (into the project)",
                    ),
                    "--index-file" => {
                        if let Some(v) = value {
                            self.write_target(&v.word(), &c.cwd, &c.part, false);
                        }
                    }
                    _ => {}
                },
                Arg::Pos(w) => members.push(w),
                Arg::Unknown(w) => self.unknown_option(c, w),
            }
        }
        if let Some(f) = &file
            && let Some(l) = f.literal()
            && l.split('/').next().is_some_and(|h| h.contains(':'))
        {
            self.refuse(
                &c.part,
                "tar -f HOST:FILE uses a remote shell",
                "use a local archive file",
            );
        }
        if create
            && let Some(f) = &file
            && f.literal().as_deref() != Some("-")
        {
            self.write_target(f, &c.cwd, &c.part, false);
        }
        if create {
            for m in members {
                if let Some(what) = self.secret_in(m, &c.cwd, true) {
                    self.refuse(
                        &c.part,
                        format!("archiving {} reaches {what}", m.text),
                        "archive files of the project",
                    );
                }
            }
        }
        if extract {
            let target = dir.unwrap_or_else(|| Word::quoted("."));
            self.write_target(&target, &c.cwd, &c.part, true);
        }
    }

    pub(super) fn zip(&mut self, c: &Cmd) {
        if c.name == "unzip" {
            let parsed = parse_args(&c.args, "dxP", &[], false);
            let mut dir = Word::quoted(".");
            for a in parsed {
                if let Arg::Opt {
                    name,
                    value: Some(v),
                } = a
                    && name == "-d"
                {
                    dir = v.word();
                }
            }
            self.write_target(&dir, &c.cwd, &c.part, true);
            return;
        }
        let parsed = parse_args(
            &c.args,
            "bnPtxiOIZ",
            &[
                "unzip-command",
                "temp-path",
                "password",
                "suffixes",
                "exclude",
                "include",
                "output-file",
                "compression-method",
            ],
            false,
        );
        let mut archive = None;
        for a in &parsed {
            match a {
                Arg::Opt { name, .. } if name == "--unzip-command" || name == "-TT" => {
                    self.refuse(
                        &c.part,
                        "zip --unzip-command runs another program",
                        "use zip without it",
                    );
                }
                Arg::Opt {
                    name,
                    value: Some(v),
                } if name == "-O" || name == "--output-file" => {
                    self.write_target(&v.word(), &c.cwd, &c.part, false)
                }
                Arg::Pos(w) => {
                    if archive.is_none() {
                        archive = Some(*w);
                        self.write_target(w, &c.cwd, &c.part, false);
                    } else if let Some(what) = self.secret_in(w, &c.cwd, true) {
                        self.refuse(
                            &c.part,
                            format!("zipping {} reaches {what}", w.text),
                            "zip files of the project",
                        );
                    }
                }
                Arg::Unknown(w) => self.unknown_option(c, w),
                _ => {}
            }
        }
        // -TT is parsed as -T -T; a literal -TT/--unzip-command anywhere is refused.
        if c.args.iter().any(|w| {
            w.literal().is_some_and(|l| {
                l.starts_with("-TT")
                    || (l.starts_with('-') && !l.starts_with("--") && l.matches('T').count() > 1)
            })
        }) {
            self.refuse(
                &c.part,
                "zip -TT runs another program to test the archive",
                "use zip without -TT",
            );
        }
    }

    pub(super) fn rsync(&mut self, c: &Cmd) {
        let parsed = parse_args(
            &c.args,
            "eBTM",
            &[
                "rsh",
                "rsync-path",
                "exclude",
                "include",
                "exclude-from",
                "include-from",
                "files-from",
                "filter",
                "temp-dir",
                "partial-dir",
                "compare-dest",
                "copy-dest",
                "link-dest",
                "backup-dir",
                "suffix",
                "chmod",
                "chown",
                "usermap",
                "groupmap",
                "log-file",
                "password-file",
                "block-size",
                "timeout",
                "contimeout",
                "port",
                "bwlimit",
                "max-size",
                "min-size",
                "remote-option",
            ],
            false,
        );
        let mut ops: Vec<&Word> = Vec::new();
        for a in &parsed {
            match a {
                Arg::Opt { name, .. }
                    if matches!(
                        name.as_str(),
                        "-e" | "--rsh" | "--rsync-path" | "-M" | "--remote-option"
                    ) =>
                {
                    self.refuse(
                        &c.part,
                        format!("rsync {name} runs another program"),
                        "copy locally with rsync -a SRC DEST or cp -r",
                    );
                }
                Arg::Opt {
                    name,
                    value: Some(v),
                } if name == "--log-file" || name == "--temp-dir" || name == "--backup-dir" => {
                    self.write_target(&v.word(), &c.cwd, &c.part, false)
                }
                Arg::Pos(w) => ops.push(w),
                Arg::Unknown(w) => self.unknown_option(c, w),
                _ => {}
            }
        }
        for w in &ops {
            let remote = w.literal().is_none_or(|l| {
                l.split('/').next().is_some_and(|h| h.contains(':')) || l.starts_with("rsync://")
            });
            if remote {
                self.refuse(
                    &c.part,
                    format!("rsync to or from {} uses a remote shell or daemon", w.text),
                    "copy between local directories",
                );
            }
        }
        if let Some((dest, srcs)) = ops.split_last() {
            self.write_target(dest, &c.cwd, &c.part, false);
            for s in srcs {
                if let Some(what) = self.secret_in(s, &c.cwd, true) {
                    self.refuse(
                        &c.part,
                        format!("copying {} reaches {what}", s.text),
                        "copy files of the project",
                    );
                }
            }
        }
    }
}
