//! The walk over a parsed command: every statement, word, redirection and
//! assignment, with the working directories each may run in.
//!
//! Here: parsing within limits, statements, control flow and commands. Around it:
//! `words` (how a word expands and what it names: secrets, writes, redirections),
//! `assign` (assignments and declarations) and `tree` (the parse tree's size,
//! errors and continuations).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use tree_sitter::{Node, Parser, Tree};

use crate::places::{Cwd, Place, Secret};
use crate::rules;
use crate::word::{Ch, Dynamic, Word};
use crate::{Policy, Refusal};

mod assign;
mod tree;
mod words;

use tree::{continuations, first_error, tree_size};

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
        deferred: 0,
        assigned: Vec::new(),
        defining: Vec::new(),
        defined_at: HashMap::new(),
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
    /// Inside code that runs later (a function body, a trap): variables may hold
    /// anything by the time it runs.
    pub deferred: usize,
    /// Names assigned inside code that runs later, in order (see [`Checker::later`]).
    pub assigned: Vec<String>,
    /// The functions whose bodies are being walked (a call to one is recursion).
    pub defining: Vec<String>,
    /// Where each function was defined (a second definition elsewhere is refused).
    pub defined_at: HashMap<String, usize>,
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

    /// One statement: handed by its kind to the function that checks it; the
    /// directories it may leave behind.
    fn stmt(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        if !self.tick(1) {
            return Flow::same(cwd);
        }
        match n.kind() {
            "command" => self.command(n, src, cwd),
            "list" => self.list(n, src, cwd),
            "pipeline" => self.pipeline(n, src, cwd),
            "subshell" => {
                self.scoped(|c| c.seq(n, src, cwd));
                Flow::same(cwd)
            }
            "compound_statement" => self.compound(n, src, cwd),
            "redirected_statement" => self.redirected(n, src, cwd),
            "negated_command" => self.negated(n, src, cwd),
            "if_statement" => self.if_statement(n, src, cwd),
            "while_statement" => self.while_loop(n, src, cwd),
            "for_statement" => self.for_loop(n, src, cwd),
            "c_style_for_statement" => self.c_style_for(n, src, cwd),
            "case_statement" => self.case_statement(n, src, cwd),
            "function_definition" => self.function_definition(n, src, cwd),
            "variable_assignment" => {
                self.assignment(n, src, cwd, true);
                Flow::same(cwd)
            }
            "variable_assignments" => self.assignments(n, src, cwd),
            "declaration_command" => {
                self.declaration(n, src, cwd);
                Flow::same(cwd)
            }
            "unset_command" => self.unset_command(n, src, cwd),
            "test_command" => self.test_command(n, src, cwd),
            "comment" => Flow::same(cwd),
            other => self.unsupported(&src[n.byte_range()], other, cwd),
        }
    }

    /// `a && b`, `a || b`, `a; b` or `a & b` as one list: the second runs in the
    /// directories the first leaves when it succeeded, failed, or either.
    fn list(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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
    fn pipeline(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let mut cur = n.walk();
        for child in n.named_children(&mut cur) {
            self.stmt(child, src, cwd);
        }
        Flow::same(cwd)
    }

    /// `{ …; }` as a group of statements, or `(( … ))` as arithmetic.
    fn compound(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let arithmetic = n.child(0).is_some_and(|c| c.kind() == "((");
        if arithmetic {
            self.scan(n, src, cwd, true);
            Flow::same(cwd)
        } else {
            self.seq(n, src, cwd)
        }
    }

    /// A statement with redirections after it (`… > file`, `… <<EOF`).
    fn redirected(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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
    fn negated(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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

    /// `while cond; do body; done` (and `until`): the condition and the body,
    /// rounds until the directories stop growing.
    fn while_loop(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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
    fn for_loop(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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
    fn c_style_for(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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
    fn case_statement(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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

    /// `name() { body; }`: the name must be plain and defined once (no fork
    /// bombs); the body is code that runs later, from any directory. Records
    /// whether calling the function may change directory.
    fn function_definition(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
        let text = &src[n.byte_range()];
        let name = n
            .child_by_field_name("name")
            .map(|x| src[x.byte_range()].to_string())
            .unwrap_or_default();
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' || c == ':')
            || name.is_empty()
        {
            self.refuse(
                text,
                "function names must be plain words",
                "name the function with letters, digits and _",
            );
        }
        // A function that calls itself, or one redefined so that functions
        // call each other in a loop, can start processes without end (`:(){
        // :|:& };:`): a fork bomb reaches past the run's sandbox (the
        // user's process limit is shared).
        let at = n.start_byte();
        if self
            .defined_at
            .insert(name.clone(), at)
            .is_some_and(|was| was != at)
        {
            self.refuse(
                text,
                format!("the function {name} is defined twice; a redefined function can make functions call each other without end (a fork bomb)"),
                "define each function once, under its own name, and do not call a function from its own body",
            );
        }
        let before = self.cd_count;
        self.functions.insert(name.clone(), true);
        self.defining.push(name.clone());
        let mut cur = n.walk();
        for child in n.named_children(&mut cur) {
            match child.kind() {
                "word" => {}
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                    self.redirect(child, src, &Cwd::Unknown);
                }
                _ => {
                    self.scoped(|c| c.later(|c| c.stmt(child, src, &Cwd::Unknown)));
                }
            }
        }
        self.defining.pop();
        let changes = self.cd_count != before;
        self.functions.insert(name, changes);
        Flow::same(cwd)
    }

    /// Several assignments as one statement (`A=1 B=2`), and whatever else the
    /// parser put among them.
    fn assignments(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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
    fn unset_command(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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

    /// `[[ … ]]` or `[ … ]` as a statement: its words, and what it evaluates.
    fn test_command(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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

    /// Check code that runs later (a function body, a trap's code): every variable
    /// is unknown inside, and only those the code itself sets count as safe in
    /// arithmetic ([`Checker::arith_var`]).
    pub fn later<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let vars = self.vars.clone();
        for v in self.vars.values_mut() {
            *v = None;
        }
        let safe = std::mem::take(&mut self.arith_safe);
        self.deferred += 1;
        let mark = self.assigned.len();
        let out = f(self);
        self.deferred -= 1;
        self.arith_safe = safe;
        // What the code sets is unknown afterwards (it may or may not have run).
        let mut restored = vars;
        for k in self.assigned.drain(mark..) {
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
            // An expansion, a quoted string or a substitution in arithmetic: bash
            // evaluates the value it gives as an expression in turn.
            "simple_expansion" | "expansion" | "string" | "command_substitution" if arithmetic => {
                let text = &src[n.byte_range()];
                let part = n
                    .parent()
                    .map_or(text, |p| &src[p.byte_range()])
                    .to_string();
                self.arith_inside(n, src, &part);
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
                    // `n += 1` reads n's value first (evaluated as arithmetic).
                    if p.child(1).is_some_and(|op| op.kind() != "=") {
                        self.arith_var(&name, &src[p.byte_range()], 0);
                    }
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
            // `for ((i = 0; …))`: an assignment of arithmetic.
            "variable_assignment" if arithmetic => {
                if let Some(v) = n.child_by_field_name("value") {
                    self.scan(v, src, cwd, true);
                }
                if let Some(name) = n.child_by_field_name("name")
                    && name.kind() == "variable_name"
                {
                    let name = src[name.byte_range()].to_string();
                    self.assigned_var(&name, None, &src[n.byte_range()]);
                    self.arith_safe.insert(name);
                } else {
                    self.scan_children(n, src, cwd, true);
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

    /// Check inline shell code (`bash -c`, `trap`, `git rebase --exec`). Variables
    /// this command set are unknown inside (exported or not, changed or not by
    /// then); a trap's code runs later ([`Checker::later`]).
    pub fn inline(&mut self, code: &Word, cwd: &Cwd, part: &str, what: &str) {
        match code.literal() {
            Some(src) => {
                let vars = self.vars.clone();
                for v in self.vars.values_mut() {
                    *v = None;
                }
                let funcs = std::mem::take(&mut self.functions);
                let defining = std::mem::take(&mut self.defining);
                let defined_at = std::mem::take(&mut self.defined_at);
                if what == "trap" {
                    self.later(|c| c.source(&src, cwd));
                } else {
                    self.source(&src, cwd);
                }
                self.vars = vars;
                self.functions = funcs;
                self.defining = defining;
                self.defined_at = defined_at;
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
