//! The stdio sidecar: tower-lsp-server's `LanguageServer`, the one routing table of custom
//! methods, and the mapping of library errors to JSON-RPC errors.
//!
//! Handlers parse their params, mutate synchronous state (the intent stash) before their first
//! `.await`, and run the blocking work of [`Engine`] in `spawn_blocking`, so that a panic there
//! becomes an error response instead of taking the process down.

pub mod documents;
pub mod frames;
pub mod stdio;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};
use tower_lsp_server::jsonrpc::{self, ErrorCode};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService, Server};

use crate::config::Config;
use crate::engine::Engine;
use crate::error::Error;
use crate::progress::Progress;
use crate::protocol::{self, Cx, Method, Notification, ProgressToken};

/// The server state shared by all handlers.
pub struct Backend {
    client: Client,
    /// Shared with [`serve`], which ends the open sessions when the input ends.
    engine: Arc<OnceLock<Arc<Engine>>>,
    pending_warnings: std::sync::Mutex<Vec<String>>,
    shut_down: Arc<AtomicBool>,
    /// Set while a background re-embedding run is going: one run at a time (two would split
    /// the notes between them, each reporting only its share).
    reembedding: Arc<AtomicBool>,
    /// Open SKILL.md files (an editor's).
    documents: documents::Documents,
}

/// Turns a library error into a JSON-RPC error with its code and `data.kind`.
pub fn to_rpc(e: Error) -> jsonrpc::Error {
    let code = if e.code() == -32602 { ErrorCode::InvalidParams } else { ErrorCode::ServerError(e.code()) };
    jsonrpc::Error { code, message: e.to_string().into(), data: Some(json!({ "kind": e.kind() })) }
}

fn internal(msg: String) -> jsonrpc::Error {
    jsonrpc::Error { code: ErrorCode::InternalError, message: msg.into(), data: Some(json!({ "kind": "internal" })) }
}

impl Backend {
    fn engine(&self) -> jsonrpc::Result<Arc<Engine>> {
        self.engine
            .get()
            .cloned()
            .ok_or_else(|| to_rpc(Error::storage("the store is not open: initialize failed or has not run")))
    }

    /// Every request of the method table: parse the params, run the prologue before the first
    /// `.await`, run the method off the async runtime (a panic becomes an internal error),
    /// forwarding its progress as `$/progress` when the host sent a `workDoneToken`.
    async fn handle<M: Method>(&self, params: Value) -> jsonrpc::Result<Value> {
        let mut p = protocol::parse::<M>(M::NAME, params).map_err(to_rpc)?;
        let engine = self.engine()?;
        // Synchronous: state a later message depends on is read before this future yields.
        M::prologue(&engine, &mut p);
        let (tx, pump) = self.progress_pump(M::progress(&p));
        let e2 = engine.clone();
        let out = tokio::task::spawn_blocking(move || {
            let send = move |pr: Progress| drop(tx.send(pr));
            M::run(&e2, p, &Cx { progress: &send, actor: crate::protocol::Actor::Agent })
        })
        .await;
        after_answer(&engine);
        if let Some(h) = pump {
            let _ = h.await;
        }
        self.flush_warnings(&engine).await;
        match out {
            Ok(Ok(r)) => serde_json::to_value(r).map_err(|e| internal(e.to_string())),
            Ok(Err(e)) => Err(to_rpc(e)),
            Err(join) => {
                tracing::error!("handler panicked: {join}");
                Err(jsonrpc::Error {
                    code: ErrorCode::InternalError,
                    message: "internal error (a bug in skillmem; see its log on stderr); the sidecar keeps serving"
                        .into(),
                    data: Some(json!({ "kind": "internal" })),
                })
            }
        }
    }

    /// Every notification of the method table: handled synchronously, before the handler
    /// first yields; invalid params are logged and dropped (a notification has no answer).
    async fn notify<N: Notification>(&self, params: Value) {
        match serde_json::from_value::<N::Params>(params) {
            Ok(p) => {
                if let Ok(e) = self.engine() {
                    N::handle(&e, p);
                }
            }
            Err(err) => tracing::warn!("{}: invalid params dropped: {err}", N::NAME),
        }
    }

    async fn flush_warnings(&self, engine: &Engine) {
        let pending = std::mem::take(&mut *self.pending_warnings.lock().unwrap_or_else(|e| e.into_inner()));
        for w in pending.into_iter().chain(engine.take_warnings()) {
            self.client.log_message(MessageType::WARNING, w).await;
        }
        self.reembed_in_background();
    }

    /// The one progress pump: forwards the progress of blocking work as `$/progress` under the
    /// client's `workDoneToken`; without a token the events are dropped. Returns the sender
    /// for the blocking side and the task to await once the work is done (it ends the
    /// progress with the last message).
    fn progress_pump(
        &self,
        token: Option<(ProgressToken, &'static str)>,
    ) -> (tokio::sync::mpsc::UnboundedSender<Progress>, Option<tokio::task::JoinHandle<()>>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
        let handle = token.map(|(t, title)| {
            let client = self.client.clone();
            let token = match t {
                ProgressToken::Number(n) => NumberOrString::Number(n),
                ProgressToken::String(s) => NumberOrString::String(s),
            };
            tokio::spawn(async move {
                let p = client.progress(token, title).with_percentage(0).begin().await;
                let mut last = 0;
                let mut message = None;
                while let Some(ev) = rx.recv().await {
                    last = ev.percent.unwrap_or(last).max(last).min(100);
                    p.report_with_message(ev.message.clone(), last).await;
                    message = Some(ev.message);
                }
                match message {
                    Some(m) => p.finish_with_message(m).await,
                    None => p.finish().await,
                }
            })
        });
        (tx, handle)
    }
}

impl Backend {
    /// Records an open SKILL.md's text (synchronously, before the first `.await`) and
    /// publishes its diagnostics, computed off the runtime; a result for a text that changed
    /// meanwhile is dropped (the newer change publishes its own).
    async fn check_document(&self, uri: Uri, text: String, version: i32) {
        if !self.documents.set(&uri, text.clone(), version) {
            return;
        }
        let folder = documents::folder_of(&uri);
        let Ok(diags) = tokio::task::spawn_blocking(move || documents::diagnose(&text, folder.as_deref())).await else {
            return;
        };
        if self.documents.is_current(&uri, version) {
            self.client.publish_diagnostics(uri, diags, Some(version)).await;
        }
    }
}

/// The pause between two background re-embedding batches: the host's own calls come first.
const REEMBED_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

impl Backend {
    /// Re-embeds the notes stamped with another model, after start, in the background
    /// (throttled; stopped by `shutdown`), with `window/logMessage` at its start and end and
    /// progress in the log. Recall finds those notes by their words meanwhile.
    fn reembed_in_background(&self) {
        let Some(engine) = self.engine.get().cloned() else { return };
        if self.reembedding.swap(true, Ordering::SeqCst) {
            return;
        }
        let client = self.client.clone();
        let stop = self.shut_down.clone();
        let running = self.reembedding.clone();
        tokio::spawn(async move {
            // Cleared however the task ends.
            struct Done(Arc<AtomicBool>);
            impl Drop for Done {
                fn drop(&mut self) {
                    self.0.store(false, Ordering::SeqCst);
                }
            }
            let _done = Done(running);
            let e = engine.clone();
            let count =
                tokio::task::spawn_blocking(move || Ok::<_, Error>((e.other_model_count()?, e.unmatched_count()?)));
            let (total, unmatched) = match count.await {
                Ok(Ok(n)) if n != (0, 0) => n,
                Ok(Err(err)) => {
                    tracing::warn!("cannot count the notes to re-embed: {err}");
                    return;
                }
                _ => return,
            };
            let pace = crate::engine::Pace { pause: REEMBED_PAUSE, stop: Some(stop) };
            if total > 0 {
                reembed(&engine, &client, total, pace.clone()).await;
            }
            // Then the pieces token matching reads, of the notes stored without them (those
            // re-embedded just now among them): quietly, as recall finds the same meanwhile.
            if unmatched > 0 || total > 0 {
                let e = engine.clone();
                let msg = match tokio::task::spawn_blocking(move || e.store_match_pieces(&pace)).await {
                    Ok(Ok(0)) | Err(_) => None,
                    Ok(Ok(n)) => Some(format!("skillmem: stored the word pieces of {n} notes for token matching")),
                    Ok(Err(e)) => Some(format!("skillmem: storing the word pieces for token matching stopped: {e}")),
                };
                if let Some(msg) = msg {
                    tracing::info!("{msg}");
                    client.log_message(MessageType::INFO, msg).await;
                }
            }
        });
    }
}

/// Re-embeds the `total` notes made by another model (or without its pieces), with
/// `window/logMessage` at the start and the end and progress in the log.
async fn reembed(engine: &Arc<Engine>, client: &Client, total: usize, pace: crate::engine::Pace) {
    let model = engine.embedder().map(|e| e.model_id().to_string()).unwrap_or_default();
    let msg = format!(
        "skillmem: re-embedding {total} notes (made by another model, or without its word pieces) with {model} in the background; until then they are found by their words, or ranked by the cosine"
    );
    tracing::info!("{msg}");
    client.log_message(MessageType::INFO, msg).await;
    let engine = engine.clone();
    let out = tokio::task::spawn_blocking(move || {
        let mut last_decile = 0;
        engine.reembed_other_models(&pace, &mut |p| {
            let decile = p.percent.unwrap_or(100) / 10;
            if decile != last_decile {
                last_decile = decile;
                tracing::info!(progress = %p.message, "background re-embedding");
            }
        })
    })
    .await;
    let msg = match out {
        Ok(Ok(n)) => format!("skillmem: re-embedded {n} notes with {model}"),
        Ok(Err(e)) => format!("skillmem: background re-embedding stopped: {e}"),
        Err(e) => format!("skillmem: background re-embedding failed: {e}"),
    };
    tracing::info!("{msg}");
    client.log_message(MessageType::INFO, msg).await;
}

/// The pause after a write before the background sync pushes it (more writes gather meanwhile).
const TEAM_DEBOUNCE: std::time::Duration = std::time::Duration::from_millis(300);
/// The background sync's periodic fallback, when no notification comes.
const TEAM_PERIOD: std::time::Duration = std::time::Duration::from_secs(60);
/// How often the listening connection checks that the sidecar still runs.
const TEAM_LISTEN_TICK: std::time::Duration = std::time::Duration::from_secs(5);

/// What a request left for after its answer, done off the answer's path, by the server and
/// the MCP door alike: recall counts that are due and the bm25 indexes recalls found missing
/// ([`Engine::after_answer`]); counts not due yet are written once recalls pause
/// ([`crate::engine::RECALL_COUNTS_EVERY`]).
pub(crate) fn after_answer(engine: &Arc<Engine>) {
    if engine.after_answer_pending() {
        let e = engine.clone();
        tokio::task::spawn_blocking(move || e.after_answer());
    }
    if engine.schedule_recall_counts() {
        let e = engine.clone();
        tokio::spawn(async move {
            tokio::time::sleep(crate::engine::RECALL_COUNTS_EVERY).await;
            let _ = tokio::task::spawn_blocking(move || e.write_scheduled_recall_counts()).await;
        });
    }
}

/// How often the sessions of this process are looked at for [`crate::memory::calls::IDLE_END`].
const IDLE_TICK: std::time::Duration = std::time::Duration::from_secs(60);

impl Backend {
    /// Ends the sessions with no call for [`crate::memory::calls::IDLE_END`] (their accounting
    /// runs), looking once a minute until shutdown.
    fn end_idle_sessions_in_background(&self) {
        let Some(engine) = self.engine.get().cloned() else { return };
        let stop = self.shut_down.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(IDLE_TICK).await;
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let e = engine.clone();
                if let Ok(n @ 1..) = tokio::task::spawn_blocking(move || e.end_idle_sessions()).await {
                    tracing::debug!("{n} idle sessions ended");
                }
            }
        });
    }

    /// Builds the small skills' in-memory bm25 rung on a thread of its own after start (see
    /// [`Engine::build_lexicons`]), so that no skill's first recall pays for its index.
    fn warm_lexicons_in_background(&self) {
        let Some(engine) = self.engine.get().cloned() else { return };
        let _ = std::thread::Builder::new().name("skillmem-lexicons".into()).spawn(move || {
            let t = std::time::Instant::now();
            match engine.build_lexicons(true) {
                Ok(n) => tracing::debug!("recall: {n} skills' bm25 indexes built in {:?}", t.elapsed()),
                Err(e) => tracing::debug!(
                    "recall: skills' bm25 indexes not built ahead ({e}); each is built at its first recall"
                ),
            }
        });
    }

    /// Syncs with the team server in the background when `[team]` is configured: at start,
    /// after writes (debounced), when the server notifies the team's channel (another machine
    /// pushed), and every minute as a fallback. A failing server is retried with backoff and
    /// logged; recall and writes never wait for it.
    fn team_sync_in_background(&self) {
        let Some(engine) = self.engine.get().cloned() else { return };
        let Some(cfg) = engine.team_config().cloned() else { return };
        let stop = self.shut_down.clone();
        let wake = Arc::new(tokio::sync::Notify::new());
        let w = wake.clone();
        engine.on_team_write(Box::new(move || w.notify_one()));
        // LISTEN runs on its own blocking connection, in its own thread.
        let (w, s) = (wake.clone(), stop.clone());
        let _ = std::thread::Builder::new().name("skillmem-team-listen".into()).spawn(move || {
            let mut backoff = crate::team::backoff::Backoff::default();
            while !s.load(Ordering::SeqCst) {
                match crate::team::server::Listener::connect(&cfg) {
                    Ok(mut l) => {
                        tracing::debug!("team listen: listening");
                        backoff.reset();
                        // What the team pushed before this connection listened is pulled now.
                        w.notify_one();
                        loop {
                            if s.load(Ordering::SeqCst) {
                                return;
                            }
                            match l.wait(TEAM_LISTEN_TICK) {
                                Ok(true) => {
                                    tracing::debug!("team listen: the team pushed");
                                    w.notify_one()
                                }
                                Ok(false) => {}
                                Err(e) => {
                                    tracing::debug!("team listen: {e}");
                                    break;
                                }
                            }
                        }
                    }
                    Err(e) => {
                        let d = backoff.next(crate::team::backoff::clock_jitter());
                        tracing::debug!("team listen: {e}; again in {d:?}");
                        let until = std::time::Instant::now() + d;
                        while std::time::Instant::now() < until && !s.load(Ordering::SeqCst) {
                            std::thread::sleep(TEAM_LISTEN_TICK.min(d));
                        }
                    }
                }
            }
        });
        let client = self.client.clone();
        tokio::spawn(async move {
            let mut backoff = crate::team::backoff::Backoff::default();
            let mut now = true;
            while !stop.load(Ordering::SeqCst) {
                if !now {
                    tokio::select! {
                        _ = wake.notified() => {}
                        _ = tokio::time::sleep(TEAM_PERIOD) => {}
                    }
                    tokio::time::sleep(TEAM_DEBOUNCE).await;
                }
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let e = engine.clone();
                let out = tokio::task::spawn_blocking(move || e.team_sync()).await;
                now = false;
                match out {
                    Ok(Ok(r)) => {
                        if backoff.failures() > 0 {
                            let msg = format!("skillmem: team sync with {} works again", r.team);
                            tracing::info!("{msg}");
                            client.log_message(MessageType::INFO, msg).await;
                        }
                        backoff.reset();
                        if r.pushed + r.inserted + r.removed > 0 || !r.held.is_empty() {
                            tracing::info!(
                                pushed = r.pushed,
                                pulled = r.pulled,
                                inserted = r.inserted,
                                updated = r.updated,
                                removed = r.removed,
                                held = r.held.len(),
                                "team sync"
                            );
                        }
                        for h in &r.held {
                            let msg =
                                format!("skillmem: note {} ({}) not shared with the team: {}", h.id, h.skill, h.reason);
                            tracing::warn!("{msg}");
                            client.log_message(MessageType::WARNING, msg).await;
                        }
                    }
                    failed => {
                        let why = match failed {
                            Ok(Err(e)) => e.to_string(),
                            Err(e) => format!("panicked: {e}"),
                            Ok(Ok(_)) => unreachable!(),
                        };
                        let d = backoff.next(crate::team::backoff::clock_jitter());
                        let msg = format!("skillmem: team sync failed: {why}; retrying in {} s", d.as_secs());
                        tracing::warn!("{msg}");
                        if backoff.failures() == 1 {
                            client.log_message(MessageType::WARNING, msg).await;
                        }
                        tokio::time::sleep(d).await;
                        now = true;
                    }
                }
            }
        });
    }
}

fn workspace_of(p: &InitializeParams) -> Option<PathBuf> {
    #[allow(deprecated)]
    let root = p.root_uri.as_ref();
    root.and_then(|u| u.to_file_path().map(|p| p.into_owned())).or_else(|| {
        p.workspace_folders.as_ref().and_then(|f| f.first()).and_then(|f| f.uri.to_file_path().map(|p| p.into_owned()))
    })
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> jsonrpc::Result<InitializeResult> {
        let workspace = workspace_of(&params);
        let opts = params.initialization_options.clone();
        let ws = workspace.clone();
        // Notes are recorded as written from the client that names itself (`clientInfo`).
        let client = params.client_info.as_ref().map(|c| c.name.clone()).unwrap_or_else(|| "lsp".into());
        let opened = tokio::task::spawn_blocking(move || -> crate::Result<(Engine, Vec<String>)> {
            let resolved = Config::resolve(ws.as_deref(), opts.as_ref())?;
            let mut resolved = resolved;
            resolved.config.default_host(&client);
            let engine = Engine::open(resolved.config.clone(), ws)?;
            if std::env::var("SKILLMEM_WARM_BLOCKING").is_ok_and(|v| v == "1") {
                // Benchmarks: the first load finds what a server has warmed a second after
                // its start (a host's first skill load comes later than that).
                engine.build_lexicons(true)?;
            }
            if let crate::config::EmbeddingConfig::Model { path } = &resolved.config.embedding {
                if engine.embedder().is_some_and(|e| e.model_id().starts_with("static:")) {
                    // Fell back: say why (a failed load fails again quickly).
                    let why = crate::embed::load_model(path).err().unwrap_or_default();
                    resolved.warnings.push(format!(
                        "the configured embedding model is not available: {why}; recall uses the built-in static embedder meanwhile: run `skillmem model fetch` and set the embedding.path it prints (`skillmem model status` shows what is configured)"
                    ));
                }
            }
            Ok((engine, resolved.warnings))
        })
        .await
        .map_err(|e| internal(e.to_string()))?;
        let (engine, warnings) = opened.map_err(to_rpc)?;
        let cap = protocol::SkillmemCapability {
            protocol_version: protocol::PROTOCOL_VERSION,
            methods: protocol::METHODS.iter().map(|m| m.to_string()).collect(),
            project_id: engine.project_id().to_string(),
            data_dir: engine.config().data_dir.display().to_string(),
            embedding_model: engine.embedder().map(|e| e.model_id().to_string()),
        };
        tracing::info!(project = engine.project_id(), data_dir = %engine.config().data_dir.display(), "initialized");
        let _ = self.engine.set(Arc::new(engine));
        self.pending_warnings.lock().unwrap_or_else(|e| e.into_inner()).extend(warnings);
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                experimental: Some(json!({ "skillmem": cap })),
                // SKILL.md language features, for editors (server/documents.rs).
                text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                completion_provider: Some(CompletionOptions::default()),
                code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
                ..Default::default()
            },
            server_info: Some(ServerInfo { name: "skillmem".into(), version: Some(env!("CARGO_PKG_VERSION").into()) }),
            ..Default::default()
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        let warnings = std::mem::take(&mut *self.pending_warnings.lock().unwrap_or_else(|e| e.into_inner()));
        for w in warnings {
            tracing::warn!("{w}");
            self.client.log_message(MessageType::WARNING, w).await;
        }
        self.reembed_in_background();
        self.team_sync_in_background();
        self.warm_lexicons_in_background();
        self.end_idle_sessions_in_background();
    }

    async fn did_open(&self, p: DidOpenTextDocumentParams) {
        let d = p.text_document;
        self.check_document(d.uri, d.text, d.version).await;
    }

    async fn did_change(&self, p: DidChangeTextDocumentParams) {
        // Full sync: the last change holds the whole text.
        if let Some(c) = p.content_changes.into_iter().last() {
            self.check_document(p.text_document.uri, c.text, p.text_document.version).await;
        }
    }

    async fn did_close(&self, p: DidCloseTextDocumentParams) {
        if documents::is_skill_md(&p.text_document.uri) {
            self.documents.close(&p.text_document.uri);
            self.client.publish_diagnostics(p.text_document.uri, vec![], None).await;
        }
    }

    async fn hover(&self, p: HoverParams) -> jsonrpc::Result<Option<Hover>> {
        let tp = p.text_document_position_params;
        let Some((text, _)) = self.documents.get(&tp.text_document.uri) else { return Ok(None) };
        let engine = self.engine()?;
        let uri = tp.text_document.uri;
        tokio::task::spawn_blocking(move || documents::hover(&engine, &uri, &text, tp.position))
            .await
            .map_err(|e| internal(e.to_string()))
    }

    async fn completion(&self, p: CompletionParams) -> jsonrpc::Result<Option<CompletionResponse>> {
        let tp = p.text_document_position;
        let Some((text, _)) = self.documents.get(&tp.text_document.uri) else { return Ok(None) };
        let items = documents::complete(&text, tp.position);
        Ok((!items.is_empty()).then_some(CompletionResponse::Array(items)))
    }

    async fn code_action(&self, p: CodeActionParams) -> jsonrpc::Result<Option<CodeActionResponse>> {
        let Some((text, _)) = self.documents.get(&p.text_document.uri) else { return Ok(None) };
        let actions = documents::code_actions(&p.text_document.uri, &text, &p.context.diagnostics);
        Ok((!actions.is_empty()).then_some(actions))
    }

    async fn shutdown(&self) -> jsonrpc::Result<()> {
        self.shut_down.store(true, Ordering::SeqCst);
        if let Some(engine) = self.engine.get().cloned() {
            let _ = tokio::task::spawn_blocking(move || {
                // The sessions of this process end with it.
                engine.end_open_sessions();
                engine.flush();
            })
            .await;
        }
        Ok(())
    }
}

macro_rules! routes {
    ($builder:expr; requests: [$($m:ty),*], notifications: [$($n:ty),*]) => {
        $builder
            $(.custom_method(<$m as Method>::NAME, Backend::handle::<$m>))*
            $(.custom_method(<$n as Notification>::NAME, Backend::notify::<$n>))*
    };
}

macro_rules! route_all {
    (requests: [$($m:ty),*], notifications: [$($n:ty),*]) => {
        |builder: tower_lsp_server::LspServiceBuilder<Backend>| routes!(builder; requests: [$($m),*], notifications: [$($n),*])
    };
}

/// Builds the service with its routing table, derived from the protocol's method table.
pub fn service(shut_down: Arc<AtomicBool>) -> (LspService<Backend>, tower_lsp_server::ClientSocket) {
    service_with(shut_down, Default::default())
}

/// [`service`], its engine (once `initialize` opened it) shared with the caller.
fn service_with(
    shut_down: Arc<AtomicBool>,
    engine: Arc<OnceLock<Arc<Engine>>>,
) -> (LspService<Backend>, tower_lsp_server::ClientSocket) {
    let builder = LspService::build(|client| Backend {
        client,
        engine,
        pending_warnings: Default::default(),
        shut_down,
        reembedding: Default::default(),
        documents: Default::default(),
    });
    let route = protocol::for_each_method!(route_all);
    route(builder).finish()
}

/// A host that ends the sidecar with SIGTERM (instead of `shutdown`, or closing the pipe)
/// gets what the end of input does: the open sessions end (their use judged) and the store is
/// flushed (the index written, a build's progress saved); then the process exits with 1.
#[cfg(unix)]
async fn end_on_sigterm(engine: Arc<OnceLock<Arc<Engine>>>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else { return };
    if term.recv().await.is_none() {
        return;
    }
    tracing::info!("SIGTERM: ending the open sessions and flushing the store");
    if let Some(engine) = engine.get().cloned() {
        let _ = tokio::task::spawn_blocking(move || {
            engine.end_open_sessions();
            engine.flush();
        })
        .await;
    }
    std::process::exit(1);
}

/// Serves frames on stdin/stdout until `exit` or EOF. Returns the process exit code: 0 after
/// `shutdown`, 1 otherwise.
pub async fn serve() -> i32 {
    let shut_down = Arc::new(AtomicBool::new(false));
    let engine: Arc<OnceLock<Arc<Engine>>> = Default::default();
    let (service, socket) = service_with(shut_down.clone(), engine.clone());
    let host_in = stdio::host_in();
    let stdout = match stdio::host_out() {
        Ok(out) => out,
        Err(e) => {
            tracing::error!("cannot set up the frame channel: {e}");
            return 1;
        }
    };
    // The server reads and writes in-memory pipes; the frame guard stands between them and the
    // host, so that no malformed frame can reach (and end) tower-lsp-server's codec.
    let (guard_to_server, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, server_to_guard) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(Server::new(server_in, server_out, socket).serve(service));
    #[cfg(unix)]
    tokio::spawn(end_on_sigterm(engine.clone()));
    frames::guard(host_in, stdout, guard_to_server, server_to_guard).await;
    let _ = server.await;
    // The input ended (or `exit`): the sessions still open in this process end with it (after
    // `shutdown` none are), and a host that closed the pipe without `shutdown` still gets
    // the index written (or a build's progress saved) as `shutdown` does.
    if let Some(engine) = engine.get().cloned() {
        let flushed = shut_down.load(Ordering::SeqCst);
        let _ = tokio::task::spawn_blocking(move || {
            engine.end_open_sessions();
            if !flushed {
                engine.flush();
            }
        })
        .await;
    }
    if shut_down.load(Ordering::SeqCst) {
        0
    } else {
        1
    }
}
