//! JSON that keeps its keys in the order the file wrote them, for files bay edits on someone
//! else's behalf (an agent product's settings).
//!
//! `serde_json::Value` sorts object keys unless the whole build turns on `preserve_order`, which
//! would also reorder every document bay prints. A settings file is a person's file: bay adds
//! its entries and must leave every other key where it was, so it gets a value type of its own.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// A JSON value whose objects are lists of (key, value) in file order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Parses JSON text, keeping key order.
    pub fn parse(text: &str) -> Result<Json, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    /// The text, indented two spaces, ending in a newline, as editors write such files.
    pub fn pretty(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a JSON value always serializes");
        text.push('\n');
        text
    }

    /// The value under `key` of an object; the first, should the file repeat a key.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value under `key` of an object, added at the end when absent.
    pub fn entry<'a>(entries: &'a mut Vec<(String, Json)>, key: &str, empty: Json) -> &'a mut Json {
        let at = match entries.iter().position(|(k, _)| k == key) {
            Some(at) => at,
            None => {
                entries.push((key.to_owned(), empty));
                entries.len() - 1
            }
        };
        &mut entries[at].1
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(text) => Some(text),
            _ => None,
        }
    }

    /// A JSON string.
    pub fn text(text: &str) -> Json {
        Json::String(text.to_owned())
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(n)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_the_file_s_order_and_every_value_reads_back() {
        let text =
            r#"{"zeta":1,"alpha":{"y":[true,null,"s"],"b":-2.5},"mid":18446744073709551615}"#;
        let json = Json::parse(text).expect("valid JSON");
        assert_eq!(
            serde_json::to_string(&json).expect("serializes"),
            text,
            "nothing sorted, nothing lost"
        );
        assert_eq!(Json::parse(&json.pretty()), Ok(json));
    }

    #[test]
    fn an_entry_is_found_or_added_at_the_end() {
        let mut entries = vec![("b".to_owned(), Json::Null)];
        *Json::entry(&mut entries, "a", Json::Array(Vec::new())) = Json::Bool(true);
        *Json::entry(&mut entries, "b", Json::Null) = Json::text("kept in place");
        assert_eq!(
            entries,
            [
                ("b".to_owned(), Json::text("kept in place")),
                ("a".to_owned(), Json::Bool(true))
            ]
        );
        assert!(Json::parse("{").is_err());
    }
}
