//! Code hidden where bash executes it although it looks like data: array subscripts
//! and arithmetic evaluate `$(…)` inside strings (`v='a[$(id)]'; echo $((v))`,
//! `[[ v -eq 0 ]]`, `printf -v 'a[$(id)]'`, `test -v`, `read`, `declare`, `let`),
//! prompt expansion (`${x@P}`), `compgen -W`, and options of compilers that run
//! another program (`gcc -wrapper`, `-fplugin`, `-B`, `-specs`, `@file`).

use tree_sitter::Node;

use crate::check::Checker;
use crate::check::Cmd;

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

    /// `printf -v NAME`: an assignment to NAME.
    pub fn printf(&mut self, c: &Cmd) {
        let mut i = 0;
        while let Some(w) = c.args.get(i) {
            let Some(l) = w.literal() else { break };
            if l == "--" || !l.starts_with('-') {
                break;
            }
            if let Some(rest) = l.strip_prefix("-v") {
                let name = if rest.is_empty() {
                    i += 1;
                    c.args.get(i).map(|w| w.literal())
                } else {
                    Some(Some(rest.to_string()))
                };
                match name {
                    Some(Some(n)) => {
                        if self.var_name(&n, &c.part) {
                            let base = n.split('[').next().unwrap_or(&n).to_string();
                            self.assigned_var(&base, None, &c.part);
                        }
                    }
                    _ => self.refuse(
                        &c.part,
                        "printf -v into a computed variable name",
                        "name the variable literally",
                    ),
                }
            }
            i += 1;
        }
    }

    /// `test` / `[`: `-v NAME` looks up a possibly subscripted name.
    pub fn test_builtin(&mut self, c: &Cmd) {
        for pair in c.args.windows(2) {
            if pair[0].literal().as_deref() == Some("-v") {
                match pair[1].literal() {
                    Some(n) => {
                        self.var_name(&n, &c.part);
                    }
                    None => self.refuse(
                        &c.part,
                        "test -v with a computed name: bash evaluates a subscript in it as arithmetic",
                        "test a plain variable name: test -v NAME",
                    ),
                }
            }
        }
    }

    /// `compgen`: `-W WORDS` expands WORDS again (running `$(…)`), `-C` runs a
    /// command and `-F` a function.
    pub fn compgen(&mut self, c: &Cmd) {
        let mut it = c.args.iter();
        while let Some(w) = it.next() {
            let Some(l) = w.literal() else {
                self.refuse(
                    &c.part,
                    "compgen with a computed option",
                    "write compgen's options literally",
                );
                continue;
            };
            if !l.starts_with('-') || l == "--" {
                continue;
            }
            if l.contains('C') || l.contains('F') {
                self.refuse(
                    &c.part,
                    "compgen -C/-F runs a command or function",
                    "list names with compgen -c, -b or -v",
                );
            } else if l.contains('W') {
                let words = if l.len() > 2 && l.starts_with("-W") {
                    Some(l[2..].to_string())
                } else {
                    it.next().and_then(|w| w.literal())
                };
                if words.is_none_or(|s| s.contains(['$', '`'])) {
                    self.refuse(
                        &c.part,
                        "compgen -W expands its word list again, so $(…) or backticks in it run commands",
                        "give compgen -W a plain list of words",
                    );
                }
            }
        }
    }

    /// `ps`: the `e` (BSD) and `-E`/environment output options print other
    /// processes' environments, which hold API keys.
    pub fn ps(&mut self, c: &Cmd) {
        let mut value_next = false;
        let mut format_next = false;
        for w in &c.args {
            if std::mem::take(&mut value_next) {
                // The value of -o/-p/-u/…: a format or a list, not options.
                if w.literal()
                    .is_some_and(|l| l.to_ascii_lowercase().contains("env"))
                    || (w.literal().is_none() && format_next)
                {
                    self.refuse(
                        &c.part,
                        "this ps format could show other processes' environments, which hold credentials",
                        "list processes without environments: ps aux, ps -ef, ps -o pid,user,args",
                    );
                }
                continue;
            }
            if let Some(l) = w.literal() {
                format_next = matches!(l.as_str(), "-o" | "-O" | "--format")
                    || (!l.starts_with('-')
                        && l.chars().all(|ch| ch.is_ascii_alphabetic())
                        && l.ends_with(['o', 'O']));
                value_next = matches!(
                    l.as_str(),
                    "-o" | "-O"
                        | "-p"
                        | "-u"
                        | "-U"
                        | "-C"
                        | "-G"
                        | "-g"
                        | "-t"
                        | "-s"
                        | "-q"
                        | "--format"
                        | "--pid"
                        | "--user"
                        | "--sort"
                        | "--ppid"
                        | "--sid"
                        | "--cols"
                        | "--columns"
                        | "--rows"
                        | "--width"
                ) || (!l.starts_with('-')
                    && l.chars().all(|ch| ch.is_ascii_alphabetic())
                    && l.ends_with(['o', 'O', 'p', 'U', 't', 'k']));
            }
            let Some(l) = w.literal() else {
                self.refuse(
                    &c.part,
                    "ps with a computed option could print other processes' environments",
                    "write ps's options literally: ps aux, ps -ef",
                );
                continue;
            };
            let bsd = !l.starts_with('-') && l.chars().all(|ch| ch.is_ascii_alphabetic());
            let env_out = (bsd && l.contains('e'))
                || (l.starts_with('-') && !l.starts_with("--") && l.contains('E'))
                || l.to_ascii_lowercase().contains("env");
            if env_out {
                self.refuse(
                    &c.part,
                    "this ps option shows other processes' environments, which hold credentials",
                    "list processes without environments: ps aux, ps -ef, pgrep -a NAME",
                );
            }
        }
    }

    /// C compilers: options that run another program or load code into the compiler.
    pub fn cc(&mut self, c: &Cmd) {
        let mut prev_xlinker = false;
        for w in &c.args {
            let Some(l) = w.literal() else {
                if w.may_start_with('-') || w.may_start_with('@') {
                    self.refuse(
                        &c.part,
                        format!("{} gets a computed argument {} that could be an option (some run programs)", c.name, w.text),
                        "write compiler options literally",
                    );
                }
                prev_xlinker = false;
                continue;
            };
            let runs = l == "-wrapper"
                || l.starts_with("-fplugin")
                || l.starts_with("-iplugindir")
                || (l.starts_with("-B")
                    && !l.starts_with("-Bstatic")
                    && !l.starts_with("-Bdynamic")
                    && !l.starts_with("-Bsymbolic"))
                || l.starts_with("-specs")
                || l.starts_with("--specs")
                || (l.starts_with("-fuse-ld=") && l.contains('/'))
                || l.starts_with("--ld-path")
                || (l.starts_with("-Wl,") && l.contains("plugin"))
                || (prev_xlinker && l.contains("plugin"))
                || l.starts_with("-fcompare-debug=")
                || (l.starts_with('@') && l.len() > 1);
            if runs {
                self.refuse(
                    &c.part,
                    format!("{} {l} runs another program or loads code into the compiler (or reads more options from a file)", c.name),
                    "compile with ordinary options (-O2, -g, -I, -L, -l, -o, -std=…); write all options on the command line",
                );
            }
            prev_xlinker = l == "-Xlinker";
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
