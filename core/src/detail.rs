//! A typed `detail`: a struct or enum that serialises to the JSON a result or a record names.
//! Its JSON and its map are made here, once, for every such type.

use serde::Serialize;
use serde_json::{Map, Value};

/// A type that serialises to a `detail`. Plain data always serialises; should one not, the
/// detail is empty rather than a panic.
pub trait Detail: Serialize {
    fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// Its fields, as a result's `detail` holds them (empty for a type that is no object).
    fn to_map(&self) -> Map<String, Value> {
        match self.to_json() {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }
}

/// A list of typed details is a JSON array of them (`detail.red`, say).
impl<T: Detail> Detail for Vec<T> {}

/// What a reader puts where a part of its answer would go when it could not read that part:
/// `{"unread": why}`, never an empty answer that could pass for "nothing there".
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unread {
    pub unread: String,
}

impl Detail for Unread {}
