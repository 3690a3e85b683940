//! Reading JSON without trusting it: each reader checks the type it promises, so an answer or file that does not
//! follow the contract becomes a `malformed` error naming the member, never a panic.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::instant::parse_iso;

pub(crate) type Object = Map<String, Value>;

pub(crate) fn object<'a>(value: Option<&'a Value>, what: &str) -> Result<&'a Object> {
    match value {
        Some(Value::Object(o)) => Ok(o),
        _ => Err(Error::malformed(format!("{what} is not a JSON object"))),
    }
}

pub(crate) fn opt_object<'a>(o: &'a Object, key: &str, what: &str) -> Result<Option<&'a Object>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(inner)) => Ok(Some(inner)),
        Some(_) => Err(Error::malformed(format!("{what}.{key} is not an object"))),
    }
}

pub(crate) fn string(o: &Object, key: &str, what: &str) -> Result<String> {
    match o.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(Error::malformed(format!("{what}.{key} is missing or not a string"))),
    }
}

/// An optional string; null and "" (a protobuf default) read as absent.
pub(crate) fn opt_string(o: &Object, key: &str, what: &str) -> Result<Option<String>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Error::malformed(format!("{what}.{key} is not a string"))),
    }
}

pub(crate) fn number(o: &Object, key: &str, what: &str) -> Result<f64> {
    opt_number(o, key, what)?.ok_or_else(|| Error::malformed(format!("{what}.{key} is missing or not a number")))
}

pub(crate) fn opt_number(o: &Object, key: &str, what: &str) -> Result<Option<f64>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .map(Some)
            .ok_or_else(|| Error::malformed(format!("{what}.{key} is not a number"))),
        Some(_) => Err(Error::malformed(format!("{what}.{key} is not a number"))),
    }
}

pub(crate) fn opt_bool(o: &Object, key: &str, what: &str) -> Result<Option<bool>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(Error::malformed(format!("{what}.{key} is not a boolean"))),
    }
}

/// An array of strings; absent or null reads as empty.
pub(crate) fn strings(o: &Object, key: &str, what: &str) -> Result<Vec<String>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                _ => Err(Error::malformed(format!("{what}.{key} is not an array of strings"))),
            })
            .collect(),
        Some(_) => Err(Error::malformed(format!("{what}.{key} is not an array of strings"))),
    }
}

/// An optional ISO 8601 instant, in milliseconds.
pub(crate) fn opt_date(o: &Object, key: &str, what: &str) -> Result<Option<i64>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => parse_iso(s)
            .map(Some)
            .ok_or_else(|| Error::malformed(format!("{what}.{key} is not an ISO 8601 date: {s}"))),
        Some(_) => Err(Error::malformed(format!("{what}.{key} is not a date string"))),
    }
}

/// A required ISO 8601 instant, in milliseconds.
pub(crate) fn date(o: &Object, key: &str, what: &str) -> Result<i64> {
    opt_date(o, key, what)?.ok_or_else(|| Error::malformed(format!("{what}.{key} is missing or not a date")))
}

/// The index of an enumeration by name (any case) or number, as the service writes them.
pub(crate) fn enum_index(names: &[&str], value: Option<&Value>, what: &str) -> Result<usize> {
    match value {
        Some(Value::Number(n)) => {
            if let Some(i) = n.as_u64() {
                if (i as usize) < names.len() {
                    return Ok(i as usize);
                }
            }
        }
        Some(Value::String(s)) => {
            if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
                return Ok(i);
            }
        }
        _ => {}
    }
    Err(Error::malformed(format!(
        "{what} has an unknown value: {}",
        value.map(Value::to_string).unwrap_or_else(|| "(none)".into())
    )))
}
