//! Many machines on one project through a shared git remote and nothing else
//! (`baton run --remote URL`): claims are refs on the remote created by a push
//! that fails when the ref exists, the main branch moves only by a push that fails
//! when someone else moved it first, and claims expire by the time in their
//! commit. Here: the protocol ([`Remote`]) and the coordinator's use of it
//! (opening the remote, syncing the accepted list, the one initializer). See
//! `docs/parallel.md`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_records::{SessionKind, State};

use super::claims::{CLAIMS, Claims, Mainline};
use super::{Parallel, WAIT_FOR_OTHERS};
use crate::error::HarnessError;
use crate::git::{self, git, git_network};
use crate::limits::RunEnd;
use crate::runner::Reporter;

/// The name of the remote baton adds to the project's repository.
pub const REMOTE: &str = "baton";

/// The shared remote of a project, seen from one machine's repository.
#[derive(Debug)]
pub struct Remote {
    main: PathBuf,
    branch: String,
    worker: String,
    ttl: Duration,
    /// The claims this machine holds, by name, with their commits: renewed while
    /// their sessions run.
    held: std::sync::Mutex<std::collections::BTreeMap<String, String>>,
}

impl Remote {
    /// `main`'s remote `baton` at `url` (added, or pointed at `url`), for the
    /// project's current branch; claims older than `ttl` are taken as abandoned.
    pub fn open(main: &Path, url: &str, worker: &str, ttl: Duration) -> Result<Self, HarnessError> {
        match git(main, &["remote", "get-url", REMOTE]) {
            Ok(u) if u.trim() == url => {}
            Ok(_) => {
                git(main, &["remote", "set-url", REMOTE, url])?;
            }
            Err(_) => {
                git(main, &["remote", "add", REMOTE, url])?;
            }
        }
        let branch = git(main, &["symbolic-ref", "--short", "HEAD"])?
            .trim()
            .to_string();
        Ok(Self {
            main: main.to_path_buf(),
            branch,
            worker: worker.to_string(),
            ttl,
            held: std::sync::Mutex::default(),
        })
    }

    /// The remote's main branch as fetched now, if it has one.
    fn remote_tip(&self) -> Result<Option<String>, HarnessError> {
        git_network(&self.main, &["fetch", "-q", "--no-tags", REMOTE])?;
        Ok(git(
            &self.main,
            &[
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/remotes/{REMOTE}/{}", self.branch),
            ],
        )
        .ok()
        .map(|s| s.trim().to_string()))
    }

    /// Bring the project's main branch up to the remote's (a fast-forward: this
    /// machine's main branch only moves after its own push). True when it moved.
    pub fn sync(&self) -> Result<bool, HarnessError> {
        let Some(tip) = self.remote_tip()? else {
            return Ok(false);
        };
        let head = git::own_head(&self.main)?;
        if head == tip {
            return Ok(false);
        }
        git(&self.main, &["merge", "-q", "--ff-only", &tip])?;
        Ok(true)
    }

    /// Push `commit` as the remote's main branch; false when the remote refused
    /// because its main branch moved (someone else integrated first).
    pub fn push(&self, commit: &str) -> Result<bool, HarnessError> {
        let spec = format!("{commit}:refs/heads/{}", self.branch);
        match git_network(&self.main, &["push", "-q", REMOTE, &spec]) {
            Ok(_) => Ok(true),
            Err(e) if refused(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The features (or other names) claimed on the remote now.
    pub fn claimed(&self) -> Result<BTreeSet<String>, HarnessError> {
        let out = git_network(&self.main, &["ls-remote", REMOTE, &format!("{CLAIMS}*")])?;
        Ok(out
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .filter_map(|r| r.strip_prefix(CLAIMS))
            .map(str::to_string)
            .collect())
    }

    /// A new claim commit for `name`: it names this worker and the time, and is
    /// unique, so that two claimants never push the same commit (which would be
    /// "up to date" for the second, not refused).
    fn claim_commit(&self, name: &str) -> Result<String, HarnessError> {
        let tree = git(&self.main, &["mktree"])?.trim().to_string();
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let msg = format!("baton claim {name} by {} ({nonce})", self.worker);
        Ok(git(&self.main, &["commit-tree", &tree, "-m", &msg])?
            .trim()
            .to_string())
    }

    /// Push `commit` as the claim of `name` if the remote's claim is `expect`
    /// (empty: if there is none). False when it is not.
    fn push_claim(&self, name: &str, expect: &str, commit: &str) -> Result<bool, HarnessError> {
        let r = format!("{CLAIMS}{name}");
        let lease = format!("--force-with-lease={r}:{expect}");
        match git_network(
            &self.main,
            &["push", "-q", &lease, REMOTE, &format!("{commit}:{r}")],
        ) {
            Ok(_) => Ok(true),
            Err(e) if refused(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Claim `name` on the remote: a claim commit pushed to
    /// `refs/baton/claims/<name>` only if that ref does not exist. True when won.
    pub fn claim(&self, name: &str) -> Result<bool, HarnessError> {
        let commit = self.claim_commit(name)?;
        let won = self.push_claim(name, "", &commit)?;
        if won && let Ok(mut held) = self.held.lock() {
            held.insert(name.to_string(), commit);
        }
        Ok(won)
    }

    /// Renew every claim this machine holds (a new commit, pushed only over the
    /// one it pushed), so that a session longer than the time to live keeps its
    /// feature. Returns the claims that were lost meanwhile (expired by another
    /// machine).
    pub fn renew(&self) -> Result<Vec<String>, HarnessError> {
        let held: Vec<(String, String)> = self
            .held
            .lock()
            .map(|h| h.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let mut lost = Vec::new();
        for (name, old) in held {
            let commit = self.claim_commit(&name)?;
            let kept = self.push_claim(&name, &old, &commit)?;
            if let Ok(mut h) = self.held.lock() {
                if kept {
                    h.insert(name.clone(), commit);
                } else {
                    h.remove(&name);
                }
            }
            if !kept {
                lost.push(name);
            }
        }
        Ok(lost)
    }

    /// How often to renew the claims held: a third of the time to live.
    pub fn renew_every(&self) -> Duration {
        (self.ttl / 3).max(Duration::from_secs(1))
    }

    /// Release this worker's claim of `name`.
    pub fn release(&self, name: &str) {
        if let Ok(mut h) = self.held.lock() {
            h.remove(name);
        }
        let _ = git_network(
            &self.main,
            &["push", "-q", REMOTE, &format!(":{CLAIMS}{name}")],
        );
    }

    /// Delete claims older than the time to live: their worker died or lost the
    /// network. Each is deleted only if it is still the claim that was judged old.
    pub fn expire(&self) -> Result<Vec<String>, HarnessError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.expire_at(now)
    }

    /// [`Remote::expire`] as of `now` (seconds since the epoch, as claim commits
    /// carry their time), so that its rule can be driven without waiting.
    pub fn expire_at(&self, now: u64) -> Result<Vec<String>, HarnessError> {
        let out = git_network(&self.main, &["ls-remote", REMOTE, &format!("{CLAIMS}*")])?;
        let mut expired = Vec::new();
        for line in out.lines() {
            let mut f = line.split_whitespace();
            let (Some(sha), Some(r)) = (f.next(), f.next()) else {
                continue;
            };
            // The claim's commit, to read its time.
            if git(&self.main, &["cat-file", "-e", sha]).is_err() {
                let _ = git_network(&self.main, &["fetch", "-q", "--no-tags", REMOTE, r]);
            }
            let Ok(t) = git(&self.main, &["log", "-1", "--format=%ct", sha]) else {
                continue;
            };
            let t: u64 = t.trim().parse().unwrap_or(now);
            if now.saturating_sub(t) < self.ttl.as_secs() {
                continue;
            }
            let lease = format!("--force-with-lease={r}:{sha}");
            if git_network(
                &self.main,
                &["push", "-q", &lease, REMOTE, &format!(":{r}")],
            )
            .is_ok()
                && let Some(name) = r.strip_prefix(CLAIMS)
            {
                expired.push(name.to_string());
            }
        }
        Ok(expired)
    }
}

/// Whether a push failed because the remote refused it (the ref moved or exists),
/// not because the remote could not be reached.
fn refused(e: &HarnessError) -> bool {
    matches!(e, HarnessError::Git { message, .. }
        if message.contains("[rejected]") || message.contains("failed to push some refs"))
}

impl Parallel<'_> {
    /// The project's remote `baton` at `url`, with baton's identity set for the
    /// claims' commits.
    pub(super) fn open_remote(&self, url: &str) -> Result<Remote, HarnessError> {
        let main = &self.files.dir;
        if !git::is_repo(main) {
            return Err(HarnessError::Input(format!(
                "{} is not a git repository: with --remote, clone the shared repository first (git clone {url} DIR)",
                main.display()
            )));
        }
        git::prepare(main, &self.cfg.git.user_name, &self.cfg.git.user_email)?;
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "host".into());
        let worker = format!("{host}-{}", std::process::id());
        let ttl = Duration::from_secs_f64(self.cfg.run.claim_ttl_minutes.max(1.0) * 60.0);
        Remote::open(main, url, &worker, ttl)
    }

    /// Bring the project up to the remote's main branch, and take the flips other
    /// machines merged into the accepted list.
    pub(super) fn sync(&self, mainline: &dyn Mainline) -> Result<(), HarnessError> {
        if !mainline.pull()? {
            return Ok(());
        }
        let Some(accepted) = self.files.load_accepted()? else {
            return Ok(());
        };
        let text = std::fs::read_to_string(self.files.feature_list())
            .map_err(crate::error::io(self.files.feature_list()))?;
        let merged = baton_records::reconcile(&accepted, &text, &self.cfg.project.feature_list);
        if !merged.violations.is_empty() {
            return Err(HarnessError::Input(format!(
                "the remote's {} differs from the accepted one beyond passes ({}); baton does not go on from it",
                self.cfg.project.feature_list,
                merged
                    .violations
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )));
        }
        let mut state = State::load(&self.files.dir)?;
        let before = state.features.len();
        for (i, f) in merged.list.features.iter().enumerate() {
            if f.passes {
                state.features.remove(&(i + 1));
            }
        }
        if state.features.len() != before {
            state.save(&self.files.dir)?;
        }
        self.files.save_accepted(&merged.list)?;
        Ok(())
    }

    /// With a remote: take the project's feature list from it, or be the one
    /// machine that runs the initializer (claim `init`), or wait for the one that
    /// does. `Some` when the run ends here.
    pub(super) async fn initialize_shared(
        &self,
        r: &Remote,
    ) -> Result<Option<RunEnd>, HarnessError> {
        let main = &self.files.dir;
        loop {
            r.sync()?;
            if self.files.load_accepted()?.is_some() {
                return Ok(None);
            }
            if self.files.feature_list().is_file() {
                let mut state = State::load(main)?;
                let runner = self.runner(
                    main,
                    self.main,
                    self.reporter,
                    self.opts.clone(),
                    self.stop.clone(),
                )?;
                runner.accepted_list(&mut state)?;
                return Ok(None);
            }
            if r.claim("init")? {
                // A claim of `init` is released only after its initializer's list
                // was pushed: what was pushed before this claim was won is seen
                // now, or a second initializer would run.
                r.sync()?;
                if self.files.load_accepted()?.is_some() || self.files.feature_list().is_file() {
                    r.release("init");
                    continue;
                }
                // The initializer, and the rest of a short list, before the others
                // adopt it.
                let made = self.make_list(&mut 0).await;
                if !matches!(made, Ok(None)) {
                    r.release("init");
                    return made;
                }
                let head = git::own_head(main)?;
                if !r.push(&head)? {
                    r.release("init");
                    return Err(HarnessError::Input(
                        "the remote's main branch moved while this machine ran the initializer (its claim of `init` had expired?)".into(),
                    ));
                }
                r.release("init");
                return Ok(None);
            }
            self.reporter
                .line("another machine is running the initializer; waiting for its feature list");
            tokio::select! {
                () = tokio::time::sleep(WAIT_FOR_OTHERS) => {}
                () = self.stop.cancelled() => return Ok(Some(RunEnd::Interrupted)),
            }
        }
    }

    /// Whether this machine's record holds an initializer session.
    pub(super) fn ran_initializer(&self) -> Result<bool, HarnessError> {
        Ok(State::load(&self.files.dir)?
            .sessions
            .iter()
            .any(|s| s.kind == SessionKind::Initializer))
    }
}

impl Mainline for Remote {
    fn shared(&self) -> bool {
        true
    }

    fn pull(&self) -> Result<bool, HarnessError> {
        self.sync()
    }

    fn publish(&self, commit: &str) -> Result<bool, HarnessError> {
        self.push(commit)
    }
}

impl Claims for Remote {
    fn claim(&self, n: usize, _tip: &str) -> Result<bool, HarnessError> {
        Remote::claim(self, &n.to_string())
    }

    fn release(&self, n: usize) {
        Remote::release(self, &n.to_string());
    }

    fn claimed(&self) -> Result<BTreeSet<usize>, HarnessError> {
        Ok(Remote::claimed(self)?
            .iter()
            .filter_map(|name| name.parse().ok())
            .collect())
    }

    /// Claims whose machine stopped renewing them long ago are released.
    fn drop_stale(&self, reporter: &dyn Reporter) -> Result<(), HarnessError> {
        for name in self.expire()? {
            reporter.line(&format!("claim of {name} expired on the remote; released"));
        }
        Ok(())
    }

    fn renew_every(&self) -> Option<Duration> {
        Some(Remote::renew_every(self))
    }

    fn renew(&self, reporter: &dyn Reporter) -> Result<(), HarnessError> {
        for name in Remote::renew(self)? {
            reporter.line(&format!(
                "the claim of {name} expired on the remote before its session ended; another machine may take it"
            ));
        }
        Ok(())
    }
}
