//! An MCP tool result as a baton tool result.

use baton_tools::{Image, ToolOutput};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// Image types the model APIs accept; others are described in the text instead.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Turn `result` into what the model sees: text blocks joined by newlines (texts
/// over `max_text` bytes keep their head and tail with a marker), images kept,
/// other content described, `isError` kept.
pub(crate) fn to_output(result: CallToolResult, max_text: usize) -> ToolOutput {
    let mut texts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    let mut image = |media_type: String, data: String, texts: &mut Vec<String>| {
        if IMAGE_TYPES.contains(&media_type.as_str()) {
            images.push(Image { media_type, data });
        } else {
            texts.push(format!("[an image of type {media_type}, not shown]"));
        }
    };
    for block in result.content {
        match block {
            ContentBlock::Text(t) => texts.push(t.text),
            ContentBlock::Image(i) => image(i.mime_type, i.data, &mut texts),
            ContentBlock::Audio(a) => {
                texts.push(format!("[audio of type {}, not shown]", a.mime_type))
            }
            ContentBlock::Resource(r) => match r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    texts.push(format!("[resource {uri}]\n{text}"));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => match mime_type {
                    Some(m) if m.starts_with("image/") => image(m, blob, &mut texts),
                    other => texts.push(format!(
                        "[resource {uri}: binary data of type {}, not shown]",
                        other.as_deref().unwrap_or("unknown")
                    )),
                },
                _ => texts.push("[a resource of a kind baton does not know, not shown]".into()),
            },
            ContentBlock::ResourceLink(l) => texts.push(format!("[resource link: {}]", l.uri)),
            _ => texts.push("[content of a kind baton does not know, not shown]".to_string()),
        }
    }
    if texts.is_empty()
        && images.is_empty()
        && let Some(v) = &result.structured_content
    {
        texts.push(v.to_string());
    }
    let is_error = result.is_error.unwrap_or(false);
    let mut content = cut(texts.join("\n"), max_text);
    if content.is_empty() && images.is_empty() {
        content = if is_error {
            "The tool failed without saying why.".to_string()
        } else {
            "(the tool returned no content)".to_string()
        };
    }
    ToolOutput {
        content,
        is_error,
        images,
    }
}

/// Keep the first and last `max / 2` bytes of `text` (at character boundaries).
pub(crate) fn cut(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let half = max / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[... {} bytes cut by baton ...]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn result(v: serde_json::Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn texts_join_and_images_are_kept() {
        let out = to_output(
            result(json!({"content": [
                {"type": "text", "text": "one"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "text", "text": "two"},
            ]})),
            1000,
        );
        assert_eq!(
            out,
            ToolOutput {
                content: "one\ntwo".into(),
                is_error: false,
                images: vec![Image {
                    media_type: "image/png".into(),
                    data: "AAAA".into()
                }],
            }
        );
    }

    #[test]
    fn is_error_is_kept() {
        let out = to_output(
            result(json!({"content": [{"type": "text", "text": "bad"}], "isError": true})),
            1000,
        );
        assert!(out.is_error);
        assert_eq!(out.content, "bad");
    }

    #[test]
    fn other_content_is_described() {
        let out = to_output(
            result(json!({"content": [
                {"type": "image", "data": "PHN2Zz4=", "mimeType": "image/svg+xml"},
                {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}},
                {"type": "resource", "resource": {"uri": "file:///b.png", "mimeType": "image/png", "blob": "BBBB"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c"},
            ]})),
            1000,
        );
        assert_eq!(
            out.content,
            "[an image of type image/svg+xml, not shown]\n[audio of type audio/wav, not shown]\n\
             [resource file:///a.txt]\nhello\n[resource link: file:///c]"
        );
        assert_eq!(out.images.len(), 1);
        assert_eq!(out.images[0].data, "BBBB");
    }

    #[test]
    fn structured_content_stands_in_for_missing_text() {
        let out = to_output(
            result(json!({"content": [], "structuredContent": {"a": 1}})),
            1000,
        );
        assert_eq!(out.content, r#"{"a":1}"#);
    }

    #[test]
    fn empty_results_say_so() {
        assert_eq!(
            to_output(result(json!({"content": []})), 1000).content,
            "(the tool returned no content)"
        );
        assert_eq!(
            to_output(result(json!({"content": [], "isError": true})), 1000).content,
            "The tool failed without saying why."
        );
    }

    #[test]
    fn long_text_keeps_head_and_tail() {
        let s = format!("{}{}", "a".repeat(60), "é".repeat(30));
        let out = cut(s, 40);
        assert!(out.starts_with(&"a".repeat(20)), "{out}");
        assert!(out.ends_with(&"é".repeat(10)), "{out}");
        assert!(out.contains("bytes cut by baton"));
    }
}
