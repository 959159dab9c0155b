//! The walk over a parsed command: every statement, word, redirection and
//! assignment, with the working directories each may run in.
//!
//! Here: parsing within limits, the checker's state, statements (handed by kind
//! to the function that checks each) and simple commands. Around it: `control`
//! (lists, pipelines, `if`, loops, `case`), `scopes` (subshells, code that runs
//! later, inline `bash -c` code, function definitions), `expressions`
//! (arithmetic and tests), `words` (how a word expands and what it names:
//! secrets, writes, redirections), `assign` (assignments, declarations and
//! `unset`) and `tree` (the parse tree's size, errors and continuations).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use tree_sitter::{Node, Parser, Tree};

use crate::places::{Cwd, Place, Secret};
use crate::rules;
use crate::word::{Ch, Dynamic, Word};
use crate::{Policy, Refusal};

mod assign;
mod control;
mod expressions;
mod scopes;
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

/// Parse shell source with this thread's bash parser (made on first use).
pub(crate) fn parse(src: &str) -> Option<Tree> {
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
    /// The same directories whether the statement succeeded or failed.
    pub fn same(cwd: &Cwd) -> Flow {
        Flow {
            ok: cwd.clone(),
            fail: cwd.clone(),
        }
    }
    /// The directories after the statement, whichever way it ended.
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

/// The walk over one command: the policy it judges by, the refusals found so far,
/// and what it has learned on the way (variables, functions, work spent).
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

/// A part of a command as quoted in a refusal: trimmed, and cut to [`PART_MAX`]
/// characters.
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
    /// Refuse `part` of the command, saying why and what to do instead (at most
    /// [`MAX_REFUSALS`] are kept).
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

    /// Refuse a shell construct the checker does not judge.
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

    /// A simple command: its prefix assignments and redirections, its words, then
    /// the program it runs, judged by [`Checker::run`].
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
}

/// `dir` (absolute, or relative to `base`) as an absolute path without `.` or `..`.
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
