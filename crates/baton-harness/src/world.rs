//! The worlds a check that decides proof runs in. A flip's check proves the
//! work only when it fails **before** the work and passes **after** it in two
//! clean checkouts (tracked files alone: no ignored or untracked file, a fresh
//! home) that differ in nothing but the product:
//!
//! - **pinned** files (tests, fixtures, expected output, snapshots, a test
//!   runner's configuration, interpreter and package-manager hooks such as
//!   `.npmrc` or `conftest.py`, compiled leftovers, `[verify] protect`) are taken
//!   as they were where the feature entered the list, in both worlds;
//! - **held** files (baton's records and the hand-off notes, `init.sh` unless the
//!   feature is about it, other dotfiles, package manifests' scripts and runner
//!   keys, a build file whose targets the check runs) are taken from the
//!   reference commit, in both worlds;
//! - the **product** (everything else) is the reference's before, the head's
//!   after.
//!
//! So whatever a session changed that is not the product — a fixture, a sourced
//! helper, a module beside a test that shadows an import, an ignored file, the
//! start script, a runner's config — is not in the world where the check must
//! pass, whatever the check's command text says. See `docs/verification.md`.

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::{Map, Value};

use crate::error::HarnessError;

/// Where a path of the project comes from in a proof's worlds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// As it was where the feature entered the list.
    Pinned,
    /// As it is at the reference commit.
    Held,
    /// The work: the reference's before, the head's after.
    Product,
}

/// Tests, by their place or name, in most ecosystems.
const TESTS: &[&str] = &[
    "**/test/**",
    "**/tests/**",
    "**/spec/**",
    "**/specs/**",
    "**/__tests__/**",
    "**/__mocks__/**",
    "**/e2e/**",
    "**/cypress/**",
    "**/*.test.*",
    "**/*.spec.*",
    "**/*.spec.*/**",
    "**/*_test.*",
    "**/*_spec.*",
    "**/test_*",
    "**/*-snapshots/**",
];

/// Data checks compare against, and helpers they load.
const FIXTURES: &[&str] = &[
    "**/fixture/**",
    "**/fixtures/**",
    "**/expected/**",
    "**/golden/**",
    "**/testdata/**",
    "**/test-data/**",
    "**/snapshots/**",
    "**/__snapshots__/**",
    "**/*.snap",
    "**/*assert*",
    "**/*helper*",
    "**/testlib*",
    "**/test-utils*",
    "**/test_utils*",
    "**/checks/**",
    "**/check_*",
    "**/check-*",
    "**/*_check.*",
    "**/*-check.*",
    "**/verify_*",
    "**/verify-*",
];

/// What configures a test runner, or hooks an interpreter or package manager,
/// wherever it lies: a change to one can make any test pass.
const HOOKS: &[&str] = &[
    "**/playwright.config.*",
    "**/jest.config.*",
    "**/jest.setup.*",
    "**/vitest.config.*",
    "**/vitest.workspace.*",
    "**/vitest.setup.*",
    "**/cypress.config.*",
    "**/karma.conf.*",
    "**/.mocharc*",
    "**/.babelrc*",
    "**/babel.config.*",
    "**/pytest.ini",
    "**/conftest.py",
    "**/tox.ini",
    "**/setup.cfg",
    "**/pyproject.toml",
    "**/phpunit.xml*",
    "**/.rspec",
    "**/.npmrc",
    "**/.yarnrc",
    "**/.yarnrc.yml",
    "**/.pnpmfile.cjs",
    "**/bunfig.toml",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
    "**/pip.conf",
    "**/*.pyc",
    "**/*.pyo",
    "**/__pycache__/**",
    "**/node_modules/**",
];

/// Build files whose targets or scripts a check may run.
const BUILD_FILES: &[&str] = &[
    "Makefile",
    "makefile",
    "GNUmakefile",
    "justfile",
    "Justfile",
];

/// The keys of `package.json` that are the product (what it is, what it
/// needs); the rest (`scripts`, a runner's own keys) is held at the reference.
const PACKAGE_PRODUCT_KEYS: &[&str] = &[
    "name",
    "version",
    "description",
    "private",
    "type",
    "main",
    "module",
    "browser",
    "exports",
    "imports",
    "bin",
    "files",
    "engines",
    "dependencies",
    "devDependencies",
    "optionalDependencies",
    "peerDependencies",
    "bundleDependencies",
    "bundledDependencies",
];

/// The package manifest, merged by key rather than taken whole.
pub const PACKAGE_JSON: &str = "package.json";

fn set(globs: &[&str]) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        if let Ok(g) = Glob::new(g) {
            b.add(g);
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

/// Which layer each path of a project is in, for one check of one feature.
pub struct Layers {
    pinned: GlobSet,
    protect: GlobSet,
    /// baton's records and the hand-off files, held at the reference.
    records: Vec<String>,
    /// The start script, held unless the feature is about it.
    init: Option<String>,
    /// Whether the check runs a build file's targets.
    runs_build: bool,
}

impl Layers {
    /// The layers for `command`, the check of a feature that is about its start
    /// script or not (`about_init`), in a project with these `names` and
    /// `[verify] protect` globs.
    pub fn new(
        command: &str,
        about_init: bool,
        names: &baton_config::ProjectConfig,
        protect: &[String],
    ) -> Self {
        let mut pinned: Vec<&str> = Vec::new();
        pinned.extend(TESTS);
        pinned.extend(FIXTURES);
        pinned.extend(HOOKS);
        let protect: Vec<&str> = protect.iter().map(String::as_str).collect();
        Self {
            pinned: set(&pinned),
            protect: set(&protect),
            records: vec![
                names.feature_list.clone(),
                names.progress.clone(),
                names.spec.clone(),
                baton_config::CONFIG_FILE.to_string(),
            ],
            init: (!about_init).then(|| names.init_script.clone()),
            runs_build: crate::scrutiny::runs_build(command),
        }
    }

    /// Whether `path` is baton's record or a hand-off file (the list, the
    /// notes, the spec, `baton.toml`, `.baton/`), which every session changes.
    pub fn is_record(&self, path: &str) -> bool {
        let records = baton_records::layout::DIR;
        self.records.iter().any(|r| r == path)
            || path == records
            || path
                .strip_prefix(records)
                .is_some_and(|r| r.starts_with('/'))
    }

    /// The layer of `path` (relative to the project).
    pub fn of(&self, path: &str) -> Layer {
        let name = path.rsplit('/').next().unwrap_or(path);
        // baton's records and the hand-off files first, whatever their names.
        if self.is_record(path) {
            return Layer::Held;
        }
        if self.pinned.is_match(path) || self.protect.is_match(path) {
            return Layer::Pinned;
        }
        let held = self.init.as_deref() == Some(path)
            || path.split('/').any(|c| c.starts_with('.'))
            || (self.runs_build && BUILD_FILES.contains(&name));
        if held { Layer::Held } else { Layer::Product }
    }
}

/// A change between two commits (`git diff --name-status --no-renames`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Added on the later side.
    pub added: bool,
    /// Deleted on the later side.
    pub deleted: bool,
    /// The path, relative to the project.
    pub path: String,
}

/// What changed from `from` to `to` in the repository at `dir`, by baton's own
/// git (read-only, jailed).
pub fn changes(dir: &std::path::Path, from: &str, to: &str) -> Result<Vec<Change>, HarnessError> {
    if from == to {
        return Ok(Vec::new());
    }
    let out = crate::git::git(
        dir,
        &[
            "diff",
            "--name-status",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "-z",
            from,
            to,
        ],
    )?;
    let mut v = Vec::new();
    let mut parts = out.split('\0').filter(|s| !s.is_empty());
    while let (Some(status), Some(path)) = (parts.next(), parts.next()) {
        v.push(Change {
            added: status.starts_with('A'),
            deleted: status.starts_with('D'),
            path: path.to_string(),
        });
    }
    Ok(v)
}

/// The world of `commit` with every product file it holds ([`Layers::of`])
/// replaced by junk ([`JUNK`]).
pub fn junk_at(dir: &std::path::Path, layers: &Layers, commit: &str) -> Plan {
    let files =
        crate::git::git(dir, &["ls-tree", "-r", "-z", "--name-only", commit]).unwrap_or_default();
    Plan {
        at: commit.to_string(),
        write: files
            .split('\0')
            .filter(|p| !p.is_empty() && layers.of(p) == Layer::Product)
            .map(|p| (p.to_string(), JUNK.to_vec()))
            .collect(),
        ..Plan::default()
    }
}

/// The paths changed from `reference` to `head` that are not the product
/// (tests, fixtures, configuration, the start script…), at most ten, in words.
pub fn beside_product(
    dir: &std::path::Path,
    layers: &Layers,
    reference: &str,
    head: &str,
) -> Vec<String> {
    let changes = changes(dir, reference, head).unwrap_or_default();
    let mut out: Vec<String> = changes
        .iter()
        .filter(|c| !layers.is_record(&c.path))
        .filter(|c| layers.of(&c.path) != Layer::Product || c.path == PACKAGE_JSON)
        .map(|c| {
            let verb = if c.added {
                "added"
            } else if c.deleted {
                "deleted"
            } else {
                "changed"
            };
            format!("{verb} {}", c.path)
        })
        .collect();
    if out.len() > 10 {
        let more = out.len() - 10;
        out.truncate(10);
        out.push(format!("{more} more"));
    }
    out
}

/// How to lay one world out: the commit it starts from, then paths taken from
/// other commits (or removed), then files baton writes itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The commit checked out first.
    pub at: String,
    /// Paths checked out from another commit, by commit.
    pub take: Vec<(String, Vec<String>)>,
    /// Paths removed (they do not exist on the side they are taken from).
    pub remove: Vec<String>,
    /// Files baton writes (the merged package manifest).
    pub write: Vec<(String, Vec<u8>)>,
}

/// The worlds of one replay: before the work and after it, and after it with
/// the work's files replaced by junk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The reference commit (its product) with the pinned files of the entry.
    pub before: Plan,
    /// The same, with the head's product.
    pub after: Plan,
    /// `after` with every product file the work added or changed holding junk
    /// ([`JUNK`]): a check that still passes there does not test the work.
    pub mutant: Plan,
    /// The product files the work added or changed.
    pub work: Vec<String>,
    /// Whether `after` holds the head's tracked files as they are, baton's
    /// records aside: nothing pinned differs from the entry, and nothing but the
    /// product and the records changed since the reference.
    pub exact: bool,
}

/// What a mutant world's changed product files hold.
pub const JUNK: &[u8] = b"baton: this file was replaced by junk to see that the check fails\n";

/// The pair of worlds for a check whose layers are `layers`, replayed against
/// `reference` (the commit before the work), with pinned files as at `entry`
/// (where the feature entered the list) and the work as at `head`.
pub fn pair(
    dir: &std::path::Path,
    layers: &Layers,
    entry: &str,
    reference: &str,
    head: &str,
) -> Result<Pair, HarnessError> {
    // Pinned files the reference has otherwise than the entry are put back as
    // the entry had them (taken from it, or removed where it had none), in both
    // worlds. Neither world takes anything pinned or held from the head.
    let mut before = Plan {
        at: reference.to_string(),
        ..Plan::default()
    };
    let mut from_entry = Vec::new();
    for c in changes(dir, entry, reference)? {
        if layers.of(&c.path) != Layer::Pinned {
            continue;
        }
        if c.added {
            before.remove.push(c.path);
        } else {
            from_entry.push(c.path);
        }
    }
    if !from_entry.is_empty() {
        before.take.push((entry.to_string(), from_entry));
    }
    let mut after = before.clone();
    let mut exact = before.take.is_empty() && before.remove.is_empty();
    let mut product = Vec::new();
    let mut package = false;
    for c in changes(dir, reference, head)? {
        match layers.of(&c.path) {
            Layer::Product if c.path == PACKAGE_JSON => package = true,
            Layer::Product if c.deleted => after.remove.push(c.path),
            Layer::Product => product.push(c.path),
            Layer::Pinned | Layer::Held => exact &= layers.is_record(&c.path),
        }
    }
    exact &= !package;
    let work = product.clone();
    if !product.is_empty() {
        after.take.insert(0, (head.to_string(), product));
    }
    if package {
        let at_ref = show(dir, reference, PACKAGE_JSON);
        let at_head = show(dir, head, PACKAGE_JSON);
        if let Some(merged) = merge_package(at_ref.as_deref(), at_head.as_deref()) {
            after.write.push((PACKAGE_JSON.to_string(), merged));
        }
    }
    let mut mutant = after.clone();
    mutant
        .write
        .extend(work.iter().map(|p| (p.clone(), JUNK.to_vec())));
    Ok(Pair {
        before,
        after,
        mutant,
        work,
        exact,
    })
}

/// The bytes of `path` at `commit`, if it is there.
fn show(dir: &std::path::Path, commit: &str, path: &str) -> Option<String> {
    crate::git::git(dir, &["show", &format!("{commit}:{path}")]).ok()
}

/// The package manifest of the after world: the reference's (or nothing), with
/// the head's product keys (`PACKAGE_PRODUCT_KEYS`: what the package is and
/// what it depends on). `scripts` and a runner's keys stay the reference's.
/// `None` when neither side parses as an object (then it is left as the
/// reference has it).
pub fn merge_package(reference: Option<&str>, head: Option<&str>) -> Option<Vec<u8>> {
    let parse = |t: Option<&str>| -> Option<Map<String, Value>> {
        match serde_json::from_str::<Value>(t?).ok()? {
            Value::Object(m) => Some(m),
            _ => None,
        }
    };
    let (r, h) = (parse(reference), parse(head));
    if r.is_none() && h.is_none() {
        return None;
    }
    let mut out = r.unwrap_or_default();
    let h = h.unwrap_or_default();
    for k in PACKAGE_PRODUCT_KEYS {
        match h.get(*k) {
            Some(v) => {
                out.insert((*k).to_string(), v.clone());
            }
            None => {
                out.remove(*k);
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(out)).ok()?;
    text.push('\n');
    Some(text.into_bytes())
}

/// Where feature `f` entered the list `list_name` of the project at `dir`: as
/// baton noted it when it accepted the list ([`baton_records::References`]),
/// else found in the list's history (the first commit whose list holds it as it
/// reads now, else the list's first commit) and noted for next time. `None`
/// when the list has no history.
pub fn entry_of(
    dir: &std::path::Path,
    list_name: &str,
    f: &baton_records::Feature,
) -> Option<String> {
    let mut refs = baton_records::References::load(dir);
    if let Some(e) = refs.entered(f) {
        return Some(e.to_string());
    }
    let history = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["log", "--first-parent", "--reverse", "--format=%H"];
        args.extend_from_slice(extra);
        args.extend(["--", list_name]);
        crate::git::git(dir, &args)
            .map(|o| o.lines().map(str::to_string).collect())
            .unwrap_or_default()
    };
    let me = baton_records::references::identity(f);
    let pickaxe = format!("-S{}", f.description);
    let holds = |c: &str| {
        show(dir, c, list_name)
            .and_then(|t| baton_records::FeatureList::parse(&t, list_name).ok())
            .is_some_and(|l| {
                l.features
                    .iter()
                    .any(|g| baton_records::references::identity(g) == me)
            })
    };
    let found = history(&[&pickaxe])
        .into_iter()
        .take(20)
        .find(|c| holds(c))
        .or_else(|| history(&[]).into_iter().next())?;
    refs.set(f, &found);
    let _ = refs.save(dir);
    Some(found)
}

/// Whether feature text (`description` and `steps`) is about the start script
/// `init` (names it): then the start script is the feature's work.
pub fn about_init(f: &baton_records::Feature, init: &str) -> bool {
    let name = init.rsplit('/').next().unwrap_or(init);
    f.description.contains(name) || f.steps.iter().any(|s| s.contains(name))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn layers(command: &str) -> Layers {
        Layers::new(
            command,
            false,
            &baton_config::ProjectConfig::default(),
            &["data/ref/**".to_string()],
        )
    }

    #[test]
    fn what_shapes_a_check_is_not_the_product() {
        let l = layers("bash tests/t1.sh && cmp -s out expected/out");
        for p in [
            "tests/t1.sh",
            "expected/out",
            "lib/assert.sh",
            "test/task-1.spec.js-snapshots/x.spec.js",
            "tests/app.py",
            "app.pyc",
            "src/__pycache__/calc.cpython-311.pyc",
            "node_modules/.bin/playwright",
            "playwright.config.js",
            "pyproject.toml",
            ".npmrc",
            "conftest.py",
            "data/ref/a.txt",
            "test_calc.py",
        ] {
            assert_eq!(l.of(p), Layer::Pinned, "{p}");
        }
        for p in [
            "feature_list.json",
            "claude-progress.txt",
            "init.sh",
            ".env",
            ".baton/state.json",
            "baton.toml",
            "app_spec.txt",
        ] {
            assert_eq!(l.of(p), Layer::Held, "{p}");
        }
        for p in [
            "src/app.py",
            "calc.py",
            "index.html",
            "Makefile",
            "package-lock.json",
        ] {
            assert_eq!(l.of(p), Layer::Product, "{p}");
        }
        // Check scripts by name; the program a check runs is the product; a
        // build file whose targets the check runs is held.
        let l = layers("./check_todo.sh && bash todo.sh list && make check");
        assert_eq!(l.of("check_todo.sh"), Layer::Pinned);
        assert_eq!(l.of("checks/f1.sh"), Layer::Pinned);
        assert_eq!(l.of("todo.sh"), Layer::Product);
        assert_eq!(l.of("Makefile"), Layer::Held);
        // A feature about the start script has it as its work.
        let about = Layers::new(
            "curl -fsS http://127.0.0.1:4100/",
            true,
            &baton_config::ProjectConfig::default(),
            &[],
        );
        assert_eq!(about.of("init.sh"), Layer::Product);
    }

    #[test]
    fn the_package_manifest_keeps_the_references_scripts_and_the_heads_dependencies() {
        let r = r#"{"name":"app","scripts":{"test":"jest"},"jest":{"roots":["test"]},"dependencies":{"a":"1"}}"#;
        let h = r#"{"name":"app","scripts":{"test":"true"},"jest":{"roots":["nowhere"]},"dependencies":{"a":"1","b":"2"},"type":"module"}"#;
        let m: Value = serde_json::from_slice(&merge_package(Some(r), Some(h)).unwrap()).unwrap();
        assert_eq!(m["scripts"]["test"], "jest");
        assert_eq!(m["jest"]["roots"][0], "test");
        assert_eq!(m["dependencies"]["b"], "2");
        assert_eq!(m["type"], "module");
        // A manifest the session added brings its dependencies, not its scripts.
        let m: Value = serde_json::from_slice(&merge_package(None, Some(h)).unwrap()).unwrap();
        assert!(m.get("scripts").is_none());
        assert_eq!(m["dependencies"]["a"], "1");
        assert_eq!(merge_package(None, Some("not json")), None);
    }
}
