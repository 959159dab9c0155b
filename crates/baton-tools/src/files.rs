//! `Read`, `Write` and `Edit`: text files, addressed relative to the project.

use serde::Deserialize;

use crate::paths::{display, resolve, resolve_for_write};
use crate::{ToolContext, ToolOutput};

/// Lines returned by `Read` when no `limit` is given.
pub const DEFAULT_READ_LINES: usize = 2_000;
/// Characters of one line shown by `Read`; the rest is cut with a marker.
pub const MAX_LINE_CHARS: usize = 2_000;
/// Largest file `Read` and `Edit` load.
pub const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// Input of the `Read` tool.
#[derive(Debug, Deserialize)]
pub struct ReadInput {
    /// The file, absolute or relative to the project.
    pub file_path: String,
    /// First line to show, counted from 1.
    pub offset: Option<usize>,
    /// How many lines to show.
    pub limit: Option<usize>,
}

/// Input of the `Write` tool.
#[derive(Debug, Deserialize)]
pub struct WriteInput {
    /// The file, absolute or relative to the project.
    pub file_path: String,
    /// The whole new content.
    pub content: String,
}

/// Input of the `Edit` tool.
#[derive(Debug, Deserialize)]
pub struct EditInput {
    /// The file, absolute or relative to the project.
    pub file_path: String,
    /// Text to find, exactly.
    pub old_string: String,
    /// Text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one.
    pub replace_all: Option<bool>,
}

fn load_text(
    ctx: &ToolContext,
    tool: &str,
    file_path: &str,
) -> Result<(std::path::PathBuf, String), ToolOutput> {
    let path = resolve(&ctx.project_dir, file_path);
    let shown = display(&ctx.project_dir, &path);
    let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            ToolOutput::error(format!("{tool}: file not found: {shown}"))
        }
        _ => ToolOutput::error(format!("{tool}: cannot read {shown}: {e}")),
    })?;
    if meta.is_dir() {
        return Err(ToolOutput::error(format!(
            "{tool}: {shown} is a directory; use Glob or `ls` to list it"
        )));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ToolOutput::error(format!(
            "{tool}: {shown} is {} bytes, larger than the {MAX_FILE_BYTES}-byte limit; inspect it with Bash (head, tail, grep)",
            meta.len()
        )));
    }
    let bytes = std::fs::read(&path)
        .map_err(|e| ToolOutput::error(format!("{tool}: cannot read {shown}: {e}")))?;
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(ToolOutput::error(format!(
            "{tool}: {shown} is a binary file ({} bytes); {tool} works on text files only",
            bytes.len()
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        ToolOutput::error(format!(
            "{tool}: {shown} is not UTF-8 text (invalid byte at offset {}); {tool} works on text files only",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok((path, text))
}

/// Run the `Read` tool.
pub fn read(ctx: &ToolContext, input: ReadInput) -> ToolOutput {
    let (path, text) = match load_text(ctx, "Read", &input.file_path) {
        Ok(v) => v,
        Err(e) => return e,
    };
    if text.is_empty() {
        return ToolOutput::ok("(the file is empty)");
    }
    let offset = input.offset.unwrap_or(1).max(1);
    let limit = input.limit.unwrap_or(DEFAULT_READ_LINES).max(1);
    let total = text.lines().count();
    if offset > total {
        return ToolOutput::error(format!(
            "Read: offset {offset} is past the end of {} ({total} lines)",
            display(&ctx.project_dir, &path)
        ));
    }
    let mut out = String::with_capacity(text.len().min(1 << 20) + total * 8);
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let n = i + 1;
        if line.chars().count() > MAX_LINE_CHARS {
            let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
            out.push_str(&format!(
                "{n:>6}\t{cut} [line cut at {MAX_LINE_CHARS} characters]\n"
            ));
        } else {
            out.push_str(&format!("{n:>6}\t{line}\n"));
        }
    }
    let last = (offset - 1 + limit).min(total);
    if last < total {
        out.push_str(&format!(
            "(showing lines {offset}-{last} of {total}; use offset and limit to read more)\n"
        ));
    }
    ToolOutput::ok(out)
}

/// Run the `Write` tool.
pub fn write(ctx: &ToolContext, input: WriteInput) -> ToolOutput {
    let path = match resolve_for_write(&ctx.project_dir, &input.file_path) {
        Ok(p) => p,
        Err(reason) => return ToolOutput::error(format!("Write refused: {reason}")),
    };
    let shown = display(&ctx.project_dir, &path);
    if path.is_dir() {
        return ToolOutput::error(format!("Write: {shown} is a directory"));
    }
    let existed = path.exists();
    if let Err(e) = path.parent().map_or(Ok(()), std::fs::create_dir_all) {
        return ToolOutput::error(format!(
            "Write: cannot create the directory for {shown}: {e}"
        ));
    }
    match std::fs::write(&path, input.content.as_bytes()) {
        Ok(()) => ToolOutput::ok(format!(
            "{} {shown} ({} bytes, {} lines)",
            if existed { "Overwrote" } else { "Created" },
            input.content.len(),
            input.content.lines().count()
        )),
        Err(e) => ToolOutput::error(format!("Write: cannot write {shown}: {e}")),
    }
}

/// Run the `Edit` tool.
pub fn edit(ctx: &ToolContext, input: EditInput) -> ToolOutput {
    let path = match resolve_for_write(&ctx.project_dir, &input.file_path) {
        Ok(p) => p,
        Err(reason) => return ToolOutput::error(format!("Edit refused: {reason}")),
    };
    let shown = display(&ctx.project_dir, &path);
    if input.old_string.is_empty() {
        return ToolOutput::error(format!(
            "Edit: old_string is empty; to create or replace all of {shown} use Write"
        ));
    }
    if input.old_string == input.new_string {
        return ToolOutput::error(format!(
            "Edit: old_string and new_string are the same; nothing to change in {shown}"
        ));
    }
    let (_, text) = match load_text(ctx, "Edit", &input.file_path) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let count = text.matches(&input.old_string).count();
    let replace_all = input.replace_all.unwrap_or(false);
    let new_text = match (count, replace_all) {
        (0, _) => {
            return ToolOutput::error(format!(
                "Edit: old_string was not found in {shown}; it must match the file exactly, whitespace and indentation included (Read the file first)"
            ));
        }
        (1, _) | (_, true) => text.replace(&input.old_string, &input.new_string),
        (n, false) => {
            return ToolOutput::error(format!(
                "Edit: old_string occurs {n} times in {shown}; include more surrounding text to make it unique, or set replace_all to true"
            ));
        }
    };
    match std::fs::write(&path, new_text.as_bytes()) {
        Ok(()) => ToolOutput::ok(format!(
            "Edited {shown}: replaced {count} occurrence{}",
            if count == 1 { "" } else { "s" }
        )),
        Err(e) => ToolOutput::error(format!("Edit: cannot write {shown}: {e}")),
    }
}
