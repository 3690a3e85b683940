//! License files (CONTRACT section 11): what `POST /v1/license/checkout`, a borrowed seat and the air-gapped
//! `/activate/` page hand an application to run offline. A file is a compact JWS (ES256, header `typ:
//! "license-file+jwt"`) whose payload names the license, its entitlements, the machine, `issuedAt` and `expiresAt`;
//! an encrypted file's payload is AES-256-GCM under a key derived (HKDF-SHA256) from the license's user key and the
//! machine id. An `LRS2` response code of air-gapped activation is verified here too, with the same checks over its
//! signed binary layout, so an application may keep either as its license file.

use std::time::SystemTime;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use hkdf::Hkdf;
use serde_json::Value;
use sha2::Sha256;

use crate::codes::{looks_like_code, read_response_code, CompactResponse, ResponseCode, HASH_BYTES, KEY_ID_BYTES};
use crate::error::{Error, Result};
use crate::instant::{format_iso, millis, now_millis, system_time};
use crate::jwks::{decode_base64_any, short_hash, Jwks};
use crate::jws::verify_compact;
use crate::license::{License, LicenseType, LicensingMode};
use crate::wire::{self, Object};

/// The JWS header `typ` of a license file.
pub const LICENSE_FILE_TYPE: &str = "license-file+jwt";
const ENCRYPTION_INFO: &[u8] = b"license-file";

/// What a license grants, as a license file states it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entitlements {
    /// The product's code.
    pub product_code: String,
    /// `Standard`, `Demo` or `Trial`.
    pub license_type: String,
    /// The edition.
    pub edition: Option<String>,
    /// The features.
    pub features: Vec<String>,
    /// Machines (Activation) or seats (Floating); 0 = unlimited.
    pub max_clients: u64,
    /// When the license expires (`None`: perpetual).
    pub expire_at: Option<SystemTime>,
    /// When maintenance ends.
    pub support_expire_at: Option<SystemTime>,
}

/// A verified license file's content.
#[derive(Debug, Clone, PartialEq)]
pub struct LicenseFile {
    /// 1 for a license file (JWS), 2 for an `LRS2` response code.
    pub v: u8,
    /// The license (from an `LRS2` code: without licensee).
    pub license: License,
    /// What the license grants, for the application to enforce offline.
    pub entitlements: Entitlements,
    /// The machine the file is bound to (for `LRS2`, the one given, whose hash matched).
    pub machine_id: String,
    /// The client, when the file names one (for `LRS2`, the one given when it matched).
    pub client_id: Option<String>,
    /// When the service issued it.
    pub issued_at: SystemTime,
    /// When it stops being valid.
    pub expires_at: SystemTime,
    /// The nonce of the request it answers.
    pub nonce: Option<String>,
    /// For a borrowed floating seat: when the borrow ends.
    pub borrow_until: Option<SystemTime>,
    /// Whether it was encrypted (and opened with the user key and machine id).
    pub encrypted: bool,
    /// The `kid` of the key that signed it.
    pub key_id: String,
}

/// What [`verify_license_file`] checks. `machine_id` is required; other absent members are not checked.
#[derive(Debug, Clone, Default)]
pub struct FileCheck {
    /// This machine: a file issued to another one is refused (`machine`), and an encrypted one does not open.
    pub machine_id: String,
    /// A file of another product's license is refused (`product`).
    pub product_code: Option<String>,
    /// This client: a file naming another client is refused (`machine`).
    pub client_id: Option<String>,
    /// The time to check against (default: the computer's clock).
    pub now: Option<SystemTime>,
    /// The latest time the application has seen: a clock earlier than it was set back (`clock`).
    pub last_seen: Option<SystemTime>,
    /// The license's user key, in any form the service accepts: needed to open an encrypted file (`decrypt`).
    pub user_key: Option<String>,
    /// The file must name this nonce (`nonce`): the answer to this request.
    pub nonce: Option<String>,
    /// Seconds the clock may be behind the service's before an issue time in the future counts as set back
    /// (default 300 when `None`).
    pub clock_skew_secs: Option<u64>,
}

/// A user key as the service compares it (Crockford base32 as people type it): upper case, without spaces and
/// dashes, `I` and `L` read as `1`, `O` as `0`.
pub fn compact_user_key(typed: &str) -> String {
    typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .flat_map(char::to_uppercase)
        .map(|c| match c {
            'I' | 'L' => '1',
            'O' => '0',
            c => c,
        })
        .collect()
}

/// Verifies a license file offline and returns its content: the ES256 signature by a key of `jwks` (`unknownKey`,
/// `signature`), its type (`malformed`), opening it when encrypted (`decrypt`), the machine and client (`machine`),
/// the nonce when given (`nonce`), the product (`product`), the clock (`clock`), its lifetime and the license's
/// expiry (`expired`). An air-gap response code (`LRS2-…`, `LRS1-…`) is taken too.
pub fn verify_license_file(text: &str, jwks: &Jwks, check: &FileCheck) -> Result<LicenseFile> {
    let text = text.trim();
    if !looks_like_code(text) {
        return verify_signed_file(text, jwks, check);
    }
    match read_response_code(text)? {
        ResponseCode::V1 { license_file } => verify_signed_file(&license_file, jwks, check),
        ResponseCode::V2 {
            response,
            signed,
            signature,
            ..
        } => verify_compact_response(&response, &signed, &signature, jwks, check),
    }
}

fn verify_signed_file(jws: &str, jwks: &Jwks, check: &FileCheck) -> Result<LicenseFile> {
    let verified = verify_compact(jws, jwks, "The license file")?;
    match verified.header.get("typ") {
        Some(Value::String(t)) if t == LICENSE_FILE_TYPE => {}
        other => {
            return Err(Error::malformed(format!(
                "The signed text is not a license file (typ {}, not {LICENSE_FILE_TYPE})",
                other.and_then(Value::as_str).unwrap_or("missing")
            )))
        }
    }
    let outer: Object = match serde_json::from_slice(&verified.payload) {
        Ok(Value::Object(o)) => o,
        _ => return Err(Error::malformed("The license file's payload is not a JSON object")),
    };
    let encrypted = outer.contains_key("enc") || outer.contains_key("ciphertext");
    let payload: Object = if encrypted {
        match decrypt(&outer, check)? {
            Value::Object(o) => o,
            _ => return Err(Error::malformed("The license file's payload is not a JSON object")),
        }
    } else {
        outer
    };
    if payload.get("v").and_then(Value::as_f64) != Some(1.0) {
        return Err(Error::malformed(format!(
            "The license file is of version {}, not 1",
            payload
                .get("v")
                .map(Value::to_string)
                .unwrap_or_else(|| "(none)".into())
        )));
    }
    let machine = match payload.get("machine") {
        Some(Value::Object(m)) => m,
        _ => return Err(Error::malformed("The license file names no machine")),
    };
    let Some(Value::String(machine_id)) = machine.get("machineId") else {
        return Err(Error::malformed("The license file names no machine"));
    };
    let client_id = match machine.get("clientId") {
        Some(Value::String(c)) if !c.is_empty() => Some(c.clone()),
        _ => None,
    };
    if *machine_id != check.machine_id {
        return Err(Error::Machine("The license file was issued to another machine".into()));
    }
    if let (Some(wanted), Some(named)) = (&check.client_id, &client_id) {
        if wanted != named {
            return Err(Error::Machine(
                "The license file was issued to another client on this machine".into(),
            ));
        }
    }
    let nonce = payload.get("nonce").and_then(Value::as_str).map(String::from);
    if let Some(wanted) = &check.nonce {
        if nonce.as_ref() != Some(wanted) {
            return Err(Error::Nonce(
                "The license file does not answer this request (another nonce): enter the answer to the code shown now"
                    .into(),
            ));
        }
    }
    let issued_at = wire::date(&payload, "issuedAt", "license file")?;
    let expires_at = wire::date(&payload, "expiresAt", "license file")?;
    let borrow_until = match wire::opt_object(&payload, "borrow", "license file")? {
        Some(b) => Some(wire::date(b, "until", "license file's borrow")?),
        None => None,
    };
    let read = || -> Result<(License, Entitlements)> {
        Ok((
            License::from_json(payload.get("license"))?,
            entitlements_from_json(payload.get("entitlements"))?,
        ))
    };
    let (license, entitlements) =
        read().map_err(|e| Error::malformed(format!("The license file's license is not readable: {e}")))?;
    let mut ends = vec![expires_at];
    ends.extend(borrow_until);
    in_force(&license, &entitlements, issued_at, &ends, check)?;
    Ok(LicenseFile {
        v: 1,
        license,
        entitlements,
        machine_id: machine_id.clone(),
        client_id,
        issued_at: system_time(issued_at),
        expires_at: system_time(expires_at),
        nonce,
        borrow_until: borrow_until.map(system_time),
        encrypted,
        key_id: verified.key_id,
    })
}

fn entitlements_from_json(value: Option<&Value>) -> Result<Entitlements> {
    let o = wire::object(value, "entitlements")?;
    let what = "entitlements";
    let max = wire::number(o, "maxClients", what)?;
    Ok(Entitlements {
        product_code: wire::string(o, "productCode", what)?,
        license_type: wire::string(o, "licenseType", what)?,
        edition: wire::opt_string(o, "edition", what)?,
        features: wire::strings(o, "features", what)?,
        max_clients: if max > 0.0 { max as u64 } else { 0 },
        expire_at: wire::opt_date(o, "expireAt", what)?.map(system_time),
        support_expire_at: wire::opt_date(o, "supportExpireAt", what)?.map(system_time),
    })
}

/// The key an encrypted file is sealed with: HKDF-SHA256(ikm = the compact user key, salt = machine id, info =
/// "license-file"), 32 bytes.
fn file_key(user_key: &str, machine_id: &str) -> [u8; 32] {
    let hk = Hkdf::<Sha256>::new(Some(machine_id.as_bytes()), compact_user_key(user_key).as_bytes());
    let mut okm = [0u8; 32];
    // 32 bytes is far below HKDF-SHA256's limit of 8160: expand cannot fail.
    let _ = hk.expand(ENCRYPTION_INFO, &mut okm);
    okm
}

/// The plain payload of an encrypted one (`{v, enc: "A256GCM", iv, ciphertext, machineHint}`).
fn decrypt(sealed: &Object, check: &FileCheck) -> Result<Value> {
    match sealed.get("enc") {
        Some(Value::String(e)) if e == "A256GCM" => {}
        other => {
            return Err(Error::malformed(format!(
                "The license file is encrypted with {}, not A256GCM",
                other.map(Value::to_string).unwrap_or_else(|| "undefined".into())
            )))
        }
    }
    let Some(user_key) = &check.user_key else {
        return Err(Error::Decrypt(
            "The license file is encrypted: pass the license's user key to open it".into(),
        ));
    };
    let iv = sealed.get("iv").and_then(Value::as_str).and_then(decode_base64_any);
    let ciphertext = sealed
        .get("ciphertext")
        .and_then(Value::as_str)
        .and_then(decode_base64_any);
    let (Some(iv), Some(ciphertext)) = (iv, ciphertext) else {
        return Err(Error::malformed("The encrypted license file has no iv or ciphertext"));
    };
    let refuse = || {
        Error::Decrypt(
            "The encrypted license file does not open with this machine id and user key: it was made for another machine or license"
                .into(),
        )
    };
    let Ok(iv) = <[u8; 12]>::try_from(iv.as_slice()) else {
        return Err(refuse());
    };
    let key = file_key(user_key, &check.machine_id);
    let cipher = Aes256Gcm::new_from_slice(&key).map_err(|_| refuse())?;
    let plain = cipher
        .decrypt(&Nonce::from(iv), ciphertext.as_slice())
        .map_err(|_| refuse())?;
    serde_json::from_slice(&plain).map_err(|_| Error::malformed("The decrypted license file is not JSON"))
}

/// The checks every file passes after its signature and binding: the product (`product`), the clock (`clock`), the
/// file's ends and the license's expiry (`expired`).
fn in_force(
    license: &License,
    entitlements: &Entitlements,
    issued_at: i64,
    ends: &[i64],
    check: &FileCheck,
) -> Result<()> {
    if let Some(product) = &check.product_code {
        if entitlements.product_code != *product {
            return Err(Error::Product(format!(
                "The license file is for product {}, not {product}",
                entitlements.product_code
            )));
        }
    }
    let now = check.now.map(millis).unwrap_or_else(now_millis);
    let skew = i64::try_from(check.clock_skew_secs.unwrap_or(300))
        .unwrap_or(i64::MAX / 2_000)
        .saturating_mul(1000);
    if now.saturating_add(skew) < issued_at {
        return Err(Error::Clock(format!(
            "The computer's clock ({}) is earlier than the license file's issue time ({}): the clock was set back",
            format_iso(now),
            format_iso(issued_at)
        )));
    }
    if let Some(last_seen) = check.last_seen.map(millis) {
        if now.saturating_add(skew) < last_seen {
            return Err(Error::Clock(format!(
                "The computer's clock ({}) is earlier than the last time this application saw ({}): the clock was set back",
                format_iso(now),
                format_iso(last_seen)
            )));
        }
    }
    let end = ends.iter().copied().min().unwrap_or(i64::MAX);
    if now >= end {
        return Err(Error::Expired(format!(
            "The license file expired at {}: check out a new one",
            format_iso(end)
        )));
    }
    if let Some(expire_at) = license.expire_at.map(millis) {
        if now >= expire_at {
            return Err(Error::Expired(format!(
                "The license expired at {}",
                format_iso(expire_at)
            )));
        }
    }
    Ok(())
}

/// An `LRS2` response code's checks (docs/reference/offline-codes.md): the signature by the key its key id names
/// (`unknownKey`, `signature`), this machine's and client's hashes (`machine`), the nonce's when given (`nonce`), then
/// those of every file.
fn verify_compact_response(
    code: &CompactResponse,
    signed: &[u8],
    signature: &[u8],
    jwks: &Jwks,
    check: &FileCheck,
) -> Result<LicenseFile> {
    let named: Vec<_> = jwks
        .p256_keys()
        .filter(|k| {
            k.kid
                .as_deref()
                .is_some_and(|kid| short_hash(kid, KEY_ID_BYTES) == code.key_id)
        })
        .collect();
    if named.is_empty() {
        return Err(Error::UnknownKey(
            "The response code is signed by a key this application does not know (not in its JWKS)".into(),
        ));
    }
    let signer = named
        .into_iter()
        .find(|k| k.verifies(signed, signature))
        .ok_or_else(|| Error::Signature("The response code's signature does not verify: it was altered".into()))?;
    if short_hash(&check.machine_id, HASH_BYTES) != code.machine {
        return Err(Error::Machine("The response code was issued to another machine".into()));
    }
    let client_matched = match (&code.client, &check.client_id) {
        (Some(hash), Some(client)) => {
            if short_hash(client, HASH_BYTES) != *hash {
                return Err(Error::Machine(
                    "The response code was issued to another client on this machine".into(),
                ));
            }
            true
        }
        _ => false,
    };
    if let Some(nonce) = &check.nonce {
        if short_hash(nonce, HASH_BYTES) != code.nonce {
            return Err(Error::Nonce(
                "The response code does not answer this request (another nonce): enter the answer to the code shown now"
                    .into(),
            ));
        }
    }
    let date = |seconds: u32| (seconds != 0).then(|| system_time(i64::from(seconds) * 1000));
    let license_type = LicenseType::from_index(code.license_type as usize);
    let edition = (!code.edition.is_empty()).then(|| code.edition.clone());
    let license = License {
        license_id: code.license_id.clone(),
        licensing_mode: LicensingMode::from_index(code.licensing_mode as usize),
        license_type,
        edition: edition.clone(),
        issue_date: date(code.issue_date),
        expire_at: date(code.expire_at),
        support_expire_at: date(code.support_expire_at),
        features: code.features.clone(),
        licensee: None,
        license_key: None,
    };
    let entitlements = Entitlements {
        product_code: code.product_code.clone(),
        license_type: license_type.as_str().to_string(),
        edition,
        features: code.features.clone(),
        max_clients: u64::from(code.max_clients),
        expire_at: license.expire_at,
        support_expire_at: license.support_expire_at,
    };
    let issued_at = i64::from(code.issued_at) * 1000;
    let expires_at = i64::from(code.expires_at) * 1000;
    in_force(&license, &entitlements, issued_at, &[expires_at], check)?;
    Ok(LicenseFile {
        v: 2,
        license,
        entitlements,
        machine_id: check.machine_id.clone(),
        client_id: if client_matched { check.client_id.clone() } else { None },
        issued_at: system_time(issued_at),
        expires_at: system_time(expires_at),
        nonce: check.nonce.clone(),
        borrow_until: None,
        encrypted: false,
        key_id: signer.kid.clone().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_keys_compact_as_the_service_reads_them() {
        assert_eq!(compact_user_key("abcd-eio l 2"), "ABCDE1012");
    }
}
