mod corpus;
mod gate;
mod props;
mod robust;

use baton_config::PolicyConfig;
use baton_policy::Policy;

/// A fresh project with the files the corpus mentions, and the default policy.
pub fn project() -> (tempfile::TempDir, Policy) {
    let dir = tempfile::Builder::new()
        .prefix("baton-policy-")
        .tempdir()
        .unwrap();
    std::fs::write(dir.path().join("init.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    std::fs::write(dir.path().join("package.json"), "{}\n").unwrap();
    let policy = Policy::new(&PolicyConfig::default(), dir.path()).unwrap();
    (dir, policy)
}
