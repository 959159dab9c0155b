//! Where a path can land: inside the project, in `.git`/`.baton`, in a temp dir, in a
//! secret location. Paths are patterns (globs, unknown parts as `*`), resolved
//! against every directory the command may be running in.

use std::path::{Component, Path, PathBuf};

use crate::word::{glob_match, pattern_has_glob, unescape};

/// The directories the shell may be in when a command runs: a small set of known
/// paths, or unknown (after `cd` to a computed place, or in a function body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cwd {
    /// One of these.
    Known(Vec<PathBuf>),
    /// Anything.
    Unknown,
}

/// Most directories tracked before the working directory is treated as unknown.
const MAX_CWDS: usize = 8;

impl Cwd {
    /// Either of two.
    pub fn union(&self, other: &Cwd) -> Cwd {
        match (self, other) {
            (Cwd::Known(a), Cwd::Known(b)) => {
                let mut v = a.clone();
                for p in b {
                    if !v.contains(p) {
                        v.push(p.clone());
                    }
                }
                if v.len() > MAX_CWDS {
                    Cwd::Unknown
                } else {
                    Cwd::Known(v)
                }
            }
            _ => Cwd::Unknown,
        }
    }
}

/// Where a written path lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// Inside the project, outside the protected directories.
    Project,
    /// The project directory itself.
    ProjectRoot,
    /// The project directory's parent or above.
    AboveProject,
    /// `.git` or `.baton` of the project, or inside them (the name).
    Protected(&'static str),
    /// A temp directory.
    Temp,
    /// `/dev/null`, `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`.
    Device,
    /// Anywhere else.
    Outside(PathBuf),
}

/// How a path relates to a secret location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Secret {
    /// The path is (or may be) the secret location or inside it.
    Inside(String),
    /// The path is (or may be) a directory above a secret location.
    Above(String),
}

/// Directories of the project that only git and baton may change.
pub(crate) const PROTECTED: &[&str] = &[".git", baton_records::layout::DIR];

/// The places the checker knows: the project, home, temp dirs.
#[derive(Debug, Clone)]
pub(crate) struct Places {
    /// The project directory, canonical.
    pub project: PathBuf,
    project_comps: Vec<String>,
    /// The user's home directory.
    pub home: Option<PathBuf>,
    temp: Vec<Vec<String>>,
    secrets: Vec<(Vec<String>, String)>,
}

impl Places {
    /// The places of a project; home and temp dirs come from the environment.
    pub fn new(project: &Path) -> Self {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute());
        Self::with_home(project, home)
    }

    /// The places of a project for a user whose home is `home`.
    pub fn with_home(project: &Path, home: Option<PathBuf>) -> Self {
        let mut temp_dirs = vec![PathBuf::from("/tmp"), PathBuf::from("/var/tmp")];
        if let Some(t) = std::env::var_os("TMPDIR").map(PathBuf::from)
            && t.is_absolute()
            && t != Path::new("/")
        {
            temp_dirs.push(t);
        }
        let mut temp = Vec::new();
        for t in temp_dirs {
            temp.push(comps(&t));
            if let Ok(real) = t.canonicalize() {
                temp.push(comps(&real));
            }
        }
        let mut secrets = Vec::new();
        for s in crate::secrets::system() {
            secrets.push((split(s), s.to_string()));
        }
        if let Some(h) = &home {
            let hc = comps(h);
            for s in crate::secrets::home_relative() {
                let mut c = hc.clone();
                c.extend(split(s));
                secrets.push((c, format!("~/{s}")));
            }
        }
        Self {
            project_comps: comps(project),
            project: project.to_path_buf(),
            home,
            temp,
            secrets,
        }
    }

    /// `pattern` (absolute, or relative to `cwd`) as normalized components.
    pub fn absolute(&self, pattern: &str, cwd: &Path) -> Vec<String> {
        let mut out: Vec<String> = if pattern.starts_with('/') {
            Vec::new()
        } else {
            comps(cwd)
        };
        for part in pattern.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    out.pop();
                }
                p => out.push(p.to_string()),
            }
        }
        out
    }

    /// Where a path pattern written relative to `cwd` lands. Literal paths are also
    /// resolved through existing symlinks; the worse of the two readings is kept.
    pub fn place(&self, pattern: &str, cwd: &Path) -> Place {
        let abs = self.absolute(pattern, cwd);
        let lexical = self.classify(&abs);
        if pattern_has_glob(pattern) {
            return lexical;
        }
        let path = to_path(&abs.iter().map(|c| unescape(c)).collect::<Vec<_>>());
        let real = comps(&real_path(&path));
        let resolved = self.classify(&real);
        worse(lexical, resolved)
    }

    fn classify(&self, abs: &[String]) -> Place {
        for dev in ["null", "stdout", "stderr", "zero", "tty"] {
            if abs.len() == 2 && abs[0] == "dev" && comp_is(&abs[1], dev) {
                return Place::Device;
            }
        }
        if abs.len() == 3 && abs[0] == "dev" && abs[1] == "fd" {
            return Place::Device;
        }
        let base = &self.project_comps;
        let n = abs.len().min(base.len());
        let prefix_matches = (0..n).all(|i| comp_may_be(&abs[i], &base[i]));
        if prefix_matches {
            if abs.len() < base.len() {
                return Place::AboveProject;
            }
            if abs.len() == base.len() {
                return Place::ProjectRoot;
            }
            let first = &abs[base.len()];
            for p in PROTECTED {
                if comp_may_be(first, p) {
                    return Place::Protected(p);
                }
            }
            return Place::Project;
        }
        for t in &self.temp {
            if abs.len() > t.len() && (0..t.len()).all(|i| comp_may_be(&abs[i], &t[i])) {
                return Place::Temp;
            }
        }
        Place::Outside(to_path(abs))
    }

    /// Whether a path pattern may reach a secret location. `leading_unknown` means
    /// the pattern starts with an unknown value, so only names inside it are judged.
    pub fn secret(&self, pattern: &str, cwd: &Path, leading_unknown: bool) -> Option<Secret> {
        // Secret names anywhere in the path, however it was reached.
        let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
        for seq in crate::secrets::anywhere() {
            let seq: Vec<&str> = seq.split('/').collect();
            for start in 0..parts.len() {
                if parts.len() - start < seq.len() {
                    break;
                }
                if seq
                    .iter()
                    .enumerate()
                    .all(|(k, name)| names_secret(parts[start + k], name))
                {
                    return Some(Secret::Inside(seq.join("/")));
                }
            }
        }
        if leading_unknown {
            return None;
        }
        let abs = self.absolute(pattern, cwd);
        let inside_project = {
            let b = &self.project_comps;
            abs.len() >= b.len() && (0..b.len()).all(|i| comp_is(&abs[i], &b[i]))
        };
        if inside_project {
            return None;
        }
        let mut above = None;
        for (s, label) in &self.secrets {
            let n = abs.len().min(s.len());
            if (0..n).all(|i| s[i] == "*" || comp_may_be(&abs[i], &s[i])) {
                if abs.len() >= s.len() {
                    return Some(Secret::Inside(label.clone()));
                }
                above.get_or_insert_with(|| label.clone());
            }
        }
        // Other users' homes.
        let own_home = self.home.as_deref().map(comps).unwrap_or_default();
        for (root, depth) in [("home", 2usize), ("root", 1)] {
            if abs.first().is_some_and(|c| comp_may_be(c, root)) {
                let own = own_home.len() >= depth
                    && abs.len() >= depth
                    && (0..depth).all(|i| comp_is(&abs[i], &own_home[i]));
                if own {
                    continue;
                }
                if abs.len() >= depth {
                    return Some(Secret::Inside(format!(
                        "another user's home ({})",
                        to_path(&abs[..depth]).display()
                    )));
                }
                above.get_or_insert_with(|| "other users' homes".to_string());
            }
        }
        above.map(Secret::Above)
    }

    /// Whether `path` (absolute, literal) is inside the project.
    pub fn in_project(&self, path: &Path) -> bool {
        let c = comps(path);
        c.len() >= self.project_comps.len()
            && (0..self.project_comps.len()).all(|i| c[i] == self.project_comps[i])
    }
}

/// Whether a pattern component names a secret: a glob with at least one literal
/// character that matches it, or the name itself.
fn names_secret(part: &str, name: &str) -> bool {
    if part.chars().all(|c| c == '*') {
        return false;
    }
    comp_may_be(part, name)
}

/// Whether a pattern component may match the literal name `name`.
fn comp_may_be(part: &str, name: &str) -> bool {
    if pattern_has_glob(part) {
        glob_match(part, name)
    } else {
        comp_is(part, name)
    }
}

/// Whether a component (possibly with escapes) is exactly `name`.
fn comp_is(part: &str, name: &str) -> bool {
    if part.contains('\\') {
        unescape(part) == name
    } else {
        part == name
    }
}

fn worse(a: Place, b: Place) -> Place {
    fn rank(p: &Place) -> u8 {
        match p {
            Place::Device => 0,
            Place::Temp => 1,
            Place::Project => 2,
            Place::ProjectRoot => 3,
            Place::Outside(_) => 4,
            Place::AboveProject => 5,
            Place::Protected(_) => 6,
        }
    }
    if rank(&b) > rank(&a) { b } else { a }
}

fn split(s: &str) -> Vec<String> {
    s.split('/')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// The normal components of an absolute path, as strings.
pub(crate) fn comps(p: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n.to_string_lossy().into_owned()),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn to_path(c: &[String]) -> PathBuf {
    let mut p = PathBuf::from("/");
    for x in c {
        p.push(x);
    }
    p
}

/// The path with every existing ancestor canonicalized (symlinks followed, loops
/// bounded); the part that does not exist yet is appended unchanged. The same
/// resolution as the file tools' write confinement.
pub(crate) use baton_tools::paths::real_path;

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> Places {
        Places::with_home(Path::new("/work/proj"), Some(PathBuf::from("/home/dev")))
    }

    #[test]
    fn places_of_writes() {
        let p = places();
        let cwd = Path::new("/work/proj");
        assert_eq!(p.place("src/a.rs", cwd), Place::Project);
        assert_eq!(p.place(".git", cwd), Place::Protected(".git"));
        assert_eq!(p.place("./.baton/x", cwd), Place::Protected(".baton"));
        assert_eq!(p.place("*", cwd), Place::Protected(".git"));
        assert_eq!(p.place(".", cwd), Place::ProjectRoot);
        assert_eq!(p.place("..", cwd), Place::AboveProject);
        assert_eq!(p.place("/tmp/x", cwd), Place::Temp);
        assert_eq!(p.place("/dev/null", cwd), Place::Device);
        assert_eq!(
            p.place("../other/x", cwd),
            Place::Outside(PathBuf::from("/work/other/x"))
        );
        assert_eq!(
            p.place("src/../../proj/.git/config", cwd),
            Place::Protected(".git")
        );
    }

    #[test]
    fn secrets() {
        let p = places();
        let cwd = Path::new("/work/proj");
        assert!(matches!(
            p.secret("/home/dev/.ssh/id_rsa", cwd, false),
            Some(Secret::Inside(_))
        ));
        assert!(matches!(
            p.secret("x/.s*/id", cwd, false),
            Some(Secret::Inside(_))
        ));
        assert!(matches!(
            p.secret("/etc/shadow", cwd, false),
            Some(Secret::Inside(_))
        ));
        assert!(matches!(
            p.secret("/proc/*/environ", cwd, false),
            Some(Secret::Inside(_))
        ));
        assert!(matches!(
            p.secret("/home/alice/notes", cwd, false),
            Some(Secret::Inside(_))
        ));
        assert!(matches!(
            p.secret("/home/dev", cwd, false),
            Some(Secret::Above(_))
        ));
        assert_eq!(p.secret("/home/dev/code/x", cwd, false), None);
        assert_eq!(p.secret("src/*.rs", cwd, false), None);
        assert_eq!(p.secret("*", cwd, true), None);
        assert_eq!(p.secret("/etc/hosts", cwd, false), None);
    }
}
