//! The feature list: a JSON array of
//! `{"category", "description", "steps": [..], "passes": bool}` objects, extra keys
//! kept verbatim. It parses with positions (errors name the file, line and feature),
//! validates, compares a list with the last accepted one, and restores everything
//! but legal `passes` flips.
//!
//! ```
//! use baton_records::{FeatureList, reconcile};
//! let accepted = FeatureList::parse(r#"[{"category":"functional","description":"a","steps":["x"],"passes":false}]"#, "f.json").unwrap();
//! let edited = r#"[{"category":"functional","description":"A!","steps":["x"],"passes":true}]"#;
//! let r = reconcile(&accepted, edited, "f.json");
//! assert_eq!(r.violations.len(), 1);        // the description changed
//! assert!(!r.list.features[0].passes);      // an edited feature's flip is not kept
//! ```

use serde_json::{Map, Value};

/// An error reading a feature list.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FeatureListError {
    /// Not valid JSON.
    #[error("{path}:{line}:{column}: not valid JSON: {message}")]
    Json {
        /// File name.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// Valid JSON that is not a feature list.
    #[error("{path}:{line}: {message}")]
    Shape {
        /// File name.
        path: String,
        /// 1-based line where the offending value starts.
        line: usize,
        /// What is wrong, naming the feature and field.
        message: String,
    },
}

/// One feature. `fields` keeps the whole object as written, extra keys included.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature {
    /// E.g. `functional` or `style`.
    pub category: String,
    /// What the feature does, as a user sees it.
    pub description: String,
    /// How to verify it end to end.
    pub steps: Vec<String>,
    /// Whether it has been verified passing.
    pub passes: bool,
    /// The whole object, in its original key order.
    pub fields: Map<String, Value>,
}

/// The optional key naming the features (1-based) a feature needs to pass first.
pub const DEPENDS_ON: &str = "depends_on";

impl Feature {
    /// The features (1-based) this one needs to pass first (`"depends_on"`), as
    /// validated by [`FeatureList::parse`]; empty without the key.
    pub fn depends_on(&self) -> Vec<usize> {
        self.fields
            .get(DEPENDS_ON)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_u64())
                    .map(|k| k as usize)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Everything but `passes`: two features with the same content are the same feature.
    pub fn content(&self) -> Map<String, Value> {
        let mut m = self.fields.clone();
        m.shift_remove("passes");
        m
    }
}

/// A parsed feature list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FeatureList {
    /// The features, in priority order.
    pub features: Vec<Feature>,
}

/// Byte offset of the start of each top-level array element.
fn element_offsets(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let (mut depth, mut in_str, mut esc) = (0i32, false, false);
    let mut expect_value = false;
    for (i, c) in text.char_indices() {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        if depth == 1 && expect_value && !c.is_whitespace() && c != ']' {
            out.push(i);
            expect_value = false;
        }
        match c {
            '"' => in_str = true,
            '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    expect_value = true;
                }
            }
            ']' | '}' => depth -= 1,
            ',' if depth == 1 => expect_value = true,
            _ => {}
        }
    }
    out
}

/// The line where top-level element `index` starts, computed when asked.
#[derive(Clone, Copy)]
struct LazyLine<'a> {
    text: &'a str,
    index: usize,
}

impl LazyLine<'_> {
    fn get(self) -> usize {
        element_offsets(self.text)
            .get(self.index)
            .map_or(1, |&o| line_of(self.text, o))
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl FeatureList {
    /// Parse and validate the text of a feature list; `path` is used in errors.
    pub fn parse(text: &str, path: &str) -> Result<Self, FeatureListError> {
        let value: Value = serde_json::from_str(text).map_err(|e| FeatureListError::Json {
            path: path.to_string(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let shape = |line: LazyLine<'_>, message: String| FeatureListError::Shape {
            path: path.to_string(),
            line: line.get(),
            message,
        };
        let Value::Array(items) = value else {
            return Err(shape(
                LazyLine { text: "", index: 0 },
                "the feature list must be a JSON array of feature objects".into(),
            ));
        };
        let total = items.len();
        let mut features = Vec::with_capacity(total);
        for (i, item) in items.into_iter().enumerate() {
            // Positions are only worked out for an error: parsing stays linear.
            let line = LazyLine { text, index: i };
            let n = i + 1;
            let Value::Object(fields) = item else {
                return Err(shape(line, format!("feature {n} is not an object")));
            };
            let string = |key: &str| -> Result<String, FeatureListError> {
                match fields.get(key) {
                    Some(Value::String(s)) => Ok(s.clone()),
                    Some(_) => Err(shape(
                        line,
                        format!("feature {n}: \"{key}\" must be a string"),
                    )),
                    None => Err(shape(line, format!("feature {n}: missing \"{key}\""))),
                }
            };
            let category = string("category")?;
            let description = string("description")?;
            let steps = match fields.get("steps") {
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|s| s.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        shape(
                            line,
                            format!("feature {n}: \"steps\" must be an array of strings"),
                        )
                    })?,
                Some(_) => {
                    return Err(shape(
                        line,
                        format!("feature {n}: \"steps\" must be an array of strings"),
                    ));
                }
                None => return Err(shape(line, format!("feature {n}: missing \"steps\""))),
            };
            let passes = match fields.get("passes") {
                Some(Value::Bool(b)) => *b,
                Some(_) => {
                    return Err(shape(
                        line,
                        format!("feature {n}: \"passes\" must be true or false"),
                    ));
                }
                None => return Err(shape(line, format!("feature {n}: missing \"passes\""))),
            };
            if let Some(d) = fields.get(DEPENDS_ON) {
                let valid = d.as_array().is_some_and(|a| {
                    a.iter().all(|x| {
                        x.as_u64()
                            .is_some_and(|k| k >= 1 && k as usize <= total && k as usize != n)
                    })
                });
                if !valid {
                    return Err(shape(
                        line,
                        format!(
                            "feature {n}: \"{DEPENDS_ON}\" must be an array of other features' numbers (1 to {total})"
                        ),
                    ));
                }
            }
            features.push(Feature {
                category,
                description,
                steps,
                passes,
                fields,
            });
        }
        let list = Self { features };
        if let Some(circle) = list.circle() {
            let first = circle[0];
            let path_text = circle
                .iter()
                .map(|n| format!("#{n}"))
                .collect::<Vec<_>>()
                .join(" → ");
            return Err(shape(
                LazyLine {
                    text,
                    index: first - 1,
                },
                format!(
                    "feature {first}: \"{DEPENDS_ON}\" goes round in a circle ({path_text} → #{first}), so none of them could ever be handed out"
                ),
            ));
        }
        Ok(list)
    }

    /// A chain of `depends_on` that leads back to where it started, if there is
    /// one (feature numbers, 1-based, in order).
    fn circle(&self) -> Option<Vec<usize>> {
        // 0 = not seen, 1 = on the current path, 2 = done.
        let mut mark = vec![0u8; self.features.len()];
        let mut path = Vec::new();
        fn visit(
            list: &FeatureList,
            n: usize,
            mark: &mut [u8],
            path: &mut Vec<usize>,
        ) -> Option<Vec<usize>> {
            match mark[n - 1] {
                2 => return None,
                1 => {
                    let at = path.iter().position(|&p| p == n).unwrap_or(0);
                    return Some(path[at..].to_vec());
                }
                _ => {}
            }
            mark[n - 1] = 1;
            path.push(n);
            for d in list.features[n - 1].depends_on() {
                if let Some(c) = visit(list, d, mark, path) {
                    return Some(c);
                }
            }
            path.pop();
            mark[n - 1] = 2;
            None
        }
        (1..=self.features.len()).find_map(|n| visit(self, n, &mut mark, &mut path))
    }

    /// The features (1-based) that feature `n` waits on: those of its `depends_on`
    /// that do not pass yet. Empty for a feature without the key.
    pub fn waiting_on(&self, n: usize) -> Vec<usize> {
        self.features
            .get(n.wrapping_sub(1))
            .map(|f| {
                f.depends_on()
                    .into_iter()
                    .filter(|&d| self.features.get(d - 1).is_some_and(|x| !x.passes))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Features passing.
    pub fn passing(&self) -> usize {
        self.features.iter().filter(|f| f.passes).count()
    }

    /// Whether every feature passes (and there is at least one).
    pub fn all_pass(&self) -> bool {
        !self.features.is_empty() && self.features.iter().all(|f| f.passes)
    }

    /// `(category, passing, total)` in order of first appearance.
    pub fn by_category(&self) -> Vec<(String, usize, usize)> {
        let mut out: Vec<(String, usize, usize)> = Vec::new();
        for f in &self.features {
            match out.iter_mut().find(|(c, _, _)| *c == f.category) {
                Some(e) => {
                    e.1 += usize::from(f.passes);
                    e.2 += 1;
                }
                None => out.push((f.category.clone(), usize::from(f.passes), 1)),
            }
        }
        out
    }

    /// The list as pretty JSON (two-space indent, keys in their original order).
    pub fn to_json(&self) -> String {
        let arr: Vec<Value> = self
            .features
            .iter()
            .map(|f| {
                let mut m = f.fields.clone();
                m.insert("passes".into(), Value::Bool(f.passes));
                Value::Object(m)
            })
            .collect();
        let mut s =
            serde_json::to_string_pretty(&Value::Array(arr)).unwrap_or_else(|_| "[]".into());
        s.push('\n');
        s
    }
}

/// Something changed that may not change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// The file is not a valid feature list.
    Invalid(String),
    /// A feature's text, steps or other keys changed (1-based number, what changed).
    Edited(usize, String),
    /// A feature is gone (1-based number, its description).
    Removed(usize, String),
    /// Features were added (how many).
    Added(usize),
    /// Features were moved (how many are out of place).
    Reordered(usize),
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid(why) => write!(f, "the feature list was not valid ({why})"),
            Self::Edited(n, what) => write!(f, "feature {n}: {what} was changed"),
            Self::Removed(n, d) => write!(f, "feature {n} ({d:?}) was removed"),
            Self::Added(k) => write!(f, "{k} feature(s) were added"),
            Self::Reordered(k) => write!(f, "{k} feature(s) were moved"),
        }
    }
}

/// The outcome of comparing a feature list with the accepted one.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconciled {
    /// The accepted list with every legal flip applied: what the file must hold.
    pub list: FeatureList,
    /// Features (0-based) whose `passes` went from false to true.
    pub flipped: Vec<usize>,
    /// Features (0-based) whose `passes` went from true to false.
    pub unflipped: Vec<usize>,
    /// What changed that may not change.
    pub violations: Vec<Violation>,
    /// Features (0-based) that gained a `verify` command.
    pub verify_added: Vec<usize>,
}

impl Reconciled {
    /// Whether the file must be rewritten with [`Reconciled::list`].
    pub fn needs_restore(&self) -> bool {
        !self.violations.is_empty()
    }
}

fn diff_fields(a: &Map<String, Value>, b: &Map<String, Value>) -> String {
    let mut keys: Vec<&str> = Vec::new();
    for (k, v) in a {
        if k != "passes" && b.get(k) != Some(v) {
            keys.push(k);
        }
    }
    for k in b.keys() {
        if k != "passes" && k != VERIFY && !a.contains_key(k) {
            keys.push(k);
        }
    }
    keys.iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether two features are equal in everything but `passes`, without copying them.
/// A `verify` command may be added to a feature that has none (an agent records
/// how its flip can be re-checked); changing or removing one is an edit.
fn same_content(a: &Feature, b: &Feature) -> bool {
    let free = |k: &str| k == "passes" || (k == VERIFY && !a.fields.contains_key(VERIFY));
    let count = |f: &Feature| f.fields.keys().filter(|k| !free(k)).count();
    count(a) == count(b)
        && a.fields
            .iter()
            .all(|(k, v)| free(k) || b.fields.get(k) == Some(v))
}

/// The key of the optional check command of a feature.
pub const VERIFY: &str = "verify";

/// Compare `current_text` with `accepted`. Only `passes` may change: a feature keeps
/// the flip of the current feature with exactly its content (at the same position, or
/// anywhere if the list was reordered); anything else is restored from `accepted`.
pub fn reconcile(accepted: &FeatureList, current_text: &str, path: &str) -> Reconciled {
    let current = match FeatureList::parse(current_text, path) {
        Ok(c) => c,
        Err(e) => {
            return Reconciled {
                list: accepted.clone(),
                flipped: Vec::new(),
                unflipped: Vec::new(),
                violations: vec![Violation::Invalid(e.to_string())],
                verify_added: Vec::new(),
            };
        }
    };
    let mut passes: Vec<bool> = accepted.features.iter().map(|f| f.passes).collect();
    let mut verify_added: Vec<(usize, Value)> = Vec::new();
    let mut violations = Vec::new();
    let n = accepted.features.len();
    let mut used = vec![false; current.features.len()];
    let mut matched: Vec<Option<usize>> = vec![None; n];
    // 1: unchanged in place; 2: unchanged elsewhere (moved); 3: what is left,
    // paired by what an edit most likely kept (the description, else the steps),
    // then in order: so an edit, a removal and an addition are named as what
    // they were, whatever they shifted.
    for i in 0..n {
        if current
            .features
            .get(i)
            .is_some_and(|c| same_content(&accepted.features[i], c))
        {
            matched[i] = Some(i);
            used[i] = true;
        }
    }
    // Unused current features by content, so moves are found in linear time.
    let key = |f: &Feature| {
        let mut c = f.content();
        c.shift_remove(VERIFY);
        Value::Object(c).to_string()
    };
    let mut by_content: std::collections::HashMap<String, std::collections::VecDeque<usize>> =
        std::collections::HashMap::new();
    if matched.iter().any(Option::is_none) {
        for (j, c) in current.features.iter().enumerate() {
            if !used[j] {
                by_content.entry(key(c)).or_default().push_back(j);
            }
        }
    }
    let mut moved = 0;
    let unmatched: Vec<usize> = (0..n).filter(|&i| matched[i].is_none()).collect();
    for i in unmatched {
        if let Some(j) = by_content
            .get_mut(&key(&accepted.features[i]))
            .and_then(|q| q.pop_front())
            .filter(|&j| same_content(&accepted.features[i], &current.features[j]))
        {
            matched[i] = Some(j);
            used[j] = true;
            moved += 1;
        }
    }
    let mut edited: Vec<Option<usize>> = vec![None; n];
    let same_description = |a: &Feature, c: &Feature| a.description == c.description;
    let same_steps = |a: &Feature, c: &Feature| a.steps == c.steps && !a.steps.is_empty();
    for kept in [
        &same_description as &dyn Fn(&Feature, &Feature) -> bool,
        &same_steps,
    ] {
        for i in 0..n {
            if matched[i].is_some() || edited[i].is_some() {
                continue;
            }
            if let Some(j) = (0..current.features.len())
                .find(|&j| !used[j] && kept(&accepted.features[i], &current.features[j]))
            {
                edited[i] = Some(j);
                used[j] = true;
            }
        }
    }
    let mut left = (0..current.features.len()).filter(|&j| !used[j]);
    let mut in_order: Vec<(usize, usize)> = Vec::new();
    for i in 0..n {
        if matched[i].is_none() && edited[i].is_none() {
            match left.next() {
                Some(j) => in_order.push((i, j)),
                None => break,
            }
        }
    }
    for (i, j) in in_order {
        edited[i] = Some(j);
        used[j] = true;
    }
    for i in 0..n {
        match (matched[i], edited[i]) {
            (Some(j), _) => {
                passes[i] = current.features[j].passes;
                if !accepted.features[i].fields.contains_key(VERIFY)
                    && let Some(v) = current.features[j].fields.get(VERIFY)
                {
                    verify_added.push((i, v.clone()));
                }
            }
            (None, Some(j)) => violations.push(Violation::Edited(
                i + 1,
                diff_fields(&accepted.features[i].fields, &current.features[j].fields),
            )),
            (None, None) => violations.push(Violation::Removed(
                i + 1,
                accepted.features[i].description.clone(),
            )),
        }
    }
    let added = used.iter().filter(|u| !**u).count();
    if added > 0 {
        violations.push(Violation::Added(added));
    }
    // A removal or addition shifts what follows; report moves only on their own.
    if moved > 0 && violations.is_empty() {
        violations.push(Violation::Reordered(moved));
    }
    let flipped = (0..n)
        .filter(|&i| passes[i] && !accepted.features[i].passes)
        .collect();
    let unflipped = (0..n)
        .filter(|&i| !passes[i] && accepted.features[i].passes)
        .collect();
    // Without violations the current list is the accepted one with its flips: keep it
    // instead of copying the accepted one.
    let list = if violations.is_empty() {
        current
    } else {
        let mut list = accepted.clone();
        for (f, p) in list.features.iter_mut().zip(passes) {
            f.passes = p;
        }
        for (i, v) in &verify_added {
            list.features[*i].fields.insert(VERIFY.into(), v.clone());
        }
        list
    };
    let verify_added = verify_added.into_iter().map(|(i, _)| i).collect();
    Reconciled {
        list,
        flipped,
        unflipped,
        violations,
        verify_added,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn f(desc: &str, passes: bool) -> String {
        format!(
            r#"{{"category":"functional","description":"{desc}","steps":["open","check"],"passes":{passes}}}"#
        )
    }

    fn list(items: &[String]) -> String {
        format!("[\n  {}\n]\n", items.join(",\n  "))
    }

    fn accepted() -> FeatureList {
        FeatureList::parse(
            &list(&[f("a", false), f("b", false), f("c", true)]),
            "f.json",
        )
        .unwrap()
    }

    #[test]
    fn depends_on_names_other_features_and_never_goes_round_in_a_circle() {
        let item = |d: &str| {
            format!(
                r#"{{"category":"c","description":"d","steps":[],"passes":false,"depends_on":{d}}}"#
            )
        };
        let ok = format!(
            "[\n{},\n{},\n{}\n]",
            item("[]"),
            item("[1]"),
            item("[1, 2]")
        );
        let list = FeatureList::parse(&ok, "f.json").unwrap();
        assert_eq!(list.features[2].depends_on(), [1, 2]);
        assert_eq!(list.waiting_on(3), [1, 2]);
        for bad in [r#""1""#, "[0]", "[4]", "[3]", r#"["x"]"#] {
            let text = format!("[\n{},\n{},\n{}\n]", item("[]"), item("[1]"), item(bad));
            let e = FeatureList::parse(&text, "f.json").unwrap_err().to_string();
            assert!(
                e.starts_with("f.json:4: feature 3: \"depends_on\""),
                "{bad}: {e}"
            );
        }
        let circle = format!("[\n{},\n{},\n{}\n]", item("[3]"), item("[1]"), item("[2]"));
        let e = FeatureList::parse(&circle, "f.json")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("f.json:2: feature 1") && e.contains("#1 → #3 → #2 → #1"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_line_and_feature() {
        let e = FeatureList::parse("[\n  {\"category\": \"x\",}\n]", "f.json").unwrap_err();
        assert!(matches!(e, FeatureListError::Json { line: 2, .. }), "{e}");
        let text = list(&[
            f("a", false),
            r#"{"category":"x","description":"y","passes":false}"#.into(),
        ]);
        let e = FeatureList::parse(&text, "f.json").unwrap_err();
        assert_eq!(e.to_string(), "f.json:3: feature 2: missing \"steps\"");
        let e = FeatureList::parse("{}", "f.json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.json:1: the feature list must be a JSON array of feature objects"
        );
        let text = list(&[f("a", false), f("b", false).replace("false}", "\"yes\"}")]);
        let e = FeatureList::parse(&text, "f.json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.json:3: feature 2: \"passes\" must be true or false"
        );
    }

    #[test]
    fn legal_flips_are_kept_without_violations() {
        let r = reconcile(
            &accepted(),
            &list(&[f("a", true), f("b", false), f("c", false)]),
            "f.json",
        );
        assert_eq!(r.violations, vec![]);
        assert_eq!((r.flipped.clone(), r.unflipped.clone()), (vec![0], vec![2]));
        assert!(!r.needs_restore());
    }

    #[test]
    fn edits_removals_additions_are_restored_keeping_flips() {
        // b's text edited (and flipped), c replaced by another, a flipped, one added.
        let text = list(&[
            f("a", true),
            f("B!", true),
            f("new", false),
            f("more", false),
        ]);
        let r = reconcile(&accepted(), &text, "f.json");
        assert_eq!(
            r.violations,
            vec![
                Violation::Edited(2, "\"description\"".into()),
                Violation::Edited(3, "\"description\"".into()),
                Violation::Added(1),
            ]
        );
        let restored: Vec<(String, bool)> = r
            .list
            .features
            .iter()
            .map(|f| (f.description.clone(), f.passes))
            .collect();
        assert_eq!(
            restored,
            vec![("a".into(), true), ("b".into(), false), ("c".into(), true)]
        );
        assert_eq!(r.flipped, vec![0]);
    }

    /// A removal shifts what follows: the edits after it are still named by
    /// the features they are of, not by position (#1's description edited, #2
    /// removed, #3's steps rewritten).
    #[test]
    fn edits_after_a_removal_name_their_own_features() {
        let g = |desc: &str, step: &str| {
            format!(
                r#"{{"category":"functional","description":"{desc}","steps":["{step}"],"passes":false}}"#
            )
        };
        let accepted = FeatureList::parse(
            &list(&[g("a", "open a"), g("b", "open b"), g("c", "open c")]),
            "f.json",
        )
        .unwrap();
        let r = reconcile(
            &accepted,
            &list(&[g("A!", "open a"), g("c", "skip it")]),
            "f.json",
        );
        assert_eq!(
            r.violations,
            vec![
                Violation::Edited(1, "\"description\"".into()),
                Violation::Removed(2, "b".into()),
                Violation::Edited(3, "\"steps\"".into()),
            ]
        );
        assert_eq!(r.list, accepted);
    }

    #[test]
    fn removal_is_named() {
        let r = reconcile(&accepted(), &list(&[f("a", false), f("c", true)]), "f.json");
        assert_eq!(r.violations, vec![Violation::Removed(2, "b".into())]);
        assert_eq!(r.list, accepted());
    }

    #[test]
    fn reordering_is_restored_and_flips_follow_content() {
        let text = list(&[f("b", true), f("a", false), f("c", true)]);
        let r = reconcile(&accepted(), &text, "f.json");
        assert_eq!(r.violations, vec![Violation::Reordered(2)]);
        assert_eq!(r.flipped, vec![1]);
        assert_eq!(r.list.features[1].description, "b");
    }

    #[test]
    fn invalid_json_restores_the_accepted_list() {
        let r = reconcile(&accepted(), "[{", "f.json");
        assert!(matches!(&r.violations[..], [Violation::Invalid(_)]));
        assert_eq!(r.list, accepted());
    }

    #[test]
    fn extra_keys_are_kept_in_order_and_count_as_content() {
        let text = r#"[{"id":7,"category":"c","description":"d","steps":[],"passes":false,"verify":"true"}]"#;
        let acc = FeatureList::parse(text, "f.json").unwrap();
        assert!(
            acc.to_json()
                .starts_with("[\n  {\n    \"id\": 7,\n    \"category\""),
            "{}",
            acc.to_json()
        );
        let r = reconcile(&acc, &text.replace("\"true\"", "\"false\""), "f.json");
        assert_eq!(
            r.violations,
            vec![Violation::Edited(1, "\"verify\"".into())]
        );
    }

    #[test]
    fn a_verify_command_may_be_added_but_not_changed_or_removed() {
        let with = f("a", true).replace("\"passes\"", "\"verify\":\"test -f a\",\"passes\"");
        let r = reconcile(
            &accepted(),
            &list(&[with.clone(), f("b", false), f("c", true)]),
            "f.json",
        );
        assert_eq!(r.violations, vec![]);
        assert_eq!(
            (r.flipped.clone(), r.verify_added.clone()),
            (vec![0], vec![0])
        );
        assert_eq!(r.list.features[0].fields["verify"], "test -f a");
        // Added alongside a violation elsewhere: kept in the restored list.
        let r = reconcile(
            &accepted(),
            &list(&[with.clone(), f("B", false), f("c", true)]),
            "f.json",
        );
        assert_eq!(r.list.features[0].fields["verify"], "test -f a");
        assert_eq!(r.verify_added, vec![0]);
        // Once accepted, it is content like any other key.
        let acc = r.list;
        let weaker = with.replace("test -f a", "true");
        let r = reconcile(
            &acc,
            &list(&[weaker, f("b", false), f("c", true)]),
            "f.json",
        );
        assert_eq!(
            r.violations,
            vec![Violation::Edited(1, "\"verify\"".into())]
        );
        assert_eq!(r.list.features[0].fields["verify"], "test -f a");
        let r = reconcile(
            &acc,
            &list(&[f("a", true), f("b", false), f("c", true)]),
            "f.json",
        );
        assert_eq!(
            r.violations,
            vec![Violation::Edited(1, "\"verify\"".into())]
        );
    }

    #[test]
    fn counts_by_category() {
        let mut l = accepted();
        l.features[1].category = "style".into();
        assert_eq!(
            l.by_category(),
            vec![("functional".into(), 1, 2), ("style".into(), 0, 1)]
        );
        assert_eq!(l.passing(), 1);
        assert!(!l.all_pass());
    }
}
