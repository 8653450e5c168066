//! JSON documents that keep their key order: a host's settings file is read, edited in a few
//! places and written back with every other key where it was (serde_json's own map sorts).

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// A JSON value whose objects keep their order.
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    /// A string value.
    pub fn s(v: impl Into<String>) -> J {
        J::Str(v.into())
    }

    /// An object of these entries, in this order.
    pub fn obj<const N: usize>(entries: [(&str, J); N]) -> J {
        J::Obj(entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    /// An array of strings.
    pub fn strs(items: &[&str]) -> J {
        J::Arr(items.iter().map(|s| J::s(*s)).collect())
    }

    /// A whole number.
    pub fn n(v: u64) -> J {
        J::Num(v.into())
    }

    /// The value of `key` in an object.
    pub fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::Obj(es) => es.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, when this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            J::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The items, when this is an array.
    pub fn items(&self) -> &[J] {
        match self {
            J::Arr(v) => v,
            _ => &[],
        }
    }

    /// Compact JSON text.
    pub fn compact(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Pretty JSON text with `indent` (a trailing newline included).
    pub fn pretty(&self, indent: &[u8]) -> String {
        let mut buf = vec![];
        let fmt = serde_json::ser::PrettyFormatter::with_indent(indent);
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        if self.serialize(&mut ser).is_err() {
            return String::new();
        }
        let mut s = String::from_utf8(buf).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Parses a document.
    pub fn parse(text: &str) -> Result<J, serde_json::Error> {
        serde_json::from_str(text)
    }
}

impl Serialize for J {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            J::Null => s.serialize_unit(),
            J::Bool(b) => s.serialize_bool(*b),
            J::Num(n) => n.serialize(s),
            J::Str(v) => s.serialize_str(v),
            J::Arr(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            J::Obj(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = J;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<J, E> {
                Ok(J::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<J, E> {
                Ok(J::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<J, E> {
                Ok(J::Num(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<J, E> {
                Ok(J::Num(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<J, E> {
                serde_json::Number::from_f64(v).map(J::Num).ok_or_else(|| E::custom("a number JSON cannot hold"))
            }
            fn visit_str<E>(self, v: &str) -> Result<J, E> {
                Ok(J::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<J, E> {
                Ok(J::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut out = vec![];
                while let Some(v) = a.next_element()? {
                    out.push(v);
                }
                Ok(J::Arr(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut out: Vec<(String, J)> = vec![];
                while let Some((k, v)) = a.next_entry::<String, J>()? {
                    // A repeated key: the last one wins, as in every JSON reader the hosts use.
                    match out.iter_mut().find(|(ek, _)| *ek == k) {
                        Some(e) => e.1 = v,
                        None => out.push((k, v)),
                    }
                }
                Ok(J::Obj(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// The indentation of a pretty-printed document (its first indented line), default two spaces.
pub fn indent_of(text: &str) -> Vec<u8> {
    for line in text.lines().skip(1) {
        let ws: String = line.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
        if !ws.is_empty() {
            return ws.into_bytes();
        }
    }
    b"  ".to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_key_order_and_values() {
        // (input, compact output)
        let cases = [
            (r#"{"z":1,"a":{"y":true,"b":null}}"#, r#"{"z":1,"a":{"y":true,"b":null}}"#),
            (r#"[1, 2.5, -3, "x"]"#, r#"[1,2.5,-3,"x"]"#),
            (r#"{"a":1,"a":2}"#, r#"{"a":2}"#),
            ("{}", "{}"),
        ];
        for (input, want) in cases {
            assert_eq!(J::parse(input).unwrap().compact(), want, "{input}");
        }
        assert!(J::parse("{// comment\n}").is_err());
    }

    #[test]
    fn indentation_is_read_from_the_file() {
        let cases: &[(&str, &[u8])] =
            &[("{\n    \"a\": 1\n}", b"    "), ("{\n\t\"a\": 1\n}", b"\t"), ("{}", b"  "), ("{\"a\":1}", b"  ")];
        for (text, want) in cases {
            assert_eq!(indent_of(text), *want, "{text:?}");
        }
    }
}
