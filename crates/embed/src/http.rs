//! The `http` embedder: any OpenAI-compatible `/v1/embeddings` endpoint (Ollama, LM Studio,
//! llama.cpp server, vLLM, OpenAI).
//!
//! Texts go in batches of [`BATCH`]; every request has a timeout; the API key (when the
//! configuration names an environment variable) is sent as a bearer token. A response of the
//! wrong size, the wrong dimension, or with non-finite numbers is an error, never a vector. A
//! circuit breaker opens after [`FAILURES_TO_OPEN`] failures in a row: for [`COOLDOWN`] every
//! call fails at once (callers fall back to the lexical rungs and store notes without a
//! vector, which `distill` re-embeds later), then one call is let through to probe.
//!
//! The model id is `http:<model>@<endpoint>#<dim>`, so vectors of another model, endpoint or
//! dimension are never compared with these. Plain `http://` works in the default build;
//! `https://` needs the `http-tls` cargo feature.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{normalize, Embedder};
use skillmem_error::{Error, Result};

/// Texts per request.
pub const BATCH: usize = 64;
/// Consecutive failures that open the breaker.
pub const FAILURES_TO_OPEN: u32 = 3;
/// How long the breaker stays open.
pub const COOLDOWN: Duration = Duration::from_secs(30);
/// Default per-request timeout.
pub const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Breaker {
    failures: u32,
    open_until: Option<Instant>,
}

/// The OpenAI-compatible embedder.
pub struct HttpEmbedder {
    endpoint: String,
    model: String,
    api_key: Option<String>,
    dim: usize,
    model_id: String,
    agent: ureq::Agent,
    breaker: Mutex<Breaker>,
    cooldown: Duration,
}

/// The embeddings URL of a configured base URL: `.../embeddings` as given, `.../v1` gets
/// `/embeddings`, anything else `/v1/embeddings`.
pub fn endpoint_of(url: &str) -> String {
    let u = url.trim_end_matches('/');
    if u.ends_with("/embeddings") {
        u.to_string()
    } else if u.ends_with("/v1") {
        format!("{u}/embeddings")
    } else {
        format!("{u}/v1/embeddings")
    }
}

impl HttpEmbedder {
    /// An embedder for `model` at `url`. The API key is read from the environment variable
    /// `api_key_env` (an unset variable is an error that names it). When `dim` is not given
    /// the endpoint is asked once, now; when it cannot answer, that is an error.
    pub fn new(
        url: &str,
        model: &str,
        api_key_env: Option<&str>,
        dim: Option<usize>,
        timeout: Duration,
    ) -> Result<Self> {
        if model.trim().is_empty() {
            return Err(Error::invalid("embedding.model: name the model the endpoint should use"));
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Error::invalid(format!("embedding.url: {url:?} is not an http:// or https:// URL")));
        }
        let api_key = match api_key_env {
            Some(var) if !var.is_empty() => Some(std::env::var(var).map_err(|_| {
                Error::invalid(format!(
                    "embedding.apiKeyEnv: the environment variable {var} is not set; export it or remove apiKeyEnv"
                ))
            })?),
            _ => None,
        };
        let agent: ureq::Agent =
            ureq::Agent::config_builder().timeout_global(Some(timeout)).http_status_as_error(false).build().into();
        let endpoint = endpoint_of(url);
        let mut e = HttpEmbedder {
            endpoint,
            model: model.to_string(),
            api_key,
            dim: dim.unwrap_or(0),
            model_id: String::new(),
            agent,
            breaker: Mutex::new(Breaker::default()),
            cooldown: COOLDOWN,
        };
        if e.dim == 0 {
            let v = e.request(&["dimension probe"]).map_err(|err| {
                Error::Storage(format!(
                    "embedding: cannot learn the dimension from {} ({err}); set embedding.dim or start the endpoint",
                    e.endpoint
                ))
            })?;
            e.dim = v.first().map(Vec::len).unwrap_or(0);
            if e.dim == 0 {
                return Err(Error::invalid(format!("embedding: {} returned an empty vector", e.endpoint)));
            }
        }
        e.model_id = format!("http:{}@{}#{}{}", e.model, e.endpoint, e.dim, super::VIEWS_TAG);
        Ok(e)
    }

    /// Sets how long the breaker stays open (tests).
    pub fn with_cooldown(mut self, d: Duration) -> Self {
        self.cooldown = d;
        self
    }

    fn request(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, String> {
        let body = json!({ "model": self.model, "input": texts }).to_string();
        let mut req = self.agent.post(&self.endpoint).header("Content-Type", "application/json");
        if let Some(k) = &self.api_key {
            req = req.header("Authorization", format!("Bearer {k}"));
        }
        let resp = req.send(body.as_bytes()).map_err(|e| format!("request failed: {e}"))?;
        let status = resp.status().as_u16();
        let text = resp.into_body().read_to_string().map_err(|e| format!("cannot read the response: {e}"))?;
        if status != 200 {
            let snippet: String = text.chars().take(200).collect();
            return Err(format!("HTTP {status}: {snippet}"));
        }
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("the response is not JSON: {e}"))?;
        let data = v.get("data").and_then(Value::as_array).ok_or("the response has no data array")?;
        if data.len() != texts.len() {
            return Err(format!("{} vectors for {} texts", data.len(), texts.len()));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (pos, item) in data.iter().enumerate() {
            let i = item.get("index").and_then(Value::as_u64).map(|i| i as usize).unwrap_or(pos);
            let emb = item.get("embedding").and_then(Value::as_array).ok_or("an item has no embedding array")?;
            let mut vec = Vec::with_capacity(emb.len());
            for x in emb {
                let f = x.as_f64().ok_or("an embedding holds a non-number")? as f32;
                if !f.is_finite() {
                    return Err("an embedding holds a non-finite number".into());
                }
                vec.push(f);
            }
            if self.dim != 0 && vec.len() != self.dim {
                return Err(format!("a vector of dimension {} where {} was expected", vec.len(), self.dim));
            }
            normalize(&mut vec);
            *out.get_mut(i).ok_or("an item index is out of range")? = Some(vec);
        }
        out.into_iter().map(|v| v.ok_or_else(|| "an item index is missing".to_string())).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Breaker> {
        self.breaker.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Embedder for HttpEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if let Some(until) = self.lock().open_until {
            if Instant::now() < until {
                return Err(Error::Storage(format!(
                    "embedding endpoint {} is failing; the circuit breaker is open for {} s more",
                    self.endpoint,
                    (until - Instant::now()).as_secs()
                )));
            }
        }
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH) {
            match self.request(chunk) {
                Ok(v) => out.extend(v),
                Err(why) => {
                    let mut b = self.lock();
                    b.failures += 1;
                    if b.failures >= FAILURES_TO_OPEN || b.open_until.is_some() {
                        b.open_until = Some(Instant::now() + self.cooldown);
                        tracing::warn!(
                            "embedding endpoint {} failed {} times ({why}); using the lexical rungs for {} s",
                            self.endpoint,
                            b.failures,
                            self.cooldown.as_secs()
                        );
                    }
                    return Err(Error::Storage(format!("embedding endpoint {}: {why}", self.endpoint)));
                }
            }
        }
        let mut b = self.lock();
        b.failures = 0;
        b.open_until = None;
        Ok(out)
    }
}
