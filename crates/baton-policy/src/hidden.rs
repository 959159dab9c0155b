//! Code hidden where bash executes it although it looks like data: array subscripts
//! and arithmetic evaluate `$(…)` inside strings (`v='a[$(id)]'; echo $((v))`,
//! `[[ v -eq 0 ]]`, `printf -v 'a[$(id)]'`, `test -v`, `read`, `declare`, `let`),
//! prompt expansion (`${x@P}`). The builtins that reach these (`printf -v`, `test
//! -v`, `compgen -W`) are validated in `cmds::builtins`.

use tree_sitter::Node;

use crate::check::Checker;

/// Deepest chain of variables whose values refer to other variables in arithmetic.
const MAX_ARITH_DEPTH: usize = 8;

const ARITH_INSTEAD: &str = "give arithmetic only numbers or variables set to numbers in this command; compare computed values with [ \"$n\" -eq 0 ] (single brackets do not evaluate arithmetic) or expr";

pub(crate) fn is_ident(s: &str) -> bool {
    let mut it = s.chars();
    it.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && it.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Checker<'_> {
    /// A variable name bash will assign or look up (`printf -v NAME`, `read NAME`,
    /// `declare NAME=…`, `test -v NAME`): an array subscript in it is evaluated as
    /// arithmetic, which runs `$(…)` and backticks. Refuses what is not a plain name
    /// or a name with a plain subscript; returns whether it was accepted.
    pub fn var_name(&mut self, name: &str, part: &str) -> bool {
        let (base, sub) = match name.split_once('[') {
            Some((b, rest)) => match rest.strip_suffix(']') {
                Some(s) => (b, Some(s)),
                None => (name, Some(rest)),
            },
            None => (name, None),
        };
        if !is_ident(base) {
            self.refuse(
                part,
                format!("{name:?} is not a plain variable name; bash evaluates what follows the name as arithmetic, which can run commands"),
                "use plain variable names (letters, digits and _)",
            );
            return false;
        }
        match sub {
            None => true,
            Some(s) => self.arith_text(s, part, 0),
        }
    }

    /// Text bash evaluates as an arithmetic expression (a variable's value, an
    /// operand of `[[ a -eq b ]]`, a subscript): refused when it holds `$` or
    /// backticks, and every variable it names is checked in turn.
    pub fn arith_text(&mut self, text: &str, part: &str, depth: usize) -> bool {
        if depth > MAX_ARITH_DEPTH {
            self.refuse(
                part,
                "variables in arithmetic refer to each other too deeply to check",
                ARITH_INSTEAD,
            );
            return false;
        }
        if text.contains(['$', '`']) || text.contains("\\") {
            self.refuse(
                part,
                format!("bash evaluates {text:?} as arithmetic, and $(…), backticks or $VAR inside an array subscript there run commands"),
                ARITH_INSTEAD,
            );
            return false;
        }
        let mut ok = true;
        let mut ident = String::new();
        let mut prev_digit = false;
        for ch in text.chars().chain(std::iter::once(' ')) {
            if ch.is_ascii_alphanumeric() || ch == '_' {
                if ident.is_empty() && ch.is_ascii_digit() {
                    prev_digit = true;
                }
                if !prev_digit {
                    ident.push(ch);
                }
            } else {
                if !ident.is_empty() {
                    let name = std::mem::take(&mut ident);
                    ok &= self.arith_var(&name, part, depth + 1);
                }
                prev_digit = false;
            }
        }
        ok
    }

    /// A variable bash evaluates as arithmetic (`$((v))`, `((v > 1))`, `[[ v -eq 0 ]]`):
    /// its value is evaluated as an expression in turn, so a value such as
    /// `a[$(id)]` runs a command. Safe: variables not set in this command (baton's
    /// environment), values known to be plain arithmetic, and results of
    /// arithmetic; anything else set in this command is refused.
    pub fn arith_var(&mut self, name: &str, part: &str, depth: usize) -> bool {
        match self.vars.get(name).cloned() {
            None => true,
            Some(Some(v)) => self.arith_text(&v, part, depth),
            Some(None) if self.arith_safe.contains(name) => true,
            Some(None) => {
                self.refuse(
                    part,
                    format!("bash evaluates the value of {name} as arithmetic, and that value is computed when the command runs; a value like a[$(cmd)] would run cmd"),
                    ARITH_INSTEAD,
                );
                false
            }
        }
    }

    /// The operands of `[[ … ]]`: arithmetic comparisons (`-eq`, `-lt`, …) evaluate
    /// both sides as arithmetic; `-v NAME` looks up a possibly subscripted name.
    pub fn test_operands(&mut self, n: Node, src: &str) {
        self.test_walk(n, src, true);
    }

    /// The operands of `[ … ]`: `-v NAME` looks up a possibly subscripted name.
    pub fn test_single_bracket(&mut self, n: Node, src: &str) {
        self.test_walk(n, src, false);
    }

    fn test_walk(&mut self, n: Node, src: &str, double: bool) {
        if !self.tick(1) {
            return;
        }
        let part = &src[n.byte_range()];
        match n.kind() {
            "binary_expression" => {
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| src[o.byte_range()].to_string())
                    .unwrap_or_default();
                if double && matches!(op.as_str(), "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge") {
                    for side in ["left", "right"] {
                        if let Some(s) = n.child_by_field_name(side) {
                            self.arith_operand(s, src, part);
                        }
                    }
                    return;
                }
            }
            "unary_expression" => {
                let op = n.child(0).map(|o| src[o.byte_range()].to_string());
                if op.as_deref() == Some("-v")
                    && let Some(arg) = n.named_child(n.named_child_count().saturating_sub(1))
                {
                    let text = unquote(&src[arg.byte_range()]);
                    match text {
                        Some(t) => {
                            self.var_name(&t, part);
                        }
                        None => self.refuse(
                            part,
                            "-v with a computed name: bash evaluates a subscript in it as arithmetic",
                            "test a plain variable name: [[ -v NAME ]]",
                        ),
                    }
                    return;
                }
            }
            _ => {}
        }
        let mut cur = n.walk();
        let kids: Vec<Node> = n.named_children(&mut cur).collect();
        for k in kids {
            self.test_walk(k, src, double);
        }
    }

    fn arith_operand(&mut self, n: Node, src: &str, part: &str) {
        let text = &src[n.byte_range()];
        match n.kind() {
            "simple_expansion" | "expansion" => {
                let name = text
                    .trim_start_matches('$')
                    .trim_start_matches('{')
                    .trim_end_matches('}');
                if is_ident(name) {
                    self.arith_var(name, part, 0);
                } else if name.starts_with('#') {
                    // ${#x}, ${#a[@]}: a length is a number.
                } else if !matches!(name, "#" | "?" | "$" | "!" | "-") && !name.chars().all(|c| c.is_ascii_digit()) {
                    self.refuse(
                        part,
                        format!("bash evaluates the expansion {text} as arithmetic, which can run commands"),
                        ARITH_INSTEAD,
                    );
                }
            }
            "string" if n.named_child_count() == 1 => {
                if let Some(k) = n.named_child(0) {
                    self.arith_operand(k, src, part);
                }
            }
            _ => match unquote(text) {
                Some(t) => {
                    self.arith_text(&t, part, 0);
                }
                None => self.refuse(
                    part,
                    format!("bash evaluates {text} as arithmetic, and its value is computed when the command runs"),
                    ARITH_INSTEAD,
                ),
            },
        }
    }
}

/// The literal text of a `[[ ]]` operand: unquoted words and single- or
/// double-quoted strings without expansions.
fn unquote(text: &str) -> Option<String> {
    if let Some(inner) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        return Some(inner.to_string());
    }
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        return (!inner.contains(['$', '`', '\\'])).then(|| inner.to_string());
    }
    (!text.contains(['$', '`', '\\', '"', '\'', '(', ')'])).then(|| text.to_string())
}
