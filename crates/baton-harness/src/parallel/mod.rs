//! Many agents on one project (`baton run --agents N`), on one machine, with git
//! as the only coordination engine (see `docs/parallel.md`).
//!
//! What it promises:
//! - **Isolation.** Agent `k` works in its own local clone, `.baton/agents/a<k>/`,
//!   on its own branch: its own `.git` (so nothing it writes reaches the project's),
//!   its own `.baton/` records, tools, process registry, policy and sandbox
//!   confinement, browser profile, and `BATON_AGENT`/`PORT` in its commands.
//! - **Claims.** A feature is claimed before a session (`refs/baton/claims/<n>`,
//!   created atomically) and handed to that agent alone; no feature is worked on by
//!   two agents at once. A claim ends with its session; the claims of a killed run
//!   are dropped when the next run starts.
//! - **Integration.** After a session and its gates (the same gates as a run of
//!   one, in the working copy), a flip is merged into the main branch in the
//!   integration worktree, `.baton/integrate/`: the feature list by meaning (main's
//!   list plus the flips, never a textual merge), the progress notes as a union, any
//!   other conflict abandons the merge. Then every passing feature's check runs on
//!   the merged tree, and only if all pass does the main branch move (fast-forward).
//!   Otherwise the feature goes back to the queue (an attempt counted, the reason in
//!   the next brief) and the agent's branch is kept as
//!   `refs/baton/unintegrated/f<n>-s<session>`: nothing an agent committed is lost.
//! - **One record.** Every session is recorded in the project's `state.json` with
//!   its agent and integration, its ledger lines copied to the project's ledger,
//!   its transcript to `.baton/sessions/`; budget, `--max-sessions`,
//!   `--max-hours`, stall detection and exit codes apply to the whole run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_agent::client::ModelClient;
use baton_agent::pricing::PriceTable;
use baton_agent::session::Quiet;
use baton_config::Config;
use baton_records::{
    FeatureList, Integration, IntegrationOutcome, LedgerEntry, LedgerKind, SessionKind, State,
    layout, ledger,
};
use baton_tools::{ToolGate, Toolbox};
use tokio_util::sync::CancellationToken;

use crate::checks::{Checker, passing_checks};
use crate::error::HarnessError;
use crate::files::Files;
use crate::git::{self, git};
use crate::queue;
use crate::run::{Backend, Reporter, RunEnd, RunLimits, RunOptions, Runner};

mod agents;
mod merge;
use agents::fetch;
pub mod remote;
use remote::Remote;

/// Ports each agent may use: agent `k` gets `PORT = base + (k - 1) * PORT_BLOCK`
/// and the block above it (`BATON_PORT_BLOCK`).
pub const PORT_BLOCK: u16 = 10;
/// The first agent's `PORT`; the integration worktree's checks use the block
/// below it.
pub const PORT_BASE: u16 = 4100;
/// How long a machine with nothing to do waits before looking at the remote again.
const WAIT_FOR_OTHERS: Duration = Duration::from_millis(500);
/// Merges and sweeps of one session before giving up on a remote whose main
/// branch keeps moving.
const PUSH_ATTEMPTS: u32 = 5;

/// The tools and command policy for one working copy.
pub struct AgentParts {
    /// Tools rooted at the working copy (its own process registry).
    pub tools: Toolbox,
    /// The command policy and OS sandbox for the working copy.
    pub policy: Box<dyn ToolGate>,
    /// The agent CLI set up for the working copy (its sandbox, hook and MCP
    /// servers), when the run drives one (provider `claude-code`) instead of
    /// baton's own loop.
    pub cli: Option<baton_agent::cli_session::CliBackend>,
}

impl AgentParts {
    /// The backend sessions in this copy run on: its agent CLI, else baton's own
    /// loop with `client`.
    fn backend<'c>(&self, client: Option<&'c ModelClient>) -> Result<Backend<'c>, HarnessError> {
        match (&self.cli, client) {
            (Some(cli), _) => Ok(Backend::Cli(cli.clone())),
            (None, Some(c)) => Ok(Backend::Loop(c)),
            (None, None) => Err(HarnessError::Input(
                "neither a model client nor an agent CLI to run sessions with".into(),
            )),
        }
    }
}

/// Makes the tools and policy of a working copy: what `baton run` builds for the
/// project directory, for another directory.
pub trait Workspace: Send + Sync {
    /// The parts for agent `agent` (0 for the integration worktree) in `dir`, whose
    /// commands get `env` as well.
    fn parts(
        &self,
        agent: u32,
        dir: &Path,
        env: Vec<(String, String)>,
    ) -> Result<AgentParts, HarnessError>;
}

/// The environment of agent `agent`'s commands: its number and port block.
pub fn agent_env(agent: u32) -> Vec<(String, String)> {
    let base = u32::from(PORT_BASE) + agent.saturating_sub(1) * u32::from(PORT_BLOCK);
    let base = if agent == 0 {
        u32::from(PORT_BASE - PORT_BLOCK)
    } else {
        base
    };
    vec![
        ("BATON_AGENT".into(), agent.to_string()),
        ("PORT".into(), base.to_string()),
        (
            "BATON_PORT_BLOCK".into(),
            format!("{base}-{}", base + u32::from(PORT_BLOCK) - 1),
        ),
    ]
}

/// One `baton run --agents N`.
pub struct Parallel<'a> {
    /// The project's files (the main working tree).
    pub files: Files,
    /// Settings.
    pub cfg: Config,
    /// How many agents work at once.
    pub agents: u32,
    /// The model client every agent's loop uses; `None` when every copy's parts
    /// carry an agent CLI.
    pub client: Option<&'a ModelClient>,
    /// Prices.
    pub prices: &'a PriceTable,
    /// Builds each working copy's tools and policy.
    pub workspace: &'a dyn Workspace,
    /// The project's own tools and policy (the initializer's session).
    pub main: &'a AgentParts,
    /// Run-level lines (each agent's are prefixed with it).
    pub reporter: &'a dyn Reporter,
    /// Cancelled on Ctrl-C: every agent finishes its tool call and stops.
    pub stop: CancellationToken,
    /// Command-line limits, for the whole run.
    pub opts: RunOptions,
    /// A git remote shared with baton runs on other machines (`--remote URL`):
    /// claims and the main branch live there.
    pub remote: Option<String>,
}

struct Agent {
    id: u32,
    dir: PathBuf,
    /// Here until the agent's thread starts, then the thread's for the run.
    parts: Option<AgentParts>,
    /// The agent's thread, once started: it takes one session at a time.
    jobs: Option<std::sync::mpsc::Sender<Job>>,
}

/// An agent's working copy, where its sessions' records are read when they are
/// settled.
#[derive(Clone)]
struct CopyDir {
    id: u32,
    dir: PathBuf,
}

/// The integration of a batch of ended sessions, running in the run's task while
/// it hands out work.
type Integrating<'f> = std::pin::Pin<Box<dyn Future<Output = Result<(), HarnessError>> + 'f>>;

/// One session for an agent's thread.
struct Job {
    agent: usize,
    feature: usize,
    number: u32,
    /// What the copy starts from.
    copy: agents::Start,
}

/// Where agents' threads report: sessions that ended, and lines; and what stops
/// their sessions.
struct Reports {
    done: tokio::sync::mpsc::UnboundedSender<Done>,
    lines: tokio::sync::mpsc::UnboundedSender<Note>,
    /// Cancelled on Ctrl-C (a child of the run's `stop`), or when a hand-out
    /// started no session and the run stops with its error.
    stop: CancellationToken,
}

/// An agent's lines, prefixed with it.
struct Prefixed<'a> {
    agent: u32,
    inner: &'a dyn Reporter,
}

impl Reporter for Prefixed<'_> {
    fn line(&self, text: &str) {
        self.inner.line(&format!("[agent {}] {text}", self.agent));
    }
}

/// What an agent's thread tells the run's reporter.
enum Note {
    /// A line, prefixed with the agent.
    Line(String),
    /// What the agent is doing now.
    Status(u32, String),
}

/// An agent's lines, sent to the run's reporter from the agent's thread.
struct Relay {
    agent: u32,
    notes: tokio::sync::mpsc::UnboundedSender<Note>,
}

impl Reporter for Relay {
    fn line(&self, text: &str) {
        let _ = self
            .notes
            .send(Note::Line(format!("[agent {}] {text}", self.agent)));
    }
}

/// An agent's session as it goes, for the live view: turn, tokens, tool.
struct Watch {
    agent: u32,
    feature: usize,
    notes: tokio::sync::mpsc::UnboundedSender<Note>,
    /// Turns and tokens so far.
    so_far: std::sync::Mutex<(u32, u64)>,
}

impl Watch {
    fn say(&self, tool: Option<&str>) {
        let (turn, tokens) = self.so_far.lock().map(|g| *g).unwrap_or_default();
        let tool = tool.map(|t| format!(" · {t}")).unwrap_or_default();
        let _ = self.notes.send(Note::Status(
            self.agent,
            format!(
                "#{} · turn {} · {} tokens{tool}",
                self.feature,
                turn + 1,
                baton_records::human::count(tokens)
            ),
        ));
    }
}

impl baton_agent::session::Observer for Watch {
    fn tool_start(&self, name: &str, _input: &serde_json::Value) {
        self.say(Some(name));
    }

    fn turn_end(&self, turn: u32, usage: &baton_records::Usage, _cost_usd: f64) {
        if let Ok(mut g) = self.so_far.lock() {
            *g = (turn, g.1 + usage.total());
        }
        self.say(None);
    }
}

/// A session that ended, on its way to the project's record. Written to
/// `.baton/settling/<number>.json` until it is settled, since its agent's next
/// session writes the copy's records afresh: a run killed in between settles it
/// first when started again.
#[derive(serde::Serialize, serde::Deserialize)]
struct Ended {
    /// The agent's index in the run.
    agent: usize,
    feature: usize,
    number: u32,
    /// Its record, from the copy.
    record: baton_records::SessionRecord,
    /// The copy's record of the feature after it (attempts, last reason).
    feature_record: Option<baton_records::FeatureRecord>,
    /// The tip of the agent's branch, in the project.
    theirs: String,
    /// Other features the session declared blocked (`BlockFeature`), with the
    /// copy's record of each.
    #[serde(default)]
    blocked: Vec<(usize, baton_records::FeatureRecord)>,
}

impl Ended {
    fn path(main: &Path, number: u32) -> PathBuf {
        main.join(layout::SETTLING)
            .join(format!("{number:04}.json"))
    }

    /// Whether the session flipped its feature: only then is there a branch to
    /// merge.
    fn flipped(&self) -> bool {
        self.record.gates.flipped.contains(&self.feature)
    }

    /// What its agent's next session builds on while it is not merged yet: the
    /// agent, the branch's tip and its flips (`None` when it flipped nothing).
    fn own(&self) -> Option<(usize, String, Vec<usize>)> {
        self.flipped().then(|| {
            (
                self.agent,
                self.theirs.clone(),
                self.record.gates.flipped.clone(),
            )
        })
    }
}

/// What agent `a`'s copy builds on: of its sessions ended and not merged yet
/// (`ended`, oldest first: agent, branch tip, flips), the newest one's tip, and
/// every one's flips (a session started from the one before it, so its branch
/// holds that one's flips as well).
fn unmerged_own(
    ended: impl Iterator<Item = (usize, String, Vec<usize>)>,
    a: usize,
) -> Option<(String, Vec<usize>)> {
    let mut own: Option<(String, Vec<usize>)> = None;
    for (_, theirs, flips) in ended.filter(|(agent, ..)| *agent == a) {
        let mut all = own.map(|(_, f)| f).unwrap_or_default();
        for f in flips {
            if !all.contains(&f) {
                all.push(f);
            }
        }
        own = Some((theirs, all));
    }
    own
}

/// What one agent's session came back with.
struct Done {
    agent: usize,
    feature: usize,
    number: u32,
    end: Result<RunEnd, HarnessError>,
    /// The agent's parts, back from its thread.
    parts: Option<AgentParts>,
    /// The tip of the agent's branch, fetched into the project by its thread;
    /// `None` to fetch it now.
    theirs: Option<Result<String, HarnessError>>,
}

impl Parallel<'_> {
    fn runner<'b>(
        &'b self,
        dir: &Path,
        parts: &'b AgentParts,
        reporter: &'b dyn Reporter,
        opts: RunOptions,
        stop: CancellationToken,
    ) -> Result<Runner<'b>, HarnessError> {
        Ok(Runner {
            files: Files::new(dir.to_path_buf(), self.cfg.project.clone()),
            cfg: self.cfg.clone(),
            backend: parts.backend(self.client)?,
            prices: self.prices,
            policy: &*parts.policy,
            observer: &Quiet,
            reporter,
            tools: parts.tools.clone(),
            stop,
            opts,
        })
    }

    /// Run the agents until every feature passes or a stop condition holds.
    pub async fn run(&self) -> Result<RunEnd, HarnessError> {
        let main = self.files.dir.clone();
        let remote = match &self.remote {
            Some(url) => Some(self.open_remote(url)?),
            None => None,
        };
        // The initializer is one session, in the project itself; `--max-sessions`
        // counts it, as in a run of one.
        let mut handed = 0u32;
        if let Some(r) = &remote {
            match self.initialize_shared(r).await? {
                Some(end) => return Ok(end),
                None => handed += u32::from(self.ran_initializer()?),
            }
        }
        for _ in 0..2 {
            if self.files.load_accepted()?.is_some() {
                break;
            }
            let opts = RunOptions {
                max_sessions: Some(1),
                ..self.opts.clone()
            };
            let runner = self.runner(&main, self.main, self.reporter, opts, self.stop.clone())?;
            let end = runner.run().await?;
            handed += 1;
            if let RunEnd::Interrupted = end {
                return Ok(RunEnd::Interrupted);
            }
        }
        let Some(_) = self.files.load_accepted()? else {
            return Err(HarnessError::Initializer {
                attempts: 2,
                problem: "no feature list was accepted".into(),
            });
        };
        // With a remote, the machine that ran the initializer continued its list
        // before pushing it.
        if remote.is_none()
            && let Some(end) = self.continue_list(&mut handed).await?
        {
            return Ok(end);
        }
        if let Some(r) = &remote {
            // Claims whose machine stopped renewing them long ago are released.
            for name in r.expire()? {
                self.reporter
                    .line(&format!("claim of {name} expired on the remote; released"));
            }
        } else {
            // Claims of a run that was killed are stale: this run holds the project.
            for r in git(
                &main,
                &["for-each-ref", "--format=%(refname)", remote::CLAIMS],
            )?
            .lines()
            .filter(|l| !l.is_empty())
            {
                git(&main, &["update-ref", "-d", r])?;
            }
        }
        let mut agents = self.agents(self.agents.max(1))?;
        let integrate = self
            .workspace
            .parts(0, &self.integration_tree()?, agent_env(0))?;
        // Sessions a killed run had ended but not settled: on the record first.
        let unsettled = self.unsettled()?;
        if !unsettled.is_empty() {
            self.reporter.line(&format!(
                "settling {} session(s) a stopped run left unsettled",
                unsettled.len()
            ));
            // Their copies, whether or not this run has as many agents.
            let last = unsettled.iter().map(|e| e.agent + 1).max().unwrap_or(0);
            let copies: Vec<CopyDir> = (1..=last)
                .map(|k| CopyDir {
                    id: k as u32,
                    dir: main.join(layout::AGENTS).join(format!("a{k}")),
                })
                .collect();
            self.settle(&copies, &integrate, remote.as_ref(), unsettled, None)
                .await?;
        }
        // Sessions a killed run left unfinished in a working copy: their gates run
        // first (the runner resumes them and stops), then they are integrated.
        for (i, a) in agents.iter().enumerate() {
            let Some(ip) = State::load(&a.dir)?.in_progress else {
                continue;
            };
            let stopped = CancellationToken::new();
            stopped.cancel();
            let reporter = Prefixed {
                agent: a.id,
                inner: self.reporter,
            };
            let opts = RunOptions {
                agent: Some(a.id),
                ..self.opts.clone()
            };
            let Some(parts) = &a.parts else { continue };
            let end = match self.runner(&a.dir, parts, &reporter, opts, stopped) {
                Ok(runner) => runner.run().await,
                Err(e) => Err(e),
            };
            let feature = ip.target.unwrap_or(0);
            let done = Done {
                agent: i,
                feature,
                number: ip.number,
                end,
                parts: None,
                theirs: None,
            };
            if let Some(e) = self.gather(&agents, done)? {
                self.settle(&copies(&agents), &integrate, remote.as_ref(), vec![e], None)
                    .await?;
            }
        }
        let copies = copies(&agents);

        let mut limits = RunLimits::new(&self.opts, &self.cfg);
        // The budget as a run of one judges it, so that a copy's runner, which
        // starts from the project's record, never stops before its session: a
        // budget given on the command line is the project's from now on, and the
        // project's is the one to go by when none is given.
        let mut state = State::load(&main)?;
        match self.opts.budget_usd {
            Some(b) if state.budget_usd != Some(b) => {
                state.budget_usd = Some(b);
                state.save(&main)?;
            }
            Some(_) => {}
            None => {
                if let Some(b) = state.budget_usd {
                    limits.budget = b;
                }
            }
        }
        let max_sessions = limits.max_sessions;
        let mut next_number = self.next_number()?;
        let mut claims: BTreeMap<usize, usize> = BTreeMap::new();
        let mut idle: Vec<usize> = (0..agents.len()).rev().collect();
        let mut running = 0usize;
        // Sessions that ended, to be settled once their agents have new work.
        let mut pending: Vec<Ended> = Vec::new();
        // Their features (and those of sessions that left nothing to settle): the
        // claims released once settled.
        let mut settling: Vec<usize> = Vec::new();
        // The batch being integrated, if any (one at a time): its features and,
        // for the agents that built on it, their sessions' tips and flips. A
        // feature whose session conflicted with the main branch comes back on
        // `released` before the rest of its batch is done.
        let (release_tx, mut release_rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
        let mut integrating: Option<Integrating<'_>> = None;
        let mut merging: Vec<usize> = Vec::new();
        let mut merging_own: Vec<(usize, String, Vec<usize>)> = Vec::new();
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<Done>();
        let (line_tx, mut line_rx) = tokio::sync::mpsc::unbounded_channel::<Note>();
        // What stops the agents' sessions: Ctrl-C, or an error that stops the run.
        let halt = self.stop.child_token();
        let reports = Reports {
            done: done_tx,
            lines: line_tx,
            stop: halt.clone(),
        };
        // Why the run stops with an error once what is under way has been
        // settled: a hand-out that started no session (its copy could not be
        // prepared, its runner stopped before the session). Never retried: the
        // same hand-out would fail again, at once, forever.
        let mut failed: Option<HarnessError> = None;
        let renew_every = remote.as_ref().map(Remote::renew_every);
        let mut next_renewal = renew_every.map(|d| tokio::time::Instant::now() + d);
        loop {
            let mut elsewhere = BTreeMap::new();
            if let Some(r) = &remote {
                self.sync(r)?;
                for name in r.claimed()? {
                    if let Ok(n) = name.parse::<usize>()
                        && !claims.contains_key(&n)
                    {
                        elsewhere.insert(n, ());
                    }
                }
            }
            // The record, the accepted list and (at the first hand-out) the main
            // branch's tip: read with no await in between, so the integration
            // cannot move one without the other.
            let mut state = State::load(&main)?;
            let mut list = self.files.load_accepted()?.unwrap_or_default();
            let mut tip: Option<String> = None;
            // Whether the list was read again during the hand-out (another
            // machine's merge seen after a claim): `reason` is then stale.
            let mut stale = false;
            // Sessions that ended and are not yet settled count as running here: their
            // features are still claimed, and the run is not idle before they are
            // merged.
            let busy = running + settling.len() + merging.len();
            let reason = self.stop_condition(&list, &state, &limits, handed, busy == 0);
            // A claim that failed in this hand-out (not one another machine won).
            let mut unclaimed: Option<HarnessError> = None;
            if reason.is_none() && failed.is_none() {
                let queue: Vec<usize> = queue::order(&list, &state)
                    .into_iter()
                    .filter(|n| !claims.contains_key(n) && !elsewhere.contains_key(n))
                    .collect();
                for n in queue {
                    if max_sessions > 0 && handed >= max_sessions {
                        break;
                    }
                    let Some(a) = idle.pop() else { break };
                    if tip.is_none() {
                        tip = Some(git::own_head(&main)?);
                    }
                    let mut head = tip.clone().unwrap_or_default();
                    match self.claim(remote.as_ref(), n, &head) {
                        Ok(true) => {}
                        Ok(false) => {
                            // Another machine claimed it first.
                            idle.push(a);
                            elsewhere.insert(n, ());
                            continue;
                        }
                        Err(e) => {
                            self.reporter
                                .line(&format!("feature #{n} could not be claimed: {e}"));
                            idle.push(a);
                            unclaimed.get_or_insert(e);
                            continue;
                        }
                    }
                    if let Some(r) = &remote {
                        // A claim is released only after its merge was pushed: what
                        // was merged before this claim was won is seen now.
                        self.sync(r)?;
                        list = self.files.load_accepted()?.unwrap_or_default();
                        state = State::load(&main)?;
                        head = git::own_head(&main)?;
                        tip = Some(head.clone());
                        if list.features.get(n - 1).is_some_and(|f| f.passes) {
                            self.release(Some(r), n);
                            idle.push(a);
                            // The stop conditions were judged on the list before
                            // this sync: judge them again.
                            stale = true;
                            continue;
                        }
                    }
                    claims.insert(n, a);
                    let number = next_number;
                    next_number += 1;
                    handed += 1;
                    self.reporter.line(&format!(
                        "agent {} takes feature #{n} (session {number:04})",
                        agents[a].id
                    ));
                    // Its sessions ended and not merged yet: the newest is built
                    // on, and it holds the flips of those before it too.
                    let own = unmerged_own(
                        merging_own
                            .iter()
                            .cloned()
                            .chain(pending.iter().filter_map(Ended::own)),
                        a,
                    );
                    let copy = self.copy_state(&head, &state, &list, n, own);
                    self.start(&mut agents[a], (a, n, number), copy, &reports)?;
                    running += 1;
                }
            }
            // What ended is merged now, while the agents run: the integration goes
            // on in this task, and an agent whose session ends meanwhile is handed
            // its next feature at once (an agent never waits for merges and
            // sweeps). What ends meanwhile is the next batch.
            if integrating.is_none() && !settling.is_empty() {
                let batch = std::mem::take(&mut pending);
                merging = std::mem::take(&mut settling);
                merging_own = batch.iter().filter_map(Ended::own).collect();
                integrating = Some(Box::pin(self.settle(
                    &copies,
                    &integrate,
                    remote.as_ref(),
                    batch,
                    Some(&release_tx),
                )));
            }
            if running == 0 && integrating.is_none() {
                // Everything under way has been settled.
                if let Some(e) = failed {
                    return Err(e);
                }
                if reason.is_none() && stale {
                    continue;
                }
                // Features other machines hold: wait for them, they may come back.
                if reason.is_none() && !elsewhere.is_empty() {
                    tokio::select! {
                        () = tokio::time::sleep(WAIT_FOR_OTHERS) => continue,
                        () = self.stop.cancelled() => return Ok(RunEnd::Interrupted),
                    }
                }
                // Nothing runs and nothing could be handed out: a claim that
                // failed is why, not a project complete but for blocked features.
                if reason.is_none()
                    && let Some(e) = unclaimed
                {
                    return Err(e);
                }
                return Ok(reason.unwrap_or_else(|| {
                    RunEnd::CompleteExceptBlocked(queue::blocked(&list, &state))
                }));
            }
            // Lines as they come, claims renewed while sessions run, the
            // integration to its end; then the sessions that ended (all that have
            // by now: they are merged as one).
            let first = loop {
                let renewal = async {
                    match next_renewal {
                        Some(t) => tokio::time::sleep_until(t).await,
                        None => std::future::pending().await,
                    }
                };
                let merged = async {
                    match integrating.as_mut() {
                        Some(f) => f.await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    Some(note) = line_rx.recv() => self.note(note),
                    Some(d) = done_rx.recv() => break Some(d),
                    Some(feature) = release_rx.recv() => {
                        // On the record as requeued already: handed out again now.
                        if !merging.contains(&feature) {
                            continue;
                        }
                        claims.remove(&feature);
                        self.release(remote.as_ref(), feature);
                        merging.retain(|&f| f != feature);
                        merging_own.retain(|(_, _, flips)| !flips.contains(&feature));
                        break None;
                    }
                    settled = merged => {
                        integrating = None;
                        merging_own.clear();
                        // Features it released early that were not seen yet: all of
                        // its features are released below.
                        while release_rx.try_recv().is_ok() {}
                        settled?;
                        for feature in std::mem::take(&mut merging) {
                            claims.remove(&feature);
                            self.release(remote.as_ref(), feature);
                        }
                        break None;
                    }
                    () = renewal => {
                        if let Some(r) = &remote {
                            for name in r.renew()? {
                                self.reporter.line(&format!(
                                    "the claim of {name} expired on the remote before its session ended; another machine may take it"
                                ));
                            }
                        }
                        next_renewal = renew_every.map(|d| tokio::time::Instant::now() + d);
                    }
                }
            };
            let Some(first) = first else { continue };
            let mut batch = vec![first];
            while let Ok(d) = done_rx.try_recv() {
                batch.push(d);
            }
            while let Ok(note) = line_rx.try_recv() {
                self.note(note);
            }
            running -= batch.len();
            for mut d in batch {
                if let Some(p) = d.parts.take() {
                    agents[d.agent].parts = Some(p);
                }
                let a = d.agent;
                settling.push(d.feature);
                match self.gather(&agents, d) {
                    Ok(Some(e)) => pending.push(e),
                    Ok(None) => {}
                    // No more work is handed out; the sessions under way are
                    // stopped and settled, then the run ends with this error.
                    Err(e) => {
                        self.reporter.line(&format!("stopping the run: {e}"));
                        halt.cancel();
                        failed.get_or_insert(e);
                    }
                }
                idle.push(a);
            }
        }
    }

    /// The initializer's list is shorter than `[project] features` asked: the
    /// list-append sessions a run of one runs before its first coding session,
    /// run in the project, one at a time, before any agent is handed a feature
    /// (a working copy never runs one: its session is its feature's). Counted in
    /// `handed`; `Some` when the run ends here (Ctrl-C).
    async fn continue_list(&self, handed: &mut u32) -> Result<Option<RunEnd>, HarnessError> {
        let max_sessions = RunLimits::new(&self.opts, &self.cfg).max_sessions;
        while self.wants_rest()? {
            if max_sessions > 0 && *handed >= max_sessions {
                break;
            }
            let before = State::load(&self.files.dir)?.sessions.len();
            let opts = RunOptions {
                max_sessions: Some(1),
                ..self.opts.clone()
            };
            let runner = self.runner(
                &self.files.dir,
                self.main,
                self.reporter,
                opts,
                self.stop.clone(),
            )?;
            let end = runner.run().await?;
            if let RunEnd::Interrupted = end {
                return Ok(Some(end));
            }
            // A runner that stopped before its session (the budget): the run's
            // own stop conditions say so next.
            if State::load(&self.files.dir)?.sessions.len() == before {
                break;
            }
            *handed += 1;
        }
        Ok(None)
    }

    /// Whether the project's list wants list-append sessions, as a run of one
    /// judges it: baton's own initializer wrote it, no coding session has run, no
    /// list-append session said it covers the spec or failed too often, and it is
    /// shorter than asked.
    fn wants_rest(&self) -> Result<bool, HarnessError> {
        let Some(list) = self.files.load_accepted()? else {
            return Ok(false);
        };
        let state = State::load(&self.files.dir)?;
        let ran = |kind: SessionKind| state.sessions.iter().any(|s| s.kind == kind);
        Ok(ran(SessionKind::Initializer)
            && !ran(SessionKind::Coding)
            && !state.list_covered
            && state.append_failures < baton_records::state::APPEND_ATTEMPTS
            && list.features.len() < self.files.names.features as usize)
    }

    fn note(&self, note: Note) {
        match note {
            Note::Line(l) => self.reporter.line(&l),
            Note::Status(a, s) => self.reporter.agent_status(a, &s),
        }
    }

    /// The run's stop conditions, checked before work is handed out.
    fn stop_condition(
        &self,
        list: &FeatureList,
        state: &State,
        limits: &RunLimits,
        handed: u32,
        idle: bool,
    ) -> Option<RunEnd> {
        if list.all_pass() {
            return Some(RunEnd::Complete);
        }
        if self.stop.is_cancelled() {
            return Some(RunEnd::Interrupted);
        }
        if idle && queue::order(list, state).is_empty() {
            return Some(RunEnd::CompleteExceptBlocked(queue::blocked(list, state)));
        }
        if let Some(l) = limits.reached(handed, state.total_cost()) {
            return Some(RunEnd::Limit(l));
        }
        let stall = self.stall_limit();
        (stall > 0 && state.stalled >= stall).then_some(RunEnd::Stalled(state.stalled))
    }

    /// The stall rule's limit (0: none): coding sessions in a row, in the order
    /// they are settled and across the agents, without a newly passing feature (a
    /// merged flip), counted as a run of one counts them (`queue::count_stall`):
    /// `stall_sessions` for each agent working at once, so a run of one's
    /// `stall_sessions` when N is 1 (docs/parallel.md, "One record").
    fn stall_limit(&self) -> u32 {
        self.cfg
            .run
            .stall_sessions
            .saturating_mul(self.agents.max(1))
    }

    /// What a session that ended left in its copy: its record, the copy's state
    /// and its branch's tip (fetched into the project). Taken before the agent's
    /// next session starts, which writes the copy's state afresh. `None` when the
    /// run was stopped (Ctrl-C, or an error elsewhere) before the session began.
    ///
    /// A hand-out that began no session otherwise is an error, with its cause:
    /// the copy could not be prepared (git's command and message), or its runner
    /// stopped before the session. Handing the work out again would only fail the
    /// same way, at once.
    fn gather(&self, agents: &[Agent], d: Done) -> Result<Option<Ended>, HarnessError> {
        let agent = &agents[d.agent];
        let copy = State::load(&agent.dir)?;
        let Some(mut record) = copy.sessions.iter().find(|s| s.number == d.number).cloned() else {
            let why = match d.end {
                Ok(RunEnd::Interrupted) => return Ok(None),
                Err(e) => e.to_string(),
                Ok(end) => format!(
                    "its working copy's runner stopped before the session ({end:?}) where the run's own stop conditions did not (a bug in baton)"
                ),
            };
            // Begun but not recorded: the next run finishes it from the copy.
            if copy
                .in_progress
                .as_ref()
                .is_some_and(|ip| ip.number == d.number)
            {
                return Err(HarnessError::Input(format!(
                    "agent {}'s session {:04} on feature #{} was not recorded (the next run settles it): {why}",
                    agent.id, d.number, d.feature
                )));
            }
            return Err(HarnessError::Input(format!(
                "agent {} could not start session {:04} on feature #{}: {why}",
                agent.id, d.number, d.feature
            )));
        };
        if let Err(e) = &d.end {
            self.reporter.line(&format!(
                "agent {}: session {:04} failed: {e}",
                agent.id, d.number
            ));
        }
        record.agent = Some(agent.id);
        let theirs = match d.theirs {
            Some(t) => t?,
            None => fetch(&self.files.dir, &agent.dir, agent.id)?,
        };
        let ended = Ended {
            agent: d.agent,
            feature: d.feature,
            number: d.number,
            record,
            feature_record: copy.features.get(&d.feature).cloned(),
            theirs,
            blocked: copy
                .features
                .iter()
                .filter(|(n, r)| **n != d.feature && r.blocked_in == Some(d.number))
                .map(|(n, r)| (*n, r.clone()))
                .collect(),
        };
        let text = serde_json::to_string_pretty(&ended)
            .map_err(|e| HarnessError::Input(format!("session {:04}: {e}", d.number)))?;
        baton_records::write_atomic(&Ended::path(&self.files.dir, d.number), &text)?;
        Ok(Some(ended))
    }

    /// Sessions a killed run had ended but not settled (`.baton/settling/`).
    fn unsettled(&self) -> Result<Vec<Ended>, HarnessError> {
        let dir = self.files.dir.join(layout::SETTLING);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(Vec::new());
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        let mut out = Vec::new();
        for p in paths
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
        {
            let text = std::fs::read_to_string(p).map_err(crate::error::io(p))?;
            let e: Ended = serde_json::from_str(&text).map_err(|e| {
                HarnessError::Input(format!(
                    "{}: not a session waiting to be settled ({e}); move it aside to go on",
                    p.display()
                ))
            })?;
            out.push(e);
        }
        Ok(out)
    }

    /// Record what sessions that ended together did in the project, integrating
    /// their flips (as one batch when there are several).
    async fn settle(
        &self,
        agents: &[CopyDir],
        integrate: &AgentParts,
        remote: Option<&Remote>,
        ended: Vec<Ended>,
        released: Option<&tokio::sync::mpsc::UnboundedSender<usize>>,
    ) -> Result<(), HarnessError> {
        // What the merges need, apart from the sessions themselves: those are put
        // on the record as they settle.
        let flipped: Vec<(u32, String, Vec<usize>, usize, u32)> = ended
            .iter()
            .filter(|e| e.flipped())
            .map(|e| {
                let flips = e.record.gates.flipped.clone();
                (
                    agents[e.agent].id,
                    e.theirs.clone(),
                    flips,
                    e.feature,
                    e.number,
                )
            })
            .collect();
        let branches: Vec<merge::Branch<'_>> = flipped
            .iter()
            .map(|(agent, theirs, flips, feature, number)| merge::Branch {
                agent: *agent,
                theirs,
                flips,
                feature: *feature,
                number: *number,
            })
            .collect();
        let mut waiting: Vec<Option<Ended>> = ended.into_iter().map(Some).collect();
        // A session that conflicts with the main branch is recorded (its reason
        // for the next brief) and its feature released at once.
        let mut early = |number: u32, integration: Integration| -> Result<(), HarnessError> {
            let Some(e) = waiting
                .iter_mut()
                .find(|e| e.as_ref().is_some_and(|e| e.number == number))
                .and_then(Option::take)
            else {
                return Ok(());
            };
            let feature = e.feature;
            self.record_settled(&agents[e.agent], e, integration)?;
            if let Some(tx) = released {
                let _ = tx.send(feature);
            }
            Ok(())
        };
        let results = self
            .integrate_all(integrate, remote, &branches, &mut early)
            .await?;
        let mut merged: BTreeMap<u32, Integration> = results
            .into_iter()
            .zip(branches.iter().map(|b| b.number))
            .filter_map(|(i, n)| i.map(|i| (n, i)))
            .collect();
        for e in waiting.into_iter().flatten() {
            let integration = match merged.remove(&e.number) {
                Some(i) => i,
                None => self.keep(&e.theirs, e.feature, e.number).await?,
            };
            self.record_settled(&agents[e.agent], e, integration)?;
        }
        Ok(())
    }

    /// Put one settled session on the project's record: its ledger lines, its
    /// flips if merged (else a requeue), its record and its transcript.
    fn record_settled(
        &self,
        agent: &CopyDir,
        ended: Ended,
        integration: Integration,
    ) -> Result<(), HarnessError> {
        let Ended {
            feature,
            number,
            mut record,
            feature_record,
            blocked,
            ..
        } = ended;
        let flipped = record.gates.flipped.contains(&feature);
        let main = &self.files.dir;
        let mut state = State::load(main)?;
        // The copy's ledger lines of this session: its decisions, on the project's
        // record. A flip is the project's only once it is merged.
        let lines = ledger::read(&agent.dir.join(layout::LEDGER))?;
        for mut e in lines.entries.into_iter().filter(|e| e.session == number) {
            if e.kind == LedgerKind::Flip {
                if integration.outcome != IntegrationOutcome::Merged {
                    continue;
                }
                e.commit.clone_from(&integration.commit);
            }
            self.files.append_ledger(&e)?;
        }
        let merged = integration.outcome == IntegrationOutcome::Merged;
        let mut list = self.files.load_accepted()?.unwrap_or_default();
        // Other features the session declared blocked, unless they pass by now.
        for (n, r) in blocked {
            if list
                .features
                .get(n.wrapping_sub(1))
                .is_some_and(|f| !f.passes)
            {
                let mine = state.features.entry(n).or_default();
                mine.blocked = r.blocked;
                mine.blocked_in = r.blocked_in;
            }
        }
        if merged {
            for &f in &record.gates.flipped {
                if let Some(feat) = list.features.get_mut(f - 1) {
                    feat.passes = true;
                }
                state.features.remove(&f);
            }
            self.files.save_accepted(&list)?;
            if record.kind == SessionKind::Coding {
                queue::count_stall(&mut state, !record.gates.flipped.is_empty(), true, false);
            }
        } else {
            // The feature's first deferral (by the copy's gates, or here) restarts
            // the stall count once, as in a run of one.
            let mut first_deferral = false;
            if flipped {
                let detail = format!(
                    "not merged into the main branch ({:?}): {}; kept as {}",
                    integration.outcome,
                    integration.detail,
                    integration.kept.as_deref().unwrap_or("-")
                );
                self.files.append_ledger(&LedgerEntry {
                    feature: Some(feature),
                    ..LedgerEntry::new(number, LedgerKind::Requeued, detail.clone())
                })?;
                let limit = self.cfg.run.feature_attempts;
                if let Some(d) =
                    queue::count_attempt(&mut state, feature, number, detail.clone(), limit)
                {
                    first_deferral = d.first;
                    let desc = list
                        .features
                        .get(feature.wrapping_sub(1))
                        .map(|f| f.description.clone())
                        .unwrap_or_default();
                    self.files.append_ledger(&LedgerEntry {
                        feature: Some(feature),
                        ..LedgerEntry::new(
                            number,
                            LedgerKind::Deferred,
                            format!(
                                "{desc}: deferred after {} failed attempt(s); last: {detail}",
                                d.attempts
                            ),
                        )
                    })?;
                }
            } else if let Some(mut r) = feature_record {
                let before = state.features.get(&feature);
                first_deferral =
                    r.deferred.is_some() && before.is_none_or(|b| b.deferred.is_none());
                // A block another agent's session declared meanwhile stays.
                if r.blocked.is_none()
                    && let Some(b) = before.filter(|b| b.blocked.is_some())
                {
                    r.blocked.clone_from(&b.blocked);
                    r.blocked_in = b.blocked_in;
                }
                state.features.insert(feature, r);
            }
            if record.kind == SessionKind::Coding {
                // As a run of one counts it: a session that had its feature to
                // work on (not one it declared blocked, not one stopped by the
                // provider's usage limit) and made nothing newly pass.
                let declared_blocked = state
                    .features
                    .get(&feature)
                    .is_some_and(|r| r.blocked.is_some() && r.blocked_in == Some(number));
                let worked = record.target.is_some()
                    && !declared_blocked
                    && record.outcome != baton_records::SessionOutcome::UsageLimit;
                // A run of one stops as soon as the count reaches the limit, so no
                // deferral restarts it from there: neither does one of a session
                // that was under way when it did.
                let limit = self.stall_limit();
                let first_deferral = first_deferral && (limit == 0 || state.stalled < limit);
                queue::count_stall(&mut state, false, worked, first_deferral);
            }
        }
        self.reporter.line(&format!(
            "agent {}: session {:04} feature #{}: {}",
            agent.id,
            number,
            feature,
            match integration.outcome {
                IntegrationOutcome::Merged => format!(
                    "merged into the main branch ({})",
                    integration.commit.as_deref().unwrap_or("")
                ),
                IntegrationOutcome::Kept => "did not pass; its branch is kept".into(),
                o => format!("{o:?}: {}; back to the queue", integration.detail),
            }
        ));
        if !merged {
            // Not the project's: the flips stay on the kept branch.
            record.gates.flipped.clear();
        }
        record.integration = Some(integration);
        state.sessions.push(record.clone());
        state.sessions.sort_by_key(|s| s.number);
        state.save(main)?;
        self.reporter
            .session_end(&record, list.passing(), list.features.len());
        // The transcript, where `baton log` looks.
        let t = layout::transcript(number);
        if agent.dir.join(&t).is_file() {
            std::fs::create_dir_all(main.join(layout::SESSIONS))
                .map_err(crate::error::io(main.join(layout::SESSIONS)))?;
            std::fs::copy(agent.dir.join(&t), main.join(&t))
                .map_err(crate::error::io(main.join(&t)))?;
        }
        // Its evidence (screenshots, the verifier's notes), where the report looks.
        let ev = layout::evidence(number);
        if agent.dir.join(&ev).is_dir() {
            copy_tree(&agent.dir.join(&ev), &main.join(&ev))?;
        }
        let pending = Ended::path(main, number);
        if pending.exists() {
            std::fs::remove_file(&pending).map_err(crate::error::io(&pending))?;
        }
        Ok(())
    }

    /// Claim feature `n`: a ref only one can create (on the remote when there is
    /// one), pointing at the main branch's `tip`. False when someone else holds it.
    fn claim(&self, remote: Option<&Remote>, n: usize, tip: &str) -> Result<bool, HarnessError> {
        if let Some(r) = remote {
            return r.claim(&n.to_string());
        }
        // The empty old value: the ref must not exist yet.
        git(
            &self.files.dir,
            &["update-ref", &format!("{}{n}", remote::CLAIMS), tip, ""],
        )?;
        Ok(true)
    }

    fn release(&self, remote: Option<&Remote>, n: usize) {
        if let Some(r) = remote {
            r.release(&n.to_string());
            return;
        }
        let _ = git(
            &self.files.dir,
            &["update-ref", "-d", &format!("{}{n}", remote::CLAIMS)],
        );
    }

    /// The first session number no record or transcript of the project uses.
    fn next_number(&self) -> Result<u32, HarnessError> {
        let main = &self.files.dir;
        let recorded = State::load(main)?
            .sessions
            .iter()
            .map(|s| s.number)
            .max()
            .unwrap_or(0);
        let transcripts = baton_agent::transcript::list_sessions(main)?
            .last()
            .map_or(0, |(n, _)| *n);
        Ok(recorded.max(transcripts) + 1)
    }
}

/// Where each agent's working copy is.
fn copies(agents: &[Agent]) -> Vec<CopyDir> {
    agents
        .iter()
        .map(|a| CopyDir {
            id: a.id,
            dir: a.dir.clone(),
        })
        .collect()
}

/// Copy the files under `from` to `to` (directories made as needed; symlinks and
/// other special files left out).
fn copy_tree(from: &Path, to: &Path) -> Result<(), HarnessError> {
    std::fs::create_dir_all(to).map_err(crate::error::io(to))?;
    for e in std::fs::read_dir(from).map_err(crate::error::io(from))? {
        let e = e.map_err(crate::error::io(from))?;
        let kind = e.file_type().map_err(crate::error::io(e.path()))?;
        let dest = to.join(e.file_name());
        if kind.is_dir() {
            copy_tree(&e.path(), &dest)?;
        } else if kind.is_file() {
            std::fs::copy(e.path(), &dest).map_err(crate::error::io(&dest))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_builds_on_its_newest_unmerged_session_with_every_unmerged_flip() {
        let ended = || {
            vec![
                (0, "a1".to_string(), vec![1]),
                (1, "b1".to_string(), vec![2]),
                (0, "a2".to_string(), vec![5]),
                (0, "a3".to_string(), vec![5, 7]),
            ]
            .into_iter()
        };
        assert_eq!(
            unmerged_own(ended(), 0),
            Some(("a3".to_string(), vec![1, 5, 7]))
        );
        assert_eq!(unmerged_own(ended(), 1), Some(("b1".to_string(), vec![2])));
        assert_eq!(unmerged_own(ended(), 2), None);
    }
}
