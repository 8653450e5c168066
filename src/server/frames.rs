//! The frame guard between the host and tower-lsp-server.
//!
//! tower-lsp-server's codec ends its input stream after the first malformed frame, which would
//! end the sidecar. So every frame from the host is read and checked here first: a frame with
//! a bad header or a body that is not a JSON-RPC 2.0 message is answered with the standard
//! error (parse error -32700, invalid request -32600) and dropped; well-formed frames are
//! passed on unchanged. Frames from tower-lsp-server and the guard's own error responses are
//! written to the host one whole frame at a time.

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Largest body accepted (a frame announcing more is refused and skipped).
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// What one read from the host produced.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A well-formed JSON-RPC message body.
    Message(Vec<u8>),
    /// A frame to answer with an error and drop.
    Bad(Value),
    /// End of input.
    Eof,
}

fn error(code: i64, message: &str, id: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// Checks that a body is a JSON-RPC 2.0 request, notification or response.
pub fn check_body(body: &[u8]) -> Result<(), Value> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| error(-32700, &format!("parse error: the frame body is not JSON ({e})"), Value::Null))?;
    let Some(obj) = v.as_object() else {
        return Err(error(
            -32600,
            "invalid request: a message must be a JSON object (batches are not supported)",
            Value::Null,
        ));
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    let id_ok = matches!(obj.get("id"), None | Some(Value::Null | Value::Number(_) | Value::String(_)));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") || !id_ok {
        let id = if id_ok { id } else { Value::Null };
        return Err(error(-32600, "invalid request: \"jsonrpc\" must be \"2.0\" and \"id\" a number or string", id));
    }
    match obj.get("method") {
        Some(Value::String(_)) => {
            if matches!(obj.get("params"), None | Some(Value::Null | Value::Object(_) | Value::Array(_))) {
                Ok(())
            } else {
                Err(error(-32600, "invalid request: \"params\" must be an object or an array", id))
            }
        }
        Some(_) => Err(error(-32600, "invalid request: \"method\" must be a string", id)),
        None if obj.contains_key("id") && (obj.contains_key("result") || obj.contains_key("error")) => Ok(()),
        None => Err(error(-32600, "invalid request: a message needs a \"method\" (or an \"id\" and a \"result\")", id)),
    }
}

/// Reads the next frame from the host.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut BufReader<R>) -> std::io::Result<Frame> {
    let mut len: Option<Result<usize, String>> = None;
    let mut saw_header = false;
    loop {
        let mut line = Vec::new();
        let n = r.read_until(b'\n', &mut line).await?;
        if n == 0 {
            return Ok(Frame::Eof);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if saw_header {
                break;
            }
            continue; // stray blank line between frames
        }
        saw_header = true;
        if let Some((k, v)) = text.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = Some(v.trim().parse::<usize>().map_err(|_| v.trim().to_string()));
            }
        }
    }
    match len {
        None => Ok(Frame::Bad(error(-32700, "parse error: frame header without Content-Length", Value::Null))),
        Some(Err(v)) => {
            Ok(Frame::Bad(error(-32700, &format!("parse error: Content-Length {v:?} is not a number"), Value::Null)))
        }
        Some(Ok(n)) if n > MAX_BODY => {
            // Skip the body so the stream stays in step.
            let skipped = tokio::io::copy(&mut (&mut *r).take(n as u64), &mut tokio::io::sink()).await?;
            if skipped < n as u64 {
                return Ok(Frame::Eof);
            }
            Ok(Frame::Bad(error(
                -32600,
                &format!("invalid request: frame of {n} bytes exceeds {MAX_BODY}"),
                Value::Null,
            )))
        }
        Some(Ok(n)) => {
            let mut body = vec![0; n];
            match r.read_exact(&mut body).await {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(Frame::Eof),
                Err(e) => return Err(e),
            }
            match check_body(&body) {
                Ok(()) => Ok(Frame::Message(body)),
                Err(resp) => Ok(Frame::Bad(resp)),
            }
        }
    }
}

/// Encodes one frame.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Runs the guard: host input → checked frames → `to_server`; `from_server` frames and the
/// guard's errors → `host_out`. Returns once the server has closed its output and everything
/// it wrote has reached the host (the host may keep its input open after `exit`).
pub async fn guard<HI, HO, SI, SO>(host_in: HI, mut host_out: HO, mut to_server: SI, from_server: SO)
where
    HI: AsyncRead + Unpin + Send + 'static,
    HO: AsyncWrite + Unpin + Send + 'static,
    SI: AsyncWrite + Unpin + Send + 'static,
    SO: AsyncRead + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(256);
    let errors = tx.clone();
    let inbound = tokio::spawn(async move {
        let mut r = BufReader::new(host_in);
        loop {
            match read_frame(&mut r).await {
                Ok(Frame::Message(body)) => {
                    if to_server.write_all(&encode(&body)).await.is_err() || to_server.flush().await.is_err() {
                        break;
                    }
                }
                Ok(Frame::Bad(resp)) => {
                    tracing::warn!("dropped a malformed frame: {}", resp["error"]["message"]);
                    let body = serde_json::to_vec(&resp).unwrap_or_default();
                    if errors.send(encode(&body)).await.is_err() {
                        break;
                    }
                }
                Ok(Frame::Eof) | Err(_) => break,
            }
        }
        let _ = to_server.shutdown().await;
    });
    let outbound = tokio::spawn(async move {
        let mut r = BufReader::new(from_server);
        // The server's own frames are well-formed; forward each whole.
        while let Ok(Frame::Message(body)) = read_frame(&mut r).await {
            if tx.send(encode(&body)).await.is_err() {
                break;
            }
        }
        // An empty frame tells the writer that the server is done.
        let _ = tx.send(Vec::new()).await;
    });
    while let Some(frame) = rx.recv().await {
        if frame.is_empty() || host_out.write_all(&frame).await.is_err() || host_out.flush().await.is_err() {
            break;
        }
    }
    let _ = outbound.await;
    inbound.abort();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_table() {
        let cases: &[(&str, Option<i64>)] = &[
            (r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{}}"#, None),
            (r#"{"jsonrpc":"2.0","method":"x"}"#, None),
            (r#"{"jsonrpc":"2.0","id":"a","result":null}"#, None),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#, None),
            ("not json", Some(-32700)),
            ("[]", Some(-32600)),
            (r#"{"id":1,"method":"x"}"#, Some(-32600)),
            (r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#, Some(-32600)),
            (r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#, Some(-32600)),
            (r#"{"jsonrpc":"2.0","id":1,"method":5}"#, Some(-32600)),
            (r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#, Some(-32600)),
            (r#"{"jsonrpc":"2.0","id":1}"#, Some(-32600)),
        ];
        for (body, want) in cases {
            let got = check_body(body.as_bytes()).err().map(|e| e["error"]["code"].as_i64().unwrap());
            assert_eq!(got, *want, "{body}");
        }
    }

    #[tokio::test]
    async fn frames_table() {
        let input = b"Content-Length: 2\r\n\r\n{}\r\nContent-Length: abc\r\n\r\nX-Other: 1\r\n\r\nContent-Length: 30\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}".to_vec();
        let mut r = BufReader::new(&input[..]);
        let mut kinds = vec![];
        loop {
            match read_frame(&mut r).await.unwrap() {
                Frame::Eof => break,
                Frame::Message(b) => kinds.push(format!("ok {}", b.len())),
                Frame::Bad(v) => kinds.push(format!("bad {}", v["error"]["code"])),
            }
        }
        assert_eq!(kinds, vec!["bad -32600", "bad -32700", "bad -32700", "ok 30"]);
    }
}
