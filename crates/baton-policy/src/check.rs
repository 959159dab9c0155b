//! The walk over a parsed command: every statement, word, redirection and
//! assignment, with the working directories each may run in.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use tree_sitter::{Node, Parser, Tree};

use crate::places::{Cwd, Place, Secret};
use crate::rules;
use crate::word::{Ch, Dynamic, Word};
use crate::{Policy, Refusal};

/// Deepest nesting of `bash -c` strings and other inline shell code.
const MAX_DEPTH: usize = 6;
/// Longest part quoted in a refusal.
const PART_MAX: usize = 120;
/// Longest command (bytes) the checker reads; longer ones are refused unread.
pub(crate) const MAX_COMMAND_BYTES: usize = 256 * 1024;
/// Deepest syntax tree (nested lists, subshells, substitutions…) the checker walks.
pub(crate) const MAX_TREE_DEPTH: usize = 500;
/// Most syntax nodes in one piece of shell source.
pub(crate) const MAX_NODES: usize = 100_000;
/// Most steps (statements, words and nodes visited, including every round of a
/// loop body and every `bash -c` string) for one command; beyond it the command is
/// refused. This bounds the checker's time on any input.
pub(crate) const MAX_WORK: u64 = 400_000;
/// Most distinct refusals reported for one command.
const MAX_REFUSALS: usize = 50;

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn parse(src: &str) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
            *slot = Some(p);
        }
        slot.as_mut()?.parse(src, None)
    })
}

/// Check a whole command; the refusals found (empty when allowed) and the work
/// spent (steps, at most about [`MAX_WORK`]).
pub(crate) fn check(policy: &Policy, command: &str) -> (Vec<Refusal>, u64) {
    let mut c = Checker {
        policy,
        refusals: Vec::new(),
        vars: HashMap::new(),
        functions: HashMap::new(),
        depth: 0,
        cd_count: 0,
        work: 0,
        exhausted: false,
        arith_safe: HashSet::new(),
    };
    if command.len() > MAX_COMMAND_BYTES {
        c.refuse_unjudged(
            &short(command),
            format!(
                "the command is {} bytes long, more than the {MAX_COMMAND_BYTES} baton checks",
                command.len()
            ),
            "write long content to a file with the Write tool, then run a short command",
        );
        return (c.refusals, 1);
    }
    let cwd = Cwd::Known(vec![policy.places.project.clone()]);
    c.source(command, &cwd);
    let mut out: Vec<Refusal> = Vec::new();
    for r in c.refusals {
        if !out.contains(&r) {
            out.push(r);
        }
    }
    (out, c.work)
}

/// What the working directory may be after a statement succeeded or failed.
#[derive(Debug, Clone)]
pub(crate) struct Flow {
    pub ok: Cwd,
    pub fail: Cwd,
}

impl Flow {
    pub fn same(cwd: &Cwd) -> Flow {
        Flow {
            ok: cwd.clone(),
            fail: cwd.clone(),
        }
    }
    pub fn any(&self) -> Cwd {
        self.ok.union(&self.fail)
    }
}

/// A simple command, once its words are evaluated.
#[derive(Debug, Clone)]
pub(crate) struct Cmd {
    pub name: String,
    pub args: Vec<Word>,
    pub cwd: Cwd,
    pub part: String,
}

pub(crate) struct Checker<'p> {
    pub policy: &'p Policy,
    pub refusals: Vec<Refusal>,
    /// Variables assigned in the command: `Some(value)` when known.
    pub vars: HashMap<String, Option<String>>,
    /// Functions defined in the command, and whether calling one may change directory.
    pub functions: HashMap<String, bool>,
    pub depth: usize,
    /// How many `cd`-like statements were seen (to learn whether a body changes dir).
    pub cd_count: usize,
    /// Steps taken so far (see [`MAX_WORK`]).
    pub work: u64,
    /// Whether [`MAX_WORK`] was reached (the walk then stops).
    pub exhausted: bool,
    /// Variables of unknown value that are nonetheless safe in arithmetic: results of
    /// arithmetic, and loop variables over plain numbers and words.
    pub arith_safe: HashSet<String>,
}

pub(crate) fn short(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= PART_MAX {
        return s.to_string();
    }
    let mut out: String = s.chars().take(PART_MAX).collect();
    out.push('…');
    out
}

impl<'p> Checker<'p> {
    pub fn refuse(&mut self, part: &str, reason: impl Into<String>, instead: impl Into<String>) {
        if self.refusals.len() >= MAX_REFUSALS {
            return;
        }
        self.refusals.push(Refusal {
            part: short(part),
            reason: reason.into(),
            instead: instead.into(),
            unjudged: false,
        });
    }

    /// Refuse because the command is beyond what the checker judges (a limit), not
    /// because of what it does: see [`crate::Verdict::beyond_limits`].
    pub fn refuse_unjudged(
        &mut self,
        part: &str,
        reason: impl Into<String>,
        instead: impl Into<String>,
    ) {
        self.refuse(part, reason, instead);
        if let Some(last) = self.refusals.last_mut() {
            last.unjudged = true;
        }
    }

    /// Count one step; false (and a refusal, once) when the command needs more
    /// than [`MAX_WORK`] steps, and the walk must stop.
    pub fn tick(&mut self, steps: u64) -> bool {
        if self.exhausted {
            return false;
        }
        self.work = self.work.saturating_add(steps);
        if self.work > MAX_WORK {
            self.exhausted = true;
            self.refusals.push(Refusal {
                part: "(the whole command)".into(),
                reason: format!("the command is too large or repetitive to check (more than {MAX_WORK} steps)"),
                instead: "split it into several shorter commands, or put the steps in a script file in the project and run that".into(),
                unjudged: true,
            });
            return false;
        }
        true
    }

    /// Check a piece of shell source (the whole command, or `bash -c` code).
    pub fn source(&mut self, src: &str, cwd: &Cwd) -> Flow {
        if !self.tick(1) {
            return Flow::same(cwd);
        }
        if src.len() > MAX_COMMAND_BYTES {
            self.refuse_unjudged(
                &short(src),
                "the shell code is too long to check",
                "write long content to a file with the Write tool, then run a short command",
            );
            return Flow::same(cwd);
        }
        if self.depth > MAX_DEPTH {
            self.refuse_unjudged(
                src,
                "shell code is nested too deeply to check",
                "run the inner command directly",
            );
            return Flow::same(cwd);
        }
        if src.contains('\0') {
            self.refuse("\\0", "the command contains a NUL byte", "send plain text");
            return Flow::same(cwd);
        }
        let Some((text, tree)) = self.parse_joined(src) else {
            return Flow::same(cwd);
        };
        let root = tree.root_node();
        if root.has_error() {
            let (what, at) = first_error(root, &text);
            self.refuse(
                &at,
                format!("baton could not parse the command as bash ({what}), so it cannot prove it safe"),
                "write the command in plain bash syntax: quote special characters, close every quote, bracket and here-document",
            );
            return Flow::same(cwd);
        }
        let (nodes, deepest) = tree_size(root);
        if deepest > MAX_TREE_DEPTH {
            self.refuse_unjudged(
                src,
                format!("the command nests lists, subshells or substitutions more than {MAX_TREE_DEPTH} levels deep, too deep to check"),
                "split it into several shorter commands, or put the steps in a script file in the project and run that",
            );
            return Flow::same(cwd);
        }
        if nodes > MAX_NODES {
            self.refuse_unjudged(
                src,
                format!("the command has more than {MAX_NODES} syntax parts, too many to check"),
                "split it into several shorter commands, or put the steps in a script file in the project and run that",
            );
            return Flow::same(cwd);
        }
        if !self.tick(nodes as u64) {
            return Flow::same(cwd);
        }
        self.depth += 1;
        let flow = self.seq(root, &text, cwd);
        self.depth -= 1;
        flow
    }

    /// Parse, removing the backslash-newline pairs bash removes before it reads words
    /// (tree-sitter treats them as blanks, bash joins the words around them).
    fn parse_joined(&mut self, src: &str) -> Option<(String, Tree)> {
        let mut text = src.to_string();
        for _ in 0..4 {
            let Some(tree) = parse(&text) else {
                self.refuse(
                    src,
                    "the bash parser failed",
                    "retry with a simpler command",
                );
                return None;
            };
            let cuts = continuations(&tree, &text);
            match cuts {
                Err(at) => {
                    self.refuse(
                        &at,
                        "a backslash-newline inside $'…' cannot be checked",
                        "write the string on one line",
                    );
                    return None;
                }
                Ok(cuts) if cuts.is_empty() => return Some((text, tree)),
                Ok(cuts) => {
                    let mut out = String::with_capacity(text.len());
                    let mut last = 0;
                    for c in cuts {
                        out.push_str(&text[last..c]);
                        last = c + 2;
                    }
                    out.push_str(&text[last..]);
                    text = out;
                }
            }
        }
        self.refuse(
            src,
            "too many line continuations to check",
            "write the command without backslash-newlines",
        );
        None
    }

    /// The statements that are children of `node`, in order.
    pub fn seq(&mut self, node: Node, src: &str, cwd: &Cwd) -> Flow {
        let mut flow = Flow::same(cwd);
        let mut cur = node.walk();
        for child in node.named_children(&mut cur) {
            if child.kind() == "comment" {
                continue;
            }
            let start = flow.any();
            flow = self.stmt(child, src, &start);
        }
        flow
    }

    fn stmt(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        if !self.tick(1) {
            return Flow::same(cwd);
        }
        let text = &src[n.byte_range()];
        match n.kind() {
            "command" => self.command(n, src, cwd),
            "list" => {
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
                    return self.unsupported(text, "list", cwd);
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
            "pipeline" => {
                let mut cur = n.walk();
                for child in n.named_children(&mut cur) {
                    self.stmt(child, src, cwd);
                }
                Flow::same(cwd)
            }
            "subshell" => {
                self.scoped(|c| c.seq(n, src, cwd));
                Flow::same(cwd)
            }
            "compound_statement" => {
                let arithmetic = n.child(0).is_some_and(|c| c.kind() == "((");
                if arithmetic {
                    self.scan(n, src, cwd, true);
                    Flow::same(cwd)
                } else {
                    self.seq(n, src, cwd)
                }
            }
            "redirected_statement" => {
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
            "negated_command" => {
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
            "if_statement" => self.if_statement(n, src, cwd),
            "while_statement" => {
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
            "for_statement" => {
                let values: Vec<Node> = {
                    let mut cur = n.walk();
                    n.children_by_field_name("value", &mut cur).collect()
                };
                let mut plain = true;
                for v in values {
                    let w = self.word(v, src, cwd, false);
                    // Plain words, or `$(seq N [M [K]])` with numbers only (seq -f
                    // could print anything).
                    let seq_numbers = matches!(&w.only, Some(crate::word::Dynamic::Substitution(inner))
                        if inner.split_whitespace().next() == Some("seq")
                            && inner.split_whitespace().skip(1).all(|a| a.parse::<f64>().is_ok()));
                    plain &= seq_numbers
                        || w.literal().is_some_and(|l| {
                            l.chars().all(|c| {
                                c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '+')
                            })
                        });
                }
                if let Some(v) = n.child_by_field_name("variable") {
                    let name = src[v.byte_range()].to_string();
                    self.assigned_var(&name, None, text);
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
            "c_style_for_statement" => {
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
            "case_statement" => {
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
            "function_definition" => {
                let name = n
                    .child_by_field_name("name")
                    .map(|x| src[x.byte_range()].to_string())
                    .unwrap_or_default();
                if !name.chars().all(|c| {
                    c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' || c == ':'
                }) || name.is_empty()
                {
                    self.refuse(
                        text,
                        "function names must be plain words",
                        "name the function with letters, digits and _",
                    );
                }
                let before = self.cd_count;
                self.functions.insert(name.clone(), true);
                let mut cur = n.walk();
                for child in n.named_children(&mut cur) {
                    match child.kind() {
                        "word" => {}
                        "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                            self.redirect(child, src, &Cwd::Unknown);
                        }
                        _ => {
                            self.scoped(|c| c.stmt(child, src, &Cwd::Unknown));
                        }
                    }
                }
                let changes = self.cd_count != before;
                self.functions.insert(name, changes);
                Flow::same(cwd)
            }
            "variable_assignment" => {
                self.assignment(n, src, cwd, true);
                Flow::same(cwd)
            }
            "variable_assignments" => {
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
            "declaration_command" => {
                self.declaration(n, src, cwd);
                Flow::same(cwd)
            }
            "unset_command" => {
                self.scan(n, src, cwd, false);
                Flow::same(cwd)
            }
            "test_command" => {
                self.scan(n, src, cwd, false);
                // `[[ … ]]` evaluates arithmetic comparisons and `-v` subscripts;
                // `[ … ]` is the test builtin (judged as a command elsewhere).
                if n.child(0).is_some_and(|c| c.kind() == "[[") {
                    self.test_operands(n, src);
                } else {
                    self.test_single_bracket(n, src);
                }
                Flow::same(cwd)
            }
            "comment" => Flow::same(cwd),
            other => self.unsupported(text, other, cwd),
        }
    }

    fn unsupported(&mut self, text: &str, kind: &str, cwd: &Cwd) -> Flow {
        self.refuse(
            text,
            format!(
                "baton does not check the shell construct `{kind}`, so it cannot prove it safe"
            ),
            "use plain commands joined with &&, ||, ;, | and ordinary if/for/while/case",
        );
        Flow::same(cwd)
    }

    /// Run `f` with variables restored afterwards (a subshell or substitution).
    pub fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let vars = self.vars.clone();
        let out = f(self);
        // Assignments inside a subshell do not reach the parent; but be conservative
        // about any variable the subshell assigned: unknown afterwards.
        let changed: Vec<String> = self
            .vars
            .keys()
            .filter(|k| vars.get(*k) != self.vars.get(*k))
            .cloned()
            .collect();
        let mut restored = vars;
        for k in changed {
            restored.insert(k, None);
        }
        self.vars = restored;
        out
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

    fn if_statement(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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

    /// Visit everything under an expression node: words are evaluated (and checked),
    /// substitutions are checked as commands.
    pub fn scan(&mut self, n: Node, src: &str, cwd: &Cwd, arithmetic: bool) {
        if !self.tick(1) {
            return;
        }
        match n.kind() {
            "word" if arithmetic && crate::hidden::is_ident(&src[n.byte_range()]) => {
                // `i < n` in `for ((…))`: a variable read as arithmetic.
                let name = src[n.byte_range()].to_string();
                let part = n.parent().map_or(src, |p| &src[p.byte_range()]).to_string();
                self.arith_var(&name, &part, 0);
            }
            "simple_expansion" | "expansion" if arithmetic => {
                let text = &src[n.byte_range()];
                let name = text
                    .trim_start_matches('$')
                    .trim_start_matches('{')
                    .trim_end_matches('}');
                if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    let part = n
                        .parent()
                        .map_or(text, |p| &src[p.byte_range()])
                        .to_string();
                    self.arith_var(name, &part, 0);
                }
                self.word(n, src, cwd, false);
            }
            "word"
            | "string"
            | "raw_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
            | "ansi_c_string"
            | "command_substitution"
            | "process_substitution"
            | "translated_string"
            | "brace_expression"
            | "number"
            | "extglob_pattern" => {
                self.word(n, src, cwd, false);
            }
            "arithmetic_expansion" => {
                self.scan_children(n, src, cwd, true);
            }
            "variable_name" if arithmetic => {
                // An assignment inside arithmetic: ((PATH=1)), let IFS=1.
                if let Some(p) = n.parent()
                    && p.kind() == "binary_expression"
                    && p.child_by_field_name("left")
                        .is_some_and(|l| l.id() == n.id())
                    && p.child(1).is_some_and(|op| {
                        op.kind().ends_with('=') && !matches!(op.kind(), "==" | "!=" | "<=" | ">=")
                    })
                {
                    let name = src[n.byte_range()].to_string();
                    self.assigned_var(&name, None, &src[p.byte_range()]);
                    // The result of arithmetic is a number.
                    self.arith_safe.insert(name);
                } else if !n.parent().is_some_and(|p| {
                    p.kind() == "subscript"
                        && p.child_by_field_name("name")
                            .is_some_and(|x| x.id() == n.id())
                }) {
                    // A variable read as arithmetic (not the array name of a subscript).
                    let name = src[n.byte_range()].to_string();
                    let part = n.parent().map_or(src, |p| &src[p.byte_range()]).to_string();
                    self.arith_var(&name, &part, 0);
                }
            }
            "comment"
            | "test_operator"
            | "file_descriptor"
            | "heredoc_start"
            | "heredoc_end"
            | "special_variable_name"
            | "variable_name" => {}
            "regex" => {}
            "subscript" => self.scan_children(n, src, cwd, true),
            _ => self.scan_children(n, src, cwd, arithmetic),
        }
    }

    fn scan_children(&mut self, n: Node, src: &str, cwd: &Cwd, arithmetic: bool) {
        let mut cur = n.walk();
        for child in n.named_children(&mut cur) {
            self.scan(child, src, cwd, arithmetic);
        }
    }

    /// Evaluate a word node, check what is inside it (substitutions run as
    /// commands), and judge it as a possible path (secrets, sockets).
    pub fn word(&mut self, n: Node, src: &str, cwd: &Cwd, assignment: bool) -> Word {
        if !self.tick(1) {
            return Word {
                chars: vec![Ch::Dyn],
                text: src[n.byte_range()].to_string(),
                only: None,
                quoted_dyn_only: false,
            };
        }
        let mut chars = Vec::new();
        let mut only = None;
        self.word_parts(n, src, cwd, false, &mut chars, &mut only);
        let text = src[n.byte_range()].to_string();
        let single_dyn = chars.len() == 1 && chars[0] == Ch::Dyn;
        let mut w = Word {
            chars,
            text,
            only: if single_dyn { only } else { None },
            quoted_dyn_only: false,
        };
        self.expand_tilde(&mut w, cwd, assignment);
        self.judge_word(&w, cwd);
        w
    }

    fn word_parts(
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

    fn var_value(&self, name: &str, in_dquote: bool, out: &mut Vec<Ch>) {
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

    fn expansion(&mut self, n: Node, src: &str, cwd: &Cwd, in_dquote: bool, out: &mut Vec<Ch>) {
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
        for k in &kids {
            if k.is_named() && k.kind() != "variable_name" {
                self.scan(*k, src, cwd, false);
            }
        }
        // ${NAME} alone is the variable's value.
        let plain = kids.len() == 3 && name.is_some() && ops == ["${", "}"];
        match (plain, name) {
            (true, Some(name)) => self.var_value(&name, in_dquote, out),
            _ => out.push(Ch::Dyn),
        }
    }

    fn expand_tilde(&self, w: &mut Word, cwd: &Cwd, assignment: bool) {
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
    fn judge_word(&mut self, w: &Word, cwd: &Cwd) {
        let words = crate::word::brace_words(&w.chars);
        if words > crate::word::MAX_BRACE_WORDS {
            self.refuse(
                &w.text,
                format!("this brace expansion makes bash produce {words} words (more than {}), which exhausts memory", crate::word::MAX_BRACE_WORDS),
                "use a smaller range, or a loop: for ((i = 0; i < N; i++)); do …; done",
            );
            return;
        }
        let Some(patterns) = w.patterns() else {
            return;
        };
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
        let patterns = w.patterns()?;
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
        let patterns = w.patterns()?;
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

    fn declaration(&mut self, n: Node, src: &str, cwd: &Cwd) {
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

    fn command(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let text = &src[n.byte_range()];
        let mut name: Option<Word> = None;
        let mut args = Vec::new();
        let mut prefix = Vec::new();
        let mut cur = n.walk();
        let kids: Vec<(Option<&str>, Node)> = {
            let mut v = Vec::new();
            if cur.goto_first_child() {
                loop {
                    v.push((cur.field_name(), cur.node()));
                    if !cur.goto_next_sibling() {
                        break;
                    }
                }
            }
            v
        };
        for (field, k) in kids {
            if !k.is_named() {
                continue;
            }
            match (field, k.kind()) {
                (_, "variable_assignment") => prefix.push(k),
                (_, "file_redirect" | "heredoc_redirect" | "herestring_redirect") => {
                    self.redirect(k, src, cwd)
                }
                (Some("name"), _) => {
                    let inner = k.named_child(0).unwrap_or(k);
                    name = Some(self.word(inner, src, cwd, false));
                }
                (Some("argument"), _) => args.push(self.word(k, src, cwd, false)),
                (_, "comment") => {}
                (_, kind) => {
                    self.unsupported(&src[k.byte_range()], kind, cwd);
                }
            }
        }
        for a in prefix {
            self.assignment(a, src, cwd, false);
        }
        let Some(name) = name else {
            return Flow::same(cwd);
        };
        let Some(lit) = name.literal() else {
            self.refuse(
                text,
                format!("the command name {} is computed when the command runs, so baton cannot tell which program it starts", name.text),
                "write the program name literally (no $VARIABLES, $(…), globs or braces in the command name)",
            );
            return Flow::same(cwd);
        };
        let cmd = Cmd {
            name: lit,
            args,
            cwd: cwd.clone(),
            part: text.to_string(),
        };
        self.run(&cmd)
    }

    /// The directories `dir` names from each of `cwd`.
    pub fn cd_target(&self, dir: &str, cwd: &Cwd) -> Cwd {
        match cwd {
            Cwd::Unknown if !dir.starts_with('/') => Cwd::Unknown,
            Cwd::Unknown => Cwd::Known(vec![normalize_dir(Path::new("/"), dir)]),
            Cwd::Known(v) => {
                let mut out = Vec::new();
                for d in v {
                    let p = normalize_dir(d, dir);
                    let real = crate::places::real_path(&p);
                    if !out.contains(&p) {
                        out.push(p);
                    }
                    if !out.contains(&real) {
                        out.push(real);
                    }
                }
                Cwd::Known(out)
            }
        }
    }

    /// Check inline shell code (`bash -c`, `trap`, `git rebase --exec`).
    pub fn inline(&mut self, code: &Word, cwd: &Cwd, part: &str, what: &str) {
        match code.literal() {
            Some(src) => {
                let vars = std::mem::take(&mut self.vars);
                let funcs = std::mem::take(&mut self.functions);
                self.source(&src, cwd);
                self.vars = vars;
                self.functions = funcs;
            }
            None => self.refuse(
                part,
                format!("the code given to {what} is computed when the command runs, so baton cannot check it"),
                "write the inner command literally in single quotes, or run it directly",
            ),
        }
    }
}

fn normalize_dir(base: &Path, dir: &str) -> PathBuf {
    let joined = if dir.starts_with('/') {
        PathBuf::from(dir)
    } else {
        base.join(dir)
    };
    let mut out = PathBuf::from("/");
    for c in crate::places::comps(&joined) {
        out.push(c);
    }
    out
}

fn is_pattern_of(item: Node, k: Node) -> bool {
    let mut cur = item.walk();
    item.children_by_field_name("value", &mut cur)
        .any(|v| v.id() == k.id())
}

/// Unquoted word text: backslash escapes a character.
fn unquoted(text: &str, out: &mut Vec<Ch>) {
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
fn dquoted(text: &str, out: &mut Vec<Ch>) {
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
fn decode_ansi_c(text: &str) -> Option<String> {
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

/// Byte offsets of the backslash-newline pairs bash removes, or the text of a place
/// where one cannot be judged.
fn continuations(tree: &Tree, src: &str) -> Result<Vec<usize>, String> {
    let bytes = src.as_bytes();
    let mut cuts = Vec::new();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'\\' && bytes[i + 1] == b'\n' {
            // Count the backslashes before: an even run escapes itself.
            let mut k = i;
            while k > 0 && bytes[k - 1] == b'\\' {
                k -= 1;
            }
            if (i - k) % 2 == 0 {
                match literal_context(tree, src, i) {
                    Context::Code => cuts.push(i),
                    Context::Literal => {}
                    Context::AnsiC => {
                        return Err(src[..i]
                            .chars()
                            .rev()
                            .take(40)
                            .collect::<String>()
                            .chars()
                            .rev()
                            .collect());
                    }
                }
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    Ok(cuts)
}

enum Context {
    Code,
    Literal,
    AnsiC,
}

fn literal_context(tree: &Tree, src: &str, at: usize) -> Context {
    let Some(mut n) = tree.root_node().descendant_for_byte_range(at, at + 1) else {
        return Context::Code;
    };
    loop {
        match n.kind() {
            "raw_string" | "comment" => return Context::Literal,
            "ansi_c_string" => return Context::AnsiC,
            "heredoc_body" | "heredoc_content" => {
                let mut h = n;
                while h.kind() != "heredoc_redirect" {
                    match h.parent() {
                        Some(p) => h = p,
                        None => return Context::Code,
                    }
                }
                let quoted = h
                    .named_child(0)
                    .filter(|s| s.kind() == "heredoc_start")
                    .is_some_and(|s| src[s.byte_range()].contains(['\'', '"', '\\']));
                if quoted {
                    return Context::Literal;
                }
                return Context::Code;
            }
            _ => {}
        }
        match n.parent() {
            Some(p) => n = p,
            None => return Context::Code,
        }
    }
}

/// How many nodes a tree has and how deep it is, without recursion (stops counting
/// once either is past its limit).
fn tree_size(root: Node) -> (usize, usize) {
    let mut cur = root.walk();
    let (mut nodes, mut depth, mut deepest) = (1usize, 0usize, 0usize);
    loop {
        if depth <= MAX_TREE_DEPTH && cur.goto_first_child() {
            depth += 1;
            nodes += 1;
            deepest = deepest.max(depth);
        } else {
            loop {
                if cur.goto_next_sibling() {
                    nodes += 1;
                    break;
                }
                if !cur.goto_parent() {
                    return (nodes, deepest);
                }
                depth -= 1;
            }
        }
        if nodes > MAX_NODES || deepest > MAX_TREE_DEPTH {
            return (nodes, deepest);
        }
    }
}

fn first_error(root: Node, src: &str) -> (String, String) {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            let what = if n.is_missing() {
                format!("missing `{}`", n.kind())
            } else {
                "unexpected text".to_string()
            };
            let start = n.start_byte().saturating_sub(10);
            let start = (0..=start)
                .rev()
                .find(|i| src.is_char_boundary(*i))
                .unwrap_or(0);
            let end = (n.end_byte() + 10).min(src.len());
            let end = (end..=src.len())
                .find(|i| src.is_char_boundary(*i))
                .unwrap_or(src.len());
            let pos = n.start_position();
            return (
                format!("{what} at line {}, column {}", pos.row + 1, pos.column + 1),
                src[start..end].to_string(),
            );
        }
        let mut cur = n.walk();
        let kids: Vec<Node> = n.children(&mut cur).collect();
        for k in kids.into_iter().rev() {
            if k.has_error() || k.is_error() || k.is_missing() {
                stack.push(k);
            }
        }
    }
    ("an error".into(), short(src))
}
