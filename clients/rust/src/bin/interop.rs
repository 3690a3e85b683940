//! The Rust interop program of CONTRACT 14: `interop <case> [options]` runs one case with this crate and prints one
//! JSON object on stdout; exit 0 when the case succeeded, 1 when it was refused (`{"error":{"code","message"}}`,
//! the refusal codes of CONTRACT 14), 2 on misuse. scripts/interop.mjs runs it against a local service.
//!
//! Cases: activate, deactivate, validate, seat-request, seat-heartbeat, seat-release, checkout, verify-file,
//! airgap-request, airgap-verify, update-check, session, and bench-validate (bench/clients.mjs: validate with its
//! verification over one kept-alive connection for --seconds, then the verification alone). Options: --url,
//! --product, --user-key, --machine, --client, --version, --platform, --file, --state, --now, --ca, --nonce,
//! --status, --seconds.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use licensing_client::{
    create_activation_request, format_system_time, keep_keys, kept_keys, parse_system_time, verify_activation_response,
    verify_license_file, verify_license_key, ActivateRequest, ActivationRequestInput, CheckoutRequest, Client,
    DeactivateRequest, Error, FileCheck, GraceOutcome, Jwks, KeyCheck, OfflineGrace, SeatRequest, SessionRecord,
    SessionStatus, UpdateCheckRequest, ValidateRequest, DEFAULT_TIMEOUT,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const OPTIONS: [&str; 14] = [
    "url", "product", "user-key", "machine", "client", "version", "platform", "file", "state", "now", "ca", "nonce",
    "status", "seconds",
];

/// How long bench-validate repeats the verification alone.
const VERIFY_TIME: Duration = Duration::from_secs(1);

/// A misuse of the program: exit 2.
struct Usage(String);

enum Failure {
    Usage(Usage),
    Refused(Error),
}

impl From<Usage> for Failure {
    fn from(u: Usage) -> Self {
        Failure::Usage(u)
    }
}
impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Refused(e)
    }
}

type Outcome = Result<Value, Failure>;

struct Options(BTreeMap<String, String>);

impl Options {
    fn parse(args: &[String]) -> Result<(String, Options), Usage> {
        let mut case = None;
        let mut options = BTreeMap::new();
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            if let Some(name) = arg.strip_prefix("--") {
                let (name, value) = match name.split_once('=') {
                    Some((n, v)) => (n.to_string(), v.to_string()),
                    None => {
                        i += 1;
                        let value = args.get(i).ok_or_else(|| Usage(format!("--{name} needs a value")))?;
                        (name.to_string(), value.clone())
                    }
                };
                if !OPTIONS.contains(&name.as_str()) {
                    return Err(Usage(format!("Unknown option --{name}")));
                }
                options.insert(name, value);
            } else if case.is_none() {
                case = Some(arg.clone());
            } else {
                return Err(Usage(format!("Unexpected argument {arg:?}")));
            }
            i += 1;
        }
        let case = case.ok_or_else(|| Usage("interop <case> [options]: a case is required".into()))?;
        Ok((case, Options(options)))
    }

    fn get(&self, name: &str) -> Option<String> {
        self.0.get(name).filter(|v| !v.is_empty()).cloned()
    }

    fn need(&self, name: &str) -> Result<String, Usage> {
        self.get(name)
            .ok_or_else(|| Usage(format!("--{name} is required for this case")))
    }

    /// --now: the clock the client believes.
    fn now(&self) -> Result<Option<SystemTime>, Usage> {
        match self.get("now") {
            None => Ok(None),
            Some(text) => parse_system_time(&text)
                .map(Some)
                .ok_or_else(|| Usage(format!("--now is not an ISO instant: {text}"))),
        }
    }

    fn state(&self) -> Option<PathBuf> {
        self.get("state").map(PathBuf::from)
    }

    /// The client of --url; with the license's --user-key (required) unless `anonymous`.
    fn client(&self, anonymous: bool) -> Result<Client, Failure> {
        let mut builder = Client::builder(self.need("url")?).timeout(DEFAULT_TIMEOUT);
        if !anonymous {
            builder = builder.user_key(self.need("user-key")?);
        }
        if let Some(ca) = self.get("ca") {
            let pem = std::fs::read(&ca).map_err(|e| Usage(format!("--ca {ca} cannot be read: {e}")))?;
            builder = builder.ca_pem(pem);
        }
        Ok(builder.build()?)
    }

    /// The keys: --state/jwks.json when present, else fetched once (and kept there when --state is given).
    fn keys(&self) -> Result<Jwks, Failure> {
        if let Some(kept) = self.state().and_then(|dir| kept_keys(&dir)) {
            return Ok(kept);
        }
        let fetched = self.client(true)?.signing_keys(false)?;
        if let Some(dir) = self.state() {
            keep_keys(&dir, &fetched)?;
        }
        Ok(fetched)
    }

    fn read_file(&self) -> Result<String, Usage> {
        let path = self.need("file")?;
        std::fs::read_to_string(&path).map_err(|e| Usage(format!("--file {path} cannot be read: {e}")))
    }

    /// Where a seat's token waits between the seat cases (--state, else a folder of the temporary directory).
    fn seat_file(&self) -> Result<PathBuf, Failure> {
        let dir = self
            .state()
            .unwrap_or_else(|| std::env::temp_dir().join("licensing-interop-rust"));
        std::fs::create_dir_all(&dir).map_err(|e| Usage(format!("{} cannot be made: {e}", dir.display())))?;
        let digest = Sha256::digest(
            format!(
                "{}\n{}\n{}\n{}",
                self.get("url").unwrap_or_default(),
                self.get("user-key").unwrap_or_default(),
                self.need("machine")?,
                self.need("client")?
            )
            .as_bytes(),
        );
        let id: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        Ok(dir.join(format!("seat-{id}.json")))
    }
}

fn validate(o: &Options) -> Outcome {
    let machine = o.need("machine")?;
    let request = ValidateRequest {
        machine_id: Some(machine),
        client_id: o.get("client"),
        product_code: o.get("product"),
        version: o.get("version"),
        ..Default::default()
    };
    let client = o.client(false)?;
    let Some(dir) = o.state() else {
        let validation = client.validate(&request)?;
        return Ok(json!({
            "valid": true, "licenseId": validation.license_id, "verified": validation.verified(), "offline": false
        }));
    };
    let mut grace = OfflineGrace::new(client, dir);
    if let Some(product) = o.get("product") {
        grace = grace.product_code(product);
    }
    if let Some(now) = o.now()? {
        grace = grace.now(now);
    }
    Ok(match grace.validate(&request)? {
        GraceOutcome::Online { validation, .. } => json!({
            "valid": true, "licenseId": validation.license_id, "verified": validation.verified(), "offline": false
        }),
        GraceOutcome::Offline { license, .. } => json!({
            "valid": true, "licenseId": license.license_id, "verified": true, "offline": true
        }),
    })
}

/// bench-validate: activates --machine (idempotent), then validates over and over for --seconds (default 5) with one
/// client (one ureq agent: its connection is kept alive), each answer's license key verified by `Client::validate`
/// for this machine, product and a fresh nonce; then times that verification alone (`verify_license_key`, the keys in
/// hand) on the last answer for a second. Prints `{ requests, seconds, perSecond, verifyMicros }`.
fn bench_validate(o: &Options) -> Outcome {
    let seconds = match o.get("seconds") {
        None => 5.0,
        Some(text) => text
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s > 0.0)
            .ok_or_else(|| Usage(format!("--seconds is a positive number of seconds, not {text}")))?,
    };
    let machine = o.need("machine")?;
    let product = o.get("product");
    let client = o.client(false)?;
    client.activate(&ActivateRequest {
        machine_id: machine.clone(),
        product_code: product.clone(),
        ..Default::default()
    })?;
    let request = ValidateRequest {
        machine_id: Some(machine.clone()),
        product_code: product.clone(),
        ..Default::default()
    };
    let mut last = client.validate(&request)?; // signs in and fetches the keys: not timed
    let mut requests: u64 = 0;
    let started = Instant::now();
    let until = Duration::from_secs_f64(seconds);
    while started.elapsed() < until {
        last = client.validate(&request)?;
        requests += 1;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let key = last
        .license
        .license_key
        .clone()
        .ok_or_else(|| Error::Malformed("The validation answer carries no license key".into()))?;
    let check = KeyCheck {
        product_code: product,
        machine_id: Some(machine),
        nonce: last.payload.as_ref().and_then(|p| p.nonce.clone()),
        ..Default::default()
    };
    let keys = client.signing_keys(false)?;
    let mut verifications: u64 = 0;
    let verify_started = Instant::now();
    while verify_started.elapsed() < VERIFY_TIME {
        verify_license_key(&key, &keys, &check)?;
        verifications += 1;
    }
    let verify_micros = verify_started.elapsed().as_secs_f64() * 1e6 / verifications as f64;
    let round = |v: f64, digits: i32| (v * 10f64.powi(digits)).round() / 10f64.powi(digits);
    Ok(json!({
        "requests": requests,
        "seconds": round(elapsed, 3),
        "perSecond": round(requests as f64 / elapsed, 1),
        "verifyMicros": round(verify_micros, 1),
    }))
}

fn run(case: &str, o: &Options) -> Outcome {
    match case {
        "activate" => {
            let machine = o.need("machine")?;
            let answer = o.client(false)?.activate(&ActivateRequest {
                machine_id: machine.clone(),
                client_id: o.get("client"),
                product_code: o.get("product"),
                version: o.get("version"),
                ..Default::default()
            })?;
            Ok(json!({ "licenseId": answer.license.license_id, "machineId": machine }))
        }
        "deactivate" => {
            o.client(false)?.deactivate(&DeactivateRequest {
                machine_id: o.need("machine")?,
                client_id: o.get("client"),
                ..Default::default()
            })?;
            Ok(json!({}))
        }
        "validate" => validate(o),
        "bench-validate" => bench_validate(o),
        "seat-request" => {
            let client_id = o.need("client")?;
            let seat = o.client(false)?.request_seat(&SeatRequest {
                machine_id: o.need("machine")?,
                client_id: client_id.clone(),
                ..Default::default()
            })?;
            let file = o.seat_file()?;
            let kept = json!({ "licenseToken": seat.license_token, "licenseId": seat.license.license_id });
            std::fs::write(&file, kept.to_string())
                .map_err(|e| Usage(format!("{} cannot be written: {e}", file.display())))?;
            Ok(json!({ "licenseId": seat.license.license_id, "clientId": client_id }))
        }
        "seat-heartbeat" | "seat-release" => {
            let client_id = o.need("client")?;
            let file = o.seat_file()?;
            let kept: Value = std::fs::read_to_string(&file)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .ok_or_else(|| {
                    Usage("No seat was requested for this machine and client (seat-request first)".into())
                })?;
            let token = kept["licenseToken"].as_str().unwrap_or_default();
            let client = o.client(false)?;
            if case == "seat-heartbeat" {
                client.heartbeat(token)?;
                return Ok(json!({ "licenseId": kept["licenseId"], "clientId": client_id }));
            }
            let released = client.release(token)?;
            Ok(json!({ "licenseId": released.license_id, "clientId": client_id }))
        }
        "checkout" => {
            let path = o.need("file")?;
            let answer = o.client(false)?.checkout(&CheckoutRequest {
                machine_id: o.need("machine")?,
                client_id: o.get("client"),
                encrypt: true,
                ..Default::default()
            })?;
            std::fs::write(&path, &answer.license_file)
                .map_err(|e| Usage(format!("--file {path} cannot be written: {e}")))?;
            Ok(json!({ "expiresAt": format_system_time(answer.expires_at) }))
        }
        "verify-file" => {
            let text = o.read_file()?;
            let check = file_check(o)?;
            let file = verify_license_file(&text, &o.keys()?, &check)?;
            Ok(json!({
                "licenseId": file.license.license_id,
                "machineId": file.machine_id,
                "expiresAt": format_system_time(file.expires_at),
            }))
        }
        "airgap-request" => {
            let request = create_activation_request(&ActivationRequestInput {
                user_key: o.need("user-key")?,
                machine_id: o.need("machine")?,
                client_id: o.get("client"),
                product_code: o.get("product"),
                nonce: o.get("nonce"),
                activation_page_url: None,
            });
            Ok(json!({ "requestCode": request.request_code, "nonce": request.nonce }))
        }
        "airgap-verify" => {
            let code = o.read_file()?;
            let nonce = o.need("nonce")?;
            let check = file_check(o)?;
            let (file, _) = verify_activation_response(&code, &nonce, &o.keys()?, &check)?;
            Ok(json!({ "licenseId": file.license.license_id, "machineId": file.machine_id }))
        }
        "update-check" => {
            let request = UpdateCheckRequest {
                product_code: o.need("product")?,
                version: o.need("version")?,
                platform: o.need("platform")?,
                channel: None,
                user_key: o.get("user-key"),
                install_id: o.get("machine"),
            };
            let mut builder = Client::builder(o.need("url")?);
            if let Some(ca) = o.get("ca") {
                builder =
                    builder.ca_pem(std::fs::read(&ca).map_err(|e| Usage(format!("--ca {ca} cannot be read: {e}")))?);
            }
            if let Some(kept) = o.state().and_then(|dir| kept_keys(&dir)) {
                builder = builder.trusted_keys(kept);
            }
            let update = builder.build()?.check_for_update(&request)?;
            Ok(json!({
                "available": update.available, "version": update.version, "required": update.required,
                "rollback": update.rollback,
            }))
        }
        "session" => {
            let status_name = o.need("status")?;
            let status = SessionStatus::parse(&status_name)
                .ok_or_else(|| Usage("--status is one of started, exited, crashed, abnormal".into()))?;
            let mut builder = Client::builder(o.need("url")?);
            if let Some(key) = o.get("user-key") {
                builder = builder.user_key(key);
            }
            if let Some(ca) = o.get("ca") {
                builder =
                    builder.ca_pem(std::fs::read(&ca).map_err(|e| Usage(format!("--ca {ca} cannot be read: {e}")))?);
            }
            let session = SessionRecord {
                id: licensing_client::random_uuid(),
                status,
                started_at: format_system_time(o.now()?.unwrap_or_else(SystemTime::now)),
                duration_ms: (status != SessionStatus::Started).then_some(1000),
            };
            let accepted = builder.build()?.send_sessions(
                &o.need("product")?,
                &o.need("machine")?,
                &o.need("version")?,
                o.get("platform").as_deref(),
                &[session],
            )?;
            Ok(json!({ "accepted": accepted }))
        }
        other => Err(Usage(format!("Unknown case {other:?}")).into()),
    }
}

fn file_check(o: &Options) -> Result<FileCheck, Usage> {
    Ok(FileCheck {
        machine_id: o.need("machine")?,
        product_code: o.get("product"),
        client_id: o.get("client"),
        now: o.now()?,
        last_seen: None,
        user_key: o.get("user-key"),
        nonce: None,
        clock_skew_secs: None,
    })
}

fn print(value: &Value) {
    // A closed stdout is not worth a panic: the exit code still says what happened.
    let _ = writeln!(std::io::stdout(), "{value}");
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = Options::parse(&args)
        .map_err(Failure::Usage)
        .and_then(|(case, options)| run(&case, &options));
    match outcome {
        Ok(value) => {
            print(&value);
            ExitCode::SUCCESS
        }
        Err(Failure::Usage(Usage(message))) => {
            print(&json!({ "error": { "code": "usage", "message": message } }));
            ExitCode::from(2)
        }
        Err(Failure::Refused(error)) => {
            print(&json!({ "error": { "code": error.code(), "message": error.to_string() } }));
            ExitCode::from(1)
        }
    }
}
