//! The stdio sidecar: tower-lsp-server's `LanguageServer`, the one routing table of custom
//! methods, and the mapping of library errors to JSON-RPC errors.
//!
//! Handlers parse their params, mutate synchronous state (the intent stash) before their first
//! `.await`, and run the blocking work of [`Engine`] in `spawn_blocking`, so that a panic there
//! becomes an error response instead of taking the process down.

pub mod frames;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use tower_lsp_server::jsonrpc::{self, ErrorCode};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService, Server};

use crate::config::Config;
use crate::engine::Engine;
use crate::error::Error;
use crate::protocol::historian::*;
use crate::protocol::{self, memory::*};

/// The server state shared by all handlers.
pub struct Backend {
    client: Client,
    engine: OnceLock<Arc<Engine>>,
    pending_warnings: std::sync::Mutex<Vec<String>>,
    shut_down: Arc<AtomicBool>,
}

/// Turns a library error into a JSON-RPC error with its code and `data.kind`.
pub fn to_rpc(e: Error) -> jsonrpc::Error {
    let code = if e.code() == -32602 { ErrorCode::InvalidParams } else { ErrorCode::ServerError(e.code()) };
    jsonrpc::Error { code, message: e.to_string().into(), data: Some(json!({ "kind": e.kind() })) }
}

fn internal(msg: String) -> jsonrpc::Error {
    jsonrpc::Error { code: ErrorCode::InternalError, message: msg.into(), data: Some(json!({ "kind": "internal" })) }
}

fn parse<T: DeserializeOwned>(method: &str, params: Value) -> jsonrpc::Result<T> {
    serde_json::from_value(params).map_err(|e| to_rpc(Error::invalid(format!("{method}: invalid params: {e}"))))
}

impl Backend {
    fn engine(&self) -> jsonrpc::Result<Arc<Engine>> {
        self.engine
            .get()
            .cloned()
            .ok_or_else(|| to_rpc(Error::storage("the store is not open: initialize failed or has not run")))
    }

    /// Runs blocking engine work off the async runtime; a panic becomes an internal error.
    async fn run<R, F>(&self, f: F) -> jsonrpc::Result<Value>
    where
        R: Serialize,
        F: FnOnce(&Engine) -> crate::Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let engine = self.engine()?;
        let e2 = engine.clone();
        let out = tokio::task::spawn_blocking(move || f(&e2)).await;
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

    async fn flush_warnings(&self, engine: &Engine) {
        let pending = std::mem::take(&mut *self.pending_warnings.lock().unwrap_or_else(|e| e.into_inner()));
        for w in pending.into_iter().chain(engine.take_warnings()) {
            self.client.log_message(MessageType::WARNING, w).await;
        }
        self.reembed_in_background();
    }

    // ---- custom methods: the routing table is `service()` below -----------------------

    async fn tool_definition(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: ToolDefinitionParams = parse(protocol::TOOL_DEFINITION, params)?;
        self.run(move |e| e.tool_definition(p)).await
    }

    async fn tool_before(&self, params: Value) {
        // Synchronous: the stash is written before this future first yields.
        match serde_json::from_value::<ToolBeforeParams>(params) {
            Ok(p) => {
                if let Ok(e) = self.engine() {
                    e.tool_before(&p);
                }
            }
            Err(err) => tracing::warn!("skillmem/toolBefore: invalid params dropped: {err}"),
        }
    }

    async fn tool_after(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: ToolAfterParams = parse(protocol::TOOL_AFTER, params)?;
        let stashed = self.engine()?.take_stashed_intent(&p.session_id, &p.call_id);
        self.run(move |e| e.tool_after(&p, stashed)).await
    }

    async fn note(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: NoteParams = parse(protocol::NOTE, params)?;
        self.run(move |e| e.note(p)).await
    }

    async fn recall(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: RecallParams = parse(protocol::RECALL, params)?;
        self.run(move |e| e.recall(p)).await
    }

    async fn pin(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: PinParams = parse(protocol::PIN, params)?;
        self.run(move |e| e.pin(p)).await
    }

    async fn forget(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: ForgetParams = parse(protocol::FORGET, params)?;
        self.run(move |e| e.forget(p)).await
    }

    async fn edit(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: EditParams = parse(protocol::EDIT, params)?;
        self.run(move |e| e.edit(p)).await
    }

    async fn stats(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: StatsParams = if params.is_null() { StatsParams::default() } else { parse(protocol::STATS, params)? };
        self.run(move |e| e.stats(p)).await
    }

    async fn transcript_chunk(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: TranscriptChunkParams = parse(protocol::TRANSCRIPT_CHUNK, params)?;
        self.run(move |e| e.transcript_chunk(p)).await
    }

    async fn historian_result(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: HistorianResultParams = parse(protocol::HISTORIAN_RESULT, params)?;
        self.run(move |e| e.historian_result(p)).await
    }

    /// Re-embeds in `spawn_blocking`; batches report through a channel that this handler turns
    /// into `$/progress` under the client's `workDoneToken`.
    async fn distill(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: DistillParams =
            if params.is_null() { DistillParams::default() } else { parse(protocol::DISTILL, params)? };
        let token = match p.work_done_token.clone() {
            None | Some(Value::Null) => None,
            Some(t) => Some(serde_json::from_value::<ProgressToken>(t).map_err(|e| {
                to_rpc(Error::invalid(format!(
                    "{}: workDoneToken must be a string or a number: {e}",
                    protocol::DISTILL
                )))
            })?),
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let batch = p.batch_size;
        let work = self.run(move |e| {
            e.distill(batch, &mut |pr| {
                let _ = tx.send(pr);
            })
        });
        let report = async {
            let Some(token) = token else {
                while rx.recv().await.is_some() {}
                return;
            };
            let progress = self.client.progress(token, "skillmem: re-embedding notes").with_percentage(0).begin().await;
            let mut last = None;
            while let Some(pr) = rx.recv().await {
                let pct = (pr.done * 100).checked_div(pr.total).unwrap_or(100) as u32;
                progress.report_with_message(format!("{}/{} notes", pr.done, pr.total), pct).await;
                last = Some(pr);
            }
            let msg = match last {
                Some(pr) if pr.done == pr.total => format!("{} notes re-embedded", pr.done),
                Some(pr) => format!("stopped after {}/{} notes", pr.done, pr.total),
                None => "nothing to re-embed".to_string(),
            };
            progress.finish_with_message(msg).await;
        };
        let (out, ()) = tokio::join!(work, report);
        out
    }
}

// ---- session skills: install, update, remove, list, resolve, seed --------------------

impl Backend {
    /// Forwards the progress of blocking work as `$/progress` under the client's
    /// `workDoneToken`; without a token the events are dropped. Returns the sender for the
    /// blocking side and the task to await once the work is done (it ends the progress).
    fn progress_pump(
        &self,
        token: Option<protocol::skills::ProgressToken>,
        title: &'static str,
    ) -> (tokio::sync::mpsc::UnboundedSender<crate::skills::Progress>, Option<tokio::task::JoinHandle<()>>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<crate::skills::Progress>();
        let handle = token.map(|t| {
            let client = self.client.clone();
            let token = match t {
                protocol::skills::ProgressToken::Number(n) => NumberOrString::Number(n),
                protocol::skills::ProgressToken::String(s) => NumberOrString::String(s),
            };
            tokio::spawn(async move {
                let p = client.progress(token, title).with_percentage(0).begin().await;
                let mut last = 0;
                while let Some(ev) = rx.recv().await {
                    last = ev.percent.unwrap_or(last).max(last).min(100);
                    p.report_with_message(ev.message, last).await;
                }
                p.finish().await;
            })
        });
        (tx, handle)
    }

    async fn skills_install(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: protocol::skills::InstallParams = parse(protocol::SKILLS_INSTALL, params)?;
        let (tx, pump) = self.progress_pump(p.work_done_token.clone(), "Installing skills");
        let out = self.run(move |e| e.skills_install(p, &|ev| drop(tx.send(ev)))).await;
        if let Some(h) = pump {
            let _ = h.await;
        }
        out
    }

    async fn skills_update(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: protocol::skills::UpdateParams = parse(protocol::SKILLS_UPDATE, params)?;
        let (tx, pump) = self.progress_pump(p.work_done_token.clone(), "Updating skills");
        let out = self.run(move |e| e.skills_update(p, &|ev| drop(tx.send(ev)))).await;
        if let Some(h) = pump {
            let _ = h.await;
        }
        out
    }

    async fn skills_remove(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: protocol::skills::RemoveParams = parse(protocol::SKILLS_REMOVE, params)?;
        self.run(move |e| e.skills_remove(p)).await
    }

    async fn skills_list(&self, _params: Value) -> jsonrpc::Result<Value> {
        self.run(move |e| e.skills_list()).await
    }

    async fn skills_resolve(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: protocol::skills::ResolveParams =
            if params.is_null() { Default::default() } else { parse(protocol::SKILLS_RESOLVE, params)? };
        self.run(move |e| e.skills_resolve(p)).await
    }

    async fn skills_seed(&self, params: Value) -> jsonrpc::Result<Value> {
        let p: protocol::skills::SeedParams = parse(protocol::SKILLS_SEED, params)?;
        self.run(move |e| e.skills_seed(p)).await
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
        let client = self.client.clone();
        let stop = self.shut_down.clone();
        tokio::spawn(async move {
            let e = engine.clone();
            let count = tokio::task::spawn_blocking(move || e.other_model_count()).await;
            let total = match count {
                Ok(Ok(n)) if n > 0 => n,
                Ok(Err(err)) => {
                    tracing::warn!("cannot count the notes to re-embed: {err}");
                    return;
                }
                _ => return,
            };
            let model = engine.embedder().map(|e| e.model_id().to_string()).unwrap_or_default();
            let msg = format!(
                "skillmem: re-embedding {total} notes made by another model with {model} in the background; they are found by their words until then"
            );
            tracing::info!("{msg}");
            client.log_message(MessageType::INFO, msg).await;
            let pace = crate::engine::Pace { pause: REEMBED_PAUSE, stop: Some(stop) };
            let out = tokio::task::spawn_blocking(move || {
                let mut last_decile = 0;
                engine.reembed_other_models(&pace, &mut |p| {
                    let decile = (p.done * 10).checked_div(p.total).unwrap_or(10);
                    if decile != last_decile {
                        last_decile = decile;
                        tracing::info!(done = p.done, total = p.total, "background re-embedding");
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
        let opened = tokio::task::spawn_blocking(move || -> crate::Result<(Engine, Vec<String>)> {
            let resolved = Config::resolve(ws.as_deref(), opts.as_ref())?;
            let mut resolved = resolved;
            let wanted_model = matches!(resolved.config.embedding, crate::config::EmbeddingConfig::Model { .. });
            let mut engine = Engine::open(resolved.config.clone(), ws)?;
            if wanted_model && engine.embedder().is_some_and(|e| e.model_id().starts_with("static:")) {
                resolved.warnings.push(
                    "the configured embedding model is not available (see skillmem model status); recall uses the built-in static embedder meanwhile: run `skillmem model fetch` and set the embedding.path it prints"
                        .into(),
                );
            }
            if let Some(tool) = opts.as_ref().and_then(|o| o.pointer("/memory/noteTool")).and_then(Value::as_str) {
                engine.set_note_tool(tool);
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
            capabilities: ServerCapabilities { experimental: Some(json!({ "skillmem": cap })), ..Default::default() },
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
    }

    async fn shutdown(&self) -> jsonrpc::Result<()> {
        self.shut_down.store(true, Ordering::SeqCst);
        if let Some(engine) = self.engine.get().cloned() {
            let _ = tokio::task::spawn_blocking(move || {
                engine.flush_index();
                let conn = engine.conn();
                let _ = conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE);");
            })
            .await;
        }
        Ok(())
    }
}

/// Builds the service with its routing table: every custom method of PROTOCOL.md.
pub fn service(shut_down: Arc<AtomicBool>) -> (LspService<Backend>, tower_lsp_server::ClientSocket) {
    LspService::build(|client| Backend {
        client,
        engine: OnceLock::new(),
        pending_warnings: Default::default(),
        shut_down,
    })
    .custom_method(protocol::TOOL_DEFINITION, Backend::tool_definition)
    .custom_method(protocol::TOOL_BEFORE, Backend::tool_before)
    .custom_method(protocol::TOOL_AFTER, Backend::tool_after)
    .custom_method(protocol::NOTE, Backend::note)
    .custom_method(protocol::RECALL, Backend::recall)
    .custom_method(protocol::PIN, Backend::pin)
    .custom_method(protocol::FORGET, Backend::forget)
    .custom_method(protocol::EDIT, Backend::edit)
    .custom_method(protocol::STATS, Backend::stats)
    .custom_method(protocol::TRANSCRIPT_CHUNK, Backend::transcript_chunk)
    .custom_method(protocol::HISTORIAN_RESULT, Backend::historian_result)
    .custom_method(protocol::DISTILL, Backend::distill)
    .custom_method(protocol::SKILLS_INSTALL, Backend::skills_install)
    .custom_method(protocol::SKILLS_UPDATE, Backend::skills_update)
    .custom_method(protocol::SKILLS_REMOVE, Backend::skills_remove)
    .custom_method(protocol::SKILLS_LIST, Backend::skills_list)
    .custom_method(protocol::SKILLS_RESOLVE, Backend::skills_resolve)
    .custom_method(protocol::SKILLS_SEED, Backend::skills_seed)
    .finish()
}

/// Moves the frame channel off fd 1: frames go to a duplicate of the original stdout, and fd 1
/// is pointed at stderr, so that anything a dependency prints cannot corrupt the frame stream.
#[cfg(unix)]
fn frame_writer() -> std::io::Result<tokio::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: dup/dup2 on the process's own standard descriptors; the duplicate is owned by
    // the File created from it and nothing else closes it.
    unsafe {
        let fd = libc::dup(1);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::dup2(2, 1) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(tokio::fs::File::from_std(std::fs::File::from_raw_fd(fd)))
    }
}

/// Serves frames on stdin/stdout until `exit` or EOF. Returns the process exit code: 0 after
/// `shutdown`, 1 otherwise.
pub async fn serve() -> i32 {
    let shut_down = Arc::new(AtomicBool::new(false));
    let (service, socket) = service(shut_down.clone());
    let host_in = tokio::io::stdin();
    #[cfg(unix)]
    let stdout = match frame_writer() {
        Ok(f) => f,
        Err(e) => {
            tracing::error!("cannot set up the frame channel: {e}");
            return 1;
        }
    };
    #[cfg(not(unix))]
    let stdout = tokio::io::stdout();
    // The server reads and writes in-memory pipes; the frame guard stands between them and the
    // host, so that no malformed frame can reach (and end) tower-lsp-server's codec.
    let (guard_to_server, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, server_to_guard) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(Server::new(server_in, server_out, socket).serve(service));
    frames::guard(host_in, stdout, guard_to_server, server_to_guard).await;
    let _ = server.await;
    if shut_down.load(Ordering::SeqCst) {
        0
    } else {
        1
    }
}
