//! The signed update check (`GET /v1/updates/{productCode}`, CONTRACT sections 5 and 7): `data` is read only after
//! its signature verified over its canonical JSON.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::jwks::{verify_data_signature, Jwks};
use crate::wire;

/// What [`crate::Client::check_for_update`] asks.
#[derive(Debug, Clone, Default)]
pub struct UpdateCheckRequest {
    /// The product's code.
    pub product_code: String,
    /// The running version.
    pub version: String,
    /// The platform (`win-x64`, `darwin-arm64`, `linux-x64`…).
    pub platform: String,
    /// The channel, when not the default.
    pub channel: Option<String>,
    /// The user key, when not the client's (a licensed caller may be offered gated releases).
    pub user_key: Option<String>,
    /// The install id, when not the client's.
    pub install_id: Option<String>,
}

/// The file to download.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateDownload {
    /// Its name.
    pub file_name: String,
    /// `installer`, `zip`…
    pub kind: String,
    /// Bytes.
    pub size: u64,
    /// Hex SHA-256.
    pub sha256: String,
    /// Base64 SHA-512.
    pub sha512: String,
    /// Where to download it (with a download token when gated).
    pub url: String,
}

/// A verified update check.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateCheck {
    /// Whether a newer release is offered (`data.updateAvailable`).
    pub available: bool,
    /// The offered release's version (`data.release.version`), if any.
    pub version: Option<String>,
    /// Whether the offered release is required.
    pub required: bool,
    /// Whether the offered release is a rollback (to an earlier version).
    pub rollback: bool,
    /// Whether the caller may install it.
    pub installable: bool,
    /// Why it is withheld, when it is.
    pub withheld_reason: Option<String>,
    /// The newest version.
    pub latest: Option<String>,
    /// The file to download.
    pub download: Option<UpdateDownload>,
    /// The signed `data` as the service sent it (`Null` for a 204).
    pub data: Value,
    /// The signature (standard base64 of r||s); empty for a 204.
    pub signature: String,
    /// The `kid` of the key that signed it.
    pub key_id: String,
}

impl UpdateCheck {
    /// The answer for 204 (nothing installable): no update.
    pub(crate) fn nothing() -> UpdateCheck {
        UpdateCheck {
            available: false,
            version: None,
            required: false,
            rollback: false,
            installable: false,
            withheld_reason: None,
            latest: None,
            download: None,
            data: Value::Null,
            signature: String::new(),
            key_id: String::new(),
        }
    }
}

/// Verifies an update check answer (`{ data, signature, keyId }`) against the JWK Set: `malformed` without them,
/// `unknownKey`, `signature`; then reads `data`.
pub fn verify_update_check(answer: &Value, jwks: &Jwks) -> Result<UpdateCheck> {
    let o = wire::object(Some(answer), "The update check")?;
    let (Some(data @ Value::Object(d)), Some(Value::String(signature)), Some(Value::String(key_id))) =
        (o.get("data"), o.get("signature"), o.get("keyId"))
    else {
        return Err(Error::malformed("The update check has no data, signature or keyId"));
    };
    verify_data_signature(data, signature, key_id, jwks)?;
    let what = "data";
    let available = wire::opt_bool(d, "updateAvailable", what)?
        .ok_or_else(|| Error::malformed("data.updateAvailable is missing"))?;
    let release = wire::opt_object(d, "release", what)?;
    let download = match wire::opt_object(d, "download", what)? {
        None => None,
        Some(x) => {
            let w = "data.download";
            Some(UpdateDownload {
                file_name: wire::string(x, "fileName", w)?,
                kind: wire::string(x, "kind", w)?,
                size: wire::number(x, "size", w)?.max(0.0) as u64,
                sha256: wire::string(x, "sha256", w)?,
                sha512: wire::string(x, "sha512", w)?,
                url: wire::string(x, "url", w)?,
            })
        }
    };
    Ok(UpdateCheck {
        available,
        version: release
            .map(|r| wire::string(r, "version", "data.release"))
            .transpose()?,
        // A service without release control sends neither: nothing is required, nothing rolled back.
        required: wire::opt_bool(d, "required", what)?.unwrap_or(false),
        rollback: wire::opt_bool(d, "rollback", what)?.unwrap_or(false),
        installable: wire::opt_bool(d, "installable", what)?.unwrap_or(false),
        withheld_reason: wire::opt_string(d, "withheldReason", what)?,
        latest: wire::opt_string(d, "latest", what)?,
        download,
        data: data.clone(),
        signature: signature.clone(),
        key_id: key_id.clone(),
    })
}
