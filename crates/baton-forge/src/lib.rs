//! baton's side of a forge: the project's open issues with a label, and whether a
//! user may write to the repository (only their issues are taken). Every call is
//! baton's, outside the sandbox, with a token the agent never gets. A forge that
//! says "too many requests" (429, or 403 with `Retry-After` or an exhausted rate
//! limit) is waited out, within a bound.
//!
//! One [`Forge`] trait; [`Rest`] implements it for GitHub's REST API and, with
//! another base URL and small mappings, Forgejo's and Gitea's.

use std::time::Duration;

use baton_config::{ForgeConfig, ForgeKind};
use serde_json::Value;

/// An open issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// Its number.
    pub number: u64,
    /// Its title.
    pub title: String,
    /// Its text (Markdown).
    pub body: String,
    /// Its page.
    pub url: String,
    /// Who opened it.
    pub author: String,
}

/// Who vouched for an issue's text by labelling it, and who changed the text
/// when: a label counts for the text as it was then, so a change after it by
/// anyone who may not write undoes it. Times are the forge's ISO 8601 UTC stamps
/// (`2026-01-02T03:04:05Z`), which order as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vouching {
    /// Each time the label was put on: by whom, when.
    pub labels: Vec<(String, String)>,
    /// Each change of the title or the text the forge tells of: by whom (empty
    /// when it does not say, as for a deleted account), when.
    pub changes: Vec<(String, String)>,
}

/// An open pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// Its number.
    pub number: u64,
    /// Its page.
    pub url: String,
}

/// A check of a commit, as the forge reports it (GitHub's check runs, Forgejo's
/// commit statuses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Its name.
    pub name: String,
    /// Where it stands.
    pub state: CheckState,
    /// What it said (its output's title, summary and text; a status's
    /// description), for the feature that fixes it.
    pub said: String,
    /// Its page.
    pub url: String,
}

/// Where a check stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckState {
    /// Queued or running.
    Pending,
    /// Passed (or skipped, or neutral).
    Passed,
    /// Failed, timed out, cancelled, or needs action.
    Failed,
}

/// A review thread of a pull request (GitHub's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    /// Its id (for replying and resolving).
    pub id: String,
    /// Whether it is resolved.
    pub resolved: bool,
    /// The file and line it is on, if any.
    pub place: String,
    /// Its comments, first to last: (author, body).
    pub comments: Vec<(String, String)>,
    /// The first comment's page.
    pub url: String,
}

/// What went wrong talking to the forge.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    /// The forge answered with an error.
    #[error("{url}: HTTP {status}: {message}")]
    Http {
        /// What was asked.
        url: String,
        /// The status.
        status: u16,
        /// What the forge said.
        message: String,
    },
    /// The forge could not be reached, or its answer read.
    #[error("{url}: {message}")]
    Transport {
        /// What was asked.
        url: String,
        /// Why.
        message: String,
    },
    /// The forge's rate limit lasts longer than baton waits.
    #[error("{url}: the forge's rate limit resets in {secs} s, longer than baton waits ({most} s)")]
    Limited {
        /// What was asked.
        url: String,
        /// When it resets.
        secs: u64,
        /// The longest wait.
        most: u64,
    },
}

/// A forge, as baton uses it.
pub trait Forge {
    /// The forge's name in records (`github`, `forgejo`).
    fn name(&self) -> &'static str;

    /// The open issues (not pull requests) with `label`, oldest first.
    fn open_issues(
        &self,
        label: &str,
    ) -> impl std::future::Future<Output = Result<Vec<Issue>, ForgeError>>;

    /// Whether `user` may write to the repository (admin, maintain or write).
    fn can_write(&self, user: &str) -> impl std::future::Future<Output = Result<bool, ForgeError>>;

    /// The repository's default branch (where pull requests go).
    fn default_branch(&self) -> impl std::future::Future<Output = Result<String, ForgeError>>;

    /// The open pull request from `branch`, if there is one.
    fn pull_request_of(
        &self,
        branch: &str,
    ) -> impl std::future::Future<Output = Result<Option<PullRequest>, ForgeError>>;

    /// Open a pull request from `branch` into `base`.
    fn open_pull_request(
        &self,
        branch: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> impl std::future::Future<Output = Result<PullRequest, ForgeError>>;

    /// Set the body of pull request `number`.
    fn update_pull_request(
        &self,
        number: u64,
        body: &str,
    ) -> impl std::future::Future<Output = Result<(), ForgeError>>;

    /// The checks of commit `sha`.
    fn checks(
        &self,
        sha: &str,
    ) -> impl std::future::Future<Output = Result<Vec<Check>, ForgeError>>;

    /// Merge pull request `number` at `sha` (refused by the forge if its head moved).
    fn merge(
        &self,
        number: u64,
        sha: &str,
    ) -> impl std::future::Future<Output = Result<(), ForgeError>>;

    /// The review threads of pull request `number` (empty where the forge has
    /// none to offer).
    fn review_threads(
        &self,
        number: u64,
    ) -> impl std::future::Future<Output = Result<Vec<Thread>, ForgeError>>;

    /// Reply `body` to thread `id`.
    fn reply(
        &self,
        id: &str,
        body: &str,
    ) -> impl std::future::Future<Output = Result<(), ForgeError>>;

    /// Resolve thread `id`.
    fn resolve(&self, id: &str) -> impl std::future::Future<Output = Result<(), ForgeError>>;

    /// Who put `label` on issue `number` and who changed its title or text
    /// since it was opened, each with when (GitHub's events and its body's last
    /// edit; empty where the forge does not say).
    fn vouching(
        &self,
        number: u64,
        label: &str,
    ) -> impl std::future::Future<Output = Result<Vouching, ForgeError>>;
}

/// GitHub's REST API, or Forgejo's and Gitea's.
pub struct Rest {
    http: reqwest::Client,
    kind: ForgeKind,
    api: String,
    repo: String,
    token: String,
    /// The longest wait for a rate limit; longer is an error.
    pub most_wait: Duration,
    /// Told of each wait, before it.
    pub on_wait: Box<dyn Fn(&str) + Send + Sync>,
}

/// Pages read at most of one list (100 issues a page on GitHub, 50 on Forgejo).
const MOST_PAGES: u32 = 50;
/// Tries of one request that the forge asks to wait.
const TRIES: u32 = 5;

impl Rest {
    /// The forge of `cfg`, with `token`.
    pub fn new(cfg: &ForgeConfig, token: String) -> Result<Self, ForgeError> {
        let api = cfg.api_url();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("baton/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ForgeError::Transport {
                url: api.clone(),
                message: e.to_string(),
            })?;
        Ok(Self {
            http,
            kind: cfg.kind,
            api,
            repo: cfg.repo.clone(),
            token,
            most_wait: Duration::from_secs(15 * 60),
            on_wait: Box::new(|_| {}),
        })
    }

    /// GET `path` (under the repository's API) as JSON, waiting out rate limits;
    /// `None` for a 404.
    async fn get(&self, path: &str) -> Result<Option<Value>, ForgeError> {
        self.request(reqwest::Method::GET, path, None).await
    }

    /// `method` `path` (under the repository's API) with a JSON `body`, as JSON,
    /// waiting out rate limits; `None` for a 404.
    async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Option<Value>, ForgeError> {
        let url = format!("{}/repos/{}{path}", self.api, self.repo);
        for _ in 0..TRIES {
            let auth = match self.kind {
                ForgeKind::Github => format!("Bearer {}", self.token),
                ForgeKind::Forgejo => format!("token {}", self.token),
            };
            let mut req = self
                .http
                .request(method.clone(), &url)
                .header("accept", "application/vnd.github+json");
            if let Some(b) = body {
                req = req
                    .header("content-type", "application/json")
                    .body(b.to_string());
            }
            if !self.token.is_empty() {
                req = req.header("authorization", auth);
            }
            let resp = req.send().await.map_err(|e| ForgeError::Transport {
                url: url.clone(),
                message: e.to_string(),
            })?;
            let status = resp.status().as_u16();
            if let Some(wait) = limited(status, resp.headers()) {
                if wait > self.most_wait {
                    return Err(ForgeError::Limited {
                        url,
                        secs: wait.as_secs(),
                        most: self.most_wait.as_secs(),
                    });
                }
                (self.on_wait)(&format!(
                    "forge: rate limited (HTTP {status}); waiting {} s as it asks",
                    wait.as_secs()
                ));
                tokio::time::sleep(wait).await;
                continue;
            }
            let text = resp.text().await.map_err(|e| ForgeError::Transport {
                url: url.clone(),
                message: e.to_string(),
            })?;
            if status == 404 {
                return Ok(None);
            }
            if !(200..300).contains(&status) {
                let said: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                let message = said["message"]
                    .as_str()
                    .map_or_else(|| text.chars().take(300).collect(), str::to_string);
                return Err(ForgeError::Http {
                    url,
                    status,
                    message,
                });
            }
            return serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| ForgeError::Transport {
                    url,
                    message: format!("the answer is not JSON: {e}"),
                });
        }
        Err(ForgeError::Transport {
            url,
            message: format!("still rate limited after {TRIES} tries"),
        })
    }
}

impl Rest {
    /// GitHub's GraphQL endpoint: `<api>/graphql`, or `<host>/api/graphql` for
    /// GitHub Enterprise's `<host>/api/v3`.
    fn graphql_url(&self) -> String {
        match self.api.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{}/graphql", self.api),
        }
    }

    /// One GraphQL `query` with `variables`: its `data`, or its errors as one.
    async fn graphql(&self, query: &str, variables: Value) -> Result<Value, ForgeError> {
        let url = self.graphql_url();
        let ask = serde_json::json!({"query": query, "variables": variables});
        let mut req = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .body(ask.to_string());
        if !self.token.is_empty() {
            req = req.header("authorization", format!("Bearer {}", self.token));
        }
        let resp = req.send().await.map_err(|e| ForgeError::Transport {
            url: url.clone(),
            message: e.to_string(),
        })?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(|e| ForgeError::Transport {
            url: url.clone(),
            message: e.to_string(),
        })?;
        let said: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let errors = said["errors"].as_array().filter(|e| !e.is_empty());
        if !(200..300).contains(&status) || errors.is_some() {
            let message = errors
                .and_then(|e| e[0]["message"].as_str())
                .or_else(|| said["message"].as_str())
                .map_or_else(|| text.chars().take(300).collect(), str::to_string);
            return Err(ForgeError::Http {
                url,
                status,
                message,
            });
        }
        Ok(said["data"].clone())
    }
}

/// How long the forge asks to wait: a 429, or a 403 with `Retry-After` or an
/// exhausted rate limit (`x-ratelimit-remaining: 0` until `x-ratelimit-reset`).
fn limited(status: u16, headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let num = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let retry_after = num("retry-after");
    let exhausted = num("x-ratelimit-remaining") == Some(0);
    if status != 429 && !(status == 403 && (retry_after.is_some() || exhausted)) {
        return None;
    }
    if let Some(secs) = retry_after {
        return Some(Duration::from_secs(secs));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let reset = num("x-ratelimit-reset").map_or(60, |r| r.saturating_sub(now));
    Some(Duration::from_secs(reset.max(1)))
}

impl Forge for Rest {
    fn name(&self) -> &'static str {
        match self.kind {
            ForgeKind::Github => "github",
            ForgeKind::Forgejo => "forgejo",
        }
    }

    async fn open_issues(&self, label: &str) -> Result<Vec<Issue>, ForgeError> {
        let label = label.replace(',', "%2C").replace(' ', "%20");
        let mut out = Vec::new();
        for page in 1..=MOST_PAGES {
            let (path, per) = match self.kind {
                ForgeKind::Github => (
                    format!(
                        "/issues?state=open&labels={label}&sort=created&direction=asc&per_page=100&page={page}"
                    ),
                    100,
                ),
                ForgeKind::Forgejo => (
                    format!("/issues?state=open&type=issues&labels={label}&limit=50&page={page}"),
                    50,
                ),
            };
            let items = self.get(&path).await?.unwrap_or(Value::Null);
            let items = items.as_array().cloned().unwrap_or_default();
            let n = items.len();
            out.extend(
                items
                    .iter()
                    .filter(|i| i.get("pull_request").is_none_or(Value::is_null))
                    .map(issue_of),
            );
            if n < per {
                break;
            }
        }
        out.sort_by_key(|i| i.number);
        Ok(out)
    }

    async fn can_write(&self, user: &str) -> Result<bool, ForgeError> {
        let Some(p) = self
            .get(&format!("/collaborators/{user}/permission"))
            .await?
        else {
            return Ok(false);
        };
        let writes = |v: &Value| matches!(v.as_str(), Some("admin" | "maintain" | "write"));
        Ok(writes(&p["permission"]) || writes(&p["role_name"]))
    }

    async fn default_branch(&self) -> Result<String, ForgeError> {
        let repo = self.get("").await?.unwrap_or(Value::Null);
        Ok(repo["default_branch"]
            .as_str()
            .unwrap_or("main")
            .to_string())
    }

    async fn pull_request_of(&self, branch: &str) -> Result<Option<PullRequest>, ForgeError> {
        let owner = self.repo.split('/').next().unwrap_or_default();
        let path = match self.kind {
            ForgeKind::Github => format!("/pulls?state=open&head={owner}:{branch}&per_page=100"),
            ForgeKind::Forgejo => "/pulls?state=open&limit=50".to_string(),
        };
        let prs = self.get(&path).await?.unwrap_or(Value::Null);
        Ok(prs
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["head"]["ref"] == branch)
            .map(pull_request_of))
    }

    async fn open_pull_request(
        &self,
        branch: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> Result<PullRequest, ForgeError> {
        let ask = serde_json::json!({"title": title, "head": branch, "base": base, "body": body});
        let made = self
            .request(reqwest::Method::POST, "/pulls", Some(&ask))
            .await?
            .unwrap_or(Value::Null);
        Ok(pull_request_of(&made))
    }

    async fn update_pull_request(&self, number: u64, body: &str) -> Result<(), ForgeError> {
        let ask = serde_json::json!({"body": body});
        self.request(
            reqwest::Method::PATCH,
            &format!("/pulls/{number}"),
            Some(&ask),
        )
        .await?;
        Ok(())
    }

    async fn checks(&self, sha: &str) -> Result<Vec<Check>, ForgeError> {
        match self.kind {
            ForgeKind::Github => {
                let runs = self
                    .get(&format!("/commits/{sha}/check-runs?per_page=100"))
                    .await?
                    .unwrap_or(Value::Null);
                Ok(runs["check_runs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| {
                        let state = match (r["status"].as_str(), r["conclusion"].as_str()) {
                            (Some("completed"), Some("success" | "skipped" | "neutral")) => {
                                CheckState::Passed
                            }
                            (Some("completed"), _) => CheckState::Failed,
                            _ => CheckState::Pending,
                        };
                        let out = &r["output"];
                        let said: Vec<&str> = [&out["title"], &out["summary"], &out["text"]]
                            .into_iter()
                            .filter_map(Value::as_str)
                            .filter(|t| !t.trim().is_empty())
                            .collect();
                        Check {
                            name: r["name"].as_str().unwrap_or_default().to_string(),
                            state,
                            said: said.join("\n"),
                            url: r["html_url"].as_str().unwrap_or_default().to_string(),
                        }
                    })
                    .collect())
            }
            ForgeKind::Forgejo => {
                let status = self
                    .get(&format!("/commits/{sha}/status"))
                    .await?
                    .unwrap_or(Value::Null);
                Ok(status["statuses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| Check {
                        name: s["context"].as_str().unwrap_or_default().to_string(),
                        state: match s["status"].as_str() {
                            Some("success" | "warning") => CheckState::Passed,
                            Some("pending") | None => CheckState::Pending,
                            Some(_) => CheckState::Failed,
                        },
                        said: s["description"].as_str().unwrap_or_default().to_string(),
                        url: s["target_url"].as_str().unwrap_or_default().to_string(),
                    })
                    .collect())
            }
        }
    }

    async fn merge(&self, number: u64, sha: &str) -> Result<(), ForgeError> {
        let (method, ask) = match self.kind {
            ForgeKind::Github => (reqwest::Method::PUT, serde_json::json!({"sha": sha})),
            ForgeKind::Forgejo => (
                reqwest::Method::POST,
                serde_json::json!({"Do": "merge", "head_commit_id": sha}),
            ),
        };
        self.request(method, &format!("/pulls/{number}/merge"), Some(&ask))
            .await?;
        Ok(())
    }

    async fn review_threads(&self, number: u64) -> Result<Vec<Thread>, ForgeError> {
        if self.kind != ForgeKind::Github {
            return Ok(Vec::new());
        }
        let (owner, name) = self.repo.split_once('/').unwrap_or((&self.repo, ""));
        let query = "query($owner: String!, $name: String!, $number: Int!) { repository(owner: $owner, name: $name) { pullRequest(number: $number) { reviewThreads(first: 100) { nodes { id isResolved path line comments(first: 50) { nodes { author { login } body url } } } } } } }";
        let vars = serde_json::json!({"owner": owner, "name": name, "number": number});
        let data = self.graphql(query, vars).await?;
        let nodes = &data["repository"]["pullRequest"]["reviewThreads"]["nodes"];
        Ok(nodes
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let comments: Vec<&Value> = t["comments"]["nodes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .collect();
                Thread {
                    id: t["id"].as_str().unwrap_or_default().to_string(),
                    resolved: t["isResolved"] == true,
                    place: match (t["path"].as_str(), t["line"].as_u64()) {
                        (Some(p), Some(l)) => format!("{p}:{l}"),
                        (Some(p), None) => p.to_string(),
                        _ => String::new(),
                    },
                    url: comments
                        .first()
                        .and_then(|c| c["url"].as_str())
                        .unwrap_or_default()
                        .to_string(),
                    comments: comments
                        .iter()
                        .map(|c| {
                            (
                                c["author"]["login"]
                                    .as_str()
                                    .unwrap_or_default()
                                    .to_string(),
                                c["body"].as_str().unwrap_or_default().to_string(),
                            )
                        })
                        .collect(),
                }
            })
            .collect())
    }

    async fn reply(&self, id: &str, body: &str) -> Result<(), ForgeError> {
        let reply = "mutation($id: ID!, $body: String!) { addPullRequestReviewThreadReply(input: {pullRequestReviewThreadId: $id, body: $body}) { comment { id } } }";
        self.graphql(reply, serde_json::json!({"id": id, "body": body}))
            .await?;
        Ok(())
    }

    async fn resolve(&self, id: &str) -> Result<(), ForgeError> {
        let resolve = "mutation($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { isResolved } } }";
        self.graphql(resolve, serde_json::json!({"id": id})).await?;
        Ok(())
    }

    async fn vouching(&self, number: u64, label: &str) -> Result<Vouching, ForgeError> {
        if self.kind != ForgeKind::Github {
            return Ok(Vouching::default());
        }
        let events = self
            .get(&format!("/issues/{number}/events?per_page=100"))
            .await?
            .unwrap_or(Value::Null);
        let who_when = |e: &Value| {
            (
                e["actor"]["login"].as_str().unwrap_or_default().to_string(),
                e["created_at"].as_str().unwrap_or_default().to_string(),
            )
        };
        let mut out = Vouching::default();
        for e in events.as_array().into_iter().flatten() {
            if e["event"] == "labeled" && e["label"]["name"] == label {
                out.labels.push(who_when(e));
            } else if e["event"] == "renamed" {
                out.changes.push(who_when(e));
            }
        }
        if out.labels.is_empty() {
            return Ok(out);
        }
        // A body's edits are not among the events: its last one is in GraphQL.
        let (owner, name) = self.repo.split_once('/').unwrap_or((&self.repo, ""));
        let query = "query($owner: String!, $name: String!, $number: Int!) { repository(owner: $owner, name: $name) { issue(number: $number) { lastEditedAt editor { login } } } }";
        let said = self
            .graphql(
                query,
                serde_json::json!({"owner": owner, "name": name, "number": number}),
            )
            .await?;
        let issue = &said["repository"]["issue"];
        if let Some(at) = issue["lastEditedAt"].as_str() {
            let by = issue["editor"]["login"].as_str().unwrap_or_default();
            out.changes.push((by.to_string(), at.to_string()));
        }
        Ok(out)
    }
}

fn pull_request_of(v: &Value) -> PullRequest {
    PullRequest {
        number: v["number"].as_u64().unwrap_or_default(),
        url: v["html_url"].as_str().unwrap_or_default().to_string(),
    }
}

fn issue_of(v: &Value) -> Issue {
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    Issue {
        number: v["number"].as_u64().unwrap_or_default(),
        title: s("title"),
        body: s("body"),
        url: s("html_url"),
        author: v["user"]["login"].as_str().unwrap_or_default().to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_read_from_retry_after_or_the_rate_limits_reset() {
        let mut h = reqwest::header::HeaderMap::new();
        assert_eq!(limited(403, &h), None, "a plain 403 is a refusal");
        assert_eq!(limited(404, &h), None);
        assert_eq!(limited(429, &h), Some(Duration::from_secs(60)));
        h.insert("retry-after", "7".parse().unwrap());
        assert_eq!(limited(403, &h), Some(Duration::from_secs(7)));
        assert_eq!(limited(200, &h), None);
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("x-ratelimit-remaining", "0".parse().unwrap());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        h.insert("x-ratelimit-reset", (now + 30).to_string().parse().unwrap());
        let w = limited(403, &h).unwrap();
        assert!(
            w <= Duration::from_secs(30) && w >= Duration::from_secs(28),
            "{w:?}"
        );
    }
}
