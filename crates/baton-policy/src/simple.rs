//! The simple commands of a piece of shell source, on the policy's own bash
//! parser: what baton reads of a command it does not run itself (a verify command,
//! a verifier's call) to tell what kind of command it is and which paths it names.

use tree_sitter::Node;

/// Every simple command `src` runs (command substitutions and the bodies of
/// lists, pipelines, subshells and control flow included), each as its words:
/// the command name, then its arguments. Quotes are taken off words that are
/// plain text; a word with an expansion keeps its source text. Assignments and
/// redirections are left out. `None` when `src` does not parse as bash.
///
/// ```
/// let cmds = baton_policy::simple::commands("test -f 'a b' && git diff | head").unwrap();
/// assert_eq!(cmds, vec![vec!["test", "-f", "a b"], vec!["git", "diff"], vec!["head"]]);
/// ```
pub fn commands(src: &str) -> Option<Vec<Vec<String>>> {
    let tree = crate::check::parse(src)?;
    let root = tree.root_node();
    if root.has_error() {
        return None;
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    let mut seen = 0usize;
    while let Some(n) = stack.pop() {
        seen += 1;
        if seen > crate::check::MAX_NODES {
            return None;
        }
        match n.kind() {
            "command" => out.push((n.start_byte(), words(n, src))),
            // `[ … ]` and `[[ … ]]`: their words as written, brackets included.
            "test_command" => {
                let text = n.utf8_text(src.as_bytes()).unwrap_or_default();
                let w = text
                    .split_whitespace()
                    .map(|t| t.trim_matches(|c| c == '\'' || c == '"').to_string())
                    .collect();
                out.push((n.start_byte(), w));
            }
            _ => {}
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    out.sort_by_key(|(at, _)| *at);
    Some(out.into_iter().map(|(_, w)| w).collect())
}

/// The words of one `command` node.
fn words(n: Node, src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut c = n.walk();
    for child in n.named_children(&mut c) {
        match child.kind() {
            "variable_assignment"
            | "file_redirect"
            | "heredoc_redirect"
            | "herestring_redirect" => {}
            "command_name" => {
                let inner = child.named_child(0).unwrap_or(child);
                out.push(word(inner, src));
            }
            _ => out.push(word(child, src)),
        }
    }
    out
}

/// A word's text, without its quotes where it is plain text.
fn word(n: Node, src: &str) -> String {
    let text = n.utf8_text(src.as_bytes()).unwrap_or_default();
    match n.kind() {
        "raw_string" => text.trim_matches('\'').to_string(),
        "string" if n.named_child_count() == 0 || only_content(n) => text
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .unwrap_or(text)
            .to_string(),
        _ => text.to_string(),
    }
}

/// Whether a double-quoted string holds no expansion.
fn only_content(n: Node) -> bool {
    let mut c = n.walk();
    n.named_children(&mut c)
        .all(|k| k.kind() == "string_content")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutions_and_control_flow_are_seen() {
        let cmds = commands("if [ -f x ]; then echo \"$(cat y)\"; fi; FOO=1 ls > out").unwrap();
        let names: Vec<&str> = cmds.iter().map(|c| c[0].as_str()).collect();
        assert_eq!(names, vec!["[", "echo", "cat", "ls"]);
        assert_eq!(cmds[0], vec!["[", "-f", "x", "]"]);
        assert_eq!(commands("echo 'unbalanced"), None);
    }
}
