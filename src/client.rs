//! A small blocking JSON-RPC client over a child process speaking LSP frames.
//!
//! Used by `skillmem demo`, the benchmarks and the end-to-end tests: the same framing a host
//! uses, against the real binary. Requests the server sends to the client (progress token
//! creation) are answered with a null result; notifications are kept for inspection.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

/// A running `skillmem serve` and the frames exchanged with it.
pub struct Client {
    pub child: Child,
    stdin: Option<ChildStdin>,
    reader: BufReader<ChildStdout>,
    next_id: i64,
    /// Notifications received so far, in order.
    pub notifications: Vec<Value>,
    /// Responses that arrived while waiting for another one (handlers run concurrently, so
    /// responses may come out of order).
    early: std::collections::HashMap<i64, Value>,
}

impl Client {
    /// Spawns `exe serve` with `envs`, stderr inherited or discarded.
    pub fn spawn(exe: &Path, envs: &[(&str, &str)], quiet: bool) -> std::io::Result<Client> {
        Self::spawn_args(exe, &["serve"], envs, quiet)
    }

    /// Spawns `exe args...` (e.g. `serve --stdio`, as editors' language clients do).
    pub fn spawn_args(exe: &Path, args: &[&str], envs: &[(&str, &str)], quiet: bool) -> std::io::Result<Client> {
        let mut cmd = Command::new(exe);
        cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped());
        cmd.stderr(if quiet { Stdio::null() } else { Stdio::inherit() });
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("no stdout"))?;
        Ok(Client {
            child,
            stdin,
            reader: BufReader::new(stdout),
            next_id: 1,
            notifications: vec![],
            early: Default::default(),
        })
    }

    /// Writes raw bytes to the server's stdin.
    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let w = self.stdin.as_mut().ok_or_else(|| std::io::Error::other("stdin closed"))?;
        w.write_all(bytes)?;
        w.flush()
    }

    /// Writes one framed message.
    pub fn send(&mut self, msg: &Value) -> std::io::Result<()> {
        let body = serde_json::to_vec(msg)?;
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend(body);
        self.send_raw(&frame)
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) -> std::io::Result<()> {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }))
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> std::io::Result<i64> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))?;
        Ok(id)
    }

    /// Sends a request and waits for its response (the whole response object).
    pub fn request(&mut self, method: &str, params: Value) -> std::io::Result<Value> {
        let id = self.send_request(method, params)?;
        self.wait_for(id)
    }

    /// Reads frames until the response with `id` arrives.
    pub fn wait_for(&mut self, id: i64) -> std::io::Result<Value> {
        if let Some(r) = self.early.remove(&id) {
            return Ok(r);
        }
        loop {
            let msg = self.read()?.ok_or_else(|| std::io::Error::other("server closed its output"))?;
            if msg.get("method").is_some() {
                if let Some(req_id) = msg.get("id").cloned() {
                    self.send(&json!({ "jsonrpc": "2.0", "id": req_id, "result": null }))?;
                }
                self.notifications.push(msg);
                continue;
            }
            match msg.get("id").and_then(Value::as_i64) {
                Some(got) if got == id => return Ok(msg),
                Some(other) => {
                    self.early.insert(other, msg);
                }
                None => self.notifications.push(msg),
            }
        }
    }

    /// Reads frames until a notification named `method` arrives (or takes the first one already
    /// read) and returns its params.
    pub fn next_notification(&mut self, method: &str) -> std::io::Result<Value> {
        if let Some(i) = self.notifications.iter().position(|n| n["method"] == method) {
            return Ok(self.notifications.remove(i)["params"].take());
        }
        loop {
            let mut msg = self.read()?.ok_or_else(|| std::io::Error::other("server closed its output"))?;
            if msg["method"] == method && msg.get("id").is_none() {
                return Ok(msg["params"].take());
            }
            if msg.get("method").is_some() {
                if let Some(req_id) = msg.get("id").cloned() {
                    self.send(&json!({ "jsonrpc": "2.0", "id": req_id, "result": null }))?;
                }
                self.notifications.push(msg);
            } else if let Some(id) = msg.get("id").and_then(Value::as_i64) {
                self.early.insert(id, msg);
            }
        }
    }

    /// Reads one frame; `None` at end of stream.
    pub fn read(&mut self) -> std::io::Result<Option<Value>> {
        let mut len = None;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line)? == 0 {
                return Ok(None);
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse::<usize>().ok();
                }
            }
        }
        let len = len.ok_or_else(|| std::io::Error::other("frame without Content-Length"))?;
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body)?;
        Ok(Some(serde_json::from_slice(&body)?))
    }

    /// `initialize` + `initialized` with a workspace and options; returns the result.
    pub fn initialize(&mut self, workspace: &Path, options: Value) -> std::io::Result<Value> {
        let uri = format!("file://{}", workspace.display());
        let r = self.request(
            "initialize",
            json!({ "processId": null, "rootUri": uri, "capabilities": {}, "initializationOptions": options }),
        )?;
        self.notify("initialized", json!({}))?;
        Ok(r)
    }

    /// Closes the server's stdin (EOF).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// `shutdown` then `exit`; waits for the process and returns its exit code.
    pub fn shutdown(mut self) -> std::io::Result<i32> {
        self.request("shutdown", Value::Null)?;
        self.notify("exit", Value::Null)?;
        let status = self.child.wait()?;
        Ok(status.code().unwrap_or(-1))
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
