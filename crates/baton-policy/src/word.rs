//! What a shell word can expand to, as far as it can be known before it runs.
//!
//! A word is a sequence of characters, each quoted, unquoted, or *dynamic* (a place
//! where a variable, command substitution or other expansion goes, whose value is
//! unknown). From that the checker asks: is it a plain literal? which glob patterns
//! can it expand to (brace expansion done, dynamic parts as `*`)?

/// One character of a word and how it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ch {
    /// Written inside quotes or escaped: never special.
    Quoted(char),
    /// Written bare: may be a glob or brace character.
    Bare(char),
    /// An expansion whose value is not known here.
    Dyn,
}

/// What the single dynamic part of a word is, when the word is exactly one expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dynamic {
    /// `$!`: the last background job of this command.
    LastBackground,
    /// `$(...)` or backticks; the inner source.
    Substitution(String),
    /// Anything else.
    Other,
}

/// A shell word, evaluated as far as possible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The characters.
    pub chars: Vec<Ch>,
    /// The source text, for messages.
    pub text: String,
    /// Set when the whole word is one expansion.
    pub only: Option<Dynamic>,
    /// Some part is a double-quoted or single-quoted string (so it is one field).
    pub quoted_dyn_only: bool,
}

impl Word {
    /// A word that is exactly `s`, quoted.
    pub fn quoted(s: &str) -> Self {
        Word {
            chars: s.chars().map(Ch::Quoted).collect(),
            text: s.to_string(),
            only: None,
            quoted_dyn_only: true,
        }
    }

    /// The value, if the word is a plain literal: nothing dynamic, no glob or brace
    /// expansion.
    pub fn literal(&self) -> Option<String> {
        let mut out = String::with_capacity(self.chars.len());
        for c in &self.chars {
            match *c {
                Ch::Quoted(c) => out.push(c),
                Ch::Bare(c) if is_glob(c) => return None,
                Ch::Bare(c) => out.push(c),
                Ch::Dyn => return None,
            }
        }
        if has_brace(&self.chars) {
            return None;
        }
        Some(out)
    }

    /// The value with dynamic parts and glob characters left as they are, or `None`
    /// when something dynamic is in it.
    pub fn static_text(&self) -> Option<String> {
        let mut out = String::with_capacity(self.chars.len());
        for c in &self.chars {
            match *c {
                Ch::Quoted(c) | Ch::Bare(c) => out.push(c),
                Ch::Dyn => return None,
            }
        }
        Some(out)
    }

    /// Whether any part is dynamic.
    pub fn is_dynamic(&self) -> bool {
        self.chars.contains(&Ch::Dyn)
    }

    /// Whether the word starts with a dynamic part.
    pub fn starts_dynamic(&self) -> bool {
        self.chars.first() == Some(&Ch::Dyn)
    }

    /// Whether the word may expand to several words or to a file-name match.
    pub fn expands(&self) -> bool {
        self.chars
            .iter()
            .any(|c| matches!(c, Ch::Bare(c) if is_glob(*c)))
            || has_brace(&self.chars)
    }

    /// The glob patterns the word can expand to (brace expansion done, then the
    /// tilde expansion bash does on each word it made, with `home` for `~`; dynamic
    /// parts as `*`), in the syntax of [`glob_match`]: every word bash makes of it, or,
    /// for long brace expansions, patterns covering plain-name members (see
    /// [`crate::braces`]). `None` when it cannot be judged: the checker refuses
    /// every such word ([`crate::braces::braces`] tells it why).
    pub fn patterns(&self, home: Option<&std::path::Path>) -> Option<Vec<String>> {
        let home = home.map(|h| h.to_string_lossy());
        crate::braces::braces(&self.chars, home.as_deref()).patterns
    }

    /// Whether the word, as the literal prefix before any dynamic part, starts with
    /// `prefix` (e.g. `-` for an option).
    pub fn may_start_with(&self, prefix: char) -> bool {
        match self.chars.first() {
            None => false,
            Some(Ch::Dyn) => true,
            Some(Ch::Quoted(c)) | Some(Ch::Bare(c)) => *c == prefix,
        }
    }
}

fn is_glob(c: char) -> bool {
    matches!(c, '*' | '?' | '[')
}

/// Whether bare braces form a brace expansion (`{a,b}` or `{1..3}`).
fn has_brace(chars: &[Ch]) -> bool {
    crate::braces::has_brace(chars)
}

/// Most words one brace expansion in a command may produce when bash runs it:
/// `{1..99999999}` would make bash itself run out of memory.
pub(crate) const MAX_BRACE_WORDS: u64 = 100_000;

/// Whether a pattern contains an unescaped glob character.
pub(crate) fn pattern_has_glob(p: &str) -> bool {
    let mut esc = false;
    for c in p.chars() {
        if esc {
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else if matches!(c, '*' | '?' | '[') {
            return true;
        }
    }
    false
}

/// A literal path as a pattern (glob characters escaped).
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A pattern with its escapes removed (for a pattern without glob characters).
pub(crate) fn unescape(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut esc = false;
    for c in p.chars() {
        if esc {
            out.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether the glob `pattern` (one path component: `*`, `?`, `[...]`, `\x`) matches
/// `name`. `*` and `?` match a leading dot too (as with `dotglob`): the checker
/// assumes the widest reading.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    match_from(&p, &n)
}

fn match_from(p: &[char], n: &[char]) -> bool {
    let Some(&first) = p.first() else {
        return n.is_empty();
    };
    match first {
        '*' => (0..=n.len()).any(|k| match_from(&p[1..], &n[k..])),
        '?' => !n.is_empty() && match_from(&p[1..], &n[1..]),
        '[' => {
            let Some(&c) = n.first() else {
                return false;
            };
            match class(&p[1..], c) {
                Some((hit, used)) => hit && match_from(&p[1 + used..], &n[1..]),
                // An unterminated class is a literal '['.
                None => c == '[' && match_from(&p[1..], &n[1..]),
            }
        }
        '\\' if p.len() > 1 => n.first() == Some(&p[1]) && match_from(&p[2..], &n[1..]),
        c => n.first() == Some(&c) && match_from(&p[1..], &n[1..]),
    }
}

/// Match `c` against a class body starting after `[`; returns (matched, chars used
/// including the closing `]`).
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 0;
    let negate = matches!(p.first(), Some('!') | Some('^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < p.len() {
        let x = p[i];
        if x == ']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            if x <= c && c <= p[i + 2] {
                hit = true;
            }
            i += 3;
        } else {
            if x == c {
                hit = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bare(s: &str) -> Word {
        Word {
            chars: s.chars().map(Ch::Bare).collect(),
            text: s.into(),
            only: None,
            quoted_dyn_only: false,
        }
    }

    #[test]
    fn literal_and_patterns() {
        assert_eq!(
            bare("src/main.rs").literal().as_deref(),
            Some("src/main.rs")
        );
        assert_eq!(bare("src/*.rs").literal(), None);
        assert_eq!(bare("{a,b}").literal(), None);
        assert_eq!(
            bare(".{g,x}it").patterns(None),
            Some(vec![".git".to_string(), ".xit".to_string()])
        );
        assert_eq!(
            bare("f{1..3}").patterns(None),
            Some(vec!["f1".into(), "f2".into(), "f3".into()])
        );
        assert_eq!(bare("{}").literal().as_deref(), Some("{}"));
        assert_eq!(Word::quoted("*").literal().as_deref(), Some("*"));
        assert_eq!(
            Word::quoted("*").patterns(None),
            Some(vec!["\\*".to_string()])
        );
    }

    #[test]
    fn globs() {
        assert!(glob_match(".s*", ".ssh"));
        assert!(glob_match("*", ".git"));
        assert!(glob_match(".[gh]it", ".git"));
        assert!(glob_match("[!a]it", "bit"));
        assert!(!glob_match("\\*", ".git"));
        assert!(glob_match("?git", ".git"));
        assert!(!glob_match("src", ".git"));
    }
}
