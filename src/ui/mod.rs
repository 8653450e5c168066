//! `skillmem ui`: a local web dashboard over one data directory. A door, like `server/` and
//! `hosts/`: it calls the protocol's methods (`Method::run`) and the engine's curation calls,
//! never the store. Core folders never import it.
//!
//! Security model: it listens on 127.0.0.1 only, on a free port by default. Every request
//! needs the random token printed with the URL (`?token=` once, then a `SameSite=Strict`,
//! `HttpOnly` cookie); a `Host` other than `127.0.0.1:PORT` / `localhost:PORT` is refused
//! (DNS rebinding); state changes are `POST` with the token in the `X-Skillmem-Token` header
//! (a cookie alone does not do: no cross-site form can set a header); no CORS header is ever
//! sent. All assets are embedded in the binary.

mod pages;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Path as UrlPath, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method as HttpMethod, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::engine::Engine;
use crate::error::Error;
use crate::progress::Progress;
use crate::protocol::curate::{Merge, Move, Notes, Preview, Review, ReviewDecide};
use crate::protocol::memory::{Edit, Forget, Pin, Purge, Restore, Stats};
use crate::protocol::skills::{Install, InstallParams, List, Remove, Seed, Update, UpdateParams};
use crate::protocol::{Cx, Method};

/// The cookie that carries the token after the first visit.
pub const COOKIE: &str = "skillmem_ui";
/// The header that carries the token on state-changing requests.
pub const TOKEN_HEADER: &str = "x-skillmem-token";

/// A long operation (install, update) the page follows.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub done: bool,
    pub messages: Vec<String>,
    pub percent: Option<u32>,
    pub result: Option<Value>,
    pub error: Option<String>,
}

/// What every handler shares.
pub struct Ui {
    pub engine: Arc<Engine>,
    pub token: String,
    pub port: u16,
    jobs: Mutex<HashMap<u64, Job>>,
    next_job: AtomicU64,
}

type Shared = Arc<Ui>;

/// A fresh random token (128 bits from the OS, hex).
pub fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// A bound dashboard, not yet serving: its URL (with the token) is known.
pub struct Bound {
    listener: tokio::net::TcpListener,
    ui: Shared,
}

impl Bound {
    /// The URL to open: `http://127.0.0.1:PORT/?token=TOKEN`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/?token={}", self.ui.port, self.ui.token)
    }

    pub fn port(&self) -> u16 {
        self.ui.port
    }

    pub fn token(&self) -> &str {
        &self.ui.token
    }

    /// Serves until the process ends.
    pub async fn serve(self) -> std::io::Result<()> {
        let app = router(self.ui);
        axum::serve(self.listener, app).await
    }
}

/// Binds 127.0.0.1:`port` (0: a free port) for `engine`.
pub async fn bind(engine: Arc<Engine>, port: u16) -> std::io::Result<Bound> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    let port = listener.local_addr()?.port();
    let ui = Arc::new(Ui {
        engine,
        token: new_token()?,
        port,
        jobs: Mutex::new(HashMap::new()),
        next_job: AtomicU64::new(1),
    });
    Ok(Bound { listener, ui })
}

fn router(ui: Shared) -> Router {
    Router::new()
        .route("/", get(pages::overview))
        .route("/skill/{name}", get(pages::skill))
        .route("/note/{id}", get(pages::note_versions))
        .route("/preview", get(pages::preview))
        .route("/skills", get(pages::session_skills))
        .route("/review", get(pages::review))
        .route("/session", get(pages::session))
        .route("/assets/app.js", get(|| async { asset("text/javascript; charset=utf-8", pages::APP_JS) }))
        .route("/assets/style.css", get(|| async { asset("text/css; charset=utf-8", pages::STYLE_CSS) }))
        .route("/api/stats", get(api_stats))
        .route("/api/notes", get(api_notes))
        .route("/api/preview", get(api_preview))
        .route("/api/duplicates", get(api_duplicates))
        .route("/api/skills", get(api_skills))
        .route("/api/jobs/{id}", get(api_job))
        .route("/api/pin", post(call::<Pin>))
        .route("/api/edit", post(call::<Edit>))
        .route("/api/forget", post(call::<Forget>))
        .route("/api/restore", post(call::<Restore>))
        .route("/api/purge", post(call::<Purge>))
        .route("/api/move", post(call::<Move>))
        .route("/api/merge", post(call::<Merge>))
        .route("/api/review", get(api_review))
        .route("/api/reviewDecide", post(call::<ReviewDecide>))
        .route("/api/skills/install", post(api_install))
        .route("/api/skills/update", post(api_update))
        .route("/api/skills/remove", post(call::<Remove>))
        .route("/api/skills/seed", post(call::<Seed>))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found").into_response() })
        .layer(middleware::from_fn_with_state(ui.clone(), guard))
        .with_state(ui)
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

fn same(a: &str, b: &str) -> bool {
    // Constant time in the length of the token.
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn cookie_token(h: &HeaderMap) -> Option<String> {
    h.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == COOKIE).then(|| v.to_string())
    })
}

fn query_token(q: Option<&str>) -> Option<String> {
    q?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == "token").then(|| v.to_string())
    })
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{why}\n")).into_response()
}

/// The security checks every request passes before any handler.
async fn guard(State(ui): State<Shared>, req: Request, next: Next) -> Response {
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if host != format!("127.0.0.1:{}", ui.port) && host != format!("localhost:{}", ui.port) {
        return refuse(
            StatusCode::FORBIDDEN,
            "refused: the Host header must be 127.0.0.1:PORT or localhost:PORT (open the URL skillmem ui printed)",
        );
    }
    let method = req.method().clone();
    if method != HttpMethod::GET && method != HttpMethod::HEAD && method != HttpMethod::POST {
        return refuse(StatusCode::METHOD_NOT_ALLOWED, "only GET and POST are served");
    }
    let from_cookie = cookie_token(req.headers());
    let from_header = req.headers().get(TOKEN_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    if method == HttpMethod::POST {
        // State changes: the header, always (a cookie is sent by any page that posts here).
        if !from_header.as_deref().is_some_and(|t| same(t, &ui.token)) {
            return refuse(StatusCode::FORBIDDEN, "refused: a POST needs the token in the X-Skillmem-Token header");
        }
        return secure(next.run(req).await);
    }
    let from_query = query_token(req.uri().query());
    if let Some(t) = &from_query {
        if !same(t, &ui.token) {
            return refuse(StatusCode::UNAUTHORIZED, "wrong token: open the URL skillmem ui printed");
        }
        // The first visit: keep the token in a cookie and drop it from the address bar.
        let rest: Vec<&str> = req
            .uri()
            .query()
            .unwrap_or("")
            .split('&')
            .filter(|kv| !kv.starts_with("token=") && !kv.is_empty())
            .collect();
        let to = if rest.is_empty() {
            req.uri().path().to_string()
        } else {
            format!("{}?{}", req.uri().path(), rest.join("&"))
        };
        let cookie = format!("{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict", ui.token);
        let mut r = Response::builder()
            .status(StatusCode::SEE_OTHER)
            .header(header::LOCATION, to)
            .body(Body::empty())
            .unwrap_or_default();
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
        return secure(r);
    }
    let ok = from_cookie.as_deref().is_some_and(|t| same(t, &ui.token))
        || from_header.as_deref().is_some_and(|t| same(t, &ui.token));
    if !ok {
        return refuse(StatusCode::UNAUTHORIZED, "no token: open the URL skillmem ui printed (it ends in ?token=...)");
    }
    secure(next.run(req).await)
}

fn secure(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:"),
    );
    r
}

// ---- the JSON API: each route is a protocol method's `run` --------------------------------

/// An error as the API answers it: a status and `{ "error": message, "kind": ... }`.
pub struct ApiError(Error);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self.0 {
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::Storage(_) => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        };
        (status, Json(json!({ "error": self.0.to_string(), "kind": self.0.kind() }))).into_response()
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

/// Runs blocking engine work off the runtime; a panic becomes an error.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::error::Result<T> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(ApiError),
        Err(e) => Err(ApiError(Error::storage(format!("the operation failed: {e}")))),
    }
}

/// `POST /api/<method>`: the JSON body is the method's params; the answer its result.
async fn call<M: Method>(State(ui): State<Shared>, body: axum::body::Bytes) -> Result<Json<M::Result>, ApiError> {
    let v: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).map_err(|e| Error::invalid(format!("the body is not JSON: {e}")))?
    };
    let p = crate::protocol::parse::<M>(M::NAME, v)?;
    let engine = ui.engine.clone();
    Ok(Json(blocking(move || M::run(&engine, p, &Cx::quiet_as(crate::protocol::Actor::Person))).await?))
}

async fn run_get<M: Method>(ui: &Shared, p: M::Params) -> Result<Json<M::Result>, ApiError> {
    let engine = ui.engine.clone();
    Ok(Json(blocking(move || M::run(&engine, p, &Cx::quiet_as(crate::protocol::Actor::Person))).await?))
}

/// Query string → a method's params (numbers and booleans read as such).
fn params_of<M: Method>(q: &HashMap<String, String>) -> Result<M::Params, ApiError> {
    let mut o = serde_json::Map::new();
    for (k, v) in q {
        if v.is_empty() {
            continue;
        }
        let val = match v.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => match v.parse::<i64>() {
                Ok(n) if !["skill", "search", "intent", "projectId", "sessionId"].contains(&k.as_str()) => json!(n),
                _ => Value::String(v.clone()),
            },
        };
        o.insert(k.clone(), val);
    }
    Ok(crate::protocol::parse::<M>(M::NAME, Value::Object(o))?)
}

async fn api_stats(State(ui): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Result<Response, ApiError> {
    Ok(run_get::<Stats>(&ui, params_of::<Stats>(&q)?).await?.into_response())
}

async fn api_notes(State(ui): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Result<Response, ApiError> {
    Ok(run_get::<Notes>(&ui, params_of::<Notes>(&q)?).await?.into_response())
}

async fn api_review(State(ui): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Result<Response, ApiError> {
    Ok(run_get::<Review>(&ui, params_of::<Review>(&q)?).await?.into_response())
}

async fn api_preview(State(ui): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Result<Response, ApiError> {
    Ok(run_get::<Preview>(&ui, params_of::<Preview>(&q)?).await?.into_response())
}

async fn api_skills(State(ui): State<Shared>) -> Result<Response, ApiError> {
    Ok(run_get::<List>(&ui, crate::protocol::skills::ListParams {}).await?.into_response())
}

#[derive(Deserialize)]
struct SkillQ {
    skill: String,
}

async fn api_duplicates(State(ui): State<Shared>, Query(q): Query<SkillQ>) -> Result<Response, ApiError> {
    let engine = ui.engine.clone();
    let (pairs, warnings) = blocking(move || engine.duplicates_of(&q.skill)).await?;
    Ok(Json(json!({ "pairs": pairs, "warnings": warnings })).into_response())
}

async fn api_job(State(ui): State<Shared>, UrlPath(id): UrlPath<u64>) -> Response {
    match ui.jobs.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
        Some(j) => Json(j.clone()).into_response(),
        None => ApiError(Error::NotFound(format!("no job {id}"))).into_response(),
    }
}

/// Starts a long method in the background; the page polls `/api/jobs/<id>`.
fn start_job<M: Method>(ui: &Shared, p: M::Params) -> Json<Value> {
    let id = ui.next_job.fetch_add(1, Ordering::Relaxed);
    ui.jobs.lock().unwrap_or_else(|e| e.into_inner()).insert(id, Job::default());
    let ui2 = ui.clone();
    tokio::task::spawn_blocking(move || {
        let report = |p: Progress| {
            if let Some(j) = ui2.jobs.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&id) {
                j.messages.push(p.message);
                j.percent = p.percent.or(j.percent);
            }
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            M::run(&ui2.engine, p, &Cx { progress: &report, actor: crate::protocol::Actor::Person })
        }));
        let mut jobs = ui2.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(j) = jobs.get_mut(&id) {
            j.done = true;
            match r {
                Ok(Ok(v)) => j.result = serde_json::to_value(v).ok(),
                Ok(Err(e)) => j.error = Some(e.to_string()),
                Err(_) => j.error = Some("the operation panicked; see the log".into()),
            }
        }
    });
    Json(json!({ "job": id }))
}

async fn api_install(State(ui): State<Shared>, body: axum::body::Bytes) -> Result<Json<Value>, ApiError> {
    let v: Value = serde_json::from_slice(&body).map_err(|e| Error::invalid(format!("the body is not JSON: {e}")))?;
    let p: InstallParams = crate::protocol::parse::<Install>(Install::NAME, v)?;
    Ok(start_job::<Install>(&ui, p))
}

async fn api_update(State(ui): State<Shared>, body: axum::body::Bytes) -> Result<Json<Value>, ApiError> {
    let v: Value = serde_json::from_slice(&body).map_err(|e| Error::invalid(format!("the body is not JSON: {e}")))?;
    let p: UpdateParams = crate::protocol::parse::<Update>(Update::NAME, v)?;
    Ok(start_job::<Update>(&ui, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_read_from_cookies_and_queries() {
        let cookies: &[(&str, Option<&str>)] = &[
            ("skillmem_ui=abc", Some("abc")),
            ("a=1; skillmem_ui=abc; b=2", Some("abc")),
            ("skillmem_uix=abc", None),
            ("xskillmem_ui=abc", None),
            ("", None),
        ];
        for (c, want) in cookies {
            let mut h = HeaderMap::new();
            h.insert(header::COOKIE, HeaderValue::from_str(c).unwrap());
            assert_eq!(cookie_token(&h).as_deref(), *want, "{c:?}");
        }
        let queries: &[(Option<&str>, Option<&str>)] = &[
            (Some("token=abc"), Some("abc")),
            (Some("kind=fix&token=abc"), Some("abc")),
            (Some("xtoken=abc"), None),
            (Some("token"), None),
            (None, None),
        ];
        for (q, want) in queries {
            assert_eq!(query_token(*q).as_deref(), *want, "{q:?}");
        }
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
        let t = new_token().unwrap();
        assert_eq!(t.len(), 32);
        assert_ne!(t, new_token().unwrap());
    }
}
