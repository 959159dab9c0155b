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
    let ch: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut files = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < ch.len() && (ch[*i] == ' ' || ch[*i] == '\t') {
            *i += 1;
        }
    };
    let to_eol = |i: &mut usize| -> String {
        let start = *i;
        while *i < ch.len() && ch[*i] != '\n' {
            *i += 1;
        }
        ch[start..*i].iter().collect::<String>()
    };
    // Read a delimited part (regex or replacement), handling escapes.
    let delimited = |i: &mut usize, d: char| -> Result<(), String> {
        while *i < ch.len() {
            let x = ch[*i];
            if x == '\\' {
                *i += 2;
                continue;
            }
            if x == '\n' && d != '\n' {
                return Err("a newline inside a regular expression".into());
            }
            *i += 1;
            if x == d {
                return Ok(());
            }
        }
        Err("an unterminated regular expression".into())
    };
    loop {
        // Separators.
        while i < ch.len() && (ch[i].is_whitespace() || ch[i] == ';') {
            i += 1;
        }
        if i >= ch.len() {
            break;
        }
        // Addresses: number, $, /re/, \cREc, first~step, +N, ~N, and a second one.
        for n in 0..2 {
            if i >= ch.len() {
                break;
            }
            let start = i;
            match ch[i] {
                '0'..='9' => {
                    while i < ch.len() && (ch[i].is_ascii_digit() || ch[i] == '~') {
                        i += 1;
                    }
                }
                '$' => i += 1,
                '/' => {
                    i += 1;
                    delimited(&mut i, '/')?;
                }
                '\\' if i + 1 < ch.len() => {
                    let d = ch[i + 1];
                    i += 2;
                    delimited(&mut i, d)?;
                }
                '+' | '~' if n == 1 => {
                    i += 1;
                    while i < ch.len() && ch[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                _ => {}
            }
            if i > start {
                while i < ch.len() && (ch[i] == 'I' || ch[i] == 'M') {
                    i += 1;
                }
            }
            skip_ws(&mut i);
            if n == 0 && i < ch.len() && ch[i] == ',' {
                i += 1;
                skip_ws(&mut i);
                continue;
            }
            break;
        }
        skip_ws(&mut i);
        while i < ch.len() && ch[i] == '!' {
            i += 1;
            skip_ws(&mut i);
        }
        if i >= ch.len() {
            return Err("an address without a command".into());
        }
        let cmd = ch[i];
        i += 1;
        match cmd {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            '#' | ':' | 'b' | 't' | 'T' => {
                // Labels and comments run to the end of the line (or ; for branches).
                while i < ch.len() && ch[i] != '\n' && !(cmd != '#' && cmd != ':' && ch[i] == ';') {
                    i += 1;
                }
            }
            'q' | 'Q' | 'l' | 'L' => {
                skip_ws(&mut i);
                while i < ch.len() && ch[i].is_ascii_digit() {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line; a trailing backslash continues it.
                loop {
                    let line = to_eol(&mut i);
                    if line.ends_with('\\') && i < ch.len() {
                        i += 1;
                        continue;
                    }
                    break;
                }
            }
            'r' | 'R' | 'w' | 'W' => {
                skip_ws(&mut i);
                let f = to_eol(&mut i);
                if f.is_empty() {
                    return Err(format!("`{cmd}` without a file"));
                }
                let kind = if cmd == 'w' || cmd == 'W' { 'w' } else { 'r' };
                if f == "/dev/stdout" || f == "/dev/stderr" {
                    continue;
                }
                files.push((kind, f));
            }
            'e' => return Err("the `e` command runs a shell command".into()),
            'v' => {
                to_eol(&mut i);
            }
            's' | 'y' => {
                let Some(&d) = ch.get(i) else {
                    return Err(format!("`{cmd}` without a delimiter"));
                };
                if d == '\n' || d == '\\' {
                    return Err("an unusual delimiter".into());
                }
                i += 1;
                delimited(&mut i, d)?;
                delimited(&mut i, d)?;
                if cmd == 's' {
                    while i < ch.len() {
                        match ch[i] {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                            'e' => {
                                return Err(
                                    "the `e` flag of s/// runs the result as a shell command"
                                        .into(),
                                );
                            }
                            'w' => {
                                i += 1;
                                skip_ws(&mut i);
                                let f = to_eol(&mut i);
                                if f != "/dev/stdout" && f != "/dev/stderr" {
                                    files.push(('w', f));
                                }
                            }
                            _ => break,
                        }
                    }
                }
            }
            other => return Err(format!("unknown command `{other}`")),
        }
    }
    Ok(files)
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
