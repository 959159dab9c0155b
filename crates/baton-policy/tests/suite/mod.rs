mod corpus;
mod gate;
mod props;
mod robust;

use baton_config::PolicyConfig;
use baton_policy::Policy;

/// A fresh project with the files the corpus mentions (and the remotes `origin`
/// and `upstream` in its `.git/config`), and the default policy.
pub fn project() -> (tempfile::TempDir, Policy) {
    let dir = tempfile::Builder::new()
        .prefix("baton-policy-")
        .tempdir()
        .unwrap();
    std::fs::write(dir.path().join("init.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    std::fs::write(
        dir.path().join(".git/config"),
        "[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\turl = https://github.com/me/app.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[remote \"upstream\"]\n\turl = https://github.com/them/app.git\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("package.json"), "{}\n").unwrap();
    let policy = Policy::new(&PolicyConfig::default(), dir.path()).unwrap();
    (dir, policy)
}

/// [`project`], judged as inside baton's bubblewrap sandbox.
pub fn project_with_bubblewrap() -> (tempfile::TempDir, Policy) {
    let (dir, policy) = project();
    (dir, policy.with_bubblewrap(true))
}
