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

/// Most alternatives a brace expansion may produce before the word is treated as unknown.
const MAX_EXPANSIONS: usize = 64;

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

    /// The glob patterns the word can expand to (brace expansion done, dynamic parts
    /// as `*`), in the syntax of [`glob_match`]. `None` when there are too many.
    pub fn patterns(&self) -> Option<Vec<String>> {
        let mut alts = Vec::new();
        brace_expand(&self.chars, &mut alts)?;
        Some(alts.iter().map(|a| to_pattern(a)).collect())
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
    find_brace(chars).is_some()
}

/// The first brace expansion: (open index, close index, comma positions at depth 1).
fn find_brace(chars: &[Ch]) -> Option<(usize, usize, Vec<usize>)> {
    for (i, c) in chars.iter().enumerate() {
        if *c != Ch::Bare('{') {
            continue;
        }
        let mut depth = 0usize;
        let mut commas = Vec::new();
        let mut dots = false;
        for (j, d) in chars.iter().enumerate().skip(i) {
            match d {
                Ch::Bare('{') => depth += 1,
                Ch::Bare('}') => {
                    depth -= 1;
                    if depth == 0 {
                        if !commas.is_empty() || dots {
                            return Some((i, j, commas));
                        }
                        break;
                    }
                }
                Ch::Bare(',') if depth == 1 => commas.push(j),
                Ch::Bare('.')
                    if depth == 1 && chars.get(j + 1) == Some(&Ch::Bare('.')) && j > i + 1 =>
                {
                    dots = true
                }
                _ => {}
            }
        }
    }
    None
}

fn brace_expand(chars: &[Ch], out: &mut Vec<Vec<Ch>>) -> Option<()> {
    if out.len() > MAX_EXPANSIONS {
        return None;
    }
    let Some((open, close, commas)) = find_brace(chars) else {
        out.push(chars.to_vec());
        return Some(());
    };
    let prefix = &chars[..open];
    let suffix = &chars[close + 1..];
    let mut alternatives: Vec<Vec<Ch>> = Vec::new();
    if commas.is_empty() {
        // A sequence {a..b}: expand simple numeric and single-letter ranges;
        // anything else is kept unexpanded (treated as unknown below).
        let inner: String = chars[open + 1..close]
            .iter()
            .map(|c| match c {
                Ch::Quoted(c) | Ch::Bare(c) => *c,
                Ch::Dyn => '\u{0}',
            })
            .collect();
        let parts: Vec<&str> = inner.split("..").collect();
        if parts.len() < 2 || parts.len() > 3 {
            return None;
        }
        if let (Ok(a), Ok(b)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
            if a.abs_diff(b) > MAX_EXPANSIONS as u64 {
                return None;
            }
            let (lo, hi) = (a.min(b), a.max(b));
            for n in lo..=hi {
                alternatives.push(n.to_string().chars().map(Ch::Quoted).collect());
            }
        } else {
            let (a, b) = (parts[0], parts[1]);
            let (Some(a), Some(b)) = (single(a), single(b)) else {
                return None;
            };
            let (lo, hi) = (a.min(b), a.max(b));
            for c in lo..=hi {
                alternatives.push(vec![Ch::Quoted(c)]);
            }
        }
    } else {
        let mut start = open + 1;
        for &c in commas.iter().chain(std::iter::once(&close)) {
            alternatives.push(chars[start..c].to_vec());
            start = c + 1;
        }
    }
    for alt in alternatives {
        let mut v = prefix.to_vec();
        v.extend(alt);
        v.extend_from_slice(suffix);
        brace_expand(&v, out)?;
        if out.len() > MAX_EXPANSIONS {
            return None;
        }
    }
    Some(())
}

/// Most words one brace expansion in a command may produce when bash runs it:
/// `{1..99999999}` would make bash itself run out of memory.
pub(crate) const MAX_BRACE_WORDS: u64 = 100_000;

/// How many words the numeric brace sequences of a word (`{1..10}{a..c}`) expand to
/// when bash runs it, multiplied together (saturating).
pub(crate) fn brace_words(chars: &[Ch]) -> u64 {
    let mut total: u64 = 1;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == Ch::Bare('{') {
            let close = chars[i + 1..]
                .iter()
                .position(|c| matches!(c, Ch::Bare('{') | Ch::Bare('}')))
                .map(|p| p + i + 1);
            if let Some(close) = close
                && chars[close] == Ch::Bare('}')
            {
                let inner: String = chars[i + 1..close]
                    .iter()
                    .map(|c| match c {
                        Ch::Quoted(c) | Ch::Bare(c) => *c,
                        Ch::Dyn => '\u{0}',
                    })
                    .collect();
                let parts: Vec<&str> = inner.split("..").collect();
                if (2..=3).contains(&parts.len())
                    && let (Ok(a), Ok(b)) = (parts[0].parse::<i128>(), parts[1].parse::<i128>())
                {
                    let step = parts
                        .get(2)
                        .and_then(|s| s.parse::<i128>().ok())
                        .map(|s| s.unsigned_abs().max(1))
                        .unwrap_or(1);
                    let n = a.abs_diff(b) / step + 1;
                    total = total.saturating_mul(u64::try_from(n).unwrap_or(u64::MAX));
                }
                i = close;
            }
        }
        i += 1;
    }
    total
}

fn single(s: &str) -> Option<char> {
    let mut it = s.chars();
    let c = it.next()?;
    (it.next().is_none() && c.is_ascii_alphabetic()).then_some(c)
}

fn to_pattern(chars: &[Ch]) -> String {
    let mut p = String::with_capacity(chars.len() + 4);
    for c in chars {
        match *c {
            Ch::Quoted(c) => {
                if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                    p.push('\\');
                }
                p.push(c);
            }
            Ch::Bare(c) => {
                if matches!(c, ']' | '\\' | '{' | '}') {
                    p.push('\\');
                }
                p.push(c);
            }
            Ch::Dyn => p.push('*'),
        }
    }
    p
}

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
            bare(".{g,x}it").patterns(),
            Some(vec![".git".to_string(), ".xit".to_string()])
        );
        assert_eq!(
            bare("f{1..3}").patterns(),
            Some(vec!["f1".into(), "f2".into(), "f3".into()])
        );
        assert_eq!(bare("{}").literal().as_deref(), Some("{}"));
        assert_eq!(Word::quoted("*").literal().as_deref(), Some("*"));
        assert_eq!(Word::quoted("*").patterns(), Some(vec!["\\*".to_string()]));
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
