use super::*;

#[test]
fn a_codex_home_planted_as_a_link_never_takes_the_users_files_with_it() {
    let home = tempfile::tempdir().unwrap();
    let users = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(users.path().join("0003")).unwrap();
    std::fs::write(users.path().join("0003/keep"), "mine").unwrap();
    // The agent replaced the Codex homes' directory with a link to the user's.
    std::os::unix::fs::symlink(users.path(), home.path().join(".baton-codex")).unwrap();
    let scratch = Scratch::of(&home.path().join(".baton-codex/0003"));
    scratch.remove().unwrap();
    scratch.create().unwrap();
    assert!(
        users.path().join("0003/keep").is_file(),
        "followed the link"
    );
    assert!(home.path().join(".baton-codex/0003").is_dir());
    assert!(!home.path().join(".baton-codex").is_symlink());
    // A link planted inside the session's home goes with it, alone.
    std::os::unix::fs::symlink(users.path(), home.path().join(".baton-codex/0003/x")).unwrap();
    scratch.remove().unwrap();
    assert!(users.path().join("0003/keep").is_file());
    assert!(!home.path().join(".baton-codex/0003").exists());
}

#[test]
fn quoting_survives_single_quotes() {
    assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
}

#[test]
fn a_reset_is_read_only_from_unix_seconds() {
    let later = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let d = reset_of(&format!("Claude AI usage limit reached|{later}")).unwrap();
    assert!(
        d > Duration::from_secs(590) && d <= Duration::from_secs(600),
        "{d:?}"
    );
    assert_eq!(reset_of("You've hit your limit · resets 3pm"), None);
}

#[test]
fn stderr_keeps_its_end_in_whole_lines() {
    let mut text = String::new();
    for i in 0..20_000 {
        keep_tail(&mut text, &format!("line {i}"));
    }
    assert!(text.len() <= STDERR_KEPT, "{}", text.len());
    assert!(text.starts_with("line ") && text.ends_with("line 19999\n"));
    assert_eq!(
        tail(&text),
        "line 19995 | line 19996 | line 19997 | line 19998 | line 19999"
    );
}

#[test]
fn the_tail_is_the_last_five_lines() {
    let s = (1..=8).map(|i| format!("l{i}\n\n")).collect::<String>();
    assert_eq!(tail(&s), "l4 | l5 | l6 | l7 | l8");
}
