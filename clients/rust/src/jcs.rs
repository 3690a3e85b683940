//! RFC 8785 JSON Canonicalization Scheme: the exact bytes the service signs for an update check (CONTRACT section 5).
//! Numbers are written as ECMAScript's `Number.prototype.toString` writes them (by `ryu-js`), strings as
//! `JSON.stringify` writes them, object members sorted by the UTF-16 code units of their names.

use serde_json::Value;

use crate::error::{Error, Result};

/// The canonical JSON text of a JSON text: parsed (numbers as IEEE 754 doubles, as the service reads them), then
/// written by RFC 8785. A text that is not JSON, or holds a lone surrogate (`"\ud800"`), is `malformed`.
pub fn canonicalize_text(text: &str) -> Result<String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| Error::malformed(format!("The JSON cannot be canonicalized: {e}")))?;
    canonicalize(&value)
}

/// The RFC 8785 canonical JSON text of a value. A number that is not finite is `malformed` (serde_json never holds
/// one, but a caller's value might come from elsewhere).
pub fn canonicalize(value: &Value) -> Result<String> {
    let mut out = String::new();
    write_value(value, &mut out)?;
    Ok(out)
}

fn write_value(value: &Value, out: &mut String) -> Result<()> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, out)?,
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            // RFC 8785 section 3.2.3: names compared as arrays of UTF-16 code units.
            members.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, (name, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(name, out);
                out.push(':');
                write_value(item, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn write_number(n: &serde_json::Number, out: &mut String) -> Result<()> {
    // Every JSON number is an IEEE 754 double to the service (and to RFC 8785): a u64 or i64 beyond 2^53 rounds as
    // JavaScript rounds it.
    let double = if let Some(u) = n.as_u64() {
        u as f64
    } else if let Some(i) = n.as_i64() {
        i as f64
    } else {
        n.as_f64().unwrap_or(f64::NAN)
    };
    if !double.is_finite() {
        return Err(Error::malformed(format!("JCS: {n} is not a finite JSON number")));
    }
    if double == 0.0 {
        // -0 is written 0.
        out.push('0');
        return Ok(());
    }
    let mut buffer = ryu_js::Buffer::new();
    out.push_str(buffer.format_finite(double));
    Ok(())
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_ecmascript() {
        let cases = [
            ("1", "1"),
            ("-0", "0"),
            ("1.0", "1"),
            ("1e21", "1e+21"),
            ("1e-7", "1e-7"),
            ("0.000001", "0.000001"),
            ("100000000000000000000", "100000000000000000000"),
            ("9007199254740993", "9007199254740992"),
            ("333333333.33333329", "333333333.3333333"),
            ("-5", "-5"),
        ];
        for (input, expected) in cases {
            assert_eq!(canonicalize_text(input).unwrap(), expected, "{input}");
        }
    }

    #[test]
    fn keys_by_utf16_and_strings_as_json_stringify() {
        let text = r#"{"\ufb33":1,"\ud83d\ude00":2,"b":"\u0001/\u2028\u007f","a":[true,null]}"#;
        assert_eq!(
            canonicalize_text(text).unwrap(),
            "{\"a\":[true,null],\"b\":\"\\u0001/\u{2028}\u{7f}\",\"\u{1F600}\":2,\"\u{fb33}\":1}"
        );
        assert_eq!(canonicalize_text(r#""\ud800""#).unwrap_err().code(), "malformed");
    }
}
