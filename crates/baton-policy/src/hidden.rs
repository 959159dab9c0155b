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

    /// A variable bash evaluates as arithmetic (`$((v))`, `((v > 1))`, `[[ v -eq 0 ]]`,
    /// `${s:v}`): its value is evaluated as an expression in turn, so a value such
    /// as `a[$(id)]` runs a command. Safe: variables not set in this command
    /// (baton's environment), values known to be plain arithmetic, and results of
    /// arithmetic; anything else set in this command is refused, and so are
    /// positional parameters and `$_` (whatever a caller or the previous command
    /// passed), and, in a function body or trap, any variable the body did not set
    /// itself (the code runs later, when it may hold anything).
    pub fn arith_var(&mut self, name: &str, part: &str, depth: usize) -> bool {
        if !is_ident(name) || name == "_" {
            if matches!(name, "#" | "?" | "$" | "!" | "-") {
                return true;
            }
            self.refuse(
                part,
                format!("bash evaluates ${name} as arithmetic, and it holds whatever a caller or the previous command passed; a value like a[$(cmd)] would run cmd"),
                ARITH_INSTEAD,
            );
            return false;
        }
        match self.vars.get(name).cloned() {
            None if self.deferred > 0 => {
                self.refuse(
                    part,
                    format!("bash evaluates the value of {name} as arithmetic when this function or trap runs, and {name} may be set to anything by then; a value like a[$(cmd)] would run cmd"),
                    "in functions and traps, give arithmetic only numbers or variables the function sets itself to numbers",
                );
                false
            }
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

    /// `$(…)` inside arithmetic: bash evaluates its output as an expression, so
    /// output like `a[$(cmd)]` (from a file, a file name…) runs cmd. Allowed only
    /// for programs that print numbers: `wc` reading its input, `nproc`,
    /// `date +%s`, `id -u`/`-g`, `seq` and `echo` of numbers.
    pub fn arith_substitution(&mut self, text: &str, part: &str) {
        let inner = text
            .strip_prefix("$(")
            .and_then(|t| t.strip_suffix(')'))
            .or_else(|| text.strip_prefix('`').and_then(|t| t.strip_suffix('`')))
            .unwrap_or(text);
        if !prints_a_number(inner) {
            self.refuse(
                part,
                format!("bash evaluates the output of {text} as arithmetic, and output like a[$(cmd)] (from a file or a file name) would run cmd"),
                "count with wc reading its input ($(wc -l < file)), or keep the value as text and compare it with [ \"$n\" -eq 0 ] (single brackets do not evaluate arithmetic)",
            );
        }
    }

    /// The variables and substitutions whose values bash evaluates when the
    /// expansion `n` appears in arithmetic (`$((x))`, `$(( ${x:-0} ))`,
    /// `$(( "$x" ))`, `$(( $(cat f) ))`).
    pub fn arith_inside(&mut self, n: Node, src: &str, part: &str) {
        if !self.tick(1) {
            return;
        }
        let text = &src[n.byte_range()];
        match n.kind() {
            "variable_name" | "special_variable_name" => {
                self.arith_var(text, part, 0);
            }
            "word" if is_ident(text) => {
                self.arith_var(text, part, 0);
            }
            "command_substitution" => self.arith_substitution(text, part),
            "expansion" => {
                let mut cur = n.walk();
                let kids: Vec<Node> = n.children(&mut cur).collect();
                let op = kids.get(1).filter(|k| !k.is_named()).map(|k| k.kind());
                // `${#x}`: a length is a number.
                if op == Some("#") {
                    return;
                }
                // `${!x}`: the variable x names (judged as indirection too).
                if op == Some("!") {
                    if let Some(v) = kids.iter().find(|k| k.kind() == "variable_name") {
                        let target = self.vars.get(&src[v.byte_range()]).cloned().flatten();
                        match target {
                            Some(t) if is_ident(&t) => {
                                self.arith_var(&t, part, 0);
                            }
                            _ => self.refuse(
                                part,
                                format!("bash evaluates {text} as arithmetic, and which variable it expands is computed when the command runs"),
                                ARITH_INSTEAD,
                            ),
                        }
                    }
                    return;
                }
                for k in kids.iter().filter(|k| k.is_named()) {
                    match k.kind() {
                        // `${a[i]}`: the element's value (the subscript is
                        // arithmetic of its own, judged with the word).
                        "subscript" => {
                            if let Some(base) = k.child_by_field_name("name") {
                                self.arith_var(&src[base.byte_range()], part, 0);
                            }
                        }
                        _ => self.arith_inside(*k, src, part),
                    }
                }
            }
            _ => {
                let mut cur = n.walk();
                let kids: Vec<Node> = n.named_children(&mut cur).collect();
                for k in kids {
                    self.arith_inside(k, src, part);
                }
            }
        }
    }

    /// `${!x}` (the kids of the expansion): the value of x is a variable name,
    /// possibly with a subscript bash evaluates as arithmetic. Allowed: `${!x*}`,
    /// `${!x@}` (names), `${!a[@]}` (keys), `${!#}` (the last argument), and x set
    /// in this command to a plain name (or one with a plain subscript).
    pub fn indirect(&mut self, kids: &[Node], src: &str, part: &str) {
        let ops: Vec<&str> = kids
            .iter()
            .filter(|k| !k.is_named())
            .map(|k| k.kind())
            .collect();
        if matches!(ops.as_slice(), ["${", "!", "*" | "@", "}"]) {
            return;
        }
        let Some(target) = kids.iter().find(|k| k.is_named()) else {
            return;
        };
        let name = &src[target.byte_range()];
        let refuse = |c: &mut Self, why: String| {
            c.refuse(
                part,
                format!("{why}; bash expands the variable that value names, and a value like a[$(cmd)] runs cmd"),
                "expand variables directly (\"${NAME}\"), or set the name in this command: x=NAME; echo \"${!x}\"",
            );
        };
        match target.kind() {
            "subscript" => {
                let index = target
                    .child_by_field_name("index")
                    .map(|i| &src[i.byte_range()]);
                if ops == ["${", "!", "}"] && matches!(index, Some("@" | "*")) {
                    return;
                }
                refuse(
                    self,
                    format!(
                        "{part} takes a variable name from an array element, whose value is not known here"
                    ),
                );
            }
            "special_variable_name" => {
                if !matches!(name, "#" | "?" | "$" | "!") {
                    refuse(
                        self,
                        format!(
                            "{part} takes a variable name from ${name}, which holds whatever a caller passed"
                        ),
                    );
                }
            }
            _ => match self.vars.get(name).cloned() {
                Some(Some(v)) => {
                    self.var_name(&v, part);
                }
                _ if self.deferred == 0 && name == "_" => {
                    refuse(
                        self,
                        format!(
                            "{part} takes a variable name from $_, the previous command's last argument"
                        ),
                    );
                }
                Some(None) => refuse(
                    self,
                    format!(
                        "{part} takes a variable name from {name}, whose value is computed when the command runs"
                    ),
                ),
                None => refuse(
                    self,
                    format!(
                        "{part} takes a variable name from {name}, whose value is not set in this command"
                    ),
                ),
            },
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
                } else if matches!(name, "_" | "@" | "*" | "0") || name.chars().all(|c| c.is_ascii_digit()) {
                    self.arith_var(name, part, 0);
                } else if !matches!(name, "#" | "?" | "$" | "!" | "-") {
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
            "command_substitution" => self.arith_substitution(text, part),
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

/// Whether the command `inner` (of a `$(…)`) prints only a number: `wc` reading
/// its input (at the end of a pipeline or from `<`), `nproc`, `date +%s`,
/// `id -u`/`-g`, `seq` and `echo` of numbers. Nothing that prints names.
fn prints_a_number(inner: &str) -> bool {
    let inner = inner.trim();
    if inner.contains([
        '$', '`', '\'', '"', '\\', ';', '&', '(', ')', '>', '\n', '*', '?', '[',
    ]) {
        return false;
    }
    let last = inner.rsplit('|').next().unwrap_or(inner);
    let (cmd, input) = match last.split_once('<') {
        Some((c, file)) => (c, Some(file.trim())),
        None => (last, None),
    };
    if input.is_some_and(|f| f.is_empty() || f.contains(char::is_whitespace)) {
        return false;
    }
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let number = |w: &&str| w.parse::<f64>().is_ok();
    match words.as_slice() {
        ["wc", opts @ ..] => opts.iter().all(|o| {
            matches!(
                *o,
                "-l" | "-c" | "-w" | "-m" | "-L" | "--lines" | "--bytes" | "--words" | "--chars"
            )
        }),
        ["nproc"] | ["date", "+%s"] | ["id", "-u" | "-g"] => input.is_none(),
        ["seq" | "echo", args @ ..] => {
            input.is_none() && !args.is_empty() && args.iter().all(number)
        }
        _ => false,
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
