//! Control flow: lists, pipelines, groups, negation, redirected statements,
//! `if`, loops and `case`. Each says which statements run, and in which working
//! directories they may run and leave the shell.

use super::*;

impl Checker<'_> {
    /// `a && b`, `a || b`, `a; b` or `a & b` as one list: the second runs in the
    /// directories the first leaves when it succeeded, failed, or either.
    pub(super) fn list(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let mut cur = n.walk();
        let kids: Vec<Node> = n.children(&mut cur).collect();
        let named: Vec<Node> = kids.iter().copied().filter(|k| k.is_named()).collect();
        let op = kids
            .iter()
            .find(|k| !k.is_named())
            .map(|k| k.kind())
            .unwrap_or("&&");
        let (Some(a), Some(b)) = (named.first(), named.get(1)) else {
            return self.seq(n, src, cwd);
        };
        if named.len() != 2 {
            return self.unsupported(&src[n.byte_range()], "list", cwd);
        }
        let fa = self.stmt(*a, src, cwd);
        match op {
            "&&" => {
                let fb = self.stmt(*b, src, &fa.ok);
                Flow {
                    ok: fb.ok,
                    fail: fa.fail.union(&fb.fail),
                }
            }
            "||" => {
                let fb = self.stmt(*b, src, &fa.fail);
                Flow {
                    ok: fa.ok.union(&fb.ok),
                    fail: fb.fail,
                }
            }
            // `a; b` and `a & b` inside a list: both run.
            _ => {
                let start = fa.any();
                self.stmt(*b, src, &start)
            }
        }
    }

    /// `a | b`: every command runs in a subshell of its own, so none changes the
    /// directory.
    pub(super) fn pipeline(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let mut cur = n.walk();
        for child in n.named_children(&mut cur) {
            self.stmt(child, src, cwd);
        }
        Flow::same(cwd)
    }

    /// `{ …; }` as a group of statements, or `(( … ))` as arithmetic.
    pub(super) fn compound(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let arithmetic = n.child(0).is_some_and(|c| c.kind() == "((");
        if arithmetic {
            self.scan(n, src, cwd, true);
            Flow::same(cwd)
        } else {
            self.seq(n, src, cwd)
        }
    }

    /// A statement with redirections after it (`… > file`, `… <<EOF`).
    pub(super) fn redirected(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let mut cur = n.walk();
        let redirects: Vec<Node> = n.children_by_field_name("redirect", &mut cur).collect();
        // tree-sitter-bash attaches a trailing redirection to a whole list
        // (`cd /etc && echo x > hosts`) where bash binds it to the last
        // command: judge it in every directory before and after the body.
        let flow = match n.child_by_field_name("body") {
            Some(body) => self.stmt(body, src, cwd),
            None => Flow::same(cwd),
        };
        let dirs = cwd.union(&flow.any());
        for r in redirects {
            self.redirect(r, src, &dirs);
        }
        flow
    }

    /// `! cmd`: success and failure swap.
    pub(super) fn negated(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let mut flow = Flow::same(cwd);
        let mut cur = n.walk();
        for child in n.named_children(&mut cur) {
            flow = self.stmt(child, src, cwd);
        }
        Flow {
            ok: flow.fail,
            fail: flow.ok,
        }
    }

    /// `if cond; then …; elif …; else …; fi`: each branch runs from the directories
    /// its condition leaves; the result is any branch's end.
    pub(super) fn if_statement(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let mut cur = n.walk();
        let conds: Vec<std::ops::Range<usize>> = n
            .children_by_field_name("condition", &mut cur)
            .map(|c| c.byte_range())
            .collect();
        let mut f = Flow::same(cwd);
        let mut branch = Flow::same(cwd);
        let mut out: Option<Cwd> = None;
        let mut in_cond = true;
        let mut cur = n.walk();
        for k in n.named_children(&mut cur) {
            match k.kind() {
                "comment" => {}
                "elif_clause" | "else_clause" => {
                    let end = if in_cond { f.any() } else { branch.any() };
                    out = Some(out.map_or(end.clone(), |o| o.union(&end)));
                    let start = f.fail.clone();
                    let fl = if k.kind() == "elif_clause" {
                        self.if_statement(k, src, &start)
                    } else {
                        self.seq(k, src, &start)
                    };
                    let end = fl.any();
                    out = Some(out.map_or(end.clone(), |o| o.union(&end)));
                    return Flow::same(out.as_ref().unwrap_or(cwd));
                }
                _ if conds.contains(&k.byte_range()) => {
                    f = self.stmt(k, src, &f.any());
                }
                _ => {
                    if in_cond {
                        in_cond = false;
                        branch = Flow::same(&f.ok);
                    }
                    branch = self.stmt(k, src, &branch.any());
                }
            }
        }
        let end = branch.any().union(&f.fail);
        Flow::same(&out.map_or(end.clone(), |o| o.union(&end)))
    }

    /// `while cond; do body; done` (and `until`): the condition and the body,
    /// rounds until the directories stop growing.
    pub(super) fn while_loop(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let cond: Vec<Node> = {
            let mut cur = n.walk();
            n.children_by_field_name("condition", &mut cur)
                .filter(|k| k.is_named())
                .collect()
        };
        let body = n.child_by_field_name("body");
        self.looped(cwd, |c, s| {
            let mut f = Flow::same(s);
            for k in &cond {
                f = c.stmt(*k, src, &f.any());
            }
            let b = match body {
                Some(b) => c.seq(b, src, &f.ok),
                None => Flow::same(&f.ok),
            };
            b.any().union(&f.fail)
        })
    }

    /// `for v in words; do body; done`: the words, the loop variable (safe in
    /// arithmetic when every word is plain) and the body.
    pub(super) fn for_loop(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let values: Vec<Node> = {
            let mut cur = n.walk();
            n.children_by_field_name("value", &mut cur).collect()
        };
        let mut plain = true;
        for v in values {
            let w = self.word(v, src, cwd, false);
            plain &= self.plain_loop_value(&w);
        }
        if let Some(v) = n.child_by_field_name("variable") {
            let name = src[v.byte_range()].to_string();
            self.assigned_var(&name, None, &src[n.byte_range()]);
            if plain {
                self.arith_safe.insert(name);
            }
        }
        let body = n.child_by_field_name("body");
        self.looped(cwd, |c, s| match body {
            Some(b) => c.seq(b, src, s).any(),
            None => s.clone(),
        })
    }

    /// Whether a `for` word gives only plain values (letters, digits, `_.-+`), so
    /// the loop variable is safe in arithmetic.
    fn plain_loop_value(&self, w: &Word) -> bool {
        // Plain words, or `$(seq N [M [K]])` with numbers only (seq -f
        // could print anything).
        let seq_numbers = matches!(&w.only, Some(crate::word::Dynamic::Substitution(inner))
            if inner.split_whitespace().next() == Some("seq")
                && inner.split_whitespace().skip(1).all(|a| a.parse::<f64>().is_ok()));
        let plain_word = |l: &str| {
            l.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '+'))
        };
        // `{1..100}`, `{a,b}`: every word brace expansion makes (the
        // patterns of words judged one by one hold no glob character).
        seq_numbers
            || w.literal().is_some_and(|l| plain_word(&l))
            || w.patterns(self.policy.places.home.as_deref())
                .is_some_and(|ps| ps.iter().all(|p| plain_word(p)))
    }

    /// `for ((init; cond; step)); do body; done`: the three expressions as
    /// arithmetic, then the body.
    pub(super) fn c_style_for(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let mut cur = n.walk();
        let kids: Vec<Node> = n.named_children(&mut cur).collect();
        let body = kids
            .iter()
            .copied()
            .find(|k| k.kind() == "do_group" || k.kind() == "compound_statement");
        for k in &kids {
            if Some(*k) != body {
                self.scan(*k, src, cwd, true);
            }
        }
        self.looped(cwd, |c, s| match body {
            Some(b) => c.seq(b, src, s).any(),
            None => s.clone(),
        })
    }

    /// `case word in pattern) …;; esac`: the word, every pattern, and every
    /// branch from the directories before.
    pub(super) fn case_statement(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        if let Some(v) = n.child_by_field_name("value") {
            self.word(v, src, cwd, false);
        }
        let mut out = cwd.clone();
        let mut cur = n.walk();
        for item in n.named_children(&mut cur) {
            if item.kind() != "case_item" {
                continue;
            }
            let mut f = Flow::same(cwd);
            let mut c2 = item.walk();
            for k in item.named_children(&mut c2) {
                if item
                    .child_by_field_name("value")
                    .is_some_and(|v| v.byte_range() == k.byte_range())
                    || is_pattern_of(item, k)
                {
                    self.scan(k, src, cwd, false);
                } else if k.kind() != "comment" {
                    f = self.stmt(k, src, &f.any());
                }
            }
            out = out.union(&f.any());
        }
        Flow::same(&out)
    }

    /// A loop body: evaluated until the set of directories stops growing.
    fn looped(&mut self, cwd: &Cwd, mut body: impl FnMut(&mut Self, &Cwd) -> Cwd) -> Flow {
        let mut s = cwd.clone();
        // Variables assigned in loops take several values.
        let before: Vec<String> = self.vars.keys().cloned().collect();
        for round in 0..3 {
            let after = body(self, &s);
            let next = s.union(&after);
            if next == s {
                break;
            }
            s = if round == 2 { Cwd::Unknown } else { next };
        }
        for (k, v) in self.vars.iter_mut() {
            if !before.contains(k) {
                *v = None;
            }
        }
        Flow::same(&s)
    }
}

/// Whether `k` is one of the patterns of the `case` item `item`.
fn is_pattern_of(item: Node, k: Node) -> bool {
    let mut cur = item.walk();
    item.children_by_field_name("value", &mut cur)
        .any(|v| v.id() == k.id())
}
