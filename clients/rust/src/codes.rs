//! The codes of air-gapped activation (CONTRACT section 11, docs/reference/offline-codes.md): `LRQ1` request codes,
//! `LRS2` response codes (a compact signed binary layout) and `LRS1` (a license file's JWS, still read).
//!
//! Each is Crockford base32 of its payload followed by the payload's CRC-32 (big-endian), in groups of five joined by
//! `-`, after its prefix. Reading is as lenient as Crockford base32: any case, spaces and dashes ignored, `I` and `L`
//! read as `1`, `O` as `0`.

use serde::Serialize;

use crate::error::{Error, Result};

/// The prefix of a request code.
pub const REQUEST_CODE_PREFIX: &str = "LRQ1";
/// The prefix of a response code of the first version (a license file's compact JWS).
pub const RESPONSE_CODE_PREFIX: &str = "LRS1";
/// The prefix of a response code of the compact signed layout: what the service issues.
pub const COMPACT_RESPONSE_CODE_PREFIX: &str = "LRS2";

/// Bytes of the key id in an `LRS2` code.
pub(crate) const KEY_ID_BYTES: usize = 4;
/// Bytes of the machine, client and nonce hashes in an `LRS2` code.
pub(crate) const HASH_BYTES: usize = 8;
const SIGNATURE_BYTES: usize = 64;
const CLIENT_FLAG: u8 = 1;

const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

fn value_of(c: char) -> Option<u32> {
    let c = c.to_ascii_uppercase();
    match c {
        'I' | 'L' => Some(1),
        'O' => Some(0),
        _ => ALPHABET.iter().position(|&a| a as char == c).map(|p| p as u32),
    }
}

/// Crockford base32 of the bytes (upper case, no padding; the last character zero-padded).
pub fn base32_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 8 / 5 + 1);
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for &byte in bytes {
        buffer = ((buffer << 8) | u32::from(byte)) & 0xffff;
        bits += 8;
        while bits >= 5 {
            out.push(ALPHABET[((buffer >> (bits - 5)) & 31) as usize] as char);
            bits -= 5;
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// The bytes of Crockford base32 text (dashes and spaces already removed); whole bytes only, the padding bits
/// dropped. `None` for a character outside the alphabet.
pub fn base32_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 5 / 8);
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for c in text.chars() {
        let value = value_of(c)?;
        buffer = ((buffer << 5) | value) & 0xffff;
        bits += 5;
        if bits >= 8 {
            out.push(((buffer >> (bits - 8)) & 0xff) as u8);
            bits -= 8;
        }
    }
    Some(out)
}

/// `PREFIX-XXXXX-XXXXX-…`: the payload with its CRC-32, in base32 groups of five.
fn encode_code(prefix: &str, payload: &[u8]) -> String {
    let mut bytes = payload.to_vec();
    bytes.extend_from_slice(&crc32fast::hash(payload).to_be_bytes());
    let text = base32_encode(&bytes);
    let mut out = String::from(prefix);
    for group in text.as_bytes().chunks(5) {
        out.push('-');
        out.push_str(std::str::from_utf8(group).unwrap_or_default());
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Request,
    Response,
}

/// The prefix and payload of a code of the expected kind, its checksum matched. Every failure is `malformed`, with
/// a message saying which (a request code where a response belongs, a mistyped character, an incomplete code).
fn decode_code(kind: Kind, code: &str) -> Result<(String, Vec<u8>)> {
    let (name, accepted, expected): (&str, &[&str], &str) = match kind {
        Kind::Request => ("request code", &[REQUEST_CODE_PREFIX], REQUEST_CODE_PREFIX),
        Kind::Response => (
            "response code",
            &[COMPACT_RESPONSE_CODE_PREFIX, RESPONSE_CODE_PREFIX],
            COMPACT_RESPONSE_CODE_PREFIX,
        ),
    };
    let compact: String = code
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if compact.is_empty() {
        return Err(Error::malformed(format!("The {name} is empty.")));
    }
    let prefix: String = compact.chars().take(4).collect();
    if !accepted.contains(&prefix.as_str()) {
        let other = match prefix.as_str() {
            REQUEST_CODE_PREFIX => Some("request code"),
            RESPONSE_CODE_PREFIX | COMPACT_RESPONSE_CODE_PREFIX => Some("response code"),
            _ => None,
        };
        if let Some(other) = other {
            return Err(Error::malformed(format!(
                "This is a {other} ({prefix}-…), not a {name} ({expected}-…): {}.",
                if kind == Kind::Request {
                    "paste the code the application shows, not the answer"
                } else {
                    "enter the answer from the activation page, not the code the application shows"
                }
            )));
        }
        let b = prefix.as_bytes();
        if b.len() == 4 && b[0] == b'L' && b[1] == b'R' && (b[2] == b'Q' || b[2] == b'S') && b[3].is_ascii_digit() {
            return Err(Error::malformed(format!(
                "This {name} is of version {}, which this version does not read (expected {expected}-…).",
                b[3] as char
            )));
        }
        return Err(Error::malformed(format!("A {name} starts with {expected}-.")));
    }
    let bytes = base32_decode(&compact[4..]).ok_or_else(|| {
        Error::malformed(format!(
            "The {name} has characters that are not part of it (only digits and the letters A-Z except U)."
        ))
    })?;
    if bytes.len() <= 4 {
        return Err(Error::malformed(format!(
            "The {name} is incomplete: part of it is missing."
        )));
    }
    let (payload, sum) = bytes.split_at(bytes.len() - 4);
    if sum != crc32fast::hash(payload).to_be_bytes() {
        return Err(Error::malformed(format!(
            "The {name}'s checksum does not match: a character was mistyped or part of the code is missing."
        )));
    }
    Ok((prefix, payload.to_vec()))
}

/// What a request code carries: the license, this machine, and a nonce the answer must echo.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OfflineRequest {
    /// The license's user key.
    pub user_key: String,
    /// The machine to activate.
    pub machine_id: String,
    /// The client on the machine, when the application uses one.
    pub client_id: Option<String>,
    /// A fresh random value the response must name.
    pub nonce: String,
    /// The application's product code: the service refuses another product's license.
    pub product_code: Option<String>,
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

/// The JSON text a request code carries, members in the order `JSON.stringify` writes them:
/// `{"v":1,"k":…,"m":…,"c":…,"n":…,"p":…}` (`c`, `p` left out when absent).
pub fn request_json(request: &OfflineRequest) -> String {
    let mut out = format!(
        "{{\"v\":1,\"k\":{},\"m\":{}",
        json_string(&request.user_key),
        json_string(&request.machine_id)
    );
    if let Some(c) = &request.client_id {
        out.push_str(&format!(",\"c\":{}", json_string(c)));
    }
    out.push_str(&format!(",\"n\":{}", json_string(&request.nonce)));
    if let Some(p) = &request.product_code {
        out.push_str(&format!(",\"p\":{}", json_string(p)));
    }
    out.push('}');
    out
}

/// The request code (`LRQ1-…`) of a request.
pub fn encode_request_code(request: &OfflineRequest) -> String {
    encode_code(REQUEST_CODE_PREFIX, request_json(request).as_bytes())
}

/// The request a request code carries (what the `/activate/` page reads); `malformed` when it is not one.
pub fn decode_request_code(code: &str) -> Result<OfflineRequest> {
    let (_, payload) = decode_code(Kind::Request, code)?;
    let refuse = || Error::malformed("The request code does not hold a request (license, machine and nonce).");
    let value: serde_json::Value = serde_json::from_slice(&payload).map_err(|_| refuse())?;
    let o = value.as_object().ok_or_else(refuse)?;
    let text = |key: &str| -> Result<Option<String>> {
        match o.get(key) {
            None => Ok(None),
            Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(refuse()),
        }
    };
    if o.get("v").and_then(serde_json::Value::as_f64) != Some(1.0) {
        return Err(refuse());
    }
    Ok(OfflineRequest {
        user_key: text("k")?.ok_or_else(refuse)?,
        machine_id: text("m")?.ok_or_else(refuse)?,
        client_id: text("c")?,
        nonce: text("n")?.ok_or_else(refuse)?,
        product_code: text("p")?,
    })
}

/// The response code (`LRS1-…`) of a license file's compact JWS. The service issues `LRS2` instead; this one is for
/// tests and for codes made from a downloaded file.
pub fn encode_response_code(license_file: &str) -> String {
    encode_code(RESPONSE_CODE_PREFIX, license_file.trim().as_bytes())
}

/// What an `LRS2` response code states, signed. Times are Unix seconds (0 = none); the key id and the hashes are the
/// first bytes of SHA-256 of the UTF-8 text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactResponse {
    /// The first 4 bytes of SHA-256 of the signing key's `kid`.
    pub key_id: Vec<u8>,
    /// When the service issued it.
    pub issued_at: u32,
    /// When it stops being valid.
    pub expires_at: u32,
    /// The first 8 bytes of SHA-256 of the machine id.
    pub machine: Vec<u8>,
    /// Of the client id, when the request named one.
    pub client: Option<Vec<u8>>,
    /// Of the request's nonce.
    pub nonce: Vec<u8>,
    /// 0 File, 1 Activation, 2 Floating.
    pub licensing_mode: u8,
    /// 0 Standard, 1 Demo, 2 Trial.
    pub license_type: u8,
    /// Machines or seats; 0 = unlimited.
    pub max_clients: u32,
    /// The license's issue date (0 = none).
    pub issue_date: u32,
    /// The license's expiry (0 = perpetual).
    pub expire_at: u32,
    /// The end of maintenance (0 = none).
    pub support_expire_at: u32,
    /// The license's id.
    pub license_id: String,
    /// The product's code.
    pub product_code: String,
    /// The edition ("" = none).
    pub edition: String,
    /// The features.
    pub features: Vec<String>,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }
    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn text(&mut self) -> Option<String> {
        let n = self.byte()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

/// The fields of an `LRS2` body; `malformed` when the bytes are not one (short, extra bytes, unknown flags, mode or
/// type, text that is not UTF-8).
pub fn decode_compact_response(body: &[u8]) -> Result<CompactResponse> {
    let refuse = || Error::malformed("The response code does not hold a response.");
    let mut r = Reader { bytes: body, at: 0 };
    let mut read = || -> Option<CompactResponse> {
        let flags = r.byte()?;
        if flags & !CLIENT_FLAG != 0 {
            return None;
        }
        let key_id = r.take(KEY_ID_BYTES)?.to_vec();
        let issued_at = r.u32()?;
        let expires_at = r.u32()?;
        let machine = r.take(HASH_BYTES)?.to_vec();
        let client = if flags & CLIENT_FLAG != 0 {
            Some(r.take(HASH_BYTES)?.to_vec())
        } else {
            None
        };
        let nonce = r.take(HASH_BYTES)?.to_vec();
        let licensing_mode = r.byte()?;
        let license_type = r.byte()?;
        let max_clients = r.u32()?;
        let issue_date = r.u32()?;
        let expire_at = r.u32()?;
        let support_expire_at = r.u32()?;
        let license_id = r.text()?;
        let product_code = r.text()?;
        let edition = r.text()?;
        let count = r.byte()?;
        let mut features = Vec::with_capacity(count as usize);
        for _ in 0..count {
            features.push(r.text()?);
        }
        if r.at != body.len() || licensing_mode > 2 || license_type > 2 {
            return None;
        }
        Some(CompactResponse {
            key_id,
            issued_at,
            expires_at,
            machine,
            client,
            nonce,
            licensing_mode,
            license_type,
            max_clients,
            issue_date,
            expire_at,
            support_expire_at,
            license_id,
            product_code,
            edition,
            features,
        })
    };
    read().ok_or_else(refuse)
}

/// A response code read (its checksum matched), not yet verified.
#[derive(Debug, Clone)]
pub enum ResponseCode {
    /// `LRS1`: a license file's compact JWS.
    V1 {
        /// The license file (compact JWS).
        license_file: String,
    },
    /// `LRS2`: the compact layout and its signature.
    V2 {
        /// The code as the service writes it (upper case, groups of five): what to save as the license file.
        code: String,
        /// What it states.
        response: Box<CompactResponse>,
        /// What the signature covers: ASCII `LRS2`, then the body.
        signed: Vec<u8>,
        /// The signature (r||s).
        signature: Vec<u8>,
    },
}

/// Reads a response code of either version: `malformed` when it is mistyped, incomplete, a request code, or holds
/// no response. Nothing is verified here.
pub fn read_response_code(code: &str) -> Result<ResponseCode> {
    let (prefix, payload) = decode_code(Kind::Response, code)?;
    if prefix == COMPACT_RESPONSE_CODE_PREFIX {
        if payload.len() <= SIGNATURE_BYTES {
            return Err(Error::malformed("The response code does not hold a response."));
        }
        let (body, signature) = payload.split_at(payload.len() - SIGNATURE_BYTES);
        let response = decode_compact_response(body)?;
        let mut signed = COMPACT_RESPONSE_CODE_PREFIX.as_bytes().to_vec();
        signed.extend_from_slice(body);
        return Ok(ResponseCode::V2 {
            code: encode_code(&prefix, &payload),
            response: Box::new(response),
            signed,
            signature: signature.to_vec(),
        });
    }
    let refuse = || Error::malformed("The response code does not hold a license file.");
    let jws = String::from_utf8(payload).map_err(|_| refuse())?;
    let parts: Vec<&str> = jws.split('.').collect();
    let base64url = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if parts.len() != 3 || !parts.iter().all(base64url) {
        return Err(refuse());
    }
    Ok(ResponseCode::V1 { license_file: jws })
}

/// Whether the text looks like a code (`LR` + a letter + a digit), not a license file's JWS.
pub(crate) fn looks_like_code(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 4
        && b[0].eq_ignore_ascii_case(&b'L')
        && b[1].eq_ignore_ascii_case(&b'R')
        && b[2].is_ascii_alphabetic()
        && b[3].is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_code_round_trip() {
        let request = OfflineRequest {
            user_key: "ABCDE-12345".into(),
            machine_id: "PC-1".into(),
            client_id: Some("alice".into()),
            nonce: "00ff".into(),
            product_code: Some("studio".into()),
        };
        let code = encode_request_code(&request);
        assert!(code.starts_with("LRQ1-"));
        assert_eq!(
            decode_request_code(&code.to_lowercase().replace('-', " ")).unwrap(),
            request
        );
        assert_eq!(read_response_code(&code).unwrap_err().code(), "malformed");
        let mut typo = code.into_bytes();
        let last = typo.len() - 1;
        typo[last] = if typo[last] == b'0' { b'1' } else { b'0' };
        assert_eq!(
            decode_request_code(std::str::from_utf8(&typo).unwrap())
                .unwrap_err()
                .code(),
            "malformed"
        );
    }

    #[test]
    fn base32_as_crockford() {
        assert_eq!(base32_encode(b"hello"), "D1JPRV3F");
        assert_eq!(base32_decode("d1jprv3f").unwrap(), b"hello");
        assert_eq!(base32_decode("D1JPRV3U"), None);
        assert_eq!(base32_decode("0O1IL"), base32_decode("00111"));
    }
}
