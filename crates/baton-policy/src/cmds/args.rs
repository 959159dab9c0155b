//! Arguments as a program's option parser sees them: options (with their values,
//! inline or in the next word), operands, and computed words that may be options.

use crate::word::Word;

/// One argument, as a program's option parser would see it.
#[derive(Debug)]
pub(crate) enum Arg<'w> {
    /// An option (`-f`, `--force`), with its value if it takes one.
    Opt {
        name: String,
        value: Option<Value<'w>>,
    },
    /// An operand.
    Pos(&'w Word),
    /// A computed word that may be an option.
    Unknown(&'w Word),
}

/// The value of an option: written inline (`--x=v`, `-ov`) or as the next word.
#[derive(Debug)]
pub(crate) enum Value<'w> {
    Inline(String),
    Next(&'w Word),
}

impl Value<'_> {
    pub fn word(&self) -> Word {
        match self {
            Value::Inline(s) => Word::quoted(s),
            Value::Next(w) => (*w).clone(),
        }
    }
    pub fn literal(&self) -> Option<String> {
        match self {
            Value::Inline(s) => Some(s.clone()),
            Value::Next(w) => w.literal(),
        }
    }
}

/// Split `args` into options and operands. `short_val` lists the short options that
/// take a value; `long_val` the long ones. With `stop`, the first operand ends the
/// options (everything after it is an operand).
pub(crate) fn parse_args<'w>(
    args: &'w [Word],
    short_val: &str,
    long_val: &[&str],
    stop: bool,
) -> Vec<Arg<'w>> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut only_pos = false;
    while i < args.len() {
        let w = &args[i];
        i += 1;
        if only_pos {
            out.push(Arg::Pos(w));
            continue;
        }
        let Some(l) = w.literal() else {
            if w.may_start_with('-') {
                out.push(Arg::Unknown(w));
            } else {
                out.push(Arg::Pos(w));
                only_pos |= stop;
            }
            continue;
        };
        if l == "--" {
            only_pos = true;
            continue;
        }
        if let Some(long) = l.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (long.to_string(), None),
            };
            let value = match inline {
                Some(v) => Some(Value::Inline(v)),
                None if long_val.contains(&name.as_str()) => {
                    let v = args.get(i).map(Value::Next);
                    i += 1;
                    v
                }
                None => None,
            };
            out.push(Arg::Opt {
                name: format!("--{name}"),
                value,
            });
            continue;
        }
        if l.len() > 1 && l.starts_with('-') {
            let chars: Vec<char> = l[1..].chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                if short_val.contains(c) {
                    let rest: String = chars[k + 1..].iter().collect();
                    let value = if rest.is_empty() {
                        let v = args.get(i).map(Value::Next);
                        i += 1;
                        v
                    } else {
                        Some(Value::Inline(rest))
                    };
                    out.push(Arg::Opt {
                        name: format!("-{c}"),
                        value,
                    });
                    break;
                }
                out.push(Arg::Opt {
                    name: format!("-{c}"),
                    value: None,
                });
                k += 1;
            }
            continue;
        }
        out.push(Arg::Pos(w));
        only_pos |= stop;
    }
    out
}

/// A wrapper's own options, and the index in `args` of its first operand, where the
/// command it runs starts (`args.len()` when there is none). `short_val` and
/// `long_val` are the options that take a value. `Err` is a computed word where an
/// option may stand, which cannot be checked.
pub(crate) fn split_options<'w>(
    args: &'w [Word],
    short_val: &str,
    long_val: &[&str],
) -> Result<(Vec<Arg<'w>>, usize), &'w Word> {
    let mut opts = Vec::new();
    for a in parse_args(args, short_val, long_val, true) {
        match a {
            Arg::Pos(w) => {
                let at = args
                    .iter()
                    .position(|x| std::ptr::eq(x, w))
                    .unwrap_or(args.len());
                return Ok((opts, at));
            }
            Arg::Unknown(w) => return Err(w),
            opt @ Arg::Opt { .. } => opts.push(opt),
        }
    }
    Ok((opts, args.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace().map(Word::quoted).collect()
    }

    #[test]
    fn the_command_starts_after_the_options_and_their_values() {
        let long = ["max-args", "delimiter"];
        for (line, at) in [
            ("-0 -n 1 rm x", 3),
            ("-0n 1 rm x", 2),
            ("-n1 rm", 1),
            ("--max-args=2 rm", 1),
            ("--delimiter , rm", 2),
            ("-- -rm", 1),
            ("- x", 0),
            ("-0", 1),
        ] {
            let w = words(line);
            let Ok((_, got)) = split_options(&w, "nd", &long) else {
                panic!("{line}: refused");
            };
            assert_eq!(got, at, "{line}");
        }
    }
}
