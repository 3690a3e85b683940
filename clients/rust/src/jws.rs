//! Compact JWS (RFC 7515) with ES256, as the service signs license keys and license files: verified as JOSE
//! verifies it (header, key by `kid`, signature over the text as it stands, then the payload).

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::jwks::{decode_base64url, Jwks};

/// A verified compact JWS: its protected header and payload bytes, and the `kid` of the key that verified it.
pub(crate) struct VerifiedJws {
    pub header: Map<String, Value>,
    pub payload: Vec<u8>,
    pub key_id: String,
}

/// Verifies a compact JWS against the JWK Set: three base64url parts and a JSON header with `alg` `ES256`
/// (`malformed`), a key of the header's `kid` (`unknownKey`), the signature over `<header>.<payload>`
/// (`signature`). `what` names the thing in messages ("The license key").
pub(crate) fn verify_compact(text: &str, jwks: &Jwks, what: &str) -> Result<VerifiedJws> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() != 3 {
        return Err(Error::malformed(format!("{what} is not a compact JWS (three parts)")));
    }
    let header_bytes =
        decode_base64url(parts[0]).ok_or_else(|| Error::malformed(format!("{what}'s header is not base64url")))?;
    let header: Map<String, Value> = match serde_json::from_slice(&header_bytes) {
        Ok(Value::Object(map)) => map,
        _ => return Err(Error::malformed(format!("{what}'s header is not a JSON object"))),
    };
    match header.get("alg") {
        Some(Value::String(alg)) if alg == "ES256" => {}
        other => {
            return Err(Error::malformed(format!(
                "{what} is signed with {}, not ES256",
                other.map(Value::to_string).unwrap_or_else(|| "no algorithm".into())
            )))
        }
    }
    if header.contains_key("crit") {
        return Err(Error::malformed(format!(
            "{what} names critical header parameters this client does not know"
        )));
    }
    let kid = match header.get("kid") {
        None => None,
        Some(Value::String(kid)) => Some(kid.as_str()),
        Some(_) => return Err(Error::malformed(format!("{what}'s kid is not a string"))),
    };
    let candidates: Vec<_> = jwks
        .keys
        .iter()
        .filter(|k| k.usable_for_es256() && (kid.is_none() || k.kid.as_deref() == kid))
        .collect();
    if candidates.is_empty() {
        return Err(Error::UnknownKey(format!(
            "{what} is signed by a key this application does not know ({} is not in its JWKS)",
            kid.unwrap_or("no kid")
        )));
    }
    let signature =
        decode_base64url(parts[2]).ok_or_else(|| Error::malformed(format!("{what}'s signature is not base64url")))?;
    let signing_input = &text[..parts[0].len() + 1 + parts[1].len()];
    let signer = candidates
        .into_iter()
        .find(|k| k.verifies(signing_input.as_bytes(), &signature))
        .ok_or_else(|| Error::Signature(format!("{what}'s signature does not verify: it was altered")))?;
    let payload =
        decode_base64url(parts[1]).ok_or_else(|| Error::malformed(format!("{what}'s payload is not base64url")))?;
    Ok(VerifiedJws {
        header,
        payload,
        key_id: signer.kid.clone().unwrap_or_default(),
    })
}
