//! The license as the service describes it (CONTRACT sections 3 and 4), and the verification of its signed license
//! key (`license.licenseKey`: a compact JWS, ES256, by a key of the JWKS) offline.

use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::instant::{millis, now_millis, system_time};
use crate::jwks::Jwks;
use crate::jws::verify_compact;
use crate::wire::{self, Object};

/// How a license is used: a license file alone, activations per machine, or floating seats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum LicensingMode {
    /// A license file is the license (no activation).
    File,
    /// Activated per machine, up to `maxClients` machines.
    Activation,
    /// Seats held with heartbeats, up to `maxClients` at once.
    Floating,
}

/// The kind of license.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum LicenseType {
    /// A paid license.
    Standard,
    /// A demonstration license.
    Demo,
    /// A trial.
    Trial,
}

/// A license's status, as validate and the license key say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum LicenseStatus {
    /// A live activation or seat for this machine.
    Activated,
    /// Usable, but not activated here (File mode, or no machine named).
    NotActivated,
    /// Expired.
    Expired,
    /// Revoked.
    Revoked,
    /// Changed outside the API.
    Tampered,
}

const MODES: [&str; 3] = ["File", "Activation", "Floating"];
const TYPES: [&str; 3] = ["Standard", "Demo", "Trial"];
const STATUSES: [&str; 5] = ["Activated", "NotActivated", "Expired", "Revoked", "Tampered"];

impl LicensingMode {
    /// By name (any case) or number (0 File, 1 Activation, 2 Floating).
    pub(crate) fn read(value: Option<&Value>, what: &str) -> Result<Self> {
        Ok(Self::from_index(wire::enum_index(&MODES, value, what)?))
    }
    pub(crate) fn from_index(i: usize) -> Self {
        match i {
            0 => LicensingMode::File,
            1 => LicensingMode::Activation,
            _ => LicensingMode::Floating,
        }
    }
    /// The name: `File`, `Activation`, `Floating`.
    pub fn as_str(self) -> &'static str {
        MODES[self as usize]
    }
}

impl LicenseType {
    /// By name (any case) or number (0 Standard, 1 Demo, 2 Trial).
    pub(crate) fn read(value: Option<&Value>, what: &str) -> Result<Self> {
        Ok(Self::from_index(wire::enum_index(&TYPES, value, what)?))
    }
    pub(crate) fn from_index(i: usize) -> Self {
        match i {
            0 => LicenseType::Standard,
            1 => LicenseType::Demo,
            _ => LicenseType::Trial,
        }
    }
    /// The name: `Standard`, `Demo`, `Trial`.
    pub fn as_str(self) -> &'static str {
        TYPES[self as usize]
    }
}

impl LicenseStatus {
    pub(crate) fn read(value: Option<&Value>, what: &str) -> Result<Self> {
        if !matches!(value, Some(Value::String(_))) {
            return Err(Error::malformed(format!("{what} is not a status name")));
        }
        Ok(match wire::enum_index(&STATUSES, value, what)? {
            0 => LicenseStatus::Activated,
            1 => LicenseStatus::NotActivated,
            2 => LicenseStatus::Expired,
            3 => LicenseStatus::Revoked,
            _ => LicenseStatus::Tampered,
        })
    }
    /// The name: `Activated`, `NotActivated`, `Expired`, `Revoked`, `Tampered`.
    pub fn as_str(self) -> &'static str {
        STATUSES[self as usize]
    }
}

/// Who the license is for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Licensee {
    /// The licensee's name.
    pub name: Option<String>,
    /// Their email address.
    pub email: Option<String>,
    /// Their company.
    pub company: Option<String>,
}

/// The `license` of activate, validate and seat answers, and of a license file.
#[derive(Debug, Clone, PartialEq)]
pub struct License {
    /// The license's public id (`lic…`).
    pub license_id: String,
    /// File, Activation or Floating.
    pub licensing_mode: LicensingMode,
    /// Standard, Demo or Trial.
    pub license_type: LicenseType,
    /// The edition, when the license has one.
    pub edition: Option<String>,
    /// When it was issued.
    pub issue_date: Option<SystemTime>,
    /// When it expires (`None`: perpetual).
    pub expire_at: Option<SystemTime>,
    /// When maintenance ends.
    pub support_expire_at: Option<SystemTime>,
    /// The features it grants.
    pub features: Vec<String>,
    /// Who it is for (absent from an `LRS2` response code).
    pub licensee: Option<Licensee>,
    /// The signed license key (compact JWS), where the service issued one: verify it with
    /// [`verify_license_key`].
    pub license_key: Option<String>,
}

impl License {
    pub(crate) fn from_json(value: Option<&Value>) -> Result<License> {
        let o = wire::object(value, "license")?;
        let licensee = match wire::opt_object(o, "licensee", "license")? {
            None => None,
            Some(l) => {
                let licensee = Licensee {
                    name: wire::opt_string(l, "name", "license.licensee")?,
                    email: wire::opt_string(l, "email", "license.licensee")?,
                    company: wire::opt_string(l, "company", "license.licensee")?,
                };
                // An empty licensee is no licensee, as gRPC's unset message is.
                (licensee != Licensee::default()).then_some(licensee)
            }
        };
        Ok(License {
            license_id: wire::string(o, "licenseId", "license")?,
            licensing_mode: LicensingMode::read(o.get("licensingMode"), "license.licensingMode")?,
            license_type: LicenseType::read(o.get("licenseType"), "license.licenseType")?,
            edition: wire::opt_string(o, "edition", "license")?,
            issue_date: wire::opt_date(o, "issueDate", "license")?.map(system_time),
            expire_at: wire::opt_date(o, "expireAt", "license")?.map(system_time),
            support_expire_at: wire::opt_date(o, "supportExpireAt", "license")?.map(system_time),
            features: wire::strings(o, "features", "license")?,
            licensee,
            license_key: wire::opt_string(o, "licenseKey", "license")?,
        })
    }
}

/// What a verified license key states (its signed payload).
#[derive(Debug, Clone, PartialEq)]
pub struct LicenseKeyPayload {
    /// The license's public id.
    pub license_id: String,
    /// The product it is for.
    pub product_code: Option<String>,
    /// File, Activation or Floating.
    pub licensing_mode: Option<LicensingMode>,
    /// Standard, Demo or Trial.
    pub license_type: Option<LicenseType>,
    /// The edition.
    pub edition: Option<String>,
    /// The features it grants.
    pub features: Vec<String>,
    /// The status when it was signed.
    pub status: Option<LicenseStatus>,
    /// The license's own expiry.
    pub expire_at: Option<SystemTime>,
    /// The end of maintenance.
    pub support_expire_at: Option<SystemTime>,
    /// The machine it proves a use on.
    pub machine_id: Option<String>,
    /// The client on that machine.
    pub client_id: Option<String>,
    /// The nonce of the request it answers.
    pub nonce: Option<String>,
    /// When it was signed (JWT `iat`, Unix seconds, the service's clock).
    pub iat: f64,
    /// When the key stops proving anything (JWT `exp`, Unix seconds).
    pub exp: Option<f64>,
    /// Days the license stays usable offline after this validation (`Licensing:OfflineGraceDays`).
    pub offline_grace_days: Option<f64>,
}

impl LicenseKeyPayload {
    /// When it was signed.
    pub fn issued_at(&self) -> SystemTime {
        system_time((self.iat * 1000.0) as i64)
    }
    /// When it expires, if it says.
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.exp.map(|e| system_time((e * 1000.0) as i64))
    }

    fn from_claims(o: &Object) -> Result<LicenseKeyPayload> {
        let what = "payload";
        let iat = wire::opt_number(o, "iat", what)?.ok_or_else(|| Error::malformed("payload.iat is missing"))?;
        let opt_enum = |key: &str| o.get(key).filter(|v| !v.is_null());
        Ok(LicenseKeyPayload {
            license_id: wire::string(o, "licenseId", what)?,
            product_code: wire::opt_string(o, "productCode", what)?,
            licensing_mode: opt_enum("licensingMode")
                .map(|v| LicensingMode::read(Some(v), "payload.licensingMode"))
                .transpose()?,
            license_type: opt_enum("licenseType")
                .map(|v| LicenseType::read(Some(v), "payload.licenseType"))
                .transpose()?,
            edition: wire::opt_string(o, "edition", what)?,
            features: wire::strings(o, "features", what)?,
            status: opt_enum("status")
                .map(|v| LicenseStatus::read(Some(v), "payload.status"))
                .transpose()?,
            expire_at: wire::opt_date(o, "expireAt", what)?.map(system_time),
            support_expire_at: wire::opt_date(o, "supportExpireAt", what)?.map(system_time),
            machine_id: wire::opt_string(o, "machineId", what)?,
            client_id: wire::opt_string(o, "clientId", what)?,
            nonce: wire::opt_string(o, "nonce", what)?,
            iat,
            exp: wire::opt_number(o, "exp", what)?,
            offline_grace_days: wire::opt_number(o, "offlineGraceDays", what)?,
        })
    }
}

/// What [`verify_license_key`] checks beyond the signature. Absent members are not checked.
#[derive(Debug, Clone, Default)]
pub struct KeyCheck {
    /// The time to check expiry against (default: the computer's clock).
    pub now: Option<SystemTime>,
    /// Seconds of clock skew tolerated on `exp` and `expireAt` (default 0).
    pub clock_tolerance_secs: u64,
    /// A key issued for another product (or naming none) is refused: `product`.
    pub product_code: Option<String>,
    /// This machine: a key issued to another one, or an Activation or Floating key naming none, is refused:
    /// `machine`.
    pub machine_id: Option<String>,
    /// The nonce the request sent: a key that does not echo it is refused: `nonce`.
    pub nonce: Option<String>,
}

/// Verifies a license key (`license.licenseKey`, a compact JWS) against a JWK Set, offline, as JOSE does: the
/// header (`malformed`), the key its `kid` names (`unknownKey`), the ES256 signature (`signature`), the claims (`exp`
/// and the license's `expireAt`: `expired`), then the product, machine and nonce of `check`.
pub fn verify_license_key(license_key: &str, jwks: &Jwks, check: &KeyCheck) -> Result<LicenseKeyPayload> {
    let verified = verify_compact(license_key.trim(), jwks, "The license key")?;
    let claims: Object = match serde_json::from_slice(&verified.payload) {
        Ok(Value::Object(o)) => o,
        _ => return Err(Error::malformed("The license key's payload is not a JSON object")),
    };
    let now = check.now.map(millis).unwrap_or_else(now_millis);
    let tolerance = i64::try_from(check.clock_tolerance_secs)
        .unwrap_or(i64::MAX / 2_000)
        .saturating_mul(1000);
    // The registered claims as JOSE checks them: numbers, `nbf` passed, `exp` ahead (whole seconds).
    for claim in ["iat", "nbf", "exp"] {
        if let Some(v) = claims.get(claim) {
            if !v.is_number() {
                return Err(Error::malformed(format!(
                    "The license key's \"{claim}\" claim is not a number"
                )));
            }
        }
    }
    let now_secs = now.div_euclid(1000) as f64;
    let tolerance_secs = (tolerance / 1000) as f64;
    if let Some(nbf) = claims.get("nbf").and_then(Value::as_f64) {
        if nbf > now_secs + tolerance_secs {
            return Err(Error::malformed("The license key is not valid yet (nbf)"));
        }
    }
    if let Some(exp) = claims.get("exp").and_then(Value::as_f64) {
        if exp <= now_secs - tolerance_secs {
            return Err(Error::Expired("The license key has expired".into()));
        }
    }
    let payload = LicenseKeyPayload::from_claims(&claims)
        .map_err(|e| Error::malformed(format!("The license key's payload is not a license: {e}")))?;
    if let Some(expire_at) = payload.expire_at {
        if millis(expire_at).saturating_add(tolerance) <= now {
            return Err(Error::Expired(format!(
                "The license expired at {}",
                crate::instant::format_system_time(expire_at)
            )));
        }
    }
    if let Some(product) = &check.product_code {
        if payload.product_code.as_ref() != Some(product) {
            return Err(Error::Product(format!(
                "The license key is for product {}, not {product}",
                payload.product_code.as_deref().unwrap_or("(none)")
            )));
        }
    }
    if let Some(machine) = &check.machine_id {
        let needs_machine = matches!(
            payload.licensing_mode,
            Some(LicensingMode::Activation | LicensingMode::Floating)
        );
        match &payload.machine_id {
            None if needs_machine => return Err(Error::Machine("The license key names no machine".into())),
            Some(m) if m != machine => {
                return Err(Error::Machine("The license key was issued to another machine".into()))
            }
            _ => {}
        }
    }
    if let Some(nonce) = &check.nonce {
        if payload.nonce.as_ref() != Some(nonce) {
            return Err(Error::Nonce(
                "The license key does not echo this request's nonce: it is not the answer to this request".into(),
            ));
        }
    }
    Ok(payload)
}
