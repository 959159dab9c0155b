//! Programs that can change the machine as well as report on it: `date`, `hostname`.

use super::*;

impl Checker<'_> {
    /// `date`.
    pub(super) fn date(&mut self, c: &Cmd) -> Flow {
        for a in parse_args(&c.args, "dfrI", &["date", "file", "reference"], false) {
            match a {
                Arg::Opt { name, .. } if name == "-s" || name == "--set" => self.refuse(
                    &c.part,
                    "date -s sets the system clock",
                    "print dates with date or date +FORMAT",
                ),
                Arg::Pos(w) if w.literal().is_some_and(|l| !l.starts_with('+')) => self.refuse(
                    &c.part,
                    "a date operand without + sets the system clock",
                    "print dates with date +FORMAT",
                ),
                Arg::Unknown(w) | Arg::Pos(w) if w.literal().is_none() => self.refuse(
                    &c.part,
                    "a computed date operand could set the system clock",
                    "write the +FORMAT literally",
                ),
                _ => {}
            }
        }
        Flow::same(&c.cwd)
    }

    /// `hostname`.
    pub(super) fn hostname(&mut self, c: &Cmd) -> Flow {
        for a in parse_args(&c.args, "F", &["file"], false) {
            match a {
                Arg::Opt { name, .. }
                    if !matches!(
                        name.as_str(),
                        "-f" | "-s" | "-i" | "-I" | "-d" | "-A" | "--fqdn" | "--short"
                    ) =>
                {
                    self.refuse(
                        &c.part,
                        "hostname with this option changes the machine's name",
                        "print it with hostname or hostname -f",
                    )
                }
                Arg::Pos(_) | Arg::Unknown(_) => self.refuse(
                    &c.part,
                    "hostname NAME changes the machine's name",
                    "print it with hostname",
                ),
                _ => {}
            }
        }
        Flow::same(&c.cwd)
    }
}
