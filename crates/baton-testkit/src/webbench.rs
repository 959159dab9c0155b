//! A Web-Bench-like project for tests and benches: a small static web app (one
//! button a feature, in `app/app.js`) and one Playwright spec a feature
//! (`tests/fN.spec.js`), run by Playwright's own runner against Debian's
//! Chromium. Each feature's check is `npx playwright test tests/fN.spec.js`, the
//! shape baton runs many of as one without configuration.

use std::path::{Path, PathBuf};

/// What the project needs: Playwright's runner (`.ci/npm`'s `node_modules`,
/// linked into the project) and Chromium.
#[derive(Debug, Clone)]
pub struct WebBenchParts {
    /// The `node_modules` holding `playwright`.
    pub node_modules: PathBuf,
    /// Chromium (`$BATON_CHROMIUM`, or `/usr/bin/chromium`).
    pub chromium: PathBuf,
}

/// The parts for `test`, or `None` (with a `SKIPPED` note) where one is missing;
/// on CI (`CI=true`) a missing part fails the test instead.
pub fn parts(test: &str) -> Option<WebBenchParts> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let node_modules = root.join(".ci/npm/node_modules");
    let chromium = std::env::var_os("BATON_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let mut missing = Vec::new();
    if !node_modules.join("playwright/cli.js").is_file() {
        missing.push(format!(
            "{} (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix .ci/npm @playwright/mcp)",
            node_modules.join("playwright").display()
        ));
    }
    if !chromium.is_file() {
        missing.push(format!("{} (apt-get install chromium)", chromium.display()));
    }
    if missing.is_empty() {
        return Some(WebBenchParts {
            node_modules: node_modules.canonicalize().unwrap_or(node_modules),
            chromium,
        });
    }
    crate::skip(test, &format!("missing {}", missing.join(", ")));
    None
}

/// What the project's `.gitignore` holds.
pub const IGNORED: &str = ".baton/\nnode_modules\ntest-results/\nplaywright-report/\n.runs/\n";

/// How many times the runner started in `dir` (its `.runs/log`).
pub fn runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join(".runs/log"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// The `[sandbox]` table that lets every command of a run on the project in
/// `dir` (a clean checkout's included) write the runner's log, `.runs/`.
pub fn sandbox_toml(dir: &Path) -> String {
    format!(
        "[sandbox]\nwritable = [{:?}]\n",
        dir.join(".runs").display().to_string()
    )
}

/// Feature `n`'s check.
pub fn check(n: usize) -> String {
    format!("npx playwright test tests/f{n}.spec.js")
}

/// Write the project into `dir`: `features` specs, the app with the features of
/// `built` (1-based), the runner's config, `node_modules` linked, a
/// `.gitignore`, and `feature_list.json` with each feature's check, passing where
/// `passes` says so.
pub fn write(
    dir: &Path,
    parts: &WebBenchParts,
    features: usize,
    built: &[usize],
    passes: &[usize],
) -> std::io::Result<()> {
    let w = |rel: &str, text: &str| -> std::io::Result<()> {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, text)
    };
    w(
        "app/index.html",
        "<!doctype html><html><head><title>Bench</title></head><body><div id=\"app\"></div><script src=\"app.js\"></script></body></html>\n",
    )?;
    w("app/app.js", &app(built))?;
    for n in 1..=features {
        w(&format!("tests/f{n}.spec.js"), &spec(n))?;
    }
    w(
        "playwright.config.js",
        &format!(
            "module.exports = {{\n  testDir: 'tests',\n  globalSetup: './runs.js',\n  timeout: 10000,\n  expect: {{ timeout: 2000 }},\n  reporter: 'list',\n  use: {{ headless: true, actionTimeout: 2000, launchOptions: {{ executablePath: {:?} }} }},\n}};\n",
            parts.chromium.display().to_string()
        ),
    )?;
    // Each start of the runner leaves a line in the project's `.runs/log`
    // (ignored), also from a clean checkout of it: how many runner processes
    // the checks took. A clean checkout's commands may only read the project:
    // that one dir is theirs to write too ([`sandbox_toml`]).
    let log = dir.join(".runs");
    std::fs::create_dir_all(&log)?;
    let toml = dir.join("baton.toml");
    if toml.exists() {
        let mut t = std::fs::read_to_string(&toml)?;
        t.push_str(&sandbox_toml(dir));
        std::fs::write(&toml, t)?;
    }
    w(
        "runs.js",
        &format!(
            "const fs = require('fs');\nmodule.exports = async () => {{\n  fs.mkdirSync({log:?}, {{ recursive: true }});\n  fs.appendFileSync({:?}, 'run\\n');\n}};\n",
            log.join("log").display().to_string(),
            log = log.display().to_string()
        ),
    )?;
    w(".gitignore", IGNORED)?;
    // Installing the dependencies, as a real project's start script does: in
    // a clean checkout too (proof replays its checks in one).
    w(
        "init.sh",
        &format!(
            "#!/usr/bin/env bash\nnm={:?}\n[ -e node_modules ] || {{ mkdir -p node_modules/.bin && ln -s \"$nm/playwright\" node_modules/playwright && ln -s \"$nm/playwright-core\" node_modules/playwright-core && ln -s ../playwright/cli.js node_modules/.bin/playwright; }}\necho 'app ready (a static page)'\n",
            parts.node_modules.display().to_string()
        ),
    )?;
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dir.join("init.sh"), std::fs::Permissions::from_mode(0o755))?;
    }
    // A directory of links, as npm's own (a link of the whole folder would
    // leave the agent nothing of node_modules it may change).
    let modules = dir.join("node_modules");
    if !modules.exists() {
        std::fs::create_dir_all(modules.join(".bin"))?;
        for package in ["playwright", "playwright-core"] {
            std::os::unix::fs::symlink(parts.node_modules.join(package), modules.join(package))?;
        }
        std::os::unix::fs::symlink("../playwright/cli.js", modules.join(".bin/playwright"))?;
    }
    w("feature_list.json", &feature_list(features, passes))
}

/// The app's script with the features of `built`: a button `#bN` that writes
/// `done N` into `#oN`.
pub fn app(built: &[usize]) -> String {
    built
        .iter()
        .map(|n| {
            format!(
                "(function () {{ const b = document.createElement('button'); b.id = 'b{n}'; b.textContent = 'Feature {n}'; const o = document.createElement('span'); o.id = 'o{n}'; b.onclick = () => {{ o.textContent = 'done {n}'; }}; document.getElementById('app').append(b, o); }})();\n"
            )
        })
        .collect()
}

fn spec(n: usize) -> String {
    format!(
        "const {{ test, expect }} = require('playwright/test');\nconst path = require('path');\n\ntest('feature {n}', async ({{ page }}) => {{\n  await page.goto('file://' + path.resolve(__dirname, '../app/index.html'));\n  await page.click('#b{n}');\n  await expect(page.locator('#o{n}')).toHaveText('done {n}');\n}});\n"
    )
}

/// `feature_list.json` of `features` features, each with its check, passing where
/// `passes` names it.
pub fn feature_list(features: usize, passes: &[usize]) -> String {
    let list: Vec<serde_json::Value> = (1..=features)
        .map(|n| {
            serde_json::json!({
                "category": "functional",
                "description": format!("Feature {n}: its button says done {n}"),
                "steps": [format!("Open the app"), format!("Click Feature {n}"), format!("See done {n}")],
                "verify": check(n),
                "passes": passes.contains(&n),
            })
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap_or_default() + "\n"
}
