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
        self.assigned_var(&name, Some(&value), text);
        if record {
            self.vars.insert(name.clone(), known);
        }
        // `x=$(( … ))`: the value is the number arithmetic produced.
        if n.child_by_field_name("value")
            .is_some_and(|v| v.kind() == "arithmetic_expansion")
            && !appends
        {
            self.arith_safe.insert(name.clone());
        }
        Some((name, value))
    }

    /// A variable gets a value; refuse names that change what programs run.
    pub fn assigned_var(&mut self, name: &str, value: Option<&Word>, part: &str) {
        self.arith_safe.remove(name);
        if !self.var_name(name, part) {
            return;
        }
        if let Some((reason, instead)) =
            rules::env_problem(name, value.and_then(|v| v.literal()).as_deref())
        {
            self.refuse(part, reason, instead);
        }
        self.vars.entry(name.to_string()).or_insert(None);
        if value.is_none() {
            self.vars.insert(name.to_string(), None);
        }
    }

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
