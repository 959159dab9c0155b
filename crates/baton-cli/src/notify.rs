//! Notifications to a person (`[notify]` in `baton.toml`): each event of a run
//! (`run_end`, `blocked`, `waiting`, `budget`, `verifier_rejections`) goes, in
//! order and once, to a command (the event as one JSON object on stdin) and to a
//! webhook (its URL from the environment variable `webhook_env`, as JSON, Slack's
//! `{"text"}` or ntfy's plain text).
//!
//! Deliveries never hold up the run: events queue to one thread of their own,
//! each delivery is bounded by `timeout_secs` (a webhook gets three attempts), and
//! a failure is written to `.baton/notify.log` and said once on stderr. At the end
//! of the run the queue is drained for a bounded time.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use baton_config::{NotifyConfig, NotifyFormat};
use serde_json::{Value, json};

/// A delivery under way.
type Delivery<'a> = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + 'a>>;

/// Somewhere a person hears of an event. `[notify]` sets a [`Command`] and a
/// [`Webhook`]; another kind of channel is one more implementation, made in
/// [`Channels::of`].
trait Channel: Send + Sync {
    /// Its name in a failure ("command", "webhook").
    fn name(&self) -> &'static str;
    /// Deliver `event`, bounded by the channel's own timeout.
    fn deliver<'a>(&'a self, event: &'a Value) -> Delivery<'a>;
}

/// A program outside the sandbox, given the event as one JSON object on stdin.
struct Command {
    argv: Vec<String>,
    timeout: Duration,
}

/// A URL the event is POSTed to, in its format (three attempts).
struct Webhook {
    url: String,
    format: NotifyFormat,
    timeout: Duration,
}

impl Channel for Command {
    fn name(&self) -> &'static str {
        "command"
    }

    fn deliver<'a>(&'a self, event: &'a Value) -> Delivery<'a> {
        Box::pin(run_command(&self.argv, self.timeout, event))
    }
}

impl Channel for Webhook {
    fn name(&self) -> &'static str {
        "webhook"
    }

    fn deliver<'a>(&'a self, event: &'a Value) -> Delivery<'a> {
        Box::pin(post(self, event))
    }
}

/// The channels `[notify]` sets, in order, and where their failures are written.
struct Channels {
    list: Vec<Box<dyn Channel>>,
    log: PathBuf,
}

impl Channels {
    fn of(cfg: &NotifyConfig, webhook: Option<String>, dir: &Path) -> Self {
        let timeout = Duration::from_secs(cfg.timeout_secs.max(1));
        let mut list: Vec<Box<dyn Channel>> = Vec::new();
        if !cfg.command.is_empty() {
            list.push(Box::new(Command {
                argv: cfg.command.clone(),
                timeout,
            }));
        }
        if let Some(url) = webhook {
            list.push(Box::new(Webhook {
                url,
                format: cfg.format(),
                timeout,
            }));
        }
        Self {
            list,
            log: dir.join(baton_records::layout::NOTIFY_LOG),
        }
    }

    /// Deliver `event` to each channel in turn: every failure, named by channel.
    async fn deliver(&self, event: &Value) -> anyhow::Result<()> {
        let mut errors = Vec::new();
        for c in &self.list {
            if let Err(e) = c.deliver(event).await {
                errors.push(format!("{}: {e}", c.name()));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            anyhow::bail!("{}", errors.join("; "))
        }
    }
}

/// Sends a run's events to the person, off the run's path.
pub struct Notifier {
    project: String,
    queue: Mutex<Option<mpsc::Sender<Value>>>,
    /// Disconnected once the delivery thread has delivered everything and ended.
    drained: Mutex<Option<mpsc::Receiver<()>>>,
}

impl Notifier {
    /// A notifier for the project in `dir`, or `None` when `[notify]` sets neither a
    /// command nor a webhook (a `webhook_env` naming an unset variable is said once).
    pub fn new(cfg: &NotifyConfig, webhook: Option<String>, dir: &Path) -> Option<Self> {
        let targets = Channels::of(cfg, webhook, dir);
        if targets.list.is_empty() {
            return None;
        }
        let (tx, rx) = mpsc::channel::<Value>();
        let (done, drained) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("baton-notify".into())
            .spawn(move || {
                // Dropped when the thread ends: `close` wakes then.
                let _done = done;
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                let mut warned = false;
                for event in rx {
                    if let Err(e) = rt.block_on(targets.deliver(&event)) {
                        let line = format!(
                            "{} {}: {e}\n",
                            baton_agent::transcript::now_ms(),
                            event["event"].as_str().unwrap_or("?")
                        );
                        let _ = append(&targets.log, &line);
                        if !warned {
                            eprintln!(
                                "baton: warning: a notification failed ({e}); the run goes on (more in {})",
                                targets.log.display()
                            );
                            warned = true;
                        }
                    }
                }
            })
            .ok()?;
        Some(Self {
            project: dir.display().to_string(),
            queue: Mutex::new(Some(tx)),
            drained: Mutex::new(Some(drained)),
        })
    }

    /// Queue `event` with its human `text` and its own `fields`.
    pub fn send(&self, event: &str, text: &str, fields: Value) {
        let mut e = json!({
            "event": event,
            "project": self.project,
            "t_ms": baton_agent::transcript::now_ms(),
            "text": text,
        });
        if let (Some(o), Value::Object(f)) = (e.as_object_mut(), fields) {
            o.extend(f);
        }
        if let Some(q) = self.queue.lock().ok().and_then(|q| q.clone()) {
            let _ = q.send(e);
        }
    }

    /// No more events: deliver what is queued, waiting at most `most`.
    pub fn close(&self, most: Duration) {
        if let Ok(mut q) = self.queue.lock() {
            q.take();
        }
        if let Some(drained) = self.drained.lock().ok().and_then(|mut d| d.take()) {
            // Nothing is ever sent: this returns when the thread ends, or at `most`.
            let _ = drained.recv_timeout(most);
        }
    }
}

/// The webhook URL, from the variable `[notify] webhook_env` names (`None` when it
/// names none, or an unset one, which is said once).
pub fn webhook(cfg: &NotifyConfig) -> Option<String> {
    if cfg.webhook_env.is_empty() {
        return None;
    }
    match std::env::var(&cfg.webhook_env) {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_string()),
        _ => {
            eprintln!(
                "baton: warning: [notify] webhook_env names {}, which is not set: no webhook notifications",
                cfg.webhook_env
            );
            None
        }
    }
}

/// `baton notify test DIR`: send a sample event to the project's command and webhook.
pub fn test(dir: &Path) -> anyhow::Result<()> {
    let dir = crate::setup::project_dir(dir, crate::setup::CREATE_HINT)?;
    let cfg = crate::setup::load_config(&dir)?;
    send_now(&cfg.notify, webhook(&cfg.notify), &dir)?;
    eprintln!("baton: the test notification was delivered");
    Ok(())
}

/// Send one event now: the error, if delivery failed.
fn send_now(cfg: &NotifyConfig, webhook: Option<String>, dir: &Path) -> anyhow::Result<()> {
    let targets = Channels::of(cfg, webhook, dir);
    if targets.list.is_empty() {
        anyhow::bail!(
            "{} sets no [notify] command, and no webhook: set command = [\"program\", …] or webhook_env = \"VAR\" with VAR holding the URL",
            dir.join(baton_config::CONFIG_FILE).display()
        );
    }
    let event = json!({
        "event": "test",
        "project": dir.display().to_string(),
        "t_ms": baton_agent::transcript::now_ms(),
        "text": format!("baton: a test notification for {}", dir.display()),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(targets.deliver(&event))
}

fn append(path: &Path, line: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(line.as_bytes())
}

async fn run_command(argv: &[String], timeout: Duration, event: &Value) -> anyhow::Result<()> {
    use tokio::io::AsyncWriteExt as _;
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("no program"))?;
    // A group of its own: at the timeout the command goes with whatever it
    // started, not only its first process.
    // A bare name is found on the PATH baton trusts, never in the project.
    let found = crate::setup::on_path(program).ok_or_else(|| {
        anyhow::anyhow!(
            "{program} not found on PATH (leaving out the project, the temp dirs and relative entries, where the agent can write)"
        )
    })?;
    let mut child = tokio::process::Command::new(found)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot run {program}: {e}"))?;
    let group = child.id().and_then(|p| i32::try_from(p).ok());
    let body = format!("{event}\n");
    let done = async {
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(body.as_bytes()).await;
        }
        child.wait().await
    };
    let ended = tokio::time::timeout(timeout, done).await;
    if let (Err(_), Some(g)) = (&ended, group) {
        // At the timeout all of it goes, what it started included.
        baton_tools::process::signal_group(g, rustix::process::Signal::KILL);
    }
    match ended {
        Ok(Ok(s)) if s.success() => Ok(()),
        Ok(Ok(s)) => anyhow::bail!("{program} exited with {s}"),
        Ok(Err(e)) => anyhow::bail!("{program}: {e}"),
        Err(_) => anyhow::bail!("{program} took longer than {timeout:?} and was stopped"),
    }
}

/// What the agent wrote, quoted for a person's channel: one line, at most 300
/// characters, its mentions defused (a word joiner after each `@`, so `@here` or
/// `@channel` pings nobody), its own curly quotes made straight (so it cannot
/// close the quote and go on as baton), controls shown escaped, in quotes and
/// named as the agent's.
fn agents_words(s: &str) -> String {
    let s = baton_records::human::terminal(s).replace(['“', '”'], "\"");
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut: String = line.chars().take(300).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    format!("“{}” (the agent's words)", cut.replace('@', "@\u{2060}"))
}

/// `text` for Slack's `text` field: `&`, `<` and `>` escaped, so that nothing in
/// it (the agent's words included) becomes a mention (`<!channel>`) or a link
/// whose label hides its address (`<http://…|docs>`).
fn slack_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The webhook's request body and content type for `format`.
fn body(format: NotifyFormat, event: &Value) -> (String, &'static str) {
    let text = event["text"].as_str().unwrap_or_default().to_string();
    match format {
        NotifyFormat::Slack => (
            json!({ "text": slack_escaped(&text) }).to_string(),
            "application/json",
        ),
        NotifyFormat::Ntfy => (text, "text/plain"),
        NotifyFormat::Json => (event.to_string(), "application/json"),
    }
}

async fn post(t: &Webhook, event: &Value) -> anyhow::Result<()> {
    let client = reqwest::Client::builder().timeout(t.timeout).build()?;
    let (body, kind) = body(t.format, event);
    let mut last = String::new();
    for attempt in 0..3u32 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(500 * u64::from(attempt))).await;
        }
        let mut req = client
            .post(&t.url)
            .header("content-type", kind)
            .body(body.clone());
        if t.format == NotifyFormat::Ntfy {
            req = req.header(
                "Title",
                format!("baton: {}", event["event"].as_str().unwrap_or("event")),
            );
        }
        match req.send().await {
            Ok(r) if r.status().is_success() => return Ok(()),
            // A client error will not go away on a retry.
            Ok(r) if r.status().is_client_error() => anyhow::bail!("HTTP {}", r.status()),
            Ok(r) => last = format!("HTTP {}", r.status()),
            Err(e) => last = e.without_url().to_string(),
        }
    }
    anyhow::bail!("{last} (3 attempts)")
}

/// Sessions in a row whose flips the verifier rejected before a person hears of it.
pub const REJECTION_STREAK: u32 = 3;

/// The run's events as the live view sees them, turned into notifications.
pub struct RunNotices {
    to: Notifier,
    dir: PathBuf,
    budget_said: std::sync::atomic::AtomicBool,
    streak: std::sync::atomic::AtomicU32,
}

impl RunNotices {
    /// Notices for the project in `dir`, sent through `to`.
    pub fn new(to: Notifier, dir: &Path) -> Self {
        Self {
            to,
            dir: dir.to_path_buf(),
            budget_said: std::sync::atomic::AtomicBool::new(false),
            streak: std::sync::atomic::AtomicU32::new(0),
        }
    }
}

impl crate::live::Listener for RunNotices {
    /// A session was recorded: features it blocked, 80 % of the budget spent (once),
    /// and a streak of sessions whose flips the verifier rejected.
    fn session_end(&self, r: &baton_records::SessionRecord, spent: f64, budget: Option<f64>) {
        use std::sync::atomic::Ordering;
        // The session's blocks are the ledger's last lines by now (its own, or in a
        // parallel run those copied from the agent's working copy).
        for (n, reason) in recent_blocks(&self.dir, r.number) {
            self.to.send(
                "blocked",
                &format!(
                    "baton: feature #{n} was declared blocked by session {}, which says {}; `baton unblock` hands it out again",
                    r.number,
                    agents_words(&reason)
                ),
                json!({"feature": n, "reason": reason, "session": r.number}),
            );
        }
        if !r.gates.network_refused.is_empty() {
            // The names are the ones the agent's commands asked for: its words.
            let hosts = &r.gates.network_refused;
            self.to.send(
                "network_refused",
                &format!(
                    "baton: session {} was refused the network to {}: not on [sandbox] allow in baton.toml; add a host there if the project needs it",
                    r.number,
                    agents_words(&hosts.join(", "))
                ),
                json!({"session": r.number, "hosts": hosts}),
            );
        }
        if let Some(b) = budget
            && b > 0.0
            && spent >= 0.8 * b
            && !self.budget_said.swap(true, Ordering::SeqCst)
        {
            self.to.send(
                "budget",
                &format!(
                    "baton: {} of the {} budget spent ({:.0} %)",
                    crate::live::usd(spent),
                    crate::live::usd(b),
                    100.0 * spent / b
                ),
                json!({"cost_usd": spent, "budget_usd": b}),
            );
        }
        if r.kind == baton_records::SessionKind::Coding {
            if r.gates.verifier_rejected.is_empty() {
                self.streak.store(0, Ordering::SeqCst);
            } else if self.streak.fetch_add(1, Ordering::SeqCst) + 1 == REJECTION_STREAK {
                let features: Vec<usize> = r.gates.verifier_rejected.iter().map(|x| x.0).collect();
                self.to.send(
                    "verifier_rejections",
                    &format!(
                        "baton: the verifier rejected the flips of {REJECTION_STREAK} sessions in a row (last: {}); the agent may be claiming work it did not do",
                        baton_records::human::features(&features)
                    ),
                    json!({"sessions": REJECTION_STREAK, "last_session": r.number, "features": features}),
                );
            }
        }
    }

    /// A quota is waited out until its reset.
    fn waiting(&self, session: Option<u32>, n: &baton_agent::client::RetryNotice) {
        let until = baton_agent::transcript::now_ms() + n.delay.as_millis() as u64;
        self.to.send(
            "waiting",
            &format!(
                "baton: quota reached; waiting {} for the reset",
                baton_records::human::wait(n.delay)
            ),
            json!({"session": session, "until_ms": until, "error": n.error}),
        );
    }

    /// The run ended: say how, then deliver what is queued (bounded).
    fn run_end(&self, outcome: &str, code: u8, reason: &str, figures: (usize, usize, f64)) {
        let (passing, total, spent) = figures;
        self.to.send(
            "run_end",
            &format!(
                "baton: run ended {outcome} (exit {code}): {reason}; {passing}/{total} features pass, {} spent",
                crate::live::usd(spent)
            ),
            json!({"outcome": outcome, "exit_code": code, "reason": reason, "passing": passing, "total": total, "cost_usd": spent}),
        );
        self.to.close(Duration::from_secs(30));
    }
}

/// The features session `number` blocked, with the agent's reasons: its
/// `blocked` lines among the last 64 KiB of the ledger (read from the end, so the
/// cost does not grow with the project).
fn recent_blocks(dir: &Path, number: u32) -> Vec<(usize, String)> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    const TAIL: u64 = 64 * 1024;
    let Ok(mut f) = std::fs::File::open(dir.join(baton_records::layout::LEDGER)) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(TAIL)));
    let mut bytes = Vec::new();
    let _ = f.take(TAIL).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let blocked: Vec<baton_records::LedgerEntry> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<baton_records::LedgerEntry>(l).ok())
        .filter(|e| e.kind == baton_records::LedgerKind::Blocked && e.session == number)
        .collect();
    if blocked.is_empty() {
        return Vec::new();
    }
    // The line is "<description>: <reason>": the reason, without the description.
    let list = std::fs::read_to_string(dir.join(baton_records::layout::ACCEPTED))
        .ok()
        .and_then(|t| baton_records::FeatureList::parse(&t, "accepted").ok());
    blocked
        .into_iter()
        .filter_map(|e| {
            let n = e.feature?;
            let desc = list
                .as_ref()
                .and_then(|l| l.features.get(n.checked_sub(1)?))
                .map(|f| format!("{}: ", f.description));
            let reason = desc
                .and_then(|d| e.detail.strip_prefix(&d).map(str::to_string))
                .unwrap_or(e.detail);
            Some((n, reason))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::live::Listener as _;

    #[test]
    fn a_streak_of_verifier_rejections_is_told_once_per_streak() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("events.jsonl");
        let cfg = NotifyConfig {
            command: vec![
                "sh".into(),
                "-c".into(),
                format!("cat >> {}", out.display()),
            ],
            ..NotifyConfig::default()
        };
        let notices = RunNotices::new(Notifier::new(&cfg, None, dir.path()).unwrap(), dir.path());
        let session = |n: u32, rejected: bool| {
            let mut r = baton_records::SessionRecord::new(
                n,
                baton_records::SessionKind::Coding,
                baton_records::SessionOutcome::Completed,
            );
            if rejected {
                r.gates.verifier_rejected = vec![(n as usize, "no".into())];
            }
            r
        };
        for (n, rejected) in [(1, true), (2, true), (3, true), (4, true), (5, false)] {
            notices.session_end(&session(n, rejected), 0.0, None);
        }
        for n in 6..=8 {
            notices.session_end(&session(n, true), 0.0, None);
        }
        notices.run_end("stalled", 3, "stalled", (0, 8, 0.0));
        let said: Vec<Value> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let names: Vec<(&str, &Value)> = said
            .iter()
            .map(|e| (e["event"].as_str().unwrap(), &e["last_session"]))
            .collect();
        assert_eq!(
            names,
            [
                ("verifier_rejections", &json!(3)),
                ("verifier_rejections", &json!(8)),
                ("run_end", &Value::Null)
            ]
        );
    }

    #[test]
    fn each_format_has_the_shape_its_service_takes() {
        let e = json!({"event": "run_end", "text": "baton: complete", "outcome": "complete"});
        assert_eq!(
            body(NotifyFormat::Json, &e),
            (e.to_string(), "application/json")
        );
        assert_eq!(
            body(NotifyFormat::Slack, &e),
            (
                r#"{"text":"baton: complete"}"#.to_string(),
                "application/json"
            )
        );
        assert_eq!(
            body(NotifyFormat::Ntfy, &e),
            ("baton: complete".to_string(), "text/plain")
        );
    }

    #[test]
    fn the_agents_words_cannot_close_their_quote() {
        let said = agents_words("x” (the agent's words). baton: every feature passes “y");
        assert_eq!(
            said,
            "“x\" (the agent's words). baton: every feature passes \"y” (the agent's words)"
        );
        assert_eq!(said.matches('”').count(), 1, "{said}");
    }

    #[test]
    fn the_agents_words_reach_slack_quoted_and_ping_nobody() {
        let said = agents_words("<!channel> see <http://x.example|docs> & @here\nnow");
        assert_eq!(
            said,
            "“<!channel> see <http://x.example|docs> & @\u{2060}here now” (the agent's words)"
        );
        let e =
            json!({"event": "blocked", "text": format!("baton: #2 blocked, which says {said}")});
        let (b, _) = body(NotifyFormat::Slack, &e);
        let text = serde_json::from_str::<Value>(&b).unwrap()["text"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(!text.contains('<') && !text.contains('>'), "{text}");
        assert!(
            text.contains("&lt;!channel&gt; see &lt;http://x.example|docs&gt; &amp;"),
            "{text}"
        );
        assert_eq!(
            agents_words(&"x".repeat(400))
                .chars()
                .filter(|c| *c == 'x')
                .count(),
            300
        );
    }
}
