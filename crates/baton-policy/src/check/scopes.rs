//! Code checked in a scope of its own: a subshell (`scoped`), code that runs later
//! (`later`: function bodies, traps), inline shell code (`inline`: `bash -c`,
//! `trap`), and function definitions.

use super::*;

impl Checker<'_> {
    /// `name() { body; }`: the name must be plain and defined once (no fork
    /// bombs); the body is code that runs later, from any directory. Records
    /// whether calling the function may change directory.
    pub(super) fn function_definition(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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
