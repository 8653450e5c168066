//! The intent stash: `toolBefore` leaves the skill call's `intent` under `sessionId:callId`
//! for the `toolAfter` that follows.
//!
//! Bounded: an entry expires after 60 s and at most 256 are kept (the oldest go first). The
//! stash is mutated synchronously by the server before its handler first awaits, so a
//! `toolAfter` sent right after `toolBefore` always finds the entry.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long an entry lives.
pub const TTL: Duration = Duration::from_secs(60);
/// How many entries are kept at most.
pub const CAPACITY: usize = 256;

/// Intents waiting for their `toolAfter`.
#[derive(Debug, Default)]
pub struct IntentStash {
    entries: VecDeque<(String, String, Instant)>,
}

impl IntentStash {
    /// Stores `intent` under `key` (replacing an earlier entry with the same key).
    pub fn put(&mut self, key: String, intent: String, now: Instant) {
        self.expire(now);
        self.entries.retain(|(k, _, _)| *k != key);
        if self.entries.len() >= CAPACITY {
            self.entries.pop_front();
        }
        self.entries.push_back((key, intent, now));
    }

    /// Removes and returns the intent stored under `key`, if it has not expired.
    pub fn take(&mut self, key: &str, now: Instant) -> Option<String> {
        self.expire(now);
        let pos = self.entries.iter().position(|(k, _, _)| k == key)?;
        self.entries.remove(pos).map(|(_, i, _)| i)
    }

    /// How many entries are held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn expire(&mut self, now: Instant) {
        while let Some((_, _, t)) = self.entries.front() {
            if now.duration_since(*t) > TTL {
                self.entries.pop_front();
            } else {
                break;
            }
        }
    }
}

/// The key of one tool call.
pub fn key(session_id: &str, call_id: &str) -> String {
    format!("{session_id}:{call_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_take_expire_and_bound() {
        let t0 = Instant::now();
        let mut s = IntentStash::default();
        s.put("a:1".into(), "x".into(), t0);
        assert_eq!(s.take("a:1", t0), Some("x".into()));
        assert_eq!(s.take("a:1", t0), None);

        s.put("a:2".into(), "y".into(), t0);
        assert_eq!(s.take("a:2", t0 + TTL + Duration::from_secs(1)), None);

        for i in 0..(CAPACITY + 10) {
            s.put(format!("s:{i}"), i.to_string(), t0);
        }
        assert_eq!(s.len(), CAPACITY);
        assert_eq!(s.take("s:0", t0), None);
        assert_eq!(s.take(&format!("s:{}", CAPACITY + 9), t0), Some((CAPACITY + 9).to_string()));
    }
}
