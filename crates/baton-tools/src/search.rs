//! `Glob` and `Grep`: gitignore-aware search with ripgrep's crates.

use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::UTF8};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use serde::Deserialize;

use crate::paths::{display, resolve};
use crate::{ToolContext, ToolOutput};

/// Most paths `Glob` lists.
pub const MAX_GLOB_RESULTS: usize = 200;
/// Most output lines `Grep` returns.
pub const MAX_GREP_LINES: usize = 500;

/// Input of the `Glob` tool.
#[derive(Debug, Deserialize)]
pub struct GlobInput {
    /// Glob such as `**/*.rs` or `src/*.ts`; `*` does not cross `/`.
    pub pattern: String,
    /// Directory to search from (default: the project).
    pub path: Option<String>,
}

/// Input of the `Grep` tool.
#[derive(Debug, Deserialize)]
pub struct GrepInput {
    /// Regular expression (Rust regex syntax).
    pub pattern: String,
    /// File or directory to search (default: the project).
    pub path: Option<String>,
    /// Only files whose path matches this glob, e.g. `*.js` or `src/**/*.tsx`.
    pub glob: Option<String>,
    /// `files_with_matches` (default), `content` or `count`.
    pub output_mode: Option<String>,
    /// Case-insensitive.
    #[serde(rename = "-i")]
    pub case_insensitive: Option<bool>,
    /// Line numbers in `content` mode.
    #[serde(rename = "-n")]
    pub line_numbers: Option<bool>,
}

fn walker(root: &Path) -> WalkBuilder {
    let mut w = WalkBuilder::new(root);
    w.hidden(false)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .parents(true)
        .filter_entry(|e| e.file_name() != ".git" && e.file_name() != ".baton");
    w
}

fn search_root(ctx: &ToolContext, tool: &str, path: Option<&str>) -> Result<PathBuf, ToolOutput> {
    let root = match path {
        Some(p) if !p.is_empty() => resolve(&ctx.project_dir, p),
        _ => ctx.project_dir.clone(),
    };
    if !root.exists() {
        return Err(ToolOutput::error(format!(
            "{tool}: path not found: {}",
            display(&ctx.project_dir, &root)
        )));
    }
    Ok(root)
}

/// Run the `Glob` tool.
pub fn glob(ctx: &ToolContext, input: GlobInput) -> ToolOutput {
    let root = match search_root(ctx, "Glob", input.path.as_deref()) {
        Ok(r) => r,
        Err(e) => return e,
    };
    // Patterns are matched against paths relative to the search root; accept the
    // forms models also write: `./src/*.rs` and absolute patterns under the root.
    let root_prefix = format!("{}/", root.display());
    let pattern = input
        .pattern
        .strip_prefix(root_prefix.as_str())
        .or_else(|| input.pattern.strip_prefix("./"))
        .unwrap_or(&input.pattern);
    let matcher = match GlobBuilder::new(pattern).literal_separator(true).build() {
        Ok(g) => g.compile_matcher(),
        Err(e) => {
            return ToolOutput::error(format!("Glob: invalid pattern {:?}: {e}", input.pattern));
        }
    };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for entry in walker(&root).build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
        if matcher.is_match(rel) {
            let mtime = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(std::time::UNIX_EPOCH);
            found.push((mtime, entry.into_path()));
        }
    }
    if found.is_empty() {
        return ToolOutput::ok(format!("No files match {:?}", input.pattern));
    }
    // Most recently changed first: the files an agent touched last are usually the ones it wants.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let mut out: Vec<String> = found
        .iter()
        .take(MAX_GLOB_RESULTS)
        .map(|(_, p)| display(&ctx.project_dir, p))
        .collect();
    if total > MAX_GLOB_RESULTS {
        out.push(format!(
            "({} more files not shown; narrow the pattern or path)",
            total - MAX_GLOB_RESULTS
        ));
    }
    ToolOutput::ok(out.join("\n"))
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Files,
    Content,
    Count,
}

/// Run the `Grep` tool.
pub fn grep(ctx: &ToolContext, input: GrepInput) -> ToolOutput {
    let mode = match input.output_mode.as_deref() {
        None | Some("files_with_matches") => Mode::Files,
        Some("content") => Mode::Content,
        Some("count") => Mode::Count,
        Some(other) => {
            return ToolOutput::error(format!(
                "Grep: unknown output_mode {other:?}; use \"files_with_matches\", \"content\" or \"count\""
            ));
        }
    };
    let root = match search_root(ctx, "Grep", input.path.as_deref()) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(input.case_insensitive.unwrap_or(false))
        .build(&input.pattern)
    {
        Ok(m) => m,
        Err(e) => {
            return ToolOutput::error(format!("Grep: invalid regex {:?}: {e}", input.pattern));
        }
    };
    let mut walk = walker(&root);
    if let Some(g) = input.glob.as_deref().filter(|g| !g.is_empty()) {
        let mut ob = OverrideBuilder::new(&root);
        let built = ob.add(g).and_then(|b| b.build());
        match built {
            Ok(o) => {
                walk.overrides(o);
            }
            Err(e) => return ToolOutput::error(format!("Grep: invalid glob {g:?}: {e}")),
        }
    }
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let numbers = input.line_numbers.unwrap_or(false);
    let mut lines: Vec<String> = Vec::new();
    let mut truncated = false;
    let mut files = 0usize;
    'walk: for entry in walk.build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let shown = display(&ctx.project_dir, path);
        let mut count = 0usize;
        let mut file_lines = Vec::new();
        let res = searcher.search_path(
            &matcher,
            path,
            UTF8(|n, line| {
                count += 1;
                if mode == Mode::Content {
                    let line = line.trim_end_matches(['\n', '\r']);
                    file_lines.push(if numbers {
                        format!("{shown}:{n}:{line}")
                    } else {
                        format!("{shown}:{line}")
                    });
                }
                Ok(mode != Mode::Files)
            }),
        );
        if res.is_err() || count == 0 {
            continue;
        }
        files += 1;
        match mode {
            Mode::Files => lines.push(shown),
            Mode::Count => lines.push(format!("{shown}:{count}")),
            Mode::Content => lines.extend(file_lines),
        }
        if lines.len() > MAX_GREP_LINES {
            truncated = true;
            break 'walk;
        }
    }
    if lines.is_empty() {
        return ToolOutput::ok(format!("No matches for {:?}", input.pattern));
    }
    if mode == Mode::Files {
        lines.sort();
    }
    lines.truncate(MAX_GREP_LINES);
    let mut out = lines.join("\n");
    if truncated {
        out.push_str(&format!(
            "\n(output cut at {MAX_GREP_LINES} lines after {files} files; narrow the pattern, path or glob)"
        ));
    }
    ToolOutput::ok(out)
}
