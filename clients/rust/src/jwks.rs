//! The service's signing keys: a JWK Set (`GET /v1/extensions/keys`, CONTRACT section 5) of ES256 (P-256) public
//! keys, and the verification of their signatures (IEEE P1363 `r||s`, 64 bytes).

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::EncodedPoint;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// A JWK Set: `{ "keys": [ … ] }`. Keep it with the application (the state directory's `jwks.json`) to verify
/// license keys, license files and response codes offline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Jwks {
    /// The published keys, the newest signing one among them.
    pub keys: Vec<Jwk>,
}

/// One public key of the set. Members the crate does not use are dropped; keys of other types are kept (and never
/// match).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Jwk {
    /// `EC` for the service's keys.
    pub kty: String,
    /// `P-256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crv: Option<String>,
    /// The x coordinate, base64url.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    /// The y coordinate, base64url.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<String>,
    /// The key id signatures name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kid: Option<String>,
    /// `ES256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    /// `sig`.
    #[serde(default, rename = "use", skip_serializing_if = "Option::is_none")]
    pub use_: Option<String>,
}

impl Jwks {
    /// A JWK Set from its JSON text; `malformed` when it is not one.
    pub fn from_json(text: &str) -> Result<Jwks> {
        serde_json::from_str(text).map_err(|e| Error::malformed(format!("The key set is not a JWK Set: {e}")))
    }

    /// The JWK Set as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{\"keys\":[]}"))
    }

    /// The P-256 keys of the set (`kty` `EC`, `crv` `P-256`, with x and y).
    pub(crate) fn p256_keys(&self) -> impl Iterator<Item = &Jwk> {
        self.keys.iter().filter(|k| k.is_p256())
    }

    /// The P-256 key with this `kid`, when the set has one.
    pub fn find(&self, kid: &str) -> Option<&Jwk> {
        self.p256_keys().find(|k| k.kid.as_deref() == Some(kid))
    }
}

impl Jwk {
    fn is_p256(&self) -> bool {
        self.kty == "EC" && self.crv.as_deref() == Some("P-256") && self.x.is_some() && self.y.is_some()
    }

    /// Whether the key may verify an ES256 JWS (JOSE's key selection: no other `alg`, no other `use`).
    pub(crate) fn usable_for_es256(&self) -> bool {
        self.is_p256()
            && self.alg.as_deref().is_none_or(|a| a == "ES256")
            && self.use_.as_deref().is_none_or(|u| u == "sig")
    }

    /// The verifying key; `None` when the coordinates are not a point of P-256.
    fn verifying_key(&self) -> Option<VerifyingKey> {
        let x: [u8; 32] = decode_base64url(self.x.as_deref()?)?.try_into().ok()?;
        let y: [u8; 32] = decode_base64url(self.y.as_deref()?)?.try_into().ok()?;
        let point = EncodedPoint::from_affine_coordinates(&x.into(), &y.into(), false);
        VerifyingKey::from_encoded_point(&point).ok()
    }

    /// Whether this key signed `message` with ES256 (`signature` is the 64-byte r||s). False for a signature of
    /// another length, a zero or out-of-range r or s, or a key that is not a point of the curve.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        if signature.len() != 64 {
            return false;
        }
        let Some(key) = self.verifying_key() else { return false };
        let Ok(signature) = Signature::from_slice(signature) else {
            return false;
        };
        key.verify(message, &signature).is_ok()
    }
}

fn lenient(alphabet: &alphabet::Alphabet) -> GeneralPurpose {
    GeneralPurpose::new(
        alphabet,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    )
}

/// The bytes of base64url text (padding optional); `None` when it is not base64url.
pub(crate) fn decode_base64url(text: &str) -> Option<Vec<u8>> {
    lenient(&alphabet::URL_SAFE).decode(text).ok()
}

/// The bytes of standard or URL-safe base64, whitespace ignored; `None` when it is neither.
pub(crate) fn decode_base64_any(text: &str) -> Option<Vec<u8>> {
    let normalized: String = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    lenient(&alphabet::STANDARD).decode(normalized).ok()
}

/// The first `n` bytes of SHA-256 of the UTF-8 text: an `LRS2` code's key id and its bindings.
pub(crate) fn short_hash(text: &str, n: usize) -> Vec<u8> {
    let digest = Sha256::digest(text.as_bytes());
    digest[..n].to_vec()
}

/// Checks an ES256 signature over the RFC 8785 canonical JSON of `data` (an update check's `data`, CONTRACT section
/// 5): `signature` is standard base64 (URL-safe accepted) of the 64-byte r||s, `key_id` the `kid` of a key of `jwks`.
/// `unknownKey` when no key has that id, `signature` unless it verifies, `malformed` when `data` cannot be
/// canonicalized.
pub fn verify_data_signature(data: &serde_json::Value, signature: &str, key_id: &str, jwks: &Jwks) -> Result<()> {
    let key = jwks
        .find(key_id)
        .ok_or_else(|| Error::UnknownKey(format!("No published P-256 key has the id {key_id}")))?;
    let bytes = decode_base64_any(signature)
        .filter(|b| b.len() == 64)
        .ok_or_else(|| Error::Signature("The signature is not 64 bytes of base64 (r||s)".into()))?;
    let message = crate::jcs::canonicalize(data)?;
    if key.verifies(message.as_bytes(), &bytes) {
        Ok(())
    } else {
        Err(Error::Signature("The signature does not match the data".into()))
    }
}
