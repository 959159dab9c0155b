//! What a project builds (`[project] kind`), and how `baton new` reads it from a
//! spec's words when `--kind` does not say.

/// What a project builds (`[project] kind`): how its features are exercised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An app used in a browser: verified through the browser.
    Web,
    /// A command-line program.
    Cli,
    /// A library used through its public API.
    Library,
    /// A server without a UI of its own (an HTTP API, a daemon).
    Service,
}

impl Kind {
    /// Every kind, in the order ties are broken.
    pub const ALL: [Kind; 4] = [Kind::Web, Kind::Cli, Kind::Library, Kind::Service];

    /// The name in `baton.toml` and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Web => "web",
            Kind::Cli => "cli",
            Kind::Library => "library",
            Kind::Service => "service",
        }
    }

    /// The kind named `name`, if it is one.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The words that tell this kind in a spec (matched case-insensitively, as whole
    /// words, a plural `s` allowed).
    fn words(self) -> &'static [&'static str] {
        match self {
            Kind::Web => &[
                "web app",
                "web application",
                "website",
                "web site",
                "web page",
                "web ui",
                "browser",
                "page",
                "frontend",
                "front end",
                "front-end",
                "html",
                "css",
                "react",
                "vue",
                "svelte",
                "angular",
                "single-page",
                "ui",
                "user interface",
            ],
            Kind::Cli => &[
                "command-line",
                "command line",
                "cli",
                "terminal",
                "flag",
                "subcommand",
                "stdin",
                "stdout",
                "exit code",
                "tui",
                "terminal ui",
            ],
            Kind::Library => &[
                "library",
                "libraries",
                "crate",
                "package",
                "public api",
                "module",
                "sdk",
            ],
            Kind::Service => &[
                "rest api",
                "http api",
                "json api",
                "http service",
                "web service",
                "microservice",
                "endpoint",
                "daemon",
                "server",
                "grpc",
                "webhook",
            ],
        }
    }
}

/// The kind [`guess_kind`] read from a text, and the words it went by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindGuess {
    /// The kind decided.
    pub kind: Kind,
    /// The words of that kind found in the text, as written there, in the order
    /// they first occur (empty: no telling word; the default).
    pub words: Vec<String>,
}

impl KindGuess {
    /// How the kind was decided, for a person: `from the spec: "command-line",
    /// "flags"`, where `source` names the text (`the spec`, `the idea`, `the goal`).
    pub fn reason(&self, source: &str) -> String {
        if self.words.is_empty() {
            return format!("no word in {source} tells another kind; the default");
        }
        let shown: Vec<String> = self
            .words
            .iter()
            .take(4)
            .map(|w| format!("{w:?}"))
            .collect();
        format!("from {source}: {}", shown.join(", "))
    }
}

/// What a spec (or an idea, or a goal) builds, by its words:
///
/// - each kind has a short list of telling words (`Kind::words`: "web app",
///   "browser", "page", "HTML", "React" for web; "command-line", "CLI", "terminal",
///   "flag" for cli; "library", "crate", "package", "public API", "module" for
///   library; "REST API", "HTTP service", "endpoint", "daemon", "server" for
///   service), matched case-insensitively as whole words (a plural `s` allowed);
/// - a kind scores one point for each of its words found, and two more when its
///   word is the first one in the text (a spec says at its start what it is);
/// - service words count only when no web word is found (a server with a UI is a
///   web app);
/// - the highest score wins, ties in the order web, cli, library, service;
///   nothing found means web.
pub fn guess_kind(text: &str) -> KindGuess {
    let lower = text.to_ascii_lowercase();
    let lower = lower.as_str();
    // Every word's first place, then the longest word at each place, overlaps
    // dropped: "page" inside "web page" is not a word of its own, nor "ui" inside
    // "terminal ui".
    let mut hits: Vec<(usize, usize, Kind)> = Kind::ALL
        .into_iter()
        .flat_map(|k| {
            k.words()
                .iter()
                .filter_map(move |w| find_word(lower, w).map(|(at, len)| (at, len, k)))
                .collect::<Vec<_>>()
        })
        .collect();
    hits.sort_by_key(|&(at, len, _)| (at, std::cmp::Reverse(len)));
    let mut kept: Vec<(usize, usize, Kind)> = Vec::new();
    for h in hits {
        if !kept
            .iter()
            .any(|&(at, len, _)| h.0 < at + len && at < h.0 + h.1)
        {
            kept.push(h);
        }
    }
    // A server with a UI is a web app.
    if kept.iter().any(|h| h.2 == Kind::Web) {
        kept.retain(|h| h.2 != Kind::Service);
    }
    let first = kept.first().map(|h| h.2);
    let score =
        |k: Kind| kept.iter().filter(|h| h.2 == k).count() + if first == Some(k) { 2 } else { 0 };
    // `max_by_key` keeps the last of equals: go through the kinds backwards so
    // ties go to the earlier kind.
    let kind = Kind::ALL
        .into_iter()
        .rev()
        .max_by_key(|&k| score(k))
        .filter(|&k| score(k) > 0);
    match kind {
        Some(kind) => KindGuess {
            kind,
            words: kept
                .iter()
                .filter(|h| h.2 == kind)
                .map(|&(at, len, _)| text[at..at + len].to_string())
                .collect(),
        },
        None => KindGuess {
            kind: Kind::Web,
            words: Vec::new(),
        },
    }
}

/// The first place `word` (lower case) occurs in `lower` as a whole word, a plural
/// `s` allowed: (byte offset, length matched).
fn find_word(lower: &str, word: &str) -> Option<(usize, usize)> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = lower[from..].find(word) {
        let at = from + i;
        let before_ok = !lower[..at].chars().next_back().is_some_and(is_word);
        let mut len = word.len();
        let mut after = lower[at + len..].chars();
        let mut next = after.next();
        if next == Some('s') {
            let following = after.next();
            if !following.is_some_and(is_word) {
                len += 1;
                next = following;
            }
        }
        if before_ok && !next.is_some_and(is_word) {
            return Some((at, len));
        }
        from = at + word.len();
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Kind {
        guess_kind(text).kind
    }

    #[test]
    fn the_kind_is_read_from_the_specs_words() {
        assert_eq!(kind("A todo web app with tags."), Kind::Web);
        assert_eq!(
            kind("A page where visitors sign up; built with React."),
            Kind::Web
        );
        assert_eq!(
            kind("A command-line tool that renames photos by date; flags: --dry-run, --verbose."),
            Kind::Cli
        );
        assert_eq!(kind("A CLI to tail logs in the terminal."), Kind::Cli);
        assert_eq!(
            kind("A Rust crate for parsing TOML, with a small public API."),
            Kind::Library
        );
        assert_eq!(
            kind("A REST API for invoices: endpoints to create, list and pay them."),
            Kind::Service
        );
        assert_eq!(kind("A daemon that syncs two folders."), Kind::Service);
        // No telling word: web, the default.
        let g = guess_kind("A tiny todo app.");
        assert_eq!((g.kind, g.words.len()), (Kind::Web, 0));
        assert_eq!(
            g.reason("the idea"),
            "no word in the idea tells another kind; the default"
        );
    }

    #[test]
    fn a_server_with_a_ui_is_a_web_app() {
        // More service words than web ones, but a UI.
        assert_eq!(
            kind(
                "A REST API server with JSON endpoints and a daemon for jobs, and an HTML frontend."
            ),
            Kind::Web
        );
        // The same without the UI is a service.
        assert_eq!(
            kind("A REST API server with JSON endpoints and a daemon for jobs."),
            Kind::Service
        );
    }

    #[test]
    fn the_first_word_weighs_more_and_ties_go_web_cli_library_service() {
        // "command-line" first: cli, although HTML and pages are named too.
        assert_eq!(
            kind("A command-line tool that turns Markdown into HTML pages."),
            Kind::Cli
        );
        // "library" first.
        assert_eq!(
            kind("A Python library for building web apps."),
            Kind::Library
        );
        // Words as whole words only: "client" is not "cli", "pages" is "page".
        let g = guess_kind("An HTTP client library; see its pages.");
        assert_eq!(g.kind, Kind::Library);
        assert_eq!(
            guess_kind("Build it as pages.").words,
            vec!["pages".to_string()]
        );
        // "node_modules" is not "module"; "web page" is one word, not "page" too.
        assert_eq!(guess_kind("Put node_modules aside.").kind, Kind::Web);
        assert!(guess_kind("Put node_modules aside.").words.is_empty());
        assert_eq!(
            guess_kind("One web page.").words,
            vec!["web page".to_string()]
        );
        // "terminal UI" is a cli's word, not a UI one.
        assert_eq!(kind("A terminal UI for a daemon."), Kind::Cli);
    }

    #[test]
    fn the_reason_quotes_the_words_as_written() {
        let g = guess_kind("A Command-Line tool with flags, reading stdin.");
        assert_eq!(g.kind, Kind::Cli);
        assert_eq!(
            g.reason("the spec"),
            r#"from the spec: "Command-Line", "flags", "stdin""#
        );
    }

    #[test]
    fn the_example_spec_is_a_web_app() {
        let spec = include_str!("../../../examples/todo-spec.txt");
        assert_eq!(kind(spec), Kind::Web);
    }
}
