//! The validators of process tools: `kill` (only processes this run started),
//! `pkill`/`killall`/`fuser -k` (only inside the run's PID namespace, where every
//! process is the run's own) and `ps` (never other processes' environments).

use super::*;

impl Checker<'_> {
    /// `kill PID…` of processes this run started; `pkill`/`killall` are refused,
    /// except in the run's PID namespace, where any process but its first (`kill
    /// 1`, `-1`, `0`) is one of the run's own.
    pub(super) fn kill(&mut self, c: &Cmd) {
        let name = c.name.as_str();
        let namespace = self.policy.pid_namespace();
        if name == "kill" {
            // kill [-s SIG | -n NUM | -SIG] [--] TARGET...: only the first word may
            // be a signal; every later word is a target (`kill -9 -1` is all processes).
            let mut i = 0;
            if let Some(first) = c.args.first().and_then(|w| w.literal())
                && first.starts_with('-')
                && first != "--"
            {
                if first == "-l" || first == "-L" {
                    return;
                }
                // Signal 0 sends nothing: it only asks whether the processes exist.
                let second = c.args.get(1).and_then(|w| w.literal());
                if first == "-0"
                    || ((first == "-s" || first == "-n") && second.as_deref() == Some("0"))
                {
                    return;
                }
                i = if first == "-s" || first == "-n" { 2 } else { 1 };
            }
            if c.args.get(i).and_then(|w| w.literal()).as_deref() == Some("--") {
                i += 1;
            }
            if i >= c.args.len() {
                return;
            }
            for w in &c.args[i..] {
                self.kill_target(c, w);
            }
            return;
        }
        // pkill and killall choose processes by name: any process whose command
        // line matches, including ones this run did not start (outside the run's
        // PID namespace).
        if !namespace {
            self.refuse(
                &c.part,
                format!(
                    "{name} picks processes by name, which can reach processes this run did not start; {}",
                    crate::BUBBLEWRAP_HINT
                ),
                KILL_INSTEAD,
            );
        }
    }

    /// `fuser`: lists the processes using files or ports; `-k` kills them, which
    /// only the run's PID namespace keeps to the run's own processes.
    pub(super) fn fuser(&mut self, c: &Cmd) {
        let kills = c.args.iter().any(|w| match w.literal() {
            Some(l) => {
                l == "--kill"
                    || (l.starts_with('-')
                        && !l.starts_with("--")
                        && l[1..].chars().all(|ch| ch.is_ascii_alphabetic())
                        && l.contains('k'))
            }
            None => w.may_start_with('-'),
        });
        if kills && !self.policy.pid_namespace() {
            self.refuse(
                &c.part,
                format!(
                    "fuser -k kills every process using the file or port, including ones this run did not start; {}",
                    crate::BUBBLEWRAP_HINT
                ),
                KILL_INSTEAD,
            );
        }
    }

    pub(super) fn kill_target(&mut self, c: &Cmd, w: &Word) {
        let instead = KILL_INSTEAD;
        if let Some(l) = w.literal() {
            if l.starts_with('%') {
                return;
            }
            if let Some(sig) = l.strip_prefix('-')
                && sig.chars().all(|c| c.is_ascii_alphanumeric())
                && !sig.chars().all(|c| c.is_ascii_digit())
            {
                return;
            }
            let namespace = self.policy.pid_namespace();
            match l.parse::<i64>() {
                Ok(p) if p > 1 => {
                    if !namespace && !self.pid_ok(p as u32, false) {
                        self.refuse(
                            &c.part,
                            format!(
                                "process {p} was not started in this run; {}",
                                crate::BUBBLEWRAP_HINT
                            ),
                            instead,
                        );
                    }
                }
                Ok(p) if p < -1 => {
                    if !namespace && !self.pid_ok((-p) as u32, true) {
                        self.refuse(
                            &c.part,
                            format!(
                                "process group {} was not started in this run; {}",
                                -p,
                                crate::BUBBLEWRAP_HINT
                            ),
                            instead,
                        );
                    }
                }
                Ok(p) => {
                    self.refuse(
                        &c.part,
                        format!("kill {p} signals every process, this shell's group, or init (in the run's PID namespace: every process of the run, or the namespace itself)"),
                        instead,
                    );
                }
                Err(_) => {
                    self.refuse(&c.part, format!("kill {l}: not a process id"), instead);
                }
            }
            return;
        }
        match &w.only {
            Some(Dynamic::LastBackground) => {}
            Some(Dynamic::Substitution(inner)) if self.pid_source_ok(inner, &c.cwd) => {}
            // `kill $(lsof -t -i:3000)`, `kill $(cat server.pid)`: in the run's PID
            // namespace every pid names a process of the run.
            _ if self.policy.pid_namespace() => {}
            _ => self.refuse(
                &c.part,
                format!(
                    "baton cannot tell which processes {} names; {}",
                    w.text,
                    crate::BUBBLEWRAP_HINT
                ),
                instead,
            ),
        }
    }

    /// Whether `pid` (or the group `pid`) belongs to this run: a process group the
    /// tools' [`baton_tools::ProcessRegistry`] owns. Names and command lines are never
    /// enough.
    pub(super) fn pid_ok(&self, pid: u32, group: bool) -> bool {
        // The pid as baton knows it (the commands may see another, inside their
        // PID namespace).
        let pid = match &self.policy.launcher {
            Some(l) => match l.host_pid(pid) {
                Some(p) => p,
                None => return false,
            },
            None => pid,
        };
        self.policy.processes.as_ref().is_some_and(|reg| {
            let alive = reg.alive();
            if group {
                return alive.contains(&(pid as i32));
            }
            process_group(pid).is_some_and(|g| alive.contains(&g))
        })
    }

    /// `$(jobs -p)`: the jobs of this very shell. Nothing else computes pids baton
    /// can trust: `pgrep`/`pidof`/`lsof` match names and ports of any process, and a
    /// pid file can be rewritten by the command before `kill` reads it.
    pub(super) fn pid_source_ok(&self, inner: &str, _cwd: &Cwd) -> bool {
        let Some(words) = simple_words(inner) else {
            return false;
        };
        let Some((prog, args)) = words.split_first() else {
            return false;
        };
        prog == "jobs" && args.iter().all(|a| a.starts_with('-'))
    }
}

pub(super) fn process_group(pid: u32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// What to do instead of a refused `kill`.
pub(super) const KILL_INSTEAD: &str = "stop only processes this run started: kill $! or kill %1 right after starting one, kill $(jobs -p), or kill PID / kill -TERM -PID with the number the Bash tool printed for a run_in_background command; servers started in the background are stopped when the session ends";

impl Checker<'_> {
    /// `ps`: the `e` (BSD) and `-E`/environment output options print other
    /// processes' environments, which hold API keys.
    pub(super) fn ps(&mut self, c: &Cmd) {
        let mut value_next = false;
        let mut format_next = false;
        for w in &c.args {
            if std::mem::take(&mut value_next) {
                // The value of -o/-p/-u/…: a format or a list, not options.
                if w.literal()
                    .is_some_and(|l| l.to_ascii_lowercase().contains("env"))
                    || (w.literal().is_none() && format_next)
                {
                    self.refuse(
                        &c.part,
                        "this ps format could show other processes' environments, which hold credentials",
                        "list processes without environments: ps aux, ps -ef, ps -o pid,user,args",
                    );
                }
                continue;
            }
            if let Some(l) = w.literal() {
                format_next = matches!(l.as_str(), "-o" | "-O" | "--format")
                    || (!l.starts_with('-')
                        && l.chars().all(|ch| ch.is_ascii_alphabetic())
                        && l.ends_with(['o', 'O']));
                value_next = matches!(
                    l.as_str(),
                    "-o" | "-O"
                        | "-p"
                        | "-u"
                        | "-U"
                        | "-C"
                        | "-G"
                        | "-g"
                        | "-t"
                        | "-s"
                        | "-q"
                        | "--format"
                        | "--pid"
                        | "--user"
                        | "--sort"
                        | "--ppid"
                        | "--sid"
                        | "--cols"
                        | "--columns"
                        | "--rows"
                        | "--width"
                ) || (!l.starts_with('-')
                    && l.chars().all(|ch| ch.is_ascii_alphabetic())
                    && l.ends_with(['o', 'O', 'p', 'U', 't', 'k']));
            }
            let Some(l) = w.literal() else {
                self.refuse(
                    &c.part,
                    "ps with a computed option could print other processes' environments",
                    "write ps's options literally: ps aux, ps -ef",
                );
                continue;
            };
            let bsd = !l.starts_with('-') && l.chars().all(|ch| ch.is_ascii_alphabetic());
            let env_out = (bsd && l.contains('e'))
                || (l.starts_with('-') && !l.starts_with("--") && l.contains('E'))
                || l.to_ascii_lowercase().contains("env");
            if env_out {
                self.refuse(
                    &c.part,
                    "this ps option shows other processes' environments, which hold credentials",
                    "list processes without environments: ps aux, ps -ef, pgrep -a NAME",
                );
            }
        }
    }
}
