//! sed scripts and awk programs, each checked for its escape hatches (`e`, `w`,
//! `system()`, pipes, files written outside the project).

use super::*;

impl Checker<'_> {
    /// `sed`: the script is parsed; `e`, `w`, `W`, `r`, `R` and the `e`/`w` flags of
    /// `s` are escape hatches or file access and are judged.
    pub(crate) fn sed(&mut self, c: &Cmd) {
        let parsed = parse_args(
            &c.args,
            "efl",
            &["expression", "file", "line-length"],
            false,
        );
        let mut scripts: Vec<Word> = Vec::new();
        let mut files: Vec<&Word> = Vec::new();
        let mut in_place = false;
        let mut sandbox = false;
        let mut explicit = false;
        for a in &parsed {
            match a {
                Arg::Opt { name, value } => match name.as_str() {
                    "-e" | "--expression" => {
                        explicit = true;
                        if let Some(v) = value {
                            scripts.push(v.word());
                        }
                    }
                    "-f" | "--file" => {
                        self.refuse(
                            &c.part,
                            "sed -f reads its script from a file, which baton cannot check",
                            "give the script inline: sed -e 's/a/b/' FILE",
                        );
                        return;
                    }
                    "-i" | "--in-place" => in_place = true,
                    "--sandbox" => sandbox = true,
                    _ => {}
                },
                Arg::Pos(w) => files.push(w),
                Arg::Unknown(w) => {
                    self.refuse(
                        &c.part,
                        format!(
                            "sed gets a computed argument {} that could be an option",
                            w.text
                        ),
                        "write sed's options literally",
                    );
                }
            }
        }
        if !explicit {
            if files.is_empty() {
                return;
            }
            scripts.push(files.remove(0).clone());
        }
        if in_place {
            for f in &files {
                self.write_target(f, &c.cwd, &c.part, true);
            }
        }
        for s in &scripts {
            let Some(text) = s.literal() else {
                self.refuse(&c.part, "the sed script is computed when the command runs (a value could add an `e` or `w` command)", "write the sed script literally in single quotes");
                continue;
            };
            if sandbox {
                continue;
            }
            match sed_script(&text) {
                Ok(files_used) => {
                    for (kind, f) in files_used {
                        let w = Word::quoted(&f);
                        if kind == 'w' {
                            self.write_target(&w, &c.cwd, &c.part, false);
                        } else if let Some(what) = self.secret_in(&w, &c.cwd, false) {
                            self.refuse(&c.part, format!("sed reads {what}"), "read files of the project");
                        }
                    }
                }
                Err(reason) => self.refuse(&c.part, format!("sed: {reason}"), "use plain s/…/…/ substitutions, d, p and addresses; write results with shell redirection"),
            }
        }
    }

    /// `awk`: the program may not run commands (`system`, pipes) or write files.
    pub(crate) fn awk(&mut self, c: &Cmd) {
        let parsed = parse_args(
            &c.args,
            "FvfeEliW",
            &[
                "field-separator",
                "assign",
                "file",
                "source",
                "exec",
                "load",
                "include",
            ],
            true,
        );
        let mut program: Option<Word> = None;
        let mut sandbox = false;
        for a in &parsed {
            match a {
                Arg::Opt { name, value } => match name.as_str() {
                    "-f" | "--file" | "-E" | "--exec" | "-l" | "--load" | "-i" | "--include" => {
                        self.refuse(&c.part, format!("awk {name} loads a program or extension from a file, which baton cannot check"), "give the awk program inline in single quotes");
                        return;
                    }
                    "-e" | "--source" => program = value.as_ref().map(|v| v.word()),
                    "--sandbox" => sandbox = true,
                    "-W" if value.as_ref().and_then(|v| v.literal()).as_deref()
                        == Some("sandbox") =>
                    {
                        sandbox = true
                    }
                    _ => {}
                },
                Arg::Pos(w) => {
                    if program.is_none() {
                        program = Some((*w).clone());
                    }
                }
                Arg::Unknown(w) => {
                    self.refuse(
                        &c.part,
                        format!(
                            "awk gets a computed argument {} that could be an option",
                            w.text
                        ),
                        "write awk's options literally",
                    );
                }
            }
        }
        let Some(p) = program else { return };
        let Some(text) = p.literal() else {
            self.refuse(
                &c.part,
                "the awk program is computed when the command runs",
                "write the awk program literally in single quotes",
            );
            return;
        };
        if sandbox {
            return;
        }
        if let Err(reason) = awk_program(&text) {
            self.refuse(&c.part, format!("awk: {reason}"), "use awk to filter and print; write results with shell redirection (awk '…' in > out)");
        }
    }
}

/// Parse a sed script; the files it reads (`r`, `R`) and writes (`w`, `W`, `s///w`).
fn sed_script(s: &str) -> Result<Vec<(char, String)>, String> {
    let mut script = SedScript {
        ch: s.chars().collect(),
        i: 0,
        files: Vec::new(),
    };
    loop {
        // Separators.
        while script.i < script.ch.len()
            && (script.ch[script.i].is_whitespace() || script.ch[script.i] == ';')
        {
            script.i += 1;
        }
        if script.i >= script.ch.len() {
            break;
        }
        script.addresses()?;
        script.command()?;
    }
    Ok(script.files)
}

/// A sed script being read: its characters, where the reading is, and the files
/// found so far (`'r'` read, `'w'` written).
struct SedScript {
    ch: Vec<char>,
    i: usize,
    files: Vec<(char, String)>,
}

impl SedScript {
    /// Skip blanks (not newlines, which end commands).
    fn skip_ws(&mut self) {
        while self.i < self.ch.len() && (self.ch[self.i] == ' ' || self.ch[self.i] == '\t') {
            self.i += 1;
        }
    }

    /// The rest of the line (without its newline).
    fn rest_of_line(&mut self) -> String {
        let start = self.i;
        while self.i < self.ch.len() && self.ch[self.i] != '\n' {
            self.i += 1;
        }
        self.ch[start..self.i].iter().collect::<String>()
    }

    /// Read a delimited part (regex or replacement), handling escapes.
    fn delimited(&mut self, d: char) -> Result<(), String> {
        let ch = &self.ch;
        while self.i < ch.len() {
            let x = ch[self.i];
            if x == '\\' {
                self.i += 2;
                continue;
            }
            if x == '\n' && d != '\n' {
                return Err("a newline inside a regular expression".into());
            }
            self.i += 1;
            if x == d {
                return Ok(());
            }
        }
        Err("an unterminated regular expression".into())
    }

    /// The addresses before a command: number, $, /re/, \cREc, first~step, +N, ~N,
    /// and a second one after a comma; then any `!`. An error when no command
    /// follows.
    fn addresses(&mut self) -> Result<(), String> {
        for n in 0..2 {
            if self.i >= self.ch.len() {
                break;
            }
            let start = self.i;
            match self.ch[self.i] {
                '0'..='9' => {
                    while self.i < self.ch.len()
                        && (self.ch[self.i].is_ascii_digit() || self.ch[self.i] == '~')
                    {
                        self.i += 1;
                    }
                }
                '$' => self.i += 1,
                '/' => {
                    self.i += 1;
                    self.delimited('/')?;
                }
                '\\' if self.i + 1 < self.ch.len() => {
                    let d = self.ch[self.i + 1];
                    self.i += 2;
                    self.delimited(d)?;
                }
                '+' | '~' if n == 1 => {
                    self.i += 1;
                    while self.i < self.ch.len() && self.ch[self.i].is_ascii_digit() {
                        self.i += 1;
                    }
                }
                _ => {}
            }
            if self.i > start {
                while self.i < self.ch.len() && (self.ch[self.i] == 'I' || self.ch[self.i] == 'M') {
                    self.i += 1;
                }
            }
            self.skip_ws();
            if n == 0 && self.i < self.ch.len() && self.ch[self.i] == ',' {
                self.i += 1;
                self.skip_ws();
                continue;
            }
            break;
        }
        self.skip_ws();
        while self.i < self.ch.len() && self.ch[self.i] == '!' {
            self.i += 1;
            self.skip_ws();
        }
        if self.i >= self.ch.len() {
            return Err("an address without a command".into());
        }
        Ok(())
    }

    /// One command and its arguments: an error for those that run shell commands
    /// (`e`) and for what cannot be read; files read and written are recorded.
    fn command(&mut self) -> Result<(), String> {
        let cmd = self.ch[self.i];
        self.i += 1;
        match cmd {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            '#' | ':' | 'b' | 't' | 'T' => {
                // Labels and comments run to the end of the line (or ; for branches).
                while self.i < self.ch.len()
                    && self.ch[self.i] != '\n'
                    && !(cmd != '#' && cmd != ':' && self.ch[self.i] == ';')
                {
                    self.i += 1;
                }
            }
            'q' | 'Q' | 'l' | 'L' => {
                self.skip_ws();
                while self.i < self.ch.len() && self.ch[self.i].is_ascii_digit() {
                    self.i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line; a trailing backslash continues it.
                loop {
                    let line = self.rest_of_line();
                    if line.ends_with('\\') && self.i < self.ch.len() {
                        self.i += 1;
                        continue;
                    }
                    break;
                }
            }
            'r' | 'R' | 'w' | 'W' => {
                self.skip_ws();
                let f = self.rest_of_line();
                if f.is_empty() {
                    return Err(format!("`{cmd}` without a file"));
                }
                let kind = if cmd == 'w' || cmd == 'W' { 'w' } else { 'r' };
                if f != "/dev/stdout" && f != "/dev/stderr" {
                    self.files.push((kind, f));
                }
            }
            'e' => return Err("the `e` command runs a shell command".into()),
            'v' => {
                self.rest_of_line();
            }
            's' | 'y' => self.substitute(cmd)?,
            other => return Err(format!("unknown command `{other}`")),
        }
        Ok(())
    }

    /// The arguments of `s` or `y`: delimiter, two delimited parts, and for `s`
    /// its flags (`e` runs the result; `w FILE` writes).
    fn substitute(&mut self, cmd: char) -> Result<(), String> {
        let Some(&d) = self.ch.get(self.i) else {
            return Err(format!("`{cmd}` without a delimiter"));
        };
        if d == '\n' || d == '\\' {
            return Err("an unusual delimiter".into());
        }
        self.i += 1;
        self.delimited(d)?;
        self.delimited(d)?;
        if cmd == 's' {
            while self.i < self.ch.len() {
                match self.ch[self.i] {
                    'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => self.i += 1,
                    'e' => {
                        return Err(
                            "the `e` flag of s/// runs the result as a shell command".into()
                        );
                    }
                    'w' => {
                        self.i += 1;
                        self.skip_ws();
                        let f = self.rest_of_line();
                        if f != "/dev/stdout" && f != "/dev/stderr" {
                            self.files.push(('w', f));
                        }
                    }
                    _ => break,
                }
            }
        }
        Ok(())
    }
}

/// Check an awk program: no `system(`, no pipes to or from commands, no output
/// redirection to files, no extensions.
fn awk_program(p: &str) -> Result<(), String> {
    let ch: Vec<char> = p.chars().collect();
    let mut i = 0;
    // Whether the previous significant token ends an operand (so `/` divides).
    let mut operand = false;
    let mut ident = String::new();
    let mut in_print = false;
    let mut depth = 0i32;
    while i < ch.len() {
        let c = ch[i];
        if c.is_ascii_alphanumeric() || c == '_' {
            ident.push(c);
            i += 1;
            continue;
        }
        if !ident.is_empty() {
            let word = std::mem::take(&mut ident);
            match word.as_str() {
                "system" => return Err("system() runs a shell command".into()),
                "print" | "printf" => {
                    in_print = true;
                    depth = 0;
                }
                _ => {}
            }
            operand = !matches!(
                word.as_str(),
                "print" | "printf" | "return" | "in" | "getline"
            );
        }
        match c {
            '"' => {
                i += 1;
                while i < ch.len() && ch[i] != '"' {
                    if ch[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                operand = true;
                continue;
            }
            '/' if !operand => {
                i += 1;
                while i < ch.len() && ch[i] != '/' {
                    if ch[i] == '\\' {
                        i += 1;
                    } else if ch[i] == '[' {
                        // A bracket expression may hold '/'.
                        while i < ch.len() && ch[i] != ']' {
                            i += 1;
                        }
                    }
                    i += 1;
                }
                i += 1;
                operand = true;
                continue;
            }
            '#' => {
                while i < ch.len() && ch[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '@' => return Err("@load/@include bring in code from files".into()),
            '|' => {
                if ch.get(i + 1) == Some(&'|') {
                    i += 2;
                    operand = false;
                    continue;
                }
                return Err(
                    "a pipe to or from a command (| getline, print | \"cmd\") runs a shell command"
                        .into(),
                );
            }
            '>' if in_print && depth == 0 => {
                return Err("print > FILE writes files from inside awk".into());
            }
            '(' => depth += 1,
            ')' => depth -= 1,
            ';' | '\n' | '{' | '}' => in_print = false,
            _ => {}
        }
        if !c.is_whitespace() {
            operand = matches!(c, ')' | ']' | '$');
        }
        i += 1;
    }
    if ident == "system" {
        return Err("system() runs a shell command".into());
    }
    Ok(())
}

impl Checker<'_> {
    /// `sort`.
    pub(super) fn sort(&mut self, c: &Cmd) -> Flow {
        for a in parse_args(
            &c.args,
            "koTtS",
            &[
                "key",
                "output",
                "temporary-directory",
                "field-separator",
                "buffer-size",
                "compress-program",
                "files0-from",
                "parallel",
                "random-source",
                "sort",
            ],
            false,
        ) {
            match a {
                Arg::Opt { name, .. } if name == "--compress-program" => self.refuse(
                    &c.part,
                    "sort --compress-program runs another program",
                    "sort without it",
                ),
                Arg::Opt {
                    name,
                    value: Some(v),
                } if name == "-o" || name == "--output" => {
                    self.write_target(&v.word(), &c.cwd, &c.part, false)
                }
                Arg::Unknown(w) => self.unknown_option(c, w),
                _ => {}
            }
        }
        Flow::same(&c.cwd)
    }

    /// `rg`.
    pub(super) fn rg(&mut self, c: &Cmd) -> Flow {
        for w in &c.args {
            match w.literal() {
                Some(l) if l == "--" => break,
                Some(l)
                    if l == "--pre"
                        || l.starts_with("--pre=")
                        || l == "--search-zip"
                        || l == "-z" =>
                {
                    self.refuse(
                        &c.part,
                        "rg --pre and --search-zip run other programs on each file",
                        "search with rg without --pre",
                    );
                }
                _ => {}
            }
        }
        Flow::same(&c.cwd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts() {
        assert!(sed_script("s/a/b/g").is_ok());
        assert!(sed_script("1,5d;/^#/d").is_ok());
        assert!(sed_script("s|x|y|;$a\\\nend").is_ok());
        assert!(sed_script("/foo/,+2{s/a/b/;p}").is_ok());
        assert!(sed_script("s/a/b/e").is_err());
        assert!(sed_script("1e id").is_err());
        assert!(sed_script("s/x/y/;e").is_err());
        assert_eq!(
            sed_script("w out.txt").ok(),
            Some(vec![('w', "out.txt".to_string())])
        );
        assert_eq!(
            sed_script("s/a/b/w /etc/x").ok(),
            Some(vec![('w', "/etc/x".to_string())])
        );
        assert!(sed_script("s/a\\/b/c/").is_ok());
    }

    #[test]
    fn awk_programs() {
        assert!(awk_program("{print $1}").is_ok());
        assert!(awk_program("$3 > 100 {print $1, $2}").is_ok());
        assert!(awk_program("{s += $1} END {print s / NR}").is_ok());
        assert!(awk_program("/a|b/ {print}").is_ok());
        assert!(awk_program("NR==1 || NR==2").is_ok());
        assert!(awk_program("BEGIN {system(\"id\")}").is_err());
        assert!(awk_program("{print | \"sh\"}").is_err());
        assert!(awk_program("BEGIN {\"id\" | getline x}").is_err());
        assert!(awk_program("{print > \"/etc/x\"}").is_err());
        assert!(awk_program("{print ($1 > 2)}").is_ok());
    }
}
