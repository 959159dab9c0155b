//! The coordinator of a parallel run: a named state machine over the run's
//! sessions, in the run's own task.
//!
//! A session's life: **handed out** (its feature claimed, its agent busy) →
//! **running** in its agent's thread → **ended**, gathered from its copy and
//! waiting for the next batch → in the **batch** being integrated (one batch at a
//! time, while the agents go on working) → **settled** on the project's record,
//! its claim released.
//!
//! Each turn of [`Coordinator::drive`] judges the run's stop conditions, hands out
//! what it can ([`Coordinator::hand_out`]) and starts integrating what ended; then
//! it stops the run, or waits for one event and handles it:
//! - sessions ended ([`Coordinator::sessions_ended`]): their agents are idle again;
//! - a feature released early ([`Coordinator::released`]): its branch conflicted
//!   with the main branch itself, and it may be handed out before its batch is done;
//! - the batch settled ([`Coordinator::settled`]): its features' claims are released.
//!
//! The bookkeeping of those states lives in a [`Board`], which does no I/O.
//!
//! Claims due for renewal and the agents' lines are handled while it waits. So
//! every turn does work, waits on an event that will come (a session ending, a
//! merge, a timer), or stops: a hand-out that starts no session stops the run
//! with its cause, and is never retried.

use std::collections::BTreeSet;

use baton_records::{FeatureList, State};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use super::agents::{Agent, CopyDir, Done, Reports};
use super::board::Board;
use super::claims::Mainline;
use super::merge::Integrator;
use super::relay::Note;
use super::settle::Settler;
use super::{AgentParts, Parallel, WAIT_FOR_OTHERS};
use crate::error::HarnessError;
use crate::git;
use crate::limits::{RunEnd, RunLimits};
use crate::queue;

/// The integration of a batch of ended sessions, running in the run's task while
/// it hands out work.
type Settling<'f> = std::pin::Pin<Box<dyn Future<Output = Result<(), HarnessError>> + 'f>>;

/// What the coordinator sees of the project at the start of a turn.
struct Look {
    state: State,
    list: FeatureList,
    /// Features other machines hold.
    elsewhere: BTreeSet<usize>,
    /// The main branch's tip, read at the first hand-out of the turn.
    tip: Option<String>,
    /// The list was read again during the hand-out (another machine's merge seen
    /// after a claim): the stop conditions judged before it are stale.
    stale: bool,
    /// A claim that failed in this turn (not one another machine won).
    unclaimed: Option<HarnessError>,
}

/// What woke the coordinator.
enum Event {
    /// Sessions that ended (all that have by now: they are merged as one batch).
    Ended(Vec<Done>),
    /// A feature of the batch released early.
    Released(usize),
    /// The batch's integration ended.
    Settled(Result<(), HarnessError>),
}

/// With nothing running and nothing being integrated, what the run does.
enum Idle {
    Stop(Result<RunEnd, HarnessError>),
    /// Look again at once (the stop conditions were judged on a stale list).
    Again,
    /// Features other machines hold may come back: look again in a while.
    WaitForOthers,
}

/// The channels between the coordinator and the agents' threads and the batch.
struct Channels {
    done: UnboundedReceiver<Done>,
    lines: UnboundedReceiver<Note>,
    release_tx: UnboundedSender<usize>,
    released: UnboundedReceiver<usize>,
    /// What the agents' threads report on.
    reports: Reports,
}

/// The run's state between its turns.
pub(super) struct Coordinator<'f, 'a> {
    run: &'f Parallel<'a>,
    /// The main branch and its claims: the project's, or a shared remote's.
    mainline: &'f dyn Mainline,
    copies: &'f [CopyDir],
    integrate: &'f AgentParts,
    agents: Vec<Agent>,
    limits: RunLimits,
    /// Which agent holds what, what runs, what ended, what the batch holds.
    board: Board,
    /// The batch's integration, to its end.
    settling: Option<Settling<'f>>,
    /// Why the run stops with an error once what is under way is settled: a
    /// hand-out that started no session.
    failed: Option<HarnessError>,
    next_renewal: Option<tokio::time::Instant>,
    channels: Channels,
    /// What stops the agents' sessions: Ctrl-C, or an error that stops the run.
    halt: CancellationToken,
}

/// Where the coordinator starts from.
pub(super) struct Setup<'f> {
    pub mainline: &'f dyn Mainline,
    pub copies: &'f [CopyDir],
    pub integrate: &'f AgentParts,
    pub agents: Vec<Agent>,
    pub limits: RunLimits,
    pub handed: u32,
    /// The project's session numbers, shared with the agents' verifiers.
    pub numbers: baton_records::SessionNumbers,
}

impl<'f, 'a> Coordinator<'f, 'a> {
    pub(super) fn new(run: &'f Parallel<'a>, start: Setup<'f>) -> Self {
        let (done_tx, done) = unbounded_channel::<Done>();
        let (line_tx, lines) = unbounded_channel::<Note>();
        let (release_tx, released) = unbounded_channel::<usize>();
        let halt = run.stop.child_token();
        let next_renewal = start
            .mainline
            .renew_every()
            .map(|d| tokio::time::Instant::now() + d);
        Self {
            run,
            mainline: start.mainline,
            copies: start.copies,
            integrate: start.integrate,
            board: Board::new(start.agents.len(), start.handed),
            agents: start.agents,
            limits: start.limits,
            settling: None,
            failed: None,
            next_renewal,
            channels: Channels {
                done,
                lines,
                release_tx,
                released,
                reports: Reports {
                    done: done_tx,
                    lines: line_tx,
                    stop: halt.clone(),
                    numbers: start.numbers,
                    spend: super::board::Spend::default(),
                },
            },
            halt,
        }
    }

    /// Run the agents until every feature passes or a stop condition holds.
    pub(super) async fn drive(mut self) -> Result<RunEnd, HarnessError> {
        loop {
            self.take_ended();
            let mut look = self.look()?;
            // Sessions that ended and are not settled yet count as running here:
            // their features are still claimed, and the run is not idle before
            // they are merged.
            let reason = self.limits.stop_rule(
                Some(&look.list),
                &look.state,
                self.board.unsettled_cost(
                    &look.state,
                    &self.channels.reports.spend.unrecorded(&look.state),
                ),
                self.board.handed(),
                self.board.busy() == 0,
                self.run.stop.is_cancelled(),
            );
            if reason.is_none() && self.failed.is_none() {
                self.hand_out(&mut look)?;
            }
            self.integrate_ended();
            if self.board.running() == 0 && !self.board.integrating() {
                match self.when_idle(look, reason) {
                    // "Complete" only after every passing feature's check passed on
                    // the main branch: what broke is set back and handed out again.
                    Idle::Stop(Ok(end @ (RunEnd::Complete | RunEnd::CompleteExceptBlocked(_)))) => {
                        if self.run.sweep_before_complete(self.mainline).await? {
                            continue;
                        }
                        return Ok(end);
                    }
                    Idle::Stop(end) => return end,
                    Idle::Again => continue,
                    Idle::WaitForOthers => {
                        tokio::select! {
                            () = tokio::time::sleep(WAIT_FOR_OTHERS) => continue,
                            () = self.run.stop.cancelled() => return Ok(RunEnd::Interrupted),
                        }
                    }
                }
            }
            match self.wait().await? {
                Event::Ended(sessions) => self.sessions_ended(sessions),
                Event::Released(feature) => self.released(feature),
                Event::Settled(result) => self.settled(result)?,
            }
        }
    }

    /// The record, the accepted list and the claims of other machines, read with
    /// no await in between, so the integration cannot move one without the other.
    fn look(&self) -> Result<Look, HarnessError> {
        self.run.sync(self.mainline)?;
        let elsewhere = self
            .mainline
            .claimed()?
            .into_iter()
            .filter(|&n| !self.board.holds(n))
            .collect();
        let main = &self.run.files.dir;
        Ok(Look {
            state: State::load(main)?,
            list: self.run.files.load_accepted()?.unwrap_or_default(),
            elsewhere,
            tip: None,
            stale: false,
            unclaimed: None,
        })
    }

    /// Hand each idle agent the next feature in the queue that nobody holds, up
    /// to `--max-sessions`: claim it, and start its session in the agent's thread.
    fn hand_out(&mut self, look: &mut Look) -> Result<(), HarnessError> {
        let main = self.run.files.dir.clone();
        let max_sessions = self.limits.max_sessions;
        let queue: Vec<usize> = queue::order(&look.list, &look.state)
            .into_iter()
            .filter(|&n| !self.board.holds(n) && !look.elsewhere.contains(&n))
            .collect();
        for n in queue {
            if max_sessions > 0 && self.board.handed() >= max_sessions {
                break;
            }
            let Some(a) = self.board.take_idle() else {
                break;
            };
            if look.tip.is_none() {
                look.tip = Some(git::own_head(&main)?);
            }
            let mut head = look.tip.clone().unwrap_or_default();
            match self.mainline.claim(n, &head) {
                Ok(true) => {}
                Ok(false) => {
                    // Another machine claimed it first.
                    self.board.not_handed(a);
                    look.elsewhere.insert(n);
                    continue;
                }
                Err(e) => {
                    self.run
                        .reporter
                        .line(&format!("feature #{n} could not be claimed: {e}"));
                    self.board.not_handed(a);
                    look.unclaimed.get_or_insert(e);
                    continue;
                }
            }
            if self.mainline.shared() {
                // A claim is released only after its merge was pushed: what was
                // merged before this claim was won is seen now.
                self.run.sync(self.mainline)?;
                look.list = self.run.files.load_accepted()?.unwrap_or_default();
                look.state = State::load(&main)?;
                head = git::own_head(&main)?;
                look.tip = Some(head.clone());
                if look.list.features.get(n - 1).is_some_and(|f| f.passes) {
                    self.mainline.release(n);
                    self.board.not_handed(a);
                    look.stale = true;
                    continue;
                }
            }
            let number = match self.channels.reports.numbers.take() {
                Ok(number) => number,
                Err(e) => {
                    self.mainline.release(n);
                    self.board.not_handed(a);
                    return Err(e.into());
                }
            };
            self.board.hand(a, n);
            self.run.reporter.line(&format!(
                "agent {} takes feature #{n} (session {number:04})",
                self.agents[a].id
            ));
            // Its sessions ended and not merged yet: the newest is built on, and
            // it holds the flips of those before it too.
            let own = self.board.own(a);
            let copy = self.run.copy_state(&head, &look.state, &look.list, n, own);
            // A person's guidance goes to the next session handed out.
            crate::tell::hand_over(&main, &self.agents[a].dir)?;
            self.run.start(
                &mut self.agents[a],
                (a, n, number),
                copy,
                &self.channels.reports,
            )?;
            self.board.started();
        }
        Ok(())
    }

    /// What ended is merged now, while the agents run: an agent whose session
    /// ends meanwhile is handed its next feature at once (an agent never waits
    /// for merges and sweeps). What ends meanwhile is the next batch.
    fn integrate_ended(&mut self) {
        let Some(sessions) = self.board.start_batch() else {
            return;
        };
        let settler = Settler {
            integrator: Integrator {
                run: self.run,
                parts: self.integrate,
                mainline: self.mainline,
            },
        };
        let copies = self.copies;
        let release = self.channels.release_tx.clone();
        self.settling = Some(Box::pin(async move {
            settler.settle(copies, sessions, Some(release)).await
        }));
    }

    /// Nothing runs and nothing is being integrated: the run stops, with the
    /// error of a hand-out that failed, the stop condition, or complete but for
    /// blocked features; or it looks again.
    fn when_idle(&mut self, look: Look, reason: Option<RunEnd>) -> Idle {
        if let Some(e) = self.failed.take() {
            return Idle::Stop(Err(e));
        }
        if let Some(end) = reason {
            return Idle::Stop(Ok(end));
        }
        if look.stale {
            return Idle::Again;
        }
        if !look.elsewhere.is_empty() {
            return Idle::WaitForOthers;
        }
        // Nothing could be handed out: a claim that failed is why, not a project
        // complete but for blocked features.
        if let Some(e) = look.unclaimed {
            return Idle::Stop(Err(e));
        }
        Idle::Stop(Ok(RunEnd::CompleteExceptBlocked(queue::blocked(
            &look.list,
            &look.state,
        ))))
    }

    /// Wait for the next event: sessions ending, a feature released early, the
    /// batch settled. Lines are passed on and claims renewed meanwhile.
    async fn wait(&mut self) -> Result<Event, HarnessError> {
        /// What a wait woke up to (the futures waited on are gone by then).
        enum Woke {
            Note(Note),
            Done(Box<Done>),
            Released(usize),
            Settled(Result<(), HarnessError>),
            Renew,
        }
        loop {
            let woke = {
                let due = self.next_renewal;
                let renewal = async {
                    match due {
                        Some(t) => tokio::time::sleep_until(t).await,
                        None => std::future::pending().await,
                    }
                };
                let batch = &mut self.settling;
                let settling = async {
                    match batch.as_mut() {
                        Some(b) => b.as_mut().await,
                        None => std::future::pending().await,
                    }
                };
                let channels = &mut self.channels;
                tokio::select! {
                    Some(note) = channels.lines.recv() => Woke::Note(note),
                    Some(first) = channels.done.recv() => Woke::Done(Box::new(first)),
                    Some(feature) = channels.released.recv() => Woke::Released(feature),
                    result = settling => Woke::Settled(result),
                    () = renewal => Woke::Renew,
                }
            };
            match woke {
                Woke::Note(note) => note.tell(self.run.reporter),
                Woke::Done(first) => {
                    let mut sessions = vec![*first];
                    sessions.extend(self.ended_now());
                    return Ok(Event::Ended(sessions));
                }
                // One on the record as requeued already was handed out again.
                Woke::Released(feature) => {
                    if self.board.in_batch(feature) {
                        return Ok(Event::Released(feature));
                    }
                }
                Woke::Settled(result) => return Ok(Event::Settled(result)),
                Woke::Renew => {
                    self.mainline.renew(self.run.reporter)?;
                    self.next_renewal = self
                        .mainline
                        .renew_every()
                        .map(|d| tokio::time::Instant::now() + d);
                }
            }
        }
    }

    /// Sessions that ended while the coordinator was busy (a batch settling):
    /// taken now, so that the next batch holds every session that has ended.
    fn take_ended(&mut self) {
        let ended = self.ended_now();
        if !ended.is_empty() {
            self.sessions_ended(ended);
        }
    }

    /// Every session's end reported by now; the agents' lines sent by then are
    /// told first (a session's lines come before its end).
    fn ended_now(&mut self) -> Vec<Done> {
        let ended: Vec<Done> = std::iter::from_fn(|| self.channels.done.try_recv().ok()).collect();
        while let Ok(note) = self.channels.lines.try_recv() {
            note.tell(self.run.reporter);
        }
        ended
    }

    /// Sessions ended: gathered from their copies (before their agents' next
    /// sessions write them afresh), their agents idle again. A hand-out that
    /// started no session stops the run: no more work is handed out, the
    /// sessions under way are stopped and settled, then the run ends with it.
    fn sessions_ended(&mut self, sessions: Vec<Done>) {
        for mut d in sessions {
            let (a, feature) = (d.agent, d.feature);
            if let Some(p) = d.parts.take() {
                self.agents[a].parts = Some(p);
            }
            let session = match self.run.gather(&self.copies[a], d) {
                Ok(e) => e,
                Err(e) => {
                    self.run.reporter.line(&format!("stopping the run: {e}"));
                    self.halt.cancel();
                    self.failed.get_or_insert(e);
                    None
                }
            };
            self.board.ended(a, feature, session);
        }
    }

    /// A feature of the batch is settled before the rest of it (its branch
    /// conflicted with the main branch itself): its claim is released.
    fn released(&mut self, feature: usize) {
        self.board.released(feature);
        self.mainline.release(feature);
    }

    /// The batch was settled: the claims of its features are released.
    fn settled(&mut self, result: Result<(), HarnessError>) -> Result<(), HarnessError> {
        self.settling = None;
        let features = self.board.settled();
        // Features it released early that were not seen yet: all of its
        // features are released below.
        while self.channels.released.try_recv().is_ok() {}
        result?;
        for feature in features {
            self.mainline.release(feature);
        }
        Ok(())
    }
}
