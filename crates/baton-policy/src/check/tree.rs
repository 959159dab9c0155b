//! The parse tree itself: its size before any walk, the first syntax error,
//! line continuations and where a literal sits.

use super::*;

/// Byte offsets of the backslash-newline pairs bash removes, or the text of a place
/// where one cannot be judged.
pub(super) fn continuations(tree: &Tree, src: &str) -> Result<Vec<usize>, String> {
    let bytes = src.as_bytes();
    let mut cuts = Vec::new();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'\\' && bytes[i + 1] == b'\n' {
            // Count the backslashes before: an even run escapes itself.
            let mut k = i;
            while k > 0 && bytes[k - 1] == b'\\' {
                k -= 1;
            }
            if (i - k) % 2 == 0 {
                match literal_context(tree, src, i) {
                    Context::Code => cuts.push(i),
                    Context::Literal => {}
                    Context::AnsiC => {
                        return Err(src[..i]
                            .chars()
                            .rev()
                            .take(40)
                            .collect::<String>()
                            .chars()
                            .rev()
                            .collect());
                    }
                }
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    Ok(cuts)
}

pub(super) fn literal_context(tree: &Tree, src: &str, at: usize) -> Context {
    let Some(mut n) = tree.root_node().descendant_for_byte_range(at, at + 1) else {
        return Context::Code;
    };
    loop {
        match n.kind() {
            "raw_string" | "comment" => return Context::Literal,
            "ansi_c_string" => return Context::AnsiC,
            "heredoc_body" | "heredoc_content" => {
                let mut h = n;
                while h.kind() != "heredoc_redirect" {
                    match h.parent() {
                        Some(p) => h = p,
                        None => return Context::Code,
                    }
                }
                let quoted = h
                    .named_child(0)
                    .filter(|s| s.kind() == "heredoc_start")
                    .is_some_and(|s| src[s.byte_range()].contains(['\'', '"', '\\']));
                if quoted {
                    return Context::Literal;
                }
                return Context::Code;
            }
            _ => {}
        }
        match n.parent() {
            Some(p) => n = p,
            None => return Context::Code,
        }
    }
}

/// How many nodes a tree has and how deep it is, without recursion (stops counting
/// once either is past its limit).
pub(super) fn tree_size(root: Node) -> (usize, usize) {
    let mut cur = root.walk();
    let (mut nodes, mut depth, mut deepest) = (1usize, 0usize, 0usize);
    loop {
        if depth <= MAX_TREE_DEPTH && cur.goto_first_child() {
            depth += 1;
            nodes += 1;
            deepest = deepest.max(depth);
        } else {
            loop {
                if cur.goto_next_sibling() {
                    nodes += 1;
                    break;
                }
                if !cur.goto_parent() {
                    return (nodes, deepest);
                }
                depth -= 1;
            }
        }
        if nodes > MAX_NODES || deepest > MAX_TREE_DEPTH {
            return (nodes, deepest);
        }
    }
}

pub(super) fn first_error(root: Node, src: &str) -> (String, String) {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            let what = if n.is_missing() {
                format!("missing `{}`", n.kind())
            } else {
                "unexpected text".to_string()
            };
            let start = n.start_byte().saturating_sub(10);
            let start = (0..=start)
                .rev()
                .find(|i| src.is_char_boundary(*i))
                .unwrap_or(0);
            let end = (n.end_byte() + 10).min(src.len());
            let end = (end..=src.len())
                .find(|i| src.is_char_boundary(*i))
                .unwrap_or(src.len());
            let pos = n.start_position();
            return (
                format!("{what} at line {}, column {}", pos.row + 1, pos.column + 1),
                src[start..end].to_string(),
            );
        }
        let mut cur = n.walk();
        let kids: Vec<Node> = n.children(&mut cur).collect();
        for k in kids.into_iter().rev() {
            if k.has_error() || k.is_error() || k.is_missing() {
                stack.push(k);
            }
        }
    }
    ("an error".into(), short(src))
}

pub(super) enum Context {
    Code,
    Literal,
    AnsiC,
}
