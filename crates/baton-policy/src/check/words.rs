//! Words: how the checker reads a word as bash would expand it (quotes, `$'…'`,
//! variables, `~`, command substitutions, arithmetic) and judges what it names
//! (secret places, writes outside the project, code hidden in strings).

use super::*;

/// Steps one pattern of a word costs (judged here, and again by validators).
const PATTERN_WORK: u64 = 8;

impl Checker<'_> {
    pub(super) fn word_parts(
        &mut self,
        n: Node,
        src: &str,
        cwd: &Cwd,
        in_dquote: bool,
        out: &mut Vec<Ch>,
        only: &mut Option<Dynamic>,
    ) {
        let text = &src[n.byte_range()];
        match n.kind() {
            "word" | "number" | "extglob_pattern" => {
                if in_dquote {
                    out.extend(text.chars().map(Ch::Quoted));
                } else {
                    unquoted(text, out);
                }
            }
            "brace_expression" => out.extend(text.chars().map(Ch::Bare)),
            "raw_string" => {
                let inner = text
                    .strip_prefix('\'')
                    .and_then(|t| t.strip_suffix('\''))
                    .unwrap_or(text);
                out.extend(inner.chars().map(Ch::Quoted));
            }
            "ansi_c_string" => match decode_ansi_c(text) {
                Some(s) => out.extend(s.chars().map(Ch::Quoted)),
                None => out.push(Ch::Dyn),
            },
            "string" | "translated_string" => {
                let mut cur = n.walk();
                let kids: Vec<Node> = n.children(&mut cur).collect();
                for k in kids {
                    match k.kind() {
                        "\"" | "$" => {}
                        "string_content" => dquoted(&src[k.byte_range()], out),
                        _ if k.is_named() => self.word_parts(k, src, cwd, true, out, only),
                        _ => out.extend(src[k.byte_range()].chars().map(Ch::Quoted)),
                    }
                }
            }
            "concatenation" => {
                let mut cur = n.walk();
                let kids: Vec<Node> = n.children(&mut cur).collect();
                for k in kids {
                    if k.is_named() {
                        self.word_parts(k, src, cwd, in_dquote, out, only);
                    } else if in_dquote {
                        out.extend(src[k.byte_range()].chars().map(Ch::Quoted));
                    } else {
                        unquoted(&src[k.byte_range()], out);
                    }
                }
            }
            "simple_expansion" => {
                let name = text.trim_start_matches('$');
                if name == "!" {
                    *only = Some(Dynamic::LastBackground);
                    out.push(Ch::Dyn);
                } else {
                    self.var_value(name, in_dquote, out);
                }
            }
            "expansion" => {
                self.expansion(n, src, cwd, in_dquote, out);
            }
            "command_substitution" => {
                let inner = text
                    .strip_prefix("$(")
                    .and_then(|t| t.strip_suffix(')'))
                    .or_else(|| text.strip_prefix('`').and_then(|t| t.strip_suffix('`')))
                    .unwrap_or(text);
                *only = Some(Dynamic::Substitution(inner.trim().to_string()));
                if text.starts_with('`') {
                    // Backticks: the inner text is re-read by the shell with its own
                    // escaping; check it as source.
                    let inner = inner
                        .replace("\\`", "`")
                        .replace("\\\\", "\\")
                        .replace("\\$", "$");
                    self.scoped(|c| c.source(&inner, cwd));
                } else {
                    self.scoped(|c| c.seq(n, src, cwd));
                }
                out.push(Ch::Dyn);
            }
            "process_substitution" => {
                *only = Some(Dynamic::Other);
                self.scoped(|c| c.seq(n, src, cwd));
                out.push(Ch::Dyn);
            }
            "arithmetic_expansion" => {
                self.scan_children(n, src, cwd, true);
                out.push(Ch::Dyn);
            }
            kind => {
                self.refuse(
                    text,
                    format!("baton does not check the shell construct `{kind}` inside a word"),
                    "write the word as plain text, quoted strings or simple $VARIABLES",
                );
                out.push(Ch::Dyn);
            }
        }
    }

    pub(super) fn var_value(&self, name: &str, in_dquote: bool, out: &mut Vec<Ch>) {
        let known = match self.vars.get(name) {
            Some(v) => v.clone(),
            None => match name {
                "HOME" => self
                    .policy
                    .places
                    .home
                    .as_ref()
                    .map(|h| h.to_string_lossy().into_owned()),
                _ => None,
            },
        };
        match known {
            Some(v) if in_dquote => out.extend(v.chars().map(Ch::Quoted)),
            Some(v)
                if !v.is_empty()
                    && !v
                        .chars()
                        .any(|c| c.is_whitespace() || matches!(c, '*' | '?' | '[' | '{' | '}')) =>
            {
                out.extend(v.chars().map(Ch::Quoted))
            }
            _ => out.push(Ch::Dyn),
        }
    }

    pub(super) fn expansion(
        &mut self,
        n: Node,
        src: &str,
        cwd: &Cwd,
        in_dquote: bool,
        out: &mut Vec<Ch>,
    ) {
        let whole = &src[n.byte_range()];
        if whole.ends_with("@P}") {
            self.refuse(
                whole,
                "${VAR@P} expands the value as a prompt, which runs any $(…) inside it",
                "use the variable's value directly: \"${VAR}\"",
            );
        }
        let mut cur = n.walk();
        let kids: Vec<Node> = n.children(&mut cur).collect();
        let name = kids
            .iter()
            .find(|k| k.kind() == "variable_name")
            .map(|k| src[k.byte_range()].to_string());
        let ops: Vec<&str> = kids
            .iter()
            .filter(|k| !k.is_named())
            .map(|k| k.kind())
            .collect();
        let assigns = ops.iter().any(|o| matches!(*o, "=" | ":="));
        if assigns && let Some(name) = &name {
            self.assigned_var(name, None, &src[n.byte_range()]);
        }
        // `${!x}`: the value of x names the variable to expand, and a subscript in
        // that name is evaluated as arithmetic (`x='a[$(cmd)]'` runs cmd).
        if ops.get(1) == Some(&"!") {
            self.indirect(&kids, src, whole);
        }
        // `${s:off}`, `${s:off:len}`: offset and length are arithmetic. The first
        // named part is what is expanded; everything after the `:` is arithmetic.
        let substring_at = kids.iter().position(|k| !k.is_named() && k.kind() == ":");
        for (i, k) in kids.iter().enumerate() {
            if !k.is_named() {
                continue;
            }
            let arithmetic = substring_at.is_some_and(|at| i > at);
            if arithmetic || k.kind() != "variable_name" {
                self.scan(*k, src, cwd, arithmetic);
            }
        }
        // ${NAME} alone is the variable's value.
        let plain = kids.len() == 3 && name.is_some() && ops == ["${", "}"];
        match (plain, name) {
            (true, Some(name)) => self.var_value(&name, in_dquote, out),
            _ => out.push(Ch::Dyn),
        }
    }

    pub(super) fn expand_tilde(&self, w: &mut Word, cwd: &Cwd, assignment: bool) {
        let mut starts = vec![0usize];
        if assignment {
            // After `=` and `:` in assignments.
            for (i, c) in w.chars.iter().enumerate() {
                if matches!(c, Ch::Bare('=') | Ch::Bare(':')) {
                    starts.push(i + 1);
                }
            }
        } else if let Some(i) = w.chars.iter().position(|c| *c == Ch::Bare('=')) {
            // bash also expands `name=~/x` in ordinary arguments.
            let name_like = w.chars[..i]
                .iter()
                .all(|c| matches!(c, Ch::Bare(c) if c.is_ascii_alphanumeric() || *c == '_'));
            if name_like && i > 0 {
                starts.push(i + 1);
            }
        }
        for &s in starts.iter().rev() {
            if w.chars.get(s) != Some(&Ch::Bare('~')) {
                continue;
            }
            let end = w.chars[s..]
                .iter()
                .position(|c| matches!(c, Ch::Bare('/') | Ch::Bare(':')))
                .map_or(w.chars.len(), |p| s + p);
            let user: Option<String> = w.chars[s + 1..end]
                .iter()
                .map(|c| match c {
                    Ch::Bare(c) => Some(*c),
                    _ => None,
                })
                .collect();
            let Some(user) = user else { continue };
            let home = &self.policy.places.home;
            let value: Option<String> = match user.as_str() {
                "" => home.as_ref().map(|h| h.to_string_lossy().into_owned()),
                "+" => match cwd {
                    Cwd::Known(v) if v.len() == 1 => Some(v[0].to_string_lossy().into_owned()),
                    _ => None,
                },
                u => {
                    let own = home
                        .as_ref()
                        .and_then(|h| h.file_name())
                        .is_some_and(|n| n.to_string_lossy() == u);
                    if own {
                        home.as_ref().map(|h| h.to_string_lossy().into_owned())
                    } else if u == "root" {
                        Some("/root".into())
                    } else if u
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        Some(format!("/home/{u}"))
                    } else {
                        None
                    }
                }
            };
            let repl: Vec<Ch> = match value {
                Some(v) => v.chars().map(Ch::Quoted).collect(),
                None => vec![Ch::Dyn],
            };
            w.chars.splice(s..end, repl);
        }
    }

    /// Checks every word gets: no sockets, no secret locations.
    pub(super) fn judge_word(&mut self, w: &Word, cwd: &Cwd) {
        let home = self
            .policy
            .places
            .home
            .as_ref()
            .map(|h| h.to_string_lossy());
        let braces = crate::braces::braces(&w.chars, home.as_deref());
        if !self.tick(braces.scanned as u64 / 16) {
            return;
        }
        let Some(words) = braces.words else {
            self.refuse_unjudged(
                &w.text,
                "this word's braces nest too deeply (or are too long) for baton to read as bash expands them",
                "write the names out in several shorter commands",
            );
            return;
        };
        if words > crate::word::MAX_BRACE_WORDS {
            let words = if words == u64::MAX {
                "too many".to_string()
            } else {
                words.to_string()
            };
            self.refuse(
                &w.text,
                format!("this brace expansion makes bash produce {words} words (more than {}), which exhausts memory", crate::word::MAX_BRACE_WORDS),
                "use a smaller range, or a loop: for ((i = 0; i < N; i++)); do …; done",
            );
            return;
        }
        let Some(patterns) = braces.patterns else {
            // Never allowed unjudged: too many members that are paths to judge one
            // by one.
            self.refuse_unjudged(
                &w.text,
                format!(
                    "this brace expansion makes {words} words, and baton judges at most {} of them one by one",
                    crate::braces::MAX_PATTERNS
                ),
                "name the paths in several shorter commands, or use a loop over the names",
            );
            return;
        };
        // Judging every word is work (each pattern is judged against every secret
        // location and place, here and by the command's validator): count it.
        if !self.tick(patterns.len() as u64 * PATTERN_WORK) {
            return;
        }
        for p in &patterns {
            if p.contains("/dev/tcp/")
                || p.contains("/dev/udp/")
                || p.ends_with("/dev/tcp")
                || p.ends_with("/dev/udp")
            {
                self.refuse(
                    &w.text,
                    "/dev/tcp and /dev/udp open network sockets from the shell",
                    "use curl or wget to http://localhost",
                );
                return;
            }
        }
        if let Some(what) = self.secret_in(w, cwd, false) {
            self.refuse(
                &w.text,
                format!("{what} is a secret location (credentials, keys, other users' files or other processes' environments)"),
                "work with the project's own files; credentials are never available to the agent",
            );
        }
    }

    /// The secret location a word reaches, if any. With `above`, a directory above
    /// a secret location counts too (for commands that read recursively).
    pub fn secret_in(&self, w: &Word, cwd: &Cwd, above: bool) -> Option<String> {
        let patterns = w.patterns(self.policy.places.home.as_deref())?;
        let leading = w.starts_dynamic();
        let home = self
            .policy
            .places
            .home
            .as_ref()
            .map(|h| h.to_string_lossy().into_owned());
        let cwds: Vec<PathBuf> = match cwd {
            Cwd::Known(v) => v.clone(),
            Cwd::Unknown => vec![PathBuf::from("/")],
        };
        for p in &patterns {
            let mut cands: Vec<(String, bool)> = vec![(p.clone(), leading)];
            if let Some(i) = p.find('=') {
                cands.push((p[i + 1..].to_string(), false));
            }
            if let Some(rest) = p.strip_prefix('@') {
                cands.push((rest.to_string(), false));
            }
            if let Some(i) = p.find(':')
                && !p.contains("://")
            {
                cands.push((p[i + 1..].to_string(), false));
            }
            for (c, lead) in cands {
                let c = match (&home, c.strip_prefix('~')) {
                    (Some(h), Some(rest)) if rest.is_empty() || rest.starts_with('/') => {
                        format!("{h}{rest}")
                    }
                    _ => c,
                };
                let relative_unknown = !c.starts_with('/') && *cwd == Cwd::Unknown;
                for d in &cwds {
                    match self.policy.places.secret(&c, d, lead || relative_unknown) {
                        Some(Secret::Inside(what)) => return Some(what),
                        Some(Secret::Above(what)) if above => {
                            return Some(format!("a directory containing {what}"));
                        }
                        _ => {}
                    }
                }
            }
        }
        None
    }

    /// A redirection node: writes must land in the project, a temp dir or a device.
    pub fn redirect(&mut self, n: Node, src: &str, cwd: &Cwd) {
        let text = &src[n.byte_range()];
        match n.kind() {
            "file_redirect" => {
                let mut cur = n.walk();
                let kids: Vec<Node> = n.children(&mut cur).collect();
                let op = kids
                    .iter()
                    .find(|k| !k.is_named())
                    .map(|k| k.kind())
                    .unwrap_or(">");
                let mut cur = n.walk();
                let dests: Vec<Node> = n.children_by_field_name("destination", &mut cur).collect();
                if dests.len() > 1 {
                    self.refuse(
                        text,
                        "words after a redirection target are arguments bash moves to the command, which baton does not check in that position",
                        "put redirections after all of the command's arguments",
                    );
                }
                for d in &dests {
                    let w = self.word(*d, src, cwd, false);
                    let dup = matches!(op, ">&" | "<&" | ">&-" | "<&-");
                    if dup {
                        // fd duplication (2>&1) or closing; `>&file` writes a file.
                        if let Some(l) = w.literal()
                            && (l.chars().all(|c| c.is_ascii_digit()) || l == "-")
                        {
                            continue;
                        }
                    }
                    match op {
                        "<" => {}
                        _ => self.write_target(&w, cwd, text, false),
                    }
                }
            }
            "heredoc_redirect" => {
                let mut cur = n.walk();
                for k in n.named_children(&mut cur) {
                    match k.kind() {
                        "heredoc_body" => self.scan_children(k, src, cwd, false),
                        "heredoc_start" | "heredoc_end" => {}
                        "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                            self.redirect(k, src, cwd)
                        }
                        _ => {
                            // Commands piped or chained after the here-doc start.
                            self.stmt(k, src, cwd);
                        }
                    }
                }
            }
            "herestring_redirect" => self.scan_children(n, src, cwd, false),
            other => {
                self.unsupported(text, other, cwd);
            }
        }
    }

    /// A path the command writes: it must be a literal path (globs with `glob_ok`)
    /// inside the project (not `.git`/`.baton`), in a temp dir, or a device.
    pub fn write_target(&mut self, w: &Word, cwd: &Cwd, part: &str, glob_ok: bool) {
        if let Some(problem) = self.write_problem(w, cwd, glob_ok, false) {
            self.refuse(part, problem.0, problem.1);
        }
    }

    /// Why `w` may not be written (or deleted, with `delete`), if it may not.
    pub fn write_problem(
        &self,
        w: &Word,
        cwd: &Cwd,
        glob_ok: bool,
        delete: bool,
    ) -> Option<(String, String)> {
        let name = &w.text;
        if w.is_dynamic() {
            return Some((
                format!(
                    "the path {name} is computed when the command runs, so baton cannot tell where it writes"
                ),
                "write the path literally".into(),
            ));
        }
        if !glob_ok && w.expands() {
            return Some((
                format!("the path {name} is a pattern, so baton cannot tell where it writes"),
                "write the path literally, without * ? [ ] or { }".into(),
            ));
        }
        let patterns = w.patterns(self.policy.places.home.as_deref())?;
        for p in &patterns {
            let dirs: Vec<PathBuf> = match cwd {
                Cwd::Known(v) => v.clone(),
                Cwd::Unknown if p.starts_with('/') => vec![PathBuf::from("/")],
                Cwd::Unknown => {
                    return Some((
                        format!(
                            "the directory the command runs in is not known here (after cd to a computed place), so baton cannot tell where {name} is"
                        ),
                        "use an absolute path inside the project, or cd to a literal directory"
                            .into(),
                    ));
                }
            };
            for d in &dirs {
                let place = self.policy.places.place(p, d);
                match place {
                    Place::Project | Place::Temp => {}
                    Place::Device if !delete => {}
                    Place::Device => {
                        return Some((
                            format!("{name} is a device"),
                            "remove files inside the project".into(),
                        ));
                    }
                    Place::Protected(dir) => {
                        return Some((
                            format!(
                                "{name} is (or may be) inside {dir}/, which only git and baton may change"
                            ),
                            format!(
                                "change project files outside .git/ and .baton/; use ordinary git commands for the repository{}",
                                if w.expands() {
                                    "; a pattern like * or .* also matches .git and .baton, so name the files"
                                } else {
                                    ""
                                }
                            ),
                        ));
                    }
                    Place::ProjectRoot if !delete => {}
                    Place::ProjectRoot | Place::AboveProject => {
                        return Some((
                            format!("{name} is the project directory or a directory above it"),
                            "name files and directories inside the project".into(),
                        ));
                    }
                    Place::Outside(path) => {
                        return Some((
                            format!(
                                "{name} resolves to {}, outside the project directory {}",
                                path.display(),
                                self.policy.places.project.display()
                            ),
                            "write only inside the project directory, /tmp, or /dev/null".into(),
                        ));
                    }
                }
            }
        }
        None
    }
}

/// Unquoted word text: backslash escapes a character.
pub(super) fn unquoted(text: &str, out: &mut Vec<Ch>) {
    let mut it = text.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('\n') | None => {}
                Some(e) => out.push(Ch::Quoted(e)),
            }
        } else {
            out.push(Ch::Bare(c));
        }
    }
}

/// Double-quoted text: backslash escapes only `$`, `` ` ``, `"`, `\` and newline.
pub(super) fn dquoted(text: &str, out: &mut Vec<Ch>) {
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.peek() {
                Some('$') | Some('`') | Some('"') | Some('\\') => {
                    if let Some(e) = it.next() {
                        out.push(Ch::Quoted(e));
                    }
                }
                Some('\n') => {
                    it.next();
                }
                _ => out.push(Ch::Quoted('\\')),
            }
        } else {
            out.push(Ch::Quoted(c));
        }
    }
}

/// The value of `$'...'`, or `None` for escapes baton does not decode.
pub(super) fn decode_ansi_c(text: &str) -> Option<String> {
    let inner = text.strip_prefix("$'")?.strip_suffix('\'')?;
    let mut out = String::new();
    let mut it = inner.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = it.next()?;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' => {
                let mut v = 0u32;
                let mut n = 0;
                while n < 2 && it.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                    v = v * 16 + it.next()?.to_digit(16)?;
                    n += 1;
                }
                if n == 0 {
                    return None;
                }
                out.push(char::from_u32(v)?);
            }
            '0'..='7' => {
                let mut v = e.to_digit(8)?;
                let mut n = 1;
                while n < 3 && it.peek().is_some_and(|c| ('0'..='7').contains(c)) {
                    v = v * 8 + it.next()?.to_digit(8)?;
                    n += 1;
                }
                out.push(char::from_u32(v)?);
            }
            'u' | 'U' => {
                let max = if e == 'u' { 4 } else { 8 };
                let mut v = 0u32;
                let mut n = 0;
                while n < max && it.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                    v = v.checked_mul(16)? + it.next()?.to_digit(16)?;
                    n += 1;
                }
                if n == 0 {
                    return None;
                }
                out.push(char::from_u32(v)?);
            }
            _ => return None,
        }
    }
    if out.contains('\0') {
        return None;
    }
    Some(out)
}
