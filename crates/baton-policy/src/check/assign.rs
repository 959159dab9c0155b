//! Assignments and declarations: what a variable holds (for later words), and
//! which variables may not be set (those that change what runs: `PATH`, `LD_*`,
//! `BASH_ENV`, …).

use super::*;

impl Checker<'_> {
    /// `NAME=value` as a statement, a prefix, or after `export`/`declare`.
    pub fn assignment(
        &mut self,
        n: Node,
        src: &str,
        cwd: &Cwd,
        record: bool,
    ) -> Option<(String, Word)> {
        let text = &src[n.byte_range()];
        let name_node = n.child_by_field_name("name")?;
        let name = match name_node.kind() {
            "subscript" => {
                self.scan(name_node, src, cwd, true);
                name_node
                    .child_by_field_name("name")
                    .map(|x| src[x.byte_range()].to_string())
                    .unwrap_or_default()
            }
            _ => src[name_node.byte_range()].to_string(),
        };
        let value = match n.child_by_field_name("value") {
            Some(v) if v.kind() == "array" => {
                self.scan(v, src, cwd, false);
                self.array_indexes(v, src, text);
                Word {
                    chars: vec![Ch::Dyn],
                    text: src[v.byte_range()].to_string(),
                    only: None,
                    quoted_dyn_only: false,
                }
            }
            Some(v) => self.word(v, src, cwd, true),
            None => Word::quoted(""),
        };
        let appends = text[name_node.byte_range().end - n.byte_range().start..].starts_with("+=");
        let known = if record && !appends && name_node.kind() != "subscript" {
            value.literal()
        } else {
            None
        };
        if name == "PATH"
            && !appends
            && name_node.kind() == "variable_name"
            && self.path_of_project_dirs(&value, cwd)
        {
            // `export PATH="$PATH:$PWD/node_modules/.bin"`: inside the bubblewrap
            // sandbox a program found there is no more than a project script.
            if !self.policy.bubblewrap {
                self.refuse(
                    text,
                    format!("setting PATH changes which programs later commands run; {}", crate::BUBBLEWRAP_HINT),
                    "run project tools by their path (./node_modules/.bin/vite) or through npx and npm run",
                );
            }
            self.assigned_var_as(&name, text, false);
        } else {
            self.assigned_var(&name, Some(&value), text);
        }
        if record {
            self.vars.insert(name.clone(), known);
        }
        // `x=$(( … ))`, `n=${#arr[@]}`, `rc=$?`: the value is a number.
        if n.child_by_field_name("value")
            .is_some_and(|v| is_number(v, src))
            && !appends
        {
            self.arith_safe.insert(name.clone());
        }
        Some((name, value))
    }

    /// `a=([i]=x [$j]=y)`: bash evaluates each index as arithmetic (for an indexed
    /// array), where a variable holding `a[$(cmd)]` runs cmd.
    fn array_indexes(&mut self, array: Node, src: &str, part: &str) {
        let mut cur = array.walk();
        let elements: Vec<Node> = array.named_children(&mut cur).collect();
        for e in elements {
            let text = &src[e.byte_range()];
            let Some(rest) = text.strip_prefix('[') else {
                continue;
            };
            let Some((index, _)) = rest.split_once("]=").or_else(|| rest.split_once("]+=")) else {
                continue;
            };
            // `$i`, `${i}` and double quotes are read as the variable itself (bash
            // evaluates its value either way); anything else computed is refused.
            let mut plain = String::with_capacity(index.len());
            let mut it = index.chars().peekable();
            while let Some(c) = it.next() {
                match c {
                    '"' => {}
                    '$' if it.peek() == Some(&'{') => {
                        it.next();
                        let name: String = it.by_ref().take_while(|c| *c != '}').collect();
                        if !crate::hidden::is_ident(&name) {
                            plain.push('$');
                        }
                        plain.push_str(&name);
                    }
                    '$' if it
                        .peek()
                        .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_') => {}
                    c => plain.push(c),
                }
            }
            self.arith_text(&plain, part, 0);
        }
    }

    /// Several assignments as one statement (`A=1 B=2`), and whatever else the
    /// parser put among them.
    pub(super) fn assignments(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let mut cur = n.walk();
        for child in n.named_children(&mut cur) {
            if child.kind() == "variable_assignment" {
                self.assignment(child, src, cwd, true);
            } else {
                self.stmt(child, src, cwd);
            }
        }
        Flow::same(cwd)
    }

    /// `unset a b[i]`: the names unset, pieced together from the parser's parts.
    pub(super) fn unset_command(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        // Words are the named parts next to each other (`a[v]` is a
        // variable_name and a concatenation).
        let mut cur = n.walk();
        let parts: Vec<Node> = n.named_children(&mut cur).collect();
        let mut names: Vec<(String, Option<String>)> = Vec::new();
        let mut end = None;
        for k in parts {
            if k.kind() == "comment" {
                continue;
            }
            let piece = if k.kind() == "variable_name" {
                Some(src[k.byte_range()].to_string())
            } else {
                // `a[0]` is also a glob, which can only match a name of
                // the same form; `*` and `?` could match any file name.
                let w = self.word(k, src, cwd, false);
                let wild = w.chars.iter().any(|c| matches!(c, Ch::Bare('*' | '?')));
                w.static_text().filter(|_| !wild)
            };
            let text = &src[k.byte_range()];
            match names.last_mut() {
                Some((t, lit)) if end == Some(k.start_byte()) => {
                    t.push_str(text);
                    *lit = lit.take().zip(piece).map(|(a, b)| a + &b);
                }
                _ => names.push((text.to_string(), piece)),
            }
            end = Some(k.end_byte());
        }
        self.unset_names(&names, &src[n.byte_range()]);
        Flow::same(cwd)
    }

    /// `unset NAME…` (the words, as written and evaluated): a subscript in a name
    /// is evaluated as arithmetic (`unset 'a[$(cmd)]'` runs cmd). Functions
    /// (`unset -f`) have no subscripts.
    pub fn unset_names(&mut self, names: &[(String, Option<String>)], part: &str) {
        let mut functions = false;
        for (text, literal) in names {
            match literal {
                Some(l) if l.starts_with('-') => functions |= l.contains('f'),
                _ if functions => {}
                Some(l) => {
                    self.var_name(l, part);
                }
                None => self.refuse(
                    part,
                    format!("unset of a computed name {text}: a subscript in it is evaluated as arithmetic, which can run commands"),
                    "unset variables by their literal names",
                ),
            }
        }
    }

    /// A variable gets a value; refuse names that change what programs run.
    pub fn assigned_var(&mut self, name: &str, value: Option<&Word>, part: &str) {
        if !self.assigned_var_as(name, part, value.is_none()) {
            return;
        }
        if let Some((reason, instead)) =
            rules::env_problem(name, value.and_then(|v| v.literal()).as_deref())
        {
            self.refuse(part, reason, instead);
        }
    }

    /// Record that `name` gets a value (unknown with `unknown`), without judging
    /// the value; false when the name itself is refused.
    fn assigned_var_as(&mut self, name: &str, part: &str, unknown: bool) -> bool {
        self.arith_safe.remove(name);
        if self.deferred > 0 {
            self.assigned.push(name.to_string());
        }
        if !self.var_name(name, part) {
            return false;
        }
        self.vars.entry(name.to_string()).or_insert(None);
        if unknown {
            self.vars.insert(name.to_string(), None);
        }
        true
    }

    /// Whether `value` (of `PATH=…`) is the old `$PATH` and directories of the
    /// project: absolute paths in it, or `$PWD/DIR` where the working directory is
    /// known to be inside it (never `.git/`, `.baton/`, a relative or empty entry,
    /// which bash would look up in whatever directory a command runs in).
    fn path_of_project_dirs(&self, value: &Word, cwd: &Cwd) -> bool {
        let text = value.text.replace('"', "");
        if text.is_empty() || text.contains(['\'', '`', '\\', '*', '?', '[', '~', '(', ' ']) {
            return false;
        }
        let dirs = match cwd {
            Cwd::Known(v) => v.clone(),
            Cwd::Unknown => Vec::new(),
        };
        text.split(':').all(|entry| {
            if matches!(entry, "$PATH" | "${PATH}") {
                return true;
            }
            let (bases, rest): (Vec<PathBuf>, &str) = if let Some(r) = entry
                .strip_prefix("${PWD}")
                .or_else(|| entry.strip_prefix("$PWD"))
            {
                if dirs.is_empty() || !(r.is_empty() || r.starts_with('/')) {
                    return false;
                }
                (dirs.clone(), r)
            } else if entry.starts_with('/') {
                (vec![PathBuf::from("/")], entry)
            } else {
                return false;
            };
            if rest.contains(['$', '{', '}']) {
                return false;
            }
            bases.iter().all(|b| {
                let full = format!("{}{rest}", b.display());
                matches!(
                    self.policy
                        .places
                        .place(&crate::word::escape(&full), &self.policy.places.project),
                    Place::Project | Place::ProjectRoot
                )
            })
        })
    }

    /// `declare`, `export`, `local`, `readonly` … as a statement: each assignment
    /// or name it declares.
    pub(super) fn declaration(&mut self, n: Node, src: &str, cwd: &Cwd) {
        let text = &src[n.byte_range()];
        let mut cur = n.walk();
        for k in n.named_children(&mut cur) {
            match k.kind() {
                "variable_assignment" => {
                    self.assignment(k, src, cwd, true);
                }
                "variable_name" => {}
                _ => {
                    let w = self.word(k, src, cwd, false);
                    match w.literal() {
                        Some(flag) if flag.starts_with('-') || flag.starts_with('+') => {
                            if flag.contains('n') {
                                self.refuse(text, "name references (-n) make one variable stand for another, which baton cannot follow", "assign variables directly");
                            }
                            if flag.contains('i') {
                                self.refuse(text, "the integer attribute (-i) makes bash evaluate every later value of the variable as arithmetic, where a[$(cmd)] runs cmd", "assign numbers with (( x = … ))");
                            }
                        }
                        Some(l) => {
                            let name = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
                            self.var_name(name, text);
                        }
                        None => self.refuse(
                            text,
                            "a declaration with a computed name or flag cannot be checked",
                            "write declarations literally: export NAME=value",
                        ),
                    }
                }
            }
        }
    }
}

/// Whether the value `v` of an assignment is always a number: arithmetic, a
/// length (`${#x}`, `${#a[@]}`) or `$#`, `$?`, `$$`, `$!` (quoted or not).
fn is_number(v: Node, src: &str) -> bool {
    match v.kind() {
        "arithmetic_expansion" => true,
        "expansion" => v.child(1).is_some_and(|k| !k.is_named() && k.kind() == "#"),
        "simple_expansion" => matches!(&src[v.byte_range()], "$#" | "$?" | "$$" | "$!"),
        "string" if v.named_child_count() == 1 => {
            v.named_child(0).is_some_and(|k| is_number(k, src))
                && src[v.byte_range()].len()
                    == v.named_child(0).map_or(0, |k| k.byte_range().len()) + 2
        }
        _ => false,
    }
}
