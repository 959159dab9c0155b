//! The agents: each one's working copy (a local clone), its thread for the run
//! (one session at a time from a queue, with its own runtime), the state its copy
//! starts from, and the fetch of its branch into the project.

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_records::{FeatureList, State, layout};

use super::relay::{Note, Relay, Watch};
use super::{AgentParts, Parallel, agent_env, merge};
use crate::error::HarnessError;
use crate::git::{self, git};
use crate::limits::{RunEnd, RunOptions};

/// An agent of the run.
pub(super) struct Agent {
    pub id: u32,
    pub dir: PathBuf,
    /// Here until the agent's thread starts, then the thread's for the run.
    pub parts: Option<AgentParts>,
    /// The agent's thread, once started: it takes one session at a time.
    pub jobs: Option<std::sync::mpsc::Sender<Job>>,
}

/// An agent's working copy, where its sessions' records are read when they are
/// settled.
#[derive(Clone)]
pub(super) struct CopyDir {
    pub id: u32,
    pub dir: PathBuf,
}

impl CopyDir {
    /// Where each agent's working copy is.
    pub(super) fn of(agents: &[Agent]) -> Vec<CopyDir> {
        agents
            .iter()
            .map(|a| CopyDir {
                id: a.id,
                dir: a.dir.clone(),
            })
            .collect()
    }
}

/// One session for an agent's thread.
pub(super) struct Job {
    agent: usize,
    feature: usize,
    number: u32,
    /// What the copy starts from.
    copy: Start,
}

/// Where agents' threads report: sessions that ended, and lines; and what stops
/// their sessions.
pub(super) struct Reports {
    pub done: tokio::sync::mpsc::UnboundedSender<Done>,
    pub lines: tokio::sync::mpsc::UnboundedSender<Note>,
    /// Cancelled on Ctrl-C (a child of the run's `stop`), or when a hand-out
    /// started no session and the run stops with its error.
    pub stop: tokio_util::sync::CancellationToken,
    /// The project's session numbers: a session's verifier takes its own here.
    pub numbers: baton_records::SessionNumbers,
    /// What the sessions spend, turn by turn.
    pub spend: super::board::Spend,
}

/// What one agent's session came back with.
pub(super) struct Done {
    pub agent: usize,
    pub feature: usize,
    pub number: u32,
    pub end: Result<RunEnd, HarnessError>,
    /// The agent's parts, back from its thread.
    pub parts: Option<AgentParts>,
    /// The tip of the agent's branch, fetched into the project by its thread;
    /// `None` to fetch it now.
    pub theirs: Option<Result<String, HarnessError>>,
}

impl Parallel<'_> {
    /// Hand agent `a` its session on feature `n`, numbered `number`. Each agent
    /// has a thread of its own for the whole run (its git and bash never wait for
    /// another agent's, and what its commands start — the run's PID namespace, dev
    /// servers — lives from one of its sessions to the next); it reports on
    /// `reports`.
    pub(super) fn start(
        &self,
        agent: &mut Agent,
        (a, n, number): (usize, usize, u32),
        copy: Start,
        reports: &Reports,
    ) -> Result<(), HarnessError> {
        if agent.jobs.is_none() {
            agent.jobs = Some(self.spawn(agent, reports)?);
        }
        let job = Job {
            agent: a,
            feature: n,
            number,
            copy,
        };
        match &agent.jobs {
            Some(jobs) if jobs.send(job).is_ok() => Ok(()),
            _ => Err(HarnessError::Agents(format!(
                "agent {}'s thread has ended",
                agent.id
            ))),
        }
    }

    /// Agent's thread: one runtime, its parts, one session per job.
    pub(super) fn spawn(
        &self,
        agent: &mut Agent,
        reports: &Reports,
    ) -> Result<std::sync::mpsc::Sender<Job>, HarnessError> {
        let Some(parts) = agent.parts.take() else {
            return Err(HarnessError::Agents(format!(
                "agent {} has no tools",
                agent.id
            )));
        };
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let base = self.opts.clone();
        let (client, prices) = (self.client.cloned(), self.prices.clone());
        // The run's stop conditions are judged by the coordinator, on the
        // project's record, before it hands a session out: the copy's runner,
        // which starts from that record, runs the one session it is handed. (With
        // the stall count's limit of its own, it would refuse a session the run's
        // rule still allows, and nothing would ever count that refusal.)
        let mut cfg = self.cfg.clone();
        cfg.run.stall_sessions = 0;
        let (dir, id, stop) = (agent.dir.clone(), agent.id, reports.stop.clone());
        let main = self.files.dir.clone();
        let (done, lines) = (reports.done.clone(), reports.lines.clone());
        let numbers = reports.numbers.clone();
        let spend = reports.spend.clone();
        std::thread::Builder::new()
            .name(format!("baton-agent-{id}"))
            .spawn(move || {
                let relay = Relay {
                    agent: id,
                    notes: lines.clone(),
                };
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                while let Ok(job) = rx.recv() {
                    let watch = Watch {
                        agent: id,
                        feature: job.feature,
                        number: job.number,
                        spend: spend.clone(),
                        notes: lines.clone(),
                        so_far: std::sync::Mutex::new((0, 0)),
                    };
                    watch.say(None);
                    let session = || -> Result<RunEnd, HarnessError> {
                        let rt = rt.as_ref().map_err(|e| {
                            crate::error::io(&dir)(std::io::Error::new(e.kind(), e.to_string()))
                        })?;
                        prepare(&dir, id, &job.copy)?;
                        let opts = RunOptions {
                            max_sessions: Some(1),
                            pause: Some(Duration::ZERO),
                            first_number: Some(job.number),
                            agent: Some(id),
                            skip_sweep: true,
                            ..base.clone()
                        };
                        let runner = parts
                            .runner(&cfg, &dir, client.as_ref(), &prices, &relay)?
                            .with_observer(&watch)
                            .with_stop(stop.clone())
                            .with_numbers(numbers.clone())
                            .with_opts(opts);
                        rt.block_on(runner.run())
                    };
                    let end = session();
                    // The branch goes into the project from here, not from the
                    // thread that merges: fetching never waits for another agent.
                    let theirs = fetch(&main, &dir, id);
                    let sent = done.send(Done {
                        agent: job.agent,
                        feature: job.feature,
                        number: job.number,
                        end,
                        parts: None,
                        theirs: Some(theirs),
                    });
                    if sent.is_err() {
                        break;
                    }
                }
            })
            .map_err(crate::error::io(&agent.dir))?;
        Ok(tx)
    }

    /// What an agent's copy starts from for feature `n`: the main branch's `tip`,
    /// the accepted `list` that goes with it, the project's record with `n`
    /// claimed, and the agent's own last session if it is not merged yet (`own`).
    pub(super) fn copy_state(
        &self,
        tip: &str,
        state: &State,
        list: &FeatureList,
        n: usize,
        own: Option<(String, Vec<usize>)>,
    ) -> Start {
        let mut copy = state.clone();
        copy.in_progress = None;
        copy.waiting_until_ms = None;
        copy.claim = Some(n);
        // Its session is its feature's, never a list-append one: those run in the
        // project before any feature is handed out (`make_list`).
        copy.list_covered = true;
        Start {
            tip: tip.to_string(),
            list: list.clone(),
            attempt: last_attempt(&self.files.dir, state, n),
            state: copy,
            own,
            identity: (
                self.cfg.git.user_name.clone(),
                self.cfg.git.user_email.clone(),
            ),
            attributes: merge::attributes_setting(&self.files.dir),
        }
    }

    /// The agents `1..=n`: their working copies (those not there yet cloned at
    /// once, a thread each) and parts.
    pub(super) fn agents(&self, n: u32) -> Result<Vec<Agent>, HarnessError> {
        let main = &self.files.dir;
        let dirs: Vec<(u32, PathBuf)> = (1..=n).map(|k| (k, main.join(layout::agent(k)))).collect();
        std::thread::scope(|s| {
            let clones: Vec<_> = dirs
                .iter()
                .filter(|(_, d)| !d.join(".git").is_dir())
                .map(|(_, d)| s.spawn(|| clone_copy(main, d)))
                .collect();
            clones.into_iter().try_for_each(|c| {
                c.join().unwrap_or_else(|_| {
                    Err(HarnessError::Agents(
                        "cloning a working copy panicked".into(),
                    ))
                })
            })
        })?;
        dirs.into_iter()
            .map(|(id, dir)| {
                let parts = self.workspace.parts(id, &dir, agent_env(id))?;
                Ok(Agent {
                    id,
                    dir,
                    parts: Some(parts),
                    jobs: None,
                })
            })
            .collect()
    }
}

/// Clone the project `main` into `dir`, an agent's working copy. `--shared`: the
/// copy reads the project's objects and writes its own; the agent's sandbox cannot
/// write the project's. The copy's own config turns off git's automatic
/// maintenance: without it each of the agent's commits starts a `git maintenance
/// run --auto` (a process each session, 6 ms of its commit's 12 here), in a
/// scratch clone whose work is fetched into the project after every session.
fn clone_copy(main: &Path, dir: &Path) -> Result<(), HarnessError> {
    if let Some(p) = dir.parent() {
        std::fs::create_dir_all(p).map_err(crate::error::io(p))?;
    }
    git(
        main,
        &[
            "clone",
            "-q",
            "-c",
            "maintenance.auto=false",
            "-c",
            "gc.auto=0",
            "--shared",
            "--no-checkout",
            &main.display().to_string(),
            &dir.display().to_string(),
        ],
    )?;
    Ok(())
}

/// Agent `id`'s branch, fetched from its copy `dir` into the project `main` as
/// `refs/baton/agents/a<id>`; its tip.
pub(super) fn fetch(main: &Path, dir: &Path, id: u32) -> Result<String, HarnessError> {
    let name = format!("refs/baton/agents/a{id}");
    let src = dir.display().to_string();
    // `--porcelain` names the ref's new commit when it moved (`<flag> <old> <new>
    // <ref>`): no second git to read it. A ref that did not move is not named.
    let refspec = format!("+HEAD:{name}");
    let args = [
        "fetch",
        "--porcelain",
        "--no-tags",
        "--no-write-fetch-head",
        &src,
        &refspec,
    ];
    // The fetch's connectivity check reads every ref of the project while the
    // coordinator claims and releases features there: a claim ref deleted under
    // it fails the fetch ("bad object refs/baton/claims/1 … did not send all
    // necessary objects"; with git 2.47, about one fetch in 25 to 300 while three
    // claims are taken and released in a loop, and the next try succeeds). A
    // failed fetch moves no ref: tried again, three times at most.
    let mut tries = 0;
    let said = loop {
        tries += 1;
        match git(main, &args) {
            Ok(said) => break said,
            Err(e) if tries >= 3 => return Err(e),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    };
    match moved_to(&said, &name) {
        Some(tip) => Ok(tip),
        None => git::rev(main, &name),
    }
}

/// The new commit of `name` in the output of `git fetch --porcelain`, if it
/// moved.
fn moved_to(porcelain: &str, name: &str) -> Option<String> {
    porcelain.lines().find_map(|l| {
        let mut f = l.get(2..)?.split(' ');
        let (_old, new, r) = (f.next()?, f.next()?, f.next()?);
        (r == name && new.len() >= 40 && new.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| new.to_string())
    })
}

/// What an agent's working copy starts a session from.
#[derive(Debug, Clone)]
pub(super) struct Start {
    /// The main branch's tip.
    pub tip: String,
    /// The accepted list that goes with it.
    pub list: FeatureList,
    /// The project's record, with the claim.
    pub state: State,
    /// The agent's last session (its branch's tip and flips) when it is not merged
    /// yet: the copy starts from it merged onto `tip`, so that the agent builds on
    /// its own work while that is merged and swept.
    pub own: Option<(String, Vec<usize>)>,
    /// The work of the last session on this feature when it ended without
    /// flipping it (its notes, its partial work: a session whose context filled
    /// hands off this way), kept by name and not merged: the copy starts with it
    /// merged in, as a run of one would start from it on the main branch.
    pub attempt: Option<String>,
    /// Who those merge commits are by (`[git]` user name and email).
    pub identity: (String, String),
    /// The `-c` setting that makes those merges read the project's
    /// `.baton/merge-attributes` (the notes as a union).
    pub attributes: String,
}

/// Put agent `id`'s working copy `dir` on the main branch's tip (with the agent's
/// last session merged in, when it is not merged into the main branch yet and
/// merges cleanly), with the project's accepted list and record.
pub(super) fn prepare(dir: &Path, id: u32, start: &Start) -> Result<(), HarnessError> {
    // The copy reads the project's objects (`--shared`): the tip is there.
    let mut at = start.tip.clone();
    let mut list = start.list.clone();
    if let Some((own, flips)) = &start.own {
        // The copy's own commits are still in its object store.
        let msg = "baton: this agent's last session, not in the main branch yet";
        if let Some(merged) = merge_in(dir, start, &at, own, msg) {
            at = merged;
            // Its flips are not this session's: the gates judge only new ones.
            merge::flip(&mut list, flips);
        }
        // Otherwise it conflicts with the main branch: its merge will fail as
        // well, and this session starts from the main branch alone.
    }
    if let Some(attempt) = &start.attempt {
        // In the project's objects, which the copy reads. What does not merge
        // cleanly is left out: the session starts without it.
        let msg = "baton: the last session on this feature, which ended without flipping it (its notes and work)";
        if let Some(merged) = merge_in(dir, start, &at, attempt, msg) {
            at = merged;
        }
    }
    let branch = format!("baton/agent-{id}");
    // The index is the last session's, flags the agent set included (a
    // `skip-worktree` entry would stop the checkout): dropped, and made afresh
    // from `at` by the checkout.
    let index = dir.join(".git/index");
    match std::fs::remove_file(&index) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(crate::error::io(&index)(e)),
    }
    // `-f -B`: the branch reset to `at`, the index and tracked files with it.
    git(dir, &["checkout", "-q", "-f", "-B", &branch, &at])?;
    git(dir, &["clean", "-q", "-fd"])?;
    baton_records::write_atomic(&dir.join(layout::ACCEPTED), &list.to_json())?;
    start.state.save(dir)?;
    Ok(())
}

/// `theirs` merged onto `onto` in the copy `dir`, as a merge commit saying
/// `msg`, without a worktree (`git merge` would also start a `git stash create`
/// each time) and with the notes as a union the way the integration merges them;
/// `None` when anything conflicts (or git cannot).
fn merge_in(dir: &Path, start: &Start, onto: &str, theirs: &str, msg: &str) -> Option<String> {
    let tree = git(
        dir,
        &[
            "-c",
            &start.attributes,
            "merge-tree",
            "--write-tree",
            onto,
            theirs,
        ],
    )
    .ok()?;
    let tree = tree.lines().next()?.trim().to_string();
    let (name, email) = &start.identity;
    let commit = git(
        dir,
        &[
            "-c",
            &format!("user.name={name}"),
            "-c",
            &format!("user.email={email}"),
            "commit-tree",
            &tree,
            "-p",
            onto,
            "-p",
            theirs,
            "-m",
            msg,
        ],
    )
    .ok()?;
    Some(commit.trim().to_string())
}

/// The commit of the branch kept in the project `main` from the last session on
/// feature `n`, when that session ended without flipping it and without a
/// conflict or a regression (nothing was merged: a hand-off, a feature not
/// finished) and its branch holds anything.
fn last_attempt(main: &Path, state: &State, n: usize) -> Option<String> {
    let last = state.sessions.iter().rev().find(|s| s.target == Some(n))?;
    let i = last.integration.as_ref()?;
    if i.outcome != baton_records::IntegrationOutcome::Kept {
        return None;
    }
    // The ref is the project's: the copy reads its objects, not its refs.
    git::rev(main, i.kept.as_deref()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetched_refs_new_commit_is_read_from_the_porcelain_output() {
        let a = "0".repeat(40);
        let b = "b".repeat(40);
        let out = format!("* {a} {b} refs/baton/agents/a2\n+ {b} {a} refs/baton/agents/a1\n");
        assert_eq!(moved_to(&out, "refs/baton/agents/a1"), Some(a.clone()));
        assert_eq!(moved_to(&out, "refs/baton/agents/a2"), Some(b));
        assert_eq!(moved_to(&out, "refs/baton/agents/a3"), None);
        assert_eq!(moved_to("", "refs/baton/agents/a1"), None);
        assert_eq!(
            moved_to("! junk refs/baton/agents/a1\n", "refs/baton/agents/a1"),
            None
        );
    }
}
