//! Offline grace (CONTRACT section 11): a license that validated online stays usable for `offlineGraceDays` (signed
//! into every validation's license key) while the service cannot be reached, then is refused (`grace`).
//!
//! The state directory keeps the last signed validation (`licensing-validation.json`, the format of the TypeScript
//! package's `fileStore`) and the service's keys (`jwks.json`). Only the license key is trusted, through its
//! signature: the grace is counted from its signed `iat` with its signed `offlineGraceDays`, it is verified for this
//! machine, and a clock set back (before the key's issue or the last time seen) is refused (`clock`). A refusal by
//! the service (revoked, expired, deactivated) replaces what is kept, so the grace ends at the first validation that
//! reaches the service.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{json, Value};

use crate::client::{is_licensing_status, Client, ValidateRequest, Validation};
use crate::error::{Error, Result};
use crate::instant::{format_iso, millis, now_millis, parse_iso, system_time};
use crate::jwks::Jwks;
use crate::license::{verify_license_key, KeyCheck, LicenseKeyPayload, LicensingMode};

/// The file of the state directory that keeps the last validation.
pub const VALIDATION_FILE: &str = "licensing-validation.json";
/// The file of the state directory that keeps the service's JWK Set.
pub const JWKS_FILE: &str = "jwks.json";

const DAY_MS: f64 = 86_400_000.0;

/// Writes a file whole: a temporary file renamed over it, so a crash never leaves half a state.
pub(crate) fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let temporary = path.with_extension(format!("{}.tmp", crate::airgap::random_nonce()));
    fs::write(&temporary, text)?;
    fs::rename(&temporary, path).inspect_err(|_| {
        let _ = fs::remove_file(&temporary);
    })
}

/// The JWK Set kept in a state directory (`jwks.json`), if there is a readable one.
pub fn kept_keys(state_dir: &Path) -> Option<Jwks> {
    let text = fs::read_to_string(state_dir.join(JWKS_FILE)).ok()?;
    Jwks::from_json(&text).ok()
}

/// Keeps the JWK Set in a state directory (`jwks.json`).
pub fn keep_keys(state_dir: &Path, jwks: &Jwks) -> Result<()> {
    fs::create_dir_all(state_dir)
        .and_then(|_| write_atomically(&state_dir.join(JWKS_FILE), &jwks.to_json()))
        .map_err(|e| {
            Error::malformed(format!(
                "The state directory {} cannot be written: {e}",
                state_dir.display()
            ))
        })
}

/// The answer of [`OfflineGrace::validate`].
// One is returned per validation: its size does not matter, plain fields are easier to match on.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum GraceOutcome {
    /// The service answered and the answer verified; its license key is kept for offline use.
    Online {
        /// The verified validation.
        validation: Validation,
        /// Until when the license would stay usable offline (`None` when the answer carried no key to keep).
        grace_until: Option<SystemTime>,
    },
    /// The service could not be reached; the kept validation is within its grace.
    Offline {
        /// The verified payload of the last validation's license key.
        license: LicenseKeyPayload,
        /// When that validation was signed.
        validated_at: SystemTime,
        /// When the offline use ends.
        grace_until: SystemTime,
        /// Why the service was not reached.
        cause: Error,
    },
}

impl GraceOutcome {
    /// The license's id.
    pub fn license_id(&self) -> &str {
        match self {
            GraceOutcome::Online { validation, .. } => &validation.license_id,
            GraceOutcome::Offline { license, .. } => &license.license_id,
        }
    }
    /// Whether the answer came from the kept validation.
    pub fn is_offline(&self) -> bool {
        matches!(self, GraceOutcome::Offline { .. })
    }
}

/// Validates online when the service answers, and keeps the license usable offline for its grace days when it
/// does not. Build it with [`OfflineGrace::new`] over a [`Client`] and a state directory (Tauri:
/// `app.path().app_data_dir()`).
#[derive(Debug, Clone)]
pub struct OfflineGrace {
    client: Client,
    dir: PathBuf,
    product_code: Option<String>,
    now: Option<SystemTime>,
    clock_skew_secs: u64,
}

impl OfflineGrace {
    /// Offline grace for `client`, keeping its state in `state_dir` (created when missing).
    pub fn new(client: Client, state_dir: impl Into<PathBuf>) -> OfflineGrace {
        OfflineGrace {
            client,
            dir: state_dir.into(),
            product_code: None,
            now: None,
            clock_skew_secs: 300,
        }
    }
    /// A kept validation of another product's license is not used (and the online answer must be for it).
    pub fn product_code(mut self, product_code: impl Into<String>) -> Self {
        self.product_code = Some(product_code.into());
        self
    }
    /// The clock to believe instead of the computer's (tests, or a clock the application trusts more).
    pub fn now(mut self, now: SystemTime) -> Self {
        self.now = Some(now);
        self
    }
    /// Seconds the clock may be behind before it counts as set back (default 300).
    pub fn clock_skew_secs(mut self, seconds: u64) -> Self {
        self.clock_skew_secs = seconds;
        self
    }

    fn now_ms(&self) -> i64 {
        self.now.map(millis).unwrap_or_else(now_millis)
    }

    fn load(&self) -> serde_json::Map<String, Value> {
        fs::read_to_string(self.dir.join(VALIDATION_FILE))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| match v {
                Value::Object(o) => Some(o),
                _ => None,
            })
            .unwrap_or_default()
    }

    fn save(&self, mut stored: serde_json::Map<String, Value>, now: i64) -> Result<()> {
        let last = stored.get("lastSeen").and_then(Value::as_str).and_then(parse_iso);
        let last_seen = match last {
            Some(l) if l >= now => format_iso(l),
            _ => format_iso(now),
        };
        stored.insert("v".into(), json!(1));
        stored.insert("lastSeen".into(), Value::String(last_seen));
        fs::create_dir_all(&self.dir)
            .and_then(|_| write_atomically(&self.dir.join(VALIDATION_FILE), &Value::Object(stored).to_string()))
            .map_err(|e| {
                Error::malformed(format!(
                    "The state directory {} cannot be written: {e}",
                    self.dir.display()
                ))
            })
    }

    /// The keys to verify the kept validation with: the client's trusted keys, else those kept in the state.
    fn keys(&self) -> Option<Jwks> {
        self.client.trusted_keys().cloned().or_else(|| kept_keys(&self.dir))
    }

    /// Validates the license for `request.machine_id` (required): online when the service answers (its verified
    /// license key is kept with the keys), else from the state within the grace. Refusals: the service's (which also
    /// end the grace), those of verification, and offline `grace` (no validation kept, or its grace ended), `clock`,
    /// `expired`, or the reason of the service's refusal at the last validation that reached it.
    pub fn validate(&self, request: &ValidateRequest) -> Result<GraceOutcome> {
        let machine_id = request
            .machine_id
            .clone()
            .ok_or_else(|| Error::malformed("Offline grace needs the machine id"))?;
        let stored = self.load();
        let request = ValidateRequest {
            product_code: request.product_code.clone().or_else(|| self.product_code.clone()),
            ..request.clone()
        };
        let nonce = request.nonce.clone().unwrap_or_else(crate::airgap::random_nonce);
        let online = self
            .client
            .validate_unverified(&ValidateRequest {
                nonce: Some(nonce.clone()),
                ..request.clone()
            })
            .and_then(|v| self.client.verify_validation(v, &request, Some(&nonce), self.now));
        let now = self.now_ms();
        let validation = match online {
            Ok(v) => v,
            Err(error) => {
                if let Error::Refused {
                    reason,
                    message,
                    status,
                } = &error
                {
                    if is_licensing_status(*status) {
                        // The service judged the license: whatever was kept no longer counts.
                        let mut refused = serde_json::Map::new();
                        refused.insert("machineId".into(), Value::String(machine_id));
                        refused.insert(
                            "refused".into(),
                            json!({ "message": message, "reason": reason, "status": status, "at": format_iso(now) }),
                        );
                        if let Some(last) = stored.get("lastSeen") {
                            refused.insert("lastSeen".into(), last.clone());
                        }
                        self.save(refused, now)?;
                        return Err(error);
                    }
                }
                if !unreachable(&error) {
                    return Err(error);
                }
                return self.offline(stored, &machine_id, error, now);
            }
        };
        let mut kept = serde_json::Map::new();
        kept.insert("machineId".into(), Value::String(machine_id));
        if let Some(last) = stored.get("lastSeen") {
            kept.insert("lastSeen".into(), last.clone());
        }
        let grace_until = match (&validation.license.license_key, &validation.payload) {
            (Some(key), Some(payload)) => {
                kept.insert("licenseKey".into(), Value::String(key.clone()));
                if let Ok(keys) = self.client.signing_keys(false) {
                    keep_keys(&self.dir, &keys)?;
                }
                Some(system_time(grace_of(payload).2))
            }
            _ => None,
        };
        self.save(kept, now)?;
        Ok(GraceOutcome::Online {
            validation,
            grace_until,
        })
    }

    fn offline(
        &self,
        stored: serde_json::Map<String, Value>,
        machine_id: &str,
        cause: Error,
        now: i64,
    ) -> Result<GraceOutcome> {
        let same_machine = stored.get("machineId").and_then(Value::as_str) == Some(machine_id);
        if let (Some(refused), true) = (stored.get("refused"), same_machine) {
            let message = refused.get("message").and_then(Value::as_str).unwrap_or("refused");
            return Err(Error::Refused {
                reason: refused.get("reason").and_then(Value::as_str).unwrap_or("grace").to_string(),
                message: format!(
                    "The licensing service cannot be reached, and at the last validation it refused the license ({message}): it cannot be used offline"
                ),
                status: refused.get("status").and_then(Value::as_u64).and_then(|s| u16::try_from(s).ok()).unwrap_or(0),
            });
        }
        let never = || {
            Error::Grace(format!(
                "The licensing service cannot be reached ({cause}), and the license was never validated online on this machine: connect once to use it offline"
            ))
        };
        let Some(Value::String(license_key)) = stored.get("licenseKey").filter(|_| same_machine) else {
            return Err(never());
        };
        let Some(jwks) = self.keys() else { return Err(never()) };
        // Checked as of its own issue: its signature, machine and product; the grace below decides how long it lasts.
        let iat = peek_iat(license_key).ok_or_else(never)?;
        let check = KeyCheck {
            now: Some(system_time(iat)),
            clock_tolerance_secs: 0,
            product_code: self.product_code.clone(),
            machine_id: Some(machine_id.to_string()),
            nonce: None,
        };
        let payload = verify_license_key(license_key, &jwks, &check).map_err(|_| never())?;
        let (validated_at, days, until) = grace_of(&payload);
        let skew = i64::try_from(self.clock_skew_secs).unwrap_or(0).saturating_mul(1000);
        let last_seen = stored.get("lastSeen").and_then(Value::as_str).and_then(parse_iso);
        if now.saturating_add(skew) < validated_at || last_seen.is_some_and(|l| now.saturating_add(skew) < l) {
            return Err(Error::Clock(format!(
                "The computer's clock ({}) is earlier than the last validation or the last time this application ran: the clock was set back",
                format_iso(now)
            )));
        }
        if let Some(expire_at) = payload.expire_at.map(millis) {
            if expire_at <= now {
                return Err(Error::Expired(format!(
                    "The license expired at {}",
                    format_iso(expire_at)
                )));
            }
        }
        if now >= until {
            return Err(Error::Grace(format!(
                "The licensing service cannot be reached, and the license's {days} days of offline use after its last validation ({}) ended at {}: connect to validate it",
                format_iso(validated_at),
                format_iso(until)
            )));
        }
        self.save(stored, now)?;
        Ok(GraceOutcome::Offline {
            license: payload,
            validated_at: system_time(validated_at),
            grace_until: system_time(until),
            cause,
        })
    }
}

/// Whether the error means the service was not reached (rather than that it refused): grace applies. 429 and 5xx
/// (but the licensing refusals, 52x) are the service or what stands before it being down, not a judgement.
pub fn unreachable(error: &Error) -> bool {
    match error {
        Error::Network(_) => true,
        Error::Refused { status, .. } => !is_licensing_status(*status) && (*status >= 500 || *status == 429),
        _ => false,
    }
}

/// The `iat` (milliseconds) of a license key, read without verifying (to verify it as of its own issue).
fn peek_iat(license_key: &str) -> Option<i64> {
    let payload = license_key.split('.').nth(1)?;
    let bytes = crate::jwks::decode_base64url(payload)?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    value.get("iat").and_then(Value::as_f64).map(|s| (s * 1000.0) as i64)
}

/// The grace of a verified key: (validated at, days, until) in milliseconds. From its `iat`, `offlineGraceDays` days;
/// a Floating key's grace ends with the seat's lease (`exp`): offline use of a floating seat is a borrow.
fn grace_of(payload: &LicenseKeyPayload) -> (i64, f64, i64) {
    let validated_at = (payload.iat * 1000.0) as i64;
    let days = payload.offline_grace_days.unwrap_or(0.0);
    let mut until = validated_at.saturating_add((days * DAY_MS) as i64);
    if payload.licensing_mode == Some(LicensingMode::Floating) {
        if let Some(exp) = payload.exp {
            until = until.min((exp * 1000.0) as i64);
        }
    }
    (validated_at, days, until)
}
