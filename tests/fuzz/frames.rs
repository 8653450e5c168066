//! The frame guard (src/server/frames.rs).
//!
//! `frames`: a stream of well-formed frames, malformed frames of every kind the guard knows,
//! header garbage and stray blank lines, split at arbitrary points (with a `Pending` before
//! every chunk), through the real `guard` to an echo server. Property: the host gets exactly
//! one error (right code, right id) per malformed frame, and every good frame reaches the
//! server unchanged and is answered, in order.
//!
//! `frames-bytes`: arbitrary bytes, split at arbitrary points, read frame by frame. Property:
//! the reader ends, every frame is an answerable error or a valid message, the result does
//! not depend on the split, and garbage without a Content-Length header followed by a blank
//! line leaves the next good frame served.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use skillmem::server::frames::{self, check_body, encode, read_frame, Frame};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, ReadBuf};

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "frames",
    ci_cases: 150,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

pub const BYTES_TARGET: Target = Target {
    name: "frames-bytes",
    ci_cases: 1500,
    run: |cases, seed| super::run(cases, seed, bytes_input(), bytes_property),
    replay: |t| super::replay(t, bytes_property),
};

/// One piece of the host's stream.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Piece {
    /// A well-formed request carrying `text`, with header variant `header`.
    Good { text: String, header: u8 },
    /// A malformed frame of kind `kind` (see [`bad_frame`]).
    Bad { kind: u8, variant: u8, id: Option<i64>, text: String },
    /// A header block of garbage (no line end inside, no Content-Length).
    Garbage(Vec<u8>),
    /// A stray blank line between frames.
    Blank { crlf: bool },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    pub pieces: Vec<Piece>,
    /// Chunk sizes the stream is cut into (cycled); empty: one chunk.
    pub splits: Vec<usize>,
    /// A `Pending` before every chunk.
    pub pending: bool,
}

const TOKENS: &[&str] = &["Content-Length", ":", "\r\n", "{", "}", "\"", "\\u0000", "é", "\u{1f600}", "日本"];

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        4 => (gen::text(TOKENS), 0..6u8).prop_map(|(text, header)| Piece::Good { text, header }),
        5 => (0..9u8, any::<u8>(), proptest::option::of(-5i64..1000), gen::line(TOKENS))
            .prop_map(|(kind, variant, id, text)| Piece::Bad { kind, variant, id, text }),
        1 => vec(any::<u8>(), 1..40).prop_map(Piece::Garbage),
        1 => any::<bool>().prop_map(|crlf| Piece::Blank { crlf }),
    ]
}

pub fn input() -> impl Strategy<Value = Input> {
    (vec(piece(), 0..12), vec(1..64usize, 0..8), any::<bool>()).prop_map(|(pieces, splits, pending)| Input {
        pieces,
        splits,
        pending,
    })
}

/// What the host must get back for a piece.
#[derive(Debug, PartialEq, Clone)]
enum Expect {
    Echo(String),
    Error(i64, Value),
    Nothing,
}

fn good_body(seq: usize, text: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": seq, "method": "fuzz/echo", "params": {"text": text}})).unwrap()
}

fn header(variant: u8, len: usize) -> String {
    match variant % 6 {
        0 => format!("Content-Length: {len}\r\n\r\n"),
        1 => format!("content-length:{len}\r\n\r\n"),
        2 => format!("Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: {len}\r\n\r\n"),
        3 => format!("Content-Length: {len}\n\n"),
        4 => format!("CONTENT-LENGTH :  {len}  \r\n\r\n"),
        _ => format!("Content-Length: {len}\r\nX-Custom: a:b:c\r\n\r\n"),
    }
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = header(0, body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The bytes of a malformed frame and the error it must draw.
fn bad_frame(kind: u8, variant: u8, id: Option<i64>, text: &str) -> (Vec<u8>, i64, Value) {
    let idv = id.map(Value::from).unwrap_or(Value::Null);
    let obj = |extra: Value| {
        let mut m = json!({"jsonrpc": "2.0"});
        if let Some(i) = id {
            m["id"] = json!(i);
        }
        for (k, v) in extra.as_object().unwrap() {
            m[k] = v.clone();
        }
        serde_json::to_vec(&m).unwrap()
    };
    match kind {
        // A header block without Content-Length.
        0 => (format!("X-Thing: {}\r\n\r\n", text.replace(['\r', '\n'], "")).into_bytes(), -32700, Value::Null),
        // A Content-Length that is not a number (nothing after it is read as a body).
        1 => {
            let v = ["abc", "-1", "1.5", "99999999999999999999999", "", "0x10", "12 3", "+-3", "١٢"];
            (format!("Content-Length: {}\r\n\r\n", v[variant as usize % v.len()]).into_bytes(), -32700, Value::Null)
        }
        // A body that is not JSON: a good body cut short (or not JSON at all).
        2 => {
            let body = good_body(1, text);
            let cut = variant as usize % body.len();
            (framed(&body[..cut]), -32700, Value::Null)
        }
        // JSON that is not an object.
        3 => {
            let v = ["[]", "3", "\"s\"", "null", "true", "[{\"jsonrpc\":\"2.0\",\"method\":\"m\"}]"];
            (framed(v[variant as usize % v.len()].as_bytes()), -32600, Value::Null)
        }
        // jsonrpc missing or wrong.
        4 => {
            let v = [json!("1.0"), json!(2), json!(null), json!("2.0 ")];
            let mut m = json!({"method": "m"});
            if let Some(i) = id {
                m["id"] = json!(i);
            }
            if variant % 5 != 4 {
                m["jsonrpc"] = v[variant as usize % 4].clone();
            }
            (framed(&serde_json::to_vec(&m).unwrap()), -32600, idv)
        }
        // An id that is not a number or string: the error's id is null.
        5 => {
            let v = [json!({}), json!([1]), json!(true), json!({"id": 1})];
            let m = json!({"jsonrpc": "2.0", "id": v[variant as usize % v.len()], "method": "m"});
            (framed(&serde_json::to_vec(&m).unwrap()), -32600, Value::Null)
        }
        // A method that is not a string.
        6 => {
            let v = [json!(5), json!(null), json!([]), json!({})];
            (framed(&obj(json!({"method": v[variant as usize % v.len()]}))), -32600, idv)
        }
        // params that are neither an object nor an array.
        7 => {
            let v = [json!(3), json!("s"), json!(true)];
            (framed(&obj(json!({"method": "m", "params": v[variant as usize % v.len()]}))), -32600, idv)
        }
        // Neither a method nor a result.
        _ => (framed(&obj(json!({"params": {"text": text}}))), -32600, idv),
    }
}

/// The stream and what the host must get back, in order of the pieces.
fn stream(input: &Input) -> (Vec<u8>, Vec<Expect>) {
    let mut out = vec![];
    let mut expect = vec![];
    for (i, p) in input.pieces.iter().enumerate() {
        match p {
            Piece::Good { text, header: h } => {
                let body = good_body(i, text);
                out.extend_from_slice(header(*h, body.len()).as_bytes());
                out.extend_from_slice(&body);
                expect.push(Expect::Echo(text.clone()));
            }
            Piece::Bad { kind, variant, id, text } => {
                let (bytes, code, id) = bad_frame(*kind, *variant, *id, text);
                out.extend_from_slice(&bytes);
                expect.push(Expect::Error(code, id));
            }
            Piece::Garbage(g) => {
                let lower = g.to_ascii_lowercase();
                let has_len = lower.windows(14).any(|w| w == b"content-length");
                let blank = g.iter().all(|b| *b == b'\r' || *b == b'\n');
                if g.contains(&b'\n') || has_len || blank {
                    expect.push(Expect::Nothing); // not garbage of the kind this piece stands for
                    continue;
                }
                out.extend_from_slice(g);
                out.extend_from_slice(b"\r\n\r\n");
                expect.push(Expect::Error(-32700, Value::Null));
            }
            Piece::Blank { crlf } => {
                out.extend_from_slice(if *crlf { b"\r\n" } else { b"\n" });
                expect.push(Expect::Nothing);
            }
        }
    }
    (out, expect)
}

/// The malformed pieces of `input` only, without ids (their errors then carry a null id): the
/// bytes and how many errors they must draw. For the run through the real binary.
pub fn malformed_stream(input: &Input) -> (Vec<u8>, usize) {
    let pieces: Vec<Piece> = input
        .pieces
        .iter()
        .filter(|p| !matches!(p, Piece::Good { .. }))
        .map(|p| match p {
            Piece::Bad { kind, variant, text, .. } => {
                Piece::Bad { kind: *kind, variant: *variant, id: None, text: text.clone() }
            }
            other => other.clone(),
        })
        .collect();
    let (bytes, expect) = stream(&Input { pieces, splits: vec![], pending: false });
    (bytes, expect.iter().filter(|e| matches!(e, Expect::Error(..))).count())
}

/// A reader that hands out `data` in chunks of the given sizes, optionally returning
/// `Pending` (and waking itself) before every chunk.
pub struct Chunked {
    data: Vec<u8>,
    pos: usize,
    sizes: Vec<usize>,
    next: usize,
    pending: bool,
    flip: bool,
}

impl Chunked {
    pub fn new(data: Vec<u8>, sizes: &[usize], pending: bool) -> Chunked {
        Chunked { data, pos: 0, sizes: sizes.to_vec(), next: 0, pending, flip: false }
    }
}

impl AsyncRead for Chunked {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.pending && !this.flip {
            this.flip = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        this.flip = false;
        let left = this.data.len() - this.pos;
        if left == 0 {
            return Poll::Ready(Ok(()));
        }
        let size = if this.sizes.is_empty() { left } else { this.sizes[this.next % this.sizes.len()].max(1) };
        this.next += 1;
        let n = size.min(left).min(buf.remaining());
        buf.put_slice(&this.data[this.pos..this.pos + n]);
        this.pos += n;
        Poll::Ready(Ok(()))
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// Runs the guard over the host's `data` with an echo server; returns the host's output.
async fn through_guard(data: Vec<u8>, splits: &[usize], pending: bool) -> Vec<u8> {
    let host_in = Chunked::new(data, splits, pending);
    let (host_out, mut host_read) = tokio::io::duplex(1 << 12);
    let (to_server, server_in) = tokio::io::duplex(1 << 12);
    let (mut server_out, from_server) = tokio::io::duplex(1 << 12);
    let server = tokio::spawn(async move {
        let mut r = BufReader::new(server_in);
        loop {
            let resp = match read_frame(&mut r).await {
                Ok(Frame::Message(body)) => {
                    let v: Value = serde_json::from_slice(&body).unwrap();
                    json!({"jsonrpc": "2.0", "id": v["id"], "result": {"text": v["params"]["text"]}})
                }
                // The guard must never pass a malformed frame on.
                Ok(Frame::Bad(e)) => json!({"jsonrpc": "2.0", "id": null, "result": {"passedBad": e}}),
                Ok(Frame::Eof) | Err(_) => break,
            };
            if server_out.write_all(&encode(&serde_json::to_vec(&resp).unwrap())).await.is_err() {
                break;
            }
        }
        drop(server_out);
    });
    let reader = async {
        let mut out = vec![];
        host_read.read_to_end(&mut out).await.unwrap();
        out
    };
    let ((), out) = tokio::join!(frames::guard(host_in, host_out, to_server, from_server), reader);
    let _ = server.await;
    out
}

async fn all_frames(data: Vec<u8>, splits: &[usize], pending: bool, limit: usize) -> Result<Vec<Frame>, String> {
    let mut r = BufReader::new(Chunked::new(data, splits, pending));
    let mut out = vec![];
    for _ in 0..limit {
        match read_frame(&mut r).await {
            Ok(Frame::Eof) => return Ok(out),
            Ok(f) => out.push(f),
            Err(e) => return Err(format!("read_frame failed with an I/O error on an in-memory stream: {e}")),
        }
    }
    Err(format!("no end of input after {limit} frames: the reader does not make progress"))
}

pub fn property(input: &Input) -> Result<(), String> {
    let (data, expect) = stream(input);
    let out = runtime().block_on(through_guard(data.clone(), &input.splits, input.pending));
    let frames = runtime().block_on(all_frames(out, &[], false, 10_000))?;
    let mut echoes = vec![];
    let mut errors = vec![];
    for f in frames {
        let Frame::Message(body) = f else { return Err(format!("the host got a malformed frame: {f:?}")) };
        let v: Value = serde_json::from_slice(&body).unwrap();
        if let Some(e) = v.get("error") {
            let code = e["code"].as_i64().ok_or("an error without a code")?;
            let msg = e["message"].as_str().unwrap_or("");
            ensure(msg.starts_with("parse error") || msg.starts_with("invalid request"), || {
                format!("error message does not say what is wrong: {msg:?}")
            })?;
            errors.push(Expect::Error(code, v["id"].clone()));
        } else if let Some(b) = v["result"].get("passedBad") {
            return Err(format!("the guard passed a malformed frame to the server: {b}"));
        } else {
            echoes.push(Expect::Echo(v["result"]["text"].as_str().unwrap_or("<not a string>").to_string()));
        }
    }
    let want_echoes: Vec<Expect> = expect.iter().filter(|e| matches!(e, Expect::Echo(_))).cloned().collect();
    let mut want_errors: Vec<Expect> = expect.iter().filter(|e| matches!(e, Expect::Error(..))).cloned().collect();
    ensure(echoes == want_echoes, || format!("good frames answered {echoes:?}, want {want_echoes:?} (in order)"))?;
    errors.sort_by_key(|e| format!("{e:?}"));
    want_errors.sort_by_key(|e| format!("{e:?}"));
    ensure(errors == want_errors, || format!("malformed frames answered {errors:?}, want {want_errors:?}"))
}

// ---- frames-bytes ------------------------------------------------------------------------

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BytesInput {
    pub bytes: Vec<u8>,
    pub splits: Vec<usize>,
    pub pending: bool,
}

const BYTE_TOKENS: &[&str] = &[
    "Content-Length: ",
    "content-length:",
    "Content-Length: 2\r\n\r\n{}",
    "Content-Length: 0\r\n\r\n",
    "Content-Length: 30\r\n\r\n",
    "Content-Length: 67108865\r\n\r\n",
    "0",
    "7",
    "12",
    "\r\n",
    "\n",
    "\r\n\r\n",
    "\r",
    "{",
    "}",
    "[",
    "\"jsonrpc\":\"2.0\"",
    ",",
    ":",
    "\"id\":1",
    "\"id\":{}",
    "\"method\":\"m\"",
    "\"params\":3",
    "\"result\":null",
    "\u{feff}",
    "\u{ff}",
];

pub fn bytes_input() -> impl Strategy<Value = BytesInput> {
    let bytes = prop_oneof![
        vec(any::<u8>(), 0..200),
        vec(
            prop_oneof![3 => select(BYTE_TOKENS).prop_map(|s| s.as_bytes().to_vec()), 1 => vec(any::<u8>(), 0..4)],
            0..30
        )
        .prop_map(|v| v.concat()),
    ];
    (bytes, vec(1..32usize, 0..6), any::<bool>()).prop_map(|(bytes, splits, pending)| BytesInput {
        bytes,
        splits,
        pending,
    })
}

fn describe(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .map(|f| match f {
            Frame::Message(b) => format!("ok {}", String::from_utf8_lossy(b)),
            Frame::Bad(v) => format!("bad {v}"),
            Frame::Eof => "eof".into(),
        })
        .collect()
}

pub fn bytes_property(input: &BytesInput) -> Result<(), String> {
    let rt = runtime();
    let limit = input.bytes.len() + 2;
    let split = rt.block_on(all_frames(input.bytes.clone(), &input.splits, input.pending, limit))?;
    let whole = rt.block_on(all_frames(input.bytes.clone(), &[], false, limit))?;
    ensure(describe(&split) == describe(&whole), || {
        format!("the frames depend on how the input is split: {:?} vs {:?}", describe(&split), describe(&whole))
    })?;
    for f in &whole {
        match f {
            Frame::Bad(v) => {
                let code = v["error"]["code"].as_i64();
                ensure(matches!(code, Some(-32700 | -32600)), || format!("unexpected error code in {v}"))?;
                ensure(v["jsonrpc"] == "2.0", || format!("an error response without jsonrpc 2.0: {v}"))?;
                ensure(matches!(v["id"], Value::Null | Value::Number(_) | Value::String(_)), || {
                    format!("bad id: {v}")
                })?;
                let msg = v["error"]["message"].as_str().unwrap_or("");
                ensure(msg.starts_with("parse error") || msg.starts_with("invalid request"), || {
                    format!("error message does not say what is wrong: {msg:?}")
                })?;
            }
            Frame::Message(b) => {
                ensure(check_body(b).is_ok(), || "a message that fails check_body was passed on".into())?;
            }
            Frame::Eof => return Err("Eof inside the frame list".into()),
        }
    }
    // Garbage without a Content-Length header, ended by a blank line, leaves the next good
    // frame served.
    let lower = input.bytes.to_ascii_lowercase();
    if !lower.windows(14).any(|w| w == b"content-length") {
        let good = br#"{"jsonrpc":"2.0","id":7,"method":"after/garbage"}"#;
        let mut data = input.bytes.clone();
        data.extend_from_slice(b"\r\n\r\n");
        data.extend_from_slice(&framed(good));
        let frames = rt.block_on(all_frames(data, &input.splits, input.pending, limit + 4))?;
        let last = frames.last().map(|f| matches!(f, Frame::Message(b) if b == good)).unwrap_or(false);
        ensure(last, || format!("the good frame after garbage was not served: {:?}", describe(&frames)))?;
        ensure(frames[..frames.len() - 1].iter().all(|f| matches!(f, Frame::Bad(_))), || {
            format!("garbage produced a message: {:?}", describe(&frames))
        })?;
    }
    Ok(())
}
