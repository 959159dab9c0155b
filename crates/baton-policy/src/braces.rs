//! Brace expansion as bash performs it (`braces.c`: `brace_expand`,
//! `brace_gobbler`, `expand_seqterm`), on the characters of a word.
//!
//! A word becomes a tree: literal characters, lists of alternatives (`{a,b}`) and
//! sequences (`{1..70}`, `{a..z..2}`). From the tree the checker takes the number
//! of words bash makes (to refuse what would exhaust memory) and the glob patterns
//! it judges: every word, one by one, up to [`MAX_PATTERNS`]. Beyond that, first the
//! sequences and then the lists whose members are plain names (letters, digits,
//! `_ . + -`, never `/`, `~`, `.` or `..`) are judged by one pattern that covers all
//! their members (`[-0-9]*` for numbers, `?` for letters, `*` for names), so every
//! member that names a path (`.git/objects`, `/proc/1/environ`) is still judged as
//! if written alone. What still makes too many words, or nests too deeply, has no
//! patterns: the checker refuses it.
//!
//! Where the characters do not tell how bash reads a brace (a comma in quotes or in
//! an expansion), both readings are kept.

use crate::word::Ch;

/// Most words of one brace expansion the checker judges one by one.
pub(crate) const MAX_PATTERNS: usize = 256;
/// Deepest nesting of brace expansions the checker reads.
const MAX_NESTING: usize = 64;
/// Most characters the brace reader scans for one word (bash's search for a
/// closing brace can scan the rest of the word from every `{`).
const MAX_SCAN: usize = 1_000_000;

/// A piece of a word after brace parsing.
#[derive(Debug, Clone)]
enum Item {
    /// One character, as written.
    Ch(Ch),
    /// `{a,b,c}`: the alternatives, each a sequence of items.
    Alts(Vec<Vec<Item>>),
    /// `{x..y[..incr]}`.
    Range(Range),
    /// A group judged by one pattern covering all its members.
    Any(&'static str),
}

/// A valid sequence expression.
#[derive(Debug, Clone, Copy)]
struct Range {
    start: i64,
    end: i64,
    step: u64,
    /// Zero-padded width of integers (0: none).
    width: usize,
    letters: bool,
}

impl Range {
    fn count(&self) -> u64 {
        let span = (i128::from(self.start) - i128::from(self.end)).unsigned_abs();
        let n = span / u128::from(self.step.max(1)) + 1;
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    fn values(&self) -> impl Iterator<Item = String> + '_ {
        let step = i128::from(self.step.max(1));
        let (a, b) = (i128::from(self.start), i128::from(self.end));
        let dir = if a <= b { 1 } else { -1 };
        let n = self.count();
        (0..n).map(move |k| {
            let v = a + dir * step * i128::from(k);
            if self.letters {
                u32::try_from(v)
                    .ok()
                    .and_then(char::from_u32)
                    .map_or_else(String::new, |c| c.to_string())
            } else if self.width > 0 {
                let digits = v.unsigned_abs().to_string();
                let sign = if v < 0 { "-" } else { "" };
                let pad = self.width.saturating_sub(digits.len() + sign.len());
                format!("{sign}{}{digits}", "0".repeat(pad))
            } else {
                v.to_string()
            }
        })
    }
}

/// What the checker knows about the brace expansions of a word.
#[derive(Debug, Clone)]
pub(crate) struct Braces {
    /// How many words bash makes of it (saturating; 1 without braces); `None` when
    /// the braces could not be read (nested too deeply, too long to scan).
    pub words: Option<u64>,
    /// The glob patterns to judge (every word, or covering patterns); `None` when
    /// the word cannot be judged (too many words even so, or nested too deeply).
    pub patterns: Option<Vec<String>>,
    /// Characters scanned to read the braces (work, for the checker's budget).
    pub scanned: usize,
}

/// The brace expansions of `chars`, for a user whose home is `home`.
pub(crate) fn braces(chars: &[Ch], home: Option<&str>) -> Braces {
    if !chars.contains(&Ch::Bare('{')) {
        return Braces {
            words: Some(1),
            patterns: Some(vec![to_pattern(chars)]),
            scanned: 0,
        };
    }
    if !has_brace(chars) {
        return Braces {
            words: Some(1),
            patterns: Some(vec![to_pattern(chars)]),
            scanned: chars.len(),
        };
    }
    let mut budget = MAX_SCAN;
    let parsed = parse(chars, 0, &mut budget);
    let scanned = MAX_SCAN - budget;
    let Some(mut items) = parsed else {
        return Braces {
            words: None,
            patterns: None,
            scanned,
        };
    };
    let words = count(&items);
    if words > MAX_PATTERNS as u64 {
        approximate(&mut items, true);
        if count(&items) > MAX_PATTERNS as u64 {
            approximate(&mut items, false);
        }
    }
    let patterns = if count(&items) <= MAX_PATTERNS as u64 {
        expand(&items)
            .iter()
            .map(|w| word_pattern(w, home))
            .collect()
    } else {
        None
    };
    Braces {
        words: Some(words),
        patterns,
        scanned,
    }
}

/// Whether `chars` may hold a brace expansion bash performs: a bare `{`, then a
/// bare `,` or `..`, then a bare `}` (bash needs all three; one pass, so callers
/// may ask often). A word for which this is true is not taken as a literal.
pub(crate) fn has_brace(chars: &[Ch]) -> bool {
    let mut stage = 0;
    for (j, c) in chars.iter().enumerate() {
        stage = match (stage, c) {
            (0, Ch::Bare('{')) => 1,
            (1, Ch::Bare(',')) => 2,
            (1, Ch::Bare('.')) if chars.get(j + 1) == Some(&Ch::Bare('.')) => 2,
            (2, Ch::Bare('}')) => return true,
            (s, _) => s,
        };
    }
    false
}

/// The first brace bash expands in the text that starts at `from`: (open, close).
/// `Some(None)`: none; `None`: it cannot be told (the scan budget ran out, or bash's
/// rule for `{}` depends on how a blank before it was quoted).
fn first_group(chars: &[Ch], from: usize, budget: &mut usize) -> Option<Option<(usize, usize)>> {
    for i in from..chars.len() {
        if chars[i] != Ch::Bare('{') {
            continue;
        }
        let Some(close) = close_of(chars, i + 1, budget)? else {
            continue;
        };
        // bash ignores `{}` at the start of the text or after a blank; a blank
        // here is quoted, and bash tells `"a "{},b}` (expanded) from `a\ {},b}`
        // (not) by the raw text, which the characters no longer show.
        if chars.get(i + 1) == Some(&Ch::Bare('}')) {
            if i == from {
                continue;
            }
            if matches!(chars[i - 1], Ch::Quoted(' ' | '\t' | '\n')) {
                return None;
            }
        }
        return Some(Some((i, close)));
    }
    Some(None)
}

/// bash's `brace_gobbler(text, i, '}')`: the `}` that closes a brace whose text
/// starts at `start`, if the brace is an expansion (a comma or `..` at its own
/// level before it). A `}` at that level before any comma does not close it.
/// `None`: the scan budget ran out.
fn close_of(chars: &[Ch], start: usize, budget: &mut usize) -> Option<Option<usize>> {
    let mut level = 0usize;
    let mut commas = 0usize;
    for j in start..chars.len() {
        *budget = budget.checked_sub(1)?;
        match chars[j] {
            Ch::Bare('}') if level == 0 && commas > 0 => return Some(Some(j)),
            Ch::Bare('{') => level += 1,
            Ch::Bare('}') if level > 0 => level -= 1,
            Ch::Bare(',') if level == 0 => commas += 1,
            Ch::Bare('.')
                if level == 0
                    && chars.get(j + 1) == Some(&Ch::Bare('.'))
                    && chars.get(j + 2) != Some(&Ch::Bare('}')) =>
            {
                commas += 1
            }
            _ => {}
        }
    }
    Some(None)
}

/// bash's `brace_expand`: the preamble (literal), the first brace expansion, then
/// the rest read on its own.
fn parse(chars: &[Ch], depth: usize, budget: &mut usize) -> Option<Vec<Item>> {
    if depth > MAX_NESTING {
        return None;
    }
    let mut items = Vec::new();
    let mut pos = 0;
    loop {
        let Some((open, close)) = first_group(chars, pos, budget)? else {
            items.extend(chars[pos..].iter().map(|c| Item::Ch(*c)));
            return Some(items);
        };
        items.extend(chars[pos..open].iter().map(|c| Item::Ch(*c)));
        let amble = &chars[open + 1..close];
        let literal = || chars[open..=close].iter().map(|c| Item::Ch(*c)).collect();
        let bare_comma = amble.contains(&Ch::Bare(','));
        // bash looks for a comma in the raw text: one in quotes or inside an
        // expansion counts, an escaped one does not; the characters do not tell
        // these apart, so both readings are kept.
        let unsure = !bare_comma && amble.iter().any(|c| matches!(c, Ch::Quoted(',') | Ch::Dyn));
        if bare_comma || unsure {
            let mut alts = Vec::new();
            for part in split_commas(amble) {
                alts.push(parse(part, depth + 1, budget)?);
            }
            if unsure {
                alts.push(literal());
            }
            items.push(Item::Alts(alts));
        } else {
            match seqterm(amble) {
                Some(r) => items.push(Item::Range(r)),
                // Not a sequence: the brace stays as written (its inside is not
                // expanded either).
                None => items.extend(literal()),
            }
        }
        pos = close + 1;
    }
}

/// bash's `expand_amble`: the text of a brace split at its own commas.
fn split_commas(amble: &[Ch]) -> Vec<&[Ch]> {
    let mut parts = Vec::new();
    let mut level = 0usize;
    let mut start = 0;
    for (j, c) in amble.iter().enumerate() {
        match c {
            Ch::Bare('{') => level += 1,
            Ch::Bare('}') if level > 0 => level -= 1,
            Ch::Bare(',') if level == 0 => {
                parts.push(&amble[start..j]);
                start = j + 1;
            }
            _ => {}
        }
    }
    parts.push(&amble[start..]);
    parts
}

/// bash's `expand_seqterm`: `x..y[..incr]` with integers or single letters.
fn seqterm(amble: &[Ch]) -> Option<Range> {
    let text: String = amble
        .iter()
        .map(|c| match c {
            Ch::Bare(c) => Some(*c),
            _ => None,
        })
        .collect::<Option<String>>()?;
    let (lhs, rest) = text.split_once("..")?;
    if lhs.is_empty() || rest.is_empty() {
        return None;
    }
    let (rhs, incr) = match rest.split_once("..") {
        Some((r, i)) => (r, Some(i)),
        None => (rest, None),
    };
    let step = match incr {
        None => 1,
        Some(i) => number(i)?.unsigned_abs().max(1),
    };
    if let (Some(a), Some(b)) = (number(lhs), number(rhs)) {
        let padded = |s: &str| s.trim_start_matches(['-', '+']).starts_with('0') && s.len() > 1;
        let width = if padded(lhs) || padded(rhs) {
            lhs.len().max(rhs.len())
        } else {
            0
        };
        return Some(Range {
            start: a,
            end: b,
            step,
            width,
            letters: false,
        });
    }
    let letter = |s: &str| {
        let mut it = s.chars();
        match (it.next(), it.next()) {
            (Some(c), None) if c.is_ascii_alphabetic() => Some(i64::from(u32::from(c))),
            _ => None,
        }
    };
    Some(Range {
        start: letter(lhs)?,
        end: letter(rhs)?,
        step,
        width: 0,
        letters: true,
    })
}

/// An integer as bash's `legal_number` reads it (sign, digits, no overflow).
fn number(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn count(items: &[Item]) -> u64 {
    items.iter().fold(1u64, |acc, it| {
        let n = match it {
            Item::Ch(_) | Item::Any(_) => 1,
            Item::Range(r) => r.count(),
            Item::Alts(alts) => alts.iter().fold(0u64, |s, a| s.saturating_add(count(a))),
        };
        acc.saturating_mul(n)
    })
}

/// Replace sequences (`ranges`) or lists of plain names (otherwise) by one pattern
/// covering all their members.
fn approximate(items: &mut [Item], ranges: bool) {
    for it in items.iter_mut() {
        let cover = match it {
            Item::Range(r) if ranges => Some(if r.letters { "?" } else { "[-0-9]*" }),
            Item::Alts(alts) if !ranges && alts.iter().all(|a| plain_name(a)) => Some("*"),
            Item::Alts(alts) => {
                for a in alts.iter_mut() {
                    approximate(a, ranges);
                }
                None
            }
            _ => None,
        };
        if let Some(p) = cover {
            *it = Item::Any(p);
        }
    }
}

/// Whether every word `items` makes is a plain name: not empty, not `.` or `..`,
/// no `/`, `~`, quotes-only specials or unknown parts, so `*` covers it within
/// one path component.
fn plain_name(items: &[Item]) -> bool {
    let mut solid = false;
    for it in items {
        match it {
            Item::Ch(Ch::Bare(c) | Ch::Quoted(c)) => {
                if !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-')) {
                    return false;
                }
                solid |= *c != '.';
            }
            Item::Ch(Ch::Dyn) => return false,
            Item::Range(_) | Item::Any(_) => solid = true,
            Item::Alts(alts) => {
                if !alts.iter().all(|a| plain_name(a)) {
                    return false;
                }
                solid = true;
            }
        }
    }
    solid
}

/// A piece of one word made by brace expansion: a character as written, or a
/// pattern covering the members of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    C(Ch),
    P(&'static str),
}

/// Every word bash makes (covering groups as their pattern).
fn expand(items: &[Item]) -> Vec<Vec<Piece>> {
    let mut out: Vec<Vec<Piece>> = vec![Vec::new()];
    for it in items {
        match it {
            Item::Ch(c) => {
                for s in &mut out {
                    s.push(Piece::C(*c));
                }
            }
            Item::Any(p) => {
                for s in &mut out {
                    s.push(Piece::P(p));
                }
            }
            Item::Range(r) => {
                let vals: Vec<Vec<Piece>> = r
                    .values()
                    .map(|v| v.chars().map(|c| Piece::C(Ch::Quoted(c))).collect())
                    .collect();
                out = cross(&out, &vals);
            }
            Item::Alts(alts) => {
                let vals: Vec<Vec<Piece>> = alts.iter().flat_map(|a| expand(a)).collect();
                out = cross(&out, &vals);
            }
        }
    }
    out
}

fn cross(heads: &[Vec<Piece>], tails: &[Vec<Piece>]) -> Vec<Vec<Piece>> {
    let mut out = Vec::with_capacity(heads.len() * tails.len());
    for h in heads {
        for t in tails {
            let mut w = h.clone();
            w.extend_from_slice(t);
            out.push(w);
        }
    }
    out
}

/// One word as a pattern. bash expands a bare `~` at the start of each word brace
/// expansion made (`{~,x}/y` is `$HOME/y x/y`): `~` is `home`, `~+` the working
/// directory, `~root` and `~NAME` their homes. `None` for another tilde prefix
/// (`~-`), whose directory is not known here.
fn word_pattern(w: &[Piece], home: Option<&str>) -> Option<String> {
    let mut p = String::with_capacity(w.len() + 8);
    let mut rest = w;
    if w.first() == Some(&Piece::C(Ch::Bare('~'))) {
        let end = w
            .iter()
            .position(|x| matches!(x, Piece::C(Ch::Bare('/') | Ch::Quoted('/'))))
            .unwrap_or(w.len());
        let prefix: Option<String> = w[1..end]
            .iter()
            .map(|x| match x {
                Piece::C(Ch::Bare(c)) => Some(*c),
                _ => None,
            })
            .collect();
        // A quoted or computed character in the prefix: bash leaves it as written.
        if let Some(prefix) = prefix {
            let own = home
                .and_then(|h| h.rsplit('/').next())
                .is_some_and(|n| n == prefix);
            let dir = match prefix.as_str() {
                "" => home.map(str::to_string),
                "+" => Some(".".to_string()),
                "root" if !own => Some("/root".to_string()),
                _ if own => home.map(str::to_string),
                u if u
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
                    && !u.starts_with('-') =>
                {
                    Some(format!("/home/{u}"))
                }
                _ => None,
            }?;
            p.push_str(&crate::word::escape(&dir));
            rest = &w[end..];
        }
    }
    for x in rest {
        match x {
            Piece::C(c) => push_pattern(&mut p, *c),
            Piece::P(s) => p.push_str(s),
        }
    }
    Some(p)
}

/// Append one character to a pattern in the syntax of [`crate::word::glob_match`]:
/// quoted glob characters escaped, unknown parts as `*`.
fn push_pattern(p: &mut String, c: Ch) {
    match c {
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

/// A word without brace expansions as a pattern.
pub(crate) fn to_pattern(chars: &[Ch]) -> String {
    let mut p = String::with_capacity(chars.len() + 4);
    for c in chars {
        push_pattern(&mut p, *c);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bare(s: &str) -> Vec<Ch> {
        s.chars().map(Ch::Bare).collect()
    }

    fn pats(s: &str) -> Vec<String> {
        braces(&bare(s), Some("/home/me"))
            .patterns
            .unwrap_or_default()
    }

    #[test]
    fn expands_as_bash_does() {
        assert_eq!(pats("{a,b}c"), ["ac", "bc"]);
        assert_eq!(pats("x{1..3}"), ["x1", "x2", "x3"]);
        assert_eq!(pats("{01..3}"), ["01", "02", "03"]);
        assert_eq!(pats("{1..10..-3}"), ["1", "4", "7", "10"]);
        assert_eq!(pats("{a{b,c}}"), ["\\{ab\\}", "\\{ac\\}"]);
        // A `}` before any comma does not close the brace (bash: `x} .git`).
        assert_eq!(pats("{x},.git}"), ["x\\}", ".git"]);
        assert_eq!(pats("{a..{b,c}}"), ["a..b", "a..c"]);
        assert_eq!(pats("{1..3..}"), ["\\{1..3..\\}"]);
        assert_eq!(pats("{}"), ["\\{\\}"]);
        assert_eq!(pats("x{,}"), ["x", "x"]);
        assert!(!has_brace(&bare("HEAD@{1}")));
        assert!(has_brace(&bare("{x},y}")));
        assert!(!has_brace(&bare("{a}b,c")));
        // Tilde expansion of each word brace expansion made.
        assert_eq!(pats("{~,x}/y"), ["/home/me/y", "x/y"]);
        assert_eq!(pats("x{~,y}"), ["x~", "xy"]);
        assert_eq!(pats("{~root,~me}"), ["/root", "/home/me"]);
        assert!(braces(&bare("{~-,x}"), None).patterns.is_none());
    }

    #[test]
    fn long_lists_are_judged_member_by_member() {
        let p = pats("{.git/objects,x{1..70}}");
        assert!(p.contains(&".git/objects".to_string()), "{p:?}");
        let p = pats("{/proc/1/environ,x{1..300}}");
        assert_eq!(p, ["/proc/1/environ", "x[-0-9]*"]);
        let p = pats("{a,b,c,d,e,f,g,h}{a,b,c,d,e,f,g,h}{a,b,c,d,e,f,g,h}/.git");
        assert_eq!(p, ["***/.git"]);
        // Members that are paths stay exact; too many of them cannot be judged.
        let many = format!(
            "{{{}}}{{1,2}}",
            (0..300)
                .map(|i| format!("d/{i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(braces(&bare(&many), None).patterns.is_none());
        assert_eq!(
            braces(&bare("{1..99999999999}"), None).words,
            Some(99_999_999_999)
        );
    }
}
