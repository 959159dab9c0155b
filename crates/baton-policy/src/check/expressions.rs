//! Expressions: everything under a node that is not a statement (arithmetic,
//! `[[ … ]]` and `[ … ]` tests, `case` patterns), walked for its words,
//! substitutions and the variables arithmetic reads or sets.

use super::*;

impl Checker<'_> {
    /// `[[ … ]]` or `[ … ]` as a statement: its words, and what it evaluates.
    pub(super) fn test_command(&mut self, n: Node, src: &str, cwd: &Cwd) -> Flow {
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

    /// [`Checker::scan`] each named child of `n`.
    pub(super) fn scan_children(&mut self, n: Node, src: &str, cwd: &Cwd, arithmetic: bool) {
        let mut cur = n.walk();
        for child in n.named_children(&mut cur) {
            self.scan(child, src, cwd, arithmetic);
        }
    }
}
