//! Programs that run another program: `xargs`, `env`, `nohup`, `nice`, `timeout`,
//! `stdbuf`, `time`. Their own options are split off with [`split_options`]; the
//! program they run is then checked as a command of its own.

use super::args::split_options;
use super::*;

impl Checker<'_> {
    /// Run the rest of a wrapper's arguments as a command (xargs, env, timeout …).
    pub(super) fn wrapped(&mut self, c: &Cmd, rest: &[Word], extra_input: bool) -> Flow {
        let Some(first) = rest.first() else {
            return Flow::same(&c.cwd);
        };
        let Some(name) = first.literal() else {
            self.refuse(
                &c.part,
                format!(
                    "{} runs a program whose name is computed when the command runs",
                    c.name
                ),
                "write the wrapped program's name literally",
            );
            return Flow::same(&c.cwd);
        };
        let mut args: Vec<Word> = rest[1..].to_vec();
        if extra_input {
            args.push(Word {
                chars: vec![Ch::Dyn],
                text: format!("(arguments {} reads from its input)", c.name),
                only: Some(Dynamic::Other),
                quoted_dyn_only: false,
            });
        }
        let inner = Cmd {
            name,
            args,
            cwd: c.cwd.clone(),
            part: c.part.clone(),
        };
        self.run(&inner);
        Flow::same(&c.cwd)
    }

    /// `xargs`: its command gets more arguments from the input, computed.
    pub(super) fn xargs(&mut self, c: &Cmd) -> Flow {
        const LONG_VAL: &[&str] = &[
            "max-args",
            "max-lines",
            "max-procs",
            "delimiter",
            "arg-file",
            "max-chars",
            "eof",
            "process-slot-var",
        ];
        match split_options(&c.args, "InLPsdEa", LONG_VAL) {
            Err(_) => {
                self.refuse(
                    &c.part,
                    "xargs with a computed option or command cannot be checked",
                    "write xargs and its command literally",
                );
                Flow::same(&c.cwd)
            }
            Ok((_, at)) if at >= c.args.len() => Flow::same(&c.cwd),
            Ok((_, at)) => self.wrapped(c, &c.args[at..], true),
        }
    }

    /// `env`: options, then `NAME=VALUE` assignments, then the command.
    pub(super) fn env(&mut self, c: &Cmd) -> Flow {
        let same = Flow::same(&c.cwd);
        let computed = |k: &mut Self| {
            k.refuse(
                &c.part,
                "env with a computed argument cannot be checked",
                "write env's arguments literally",
            );
        };
        let (opts, mut at) =
            match split_options(&c.args, "uSC", &["unset", "split-string", "chdir"]) {
                Ok(split) => split,
                Err(_) => {
                    computed(self);
                    return same;
                }
            };
        if opts.iter().any(|a| {
            matches!(a, Arg::Opt { name, .. }
                if matches!(name.as_str(), "-S" | "-C" | "--split-string" | "--chdir"))
        }) {
            self.refuse(
                &c.part,
                "env -S and -C run a command string or move it elsewhere",
                "write the command directly after env",
            );
            return same;
        }
        while let Some(w) = c.args.get(at) {
            let Some(l) = w.literal() else {
                computed(self);
                return same;
            };
            let Some((n, v)) = l.split_once('=') else {
                break;
            };
            self.assigned_var(n, Some(&Word::quoted(v)), &c.part);
            at += 1;
        }
        self.wrapped(c, &c.args[at..], false)
    }

    /// `nice`, `timeout`, `stdbuf`, `time`: options, then the command (after
    /// timeout's duration).
    pub(super) fn nice(&mut self, c: &Cmd) -> Flow {
        let (short, long): (&str, &[&str]) = match c.name.as_str() {
            "nice" => ("n", &["adjustment"]),
            "timeout" => ("sk", &["signal", "kill-after"]),
            "stdbuf" => ("ioe", &["input", "output", "error"]),
            _ => ("fo", &["format", "output"]),
        };
        let (opts, at) = match split_options(&c.args, short, long) {
            Ok(split) => split,
            Err(_) => {
                self.refuse(
                    &c.part,
                    format!("{} with a computed option cannot be checked", c.name),
                    DYN_ARG_NOTE,
                );
                return Flow::same(&c.cwd);
            }
        };
        for a in &opts {
            if let Arg::Opt {
                name,
                value: Some(v),
            } = a
                && c.name == "time"
                && (name == "-o" || name == "--output")
            {
                self.write_target(&v.word(), &c.cwd, &c.part, false);
            }
        }
        let at = at + usize::from(c.name == "timeout");
        if at >= c.args.len() {
            return Flow::same(&c.cwd);
        }
        self.wrapped(c, &c.args[at..], false)
    }
}
