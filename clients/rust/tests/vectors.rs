//! The shared test vectors (clients/vectors/manifest.json, made by the service's own code): every vector of every
//! kind this crate knows is checked, its output members or its refusal code; a signed vector with one byte changed
//! must be refused; and the validation vector, kept in a state directory, gives the offline grace its signature
//! allows (the service unreachable: a closed port on 127.0.0.1).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use licensing_client::{
    base32_decode, base32_encode, encode_request_code, jcs, parse_iso, parse_system_time, request_json,
    verify_activation_response, verify_license_file, verify_license_key, verify_update_check, Client, Error, FileCheck,
    GraceOutcome, Jwks, KeyCheck, OfflineGrace, OfflineRequest, ValidateRequest, JWKS_FILE, VALIDATION_FILE,
};
use serde_json::{json, Value};

fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("vectors")
}

fn read(path: &str) -> String {
    let full = folder().join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

struct Vector {
    name: String,
    kind: String,
    files: BTreeMap<String, String>,
    params: BTreeMap<String, String>,
    expect: Value,
}

fn manifest() -> Vec<Vector> {
    let manifest: Value = serde_json::from_str(&read("manifest.json")).expect("manifest.json is JSON");
    manifest
        .as_array()
        .expect("manifest.json is an array")
        .iter()
        .map(|v| {
            let strings = |key: &str| -> BTreeMap<String, String> {
                v[key]
                    .as_object()
                    .map(|o| {
                        o.iter()
                            .filter_map(|(k, x)| x.as_str().map(|s| (k.clone(), s.to_string())))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            Vector {
                name: v["name"].as_str().unwrap().to_string(),
                kind: v["kind"].as_str().unwrap().to_string(),
                files: strings("files"),
                params: strings("params"),
                expect: v["expect"].clone(),
            }
        })
        .collect()
}

impl Vector {
    fn file(&self, role: &str) -> String {
        read(&self.files[role])
    }
    fn jwks(&self) -> Jwks {
        Jwks::from_json(&self.file("jwks")).expect("the vector's JWKS reads")
    }
    fn param(&self, name: &str) -> Option<String> {
        self.params.get(name).cloned()
    }
    fn time(&self, name: &str) -> Option<std::time::SystemTime> {
        self.params
            .get(name)
            .map(|t| parse_system_time(t).expect("an ISO instant"))
    }
    fn file_check(&self) -> FileCheck {
        FileCheck {
            machine_id: self.param("machineId").unwrap_or_default(),
            product_code: self.param("productCode"),
            client_id: self.param("clientId"),
            now: self.time("now"),
            last_seen: self.time("lastSeen"),
            user_key: self.param("userKey"),
            nonce: None,
            clock_skew_secs: None,
        }
    }
}

fn iso(t: std::time::SystemTime) -> Value {
    Value::String(licensing_client::format_system_time(t))
}

fn opt<T: Into<Value>>(v: Option<T>) -> Value {
    v.map(Into::into).unwrap_or(Value::Null)
}

/// The check of one vector, as CONTRACT 14 and clients/vectors/README.md say a client reports it.
fn run(v: &Vector, text: Option<&str>) -> Result<Value, Error> {
    match v.kind.as_str() {
        "jcs" => Ok(json!({ "canonical": jcs::canonicalize_text(&v.file("input"))? })),
        "validation" => {
            let answer_text = text.map(String::from).unwrap_or_else(|| v.file("answer"));
            let answer: Value =
                serde_json::from_str(&answer_text).map_err(|e| Error::Malformed(format!("not JSON: {e}")))?;
            let key = answer
                .get("license")
                .and_then(|l| l.get("licenseKey"))
                .and_then(Value::as_str)
                .ok_or_else(|| Error::Malformed("The validation answer carries no license key".into()))?;
            let p = verify_license_key(
                key,
                &v.jwks(),
                &KeyCheck {
                    now: v.time("now"),
                    clock_tolerance_secs: 0,
                    product_code: v.param("productCode"),
                    machine_id: v.param("machineId"),
                    nonce: v.param("nonce"),
                },
            )?;
            Ok(json!({
                "valid": true,
                "licenseId": p.license_id,
                "productCode": opt(p.product_code.clone()),
                "machineId": opt(p.machine_id.clone()),
                "licensingMode": opt(p.licensing_mode.map(|m| m.as_str())),
                "status": opt(p.status.map(|s| s.as_str())),
                "offlineGraceDays": p.offline_grace_days.unwrap_or(0.0),
                "issuedAt": iso(p.issued_at()),
                "expiresAt": opt(p.expires_at().map(iso)),
            }))
        }
        "update-check" => {
            let answer_text = text.map(String::from).unwrap_or_else(|| v.file("answer"));
            let answer: Value =
                serde_json::from_str(&answer_text).map_err(|e| Error::Malformed(format!("not JSON: {e}")))?;
            let u = verify_update_check(&answer, &v.jwks())?;
            Ok(
                json!({ "available": u.available, "version": opt(u.version), "required": u.required, "rollback": u.rollback }),
            )
        }
        "license-file" => {
            let file_text = text.map(String::from).unwrap_or_else(|| v.file("file"));
            let f = verify_license_file(&file_text, &v.jwks(), &v.file_check())?;
            Ok(json!({
                "licenseId": f.license.license_id,
                "machineId": f.machine_id,
                "productCode": f.entitlements.product_code,
                "expiresAt": iso(f.expires_at),
                "encrypted": f.encrypted,
            }))
        }
        "airgap-request" => {
            let request = OfflineRequest {
                user_key: v.param("userKey").unwrap_or_default(),
                machine_id: v.param("machineId").unwrap_or_default(),
                client_id: v.param("clientId"),
                nonce: v.param("nonce").unwrap_or_default(),
                product_code: v.param("productCode"),
            };
            Ok(json!({ "requestCode": encode_request_code(&request), "json": request_json(&request) }))
        }
        "airgap-response" => {
            let code = text.map(String::from).unwrap_or_else(|| v.file("code"));
            let (f, _) =
                verify_activation_response(&code, &v.param("nonce").unwrap_or_default(), &v.jwks(), &v.file_check())?;
            Ok(json!({
                "licenseId": f.license.license_id,
                "machineId": f.machine_id,
                "productCode": f.entitlements.product_code,
                "expiresAt": iso(f.expires_at),
            }))
        }
        other => panic!("unknown kind {other}"),
    }
}

/// Whether a reported value is the expected one: instants compared as instants.
fn same(expected: &Value, actual: &Value) -> bool {
    if let (Value::String(e), Value::String(a)) = (expected, actual) {
        if e.len() > 10 && e.as_bytes()[4] == b'-' && e.as_bytes()[10] == b'T' {
            return parse_iso(e).is_some() && parse_iso(e) == parse_iso(a);
        }
    }
    if let (Value::Number(e), Value::Number(a)) = (expected, actual) {
        return e.as_f64() == a.as_f64();
    }
    expected == actual
}

const KINDS: [&str; 6] = [
    "jcs",
    "validation",
    "update-check",
    "license-file",
    "airgap-request",
    "airgap-response",
];

#[test]
fn every_vector() {
    let vectors = manifest();
    assert!(vectors.len() >= 60, "the manifest lists {} vectors", vectors.len());
    let mut failures = Vec::new();
    let mut counted: BTreeMap<String, usize> = BTreeMap::new();
    for v in &vectors {
        if !KINDS.contains(&v.kind.as_str()) {
            println!("skipped {} (kind {} not known to this client)", v.name, v.kind);
            continue;
        }
        *counted.entry(v.kind.clone()).or_default() += 1;
        let result = run(v, None);
        let verdict = match (result, v.expect.get("error").and_then(Value::as_str)) {
            (Ok(_), Some(code)) => Some(format!("accepted, expected refusal {code}")),
            (Ok(output), None) => {
                let wrong: Vec<String> = v.expect["output"]
                    .as_object()
                    .expect("expect.output")
                    .iter()
                    .filter(|(k, e)| !same(e, output.get(k.as_str()).unwrap_or(&Value::Null)))
                    .map(|(k, e)| {
                        format!(
                            "{k}: expected {e}, got {}",
                            output.get(k.as_str()).unwrap_or(&Value::Null)
                        )
                    })
                    .collect();
                (!wrong.is_empty()).then(|| wrong.join("; "))
            }
            (Err(e), None) => Some(format!("refused {}: {e}", e.code())),
            (Err(e), Some(code)) => (e.code() != code).then(|| format!("refused {}, expected {code}: {e}", e.code())),
        };
        if let Some(verdict) = verdict {
            failures.push(format!("{}: {verdict}", v.name));
        }
    }
    println!("vectors checked per kind: {counted:?}");
    for kind in KINDS {
        assert!(counted.get(kind).copied().unwrap_or(0) > 0, "no vector of kind {kind}");
    }
    assert!(
        failures.is_empty(),
        "{} vectors disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Flips one byte of a base64url part of a compact JWS (decoded, changed, encoded again).
fn flip_jws(jws: &str, part: usize, at: usize) -> String {
    use base64::Engine;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut parts: Vec<String> = jws.trim().split('.').map(String::from).collect();
    let mut bytes = engine.decode(&parts[part]).expect("a base64url part");
    let i = at % bytes.len();
    bytes[i] ^= 0x01;
    parts[part] = engine.encode(bytes);
    parts.join(".")
}

/// Changing one byte of a signed vector makes it fail: every byte of each signature, and bytes throughout each
/// signed payload (and every byte of an `LRS2` code, its checksum made good again so the signature is what refuses).
#[test]
fn one_changed_byte_is_refused() {
    let mut tried = 0;
    for v in manifest()
        .iter()
        .filter(|v| v.expect.get("ok") == Some(&Value::Bool(true)))
    {
        let mut must_fail = |text: String, what: String| {
            tried += 1;
            if let Ok(output) = run(v, Some(&text)) {
                panic!("{}: {what} was accepted: {output}", v.name);
            }
        };
        match v.kind.as_str() {
            "validation" => {
                let answer: Value = serde_json::from_str(&v.file("answer")).unwrap();
                let key = answer["license"]["licenseKey"].as_str().unwrap().to_string();
                for (part, step) in [(1, 7), (2, 1)] {
                    let n = if part == 2 { 64 } else { 400 };
                    for at in (0..n).step_by(step) {
                        let mut changed = answer.clone();
                        changed["license"]["licenseKey"] = Value::String(flip_jws(&key, part, at));
                        must_fail(
                            changed.to_string(),
                            format!("license key part {part} byte {at} changed"),
                        );
                    }
                }
            }
            "license-file" => {
                let file = v.file("file");
                for at in 0..64 {
                    must_fail(flip_jws(&file, 2, at), format!("signature byte {at} changed"));
                }
                for at in (0..600).step_by(9) {
                    must_fail(flip_jws(&file, 1, at), format!("payload byte {at} changed"));
                }
            }
            "update-check" => {
                let answer: Value = serde_json::from_str(&v.file("answer")).unwrap();
                use base64::Engine;
                let engine = base64::engine::general_purpose::STANDARD;
                let signature = engine.decode(answer["signature"].as_str().unwrap()).unwrap();
                for at in 0..signature.len() {
                    let mut s = signature.clone();
                    s[at] ^= 0x01;
                    let mut changed = answer.clone();
                    changed["signature"] = Value::String(engine.encode(s));
                    must_fail(changed.to_string(), format!("signature byte {at} changed"));
                }
                let mut changed = answer.clone();
                changed["data"]["current"] = Value::String("1.0.1".into());
                must_fail(changed.to_string(), "data.current changed".into());
                let mut changed = answer.clone();
                changed["data"]["updateAvailable"] = Value::Bool(!answer["data"]["updateAvailable"].as_bool().unwrap());
                must_fail(changed.to_string(), "data.updateAvailable changed".into());
            }
            "airgap-response" => {
                let code = v.file("code");
                let compact: String = code
                    .chars()
                    .filter(|c| !c.is_whitespace() && *c != '-')
                    .collect::<String>()
                    .to_uppercase();
                let prefix = &compact[..4];
                let bytes = base32_decode(&compact[4..]).unwrap();
                let payload = &bytes[..bytes.len() - 4];
                let positions: Vec<usize> = if prefix == "LRS2" {
                    (0..payload.len()).collect()
                } else {
                    (0..payload.len()).step_by(23).collect()
                };
                for at in positions {
                    let mut p = payload.to_vec();
                    p[at] ^= if prefix == "LRS1" { 0x02 } else { 0x01 };
                    let mut framed = p.clone();
                    framed.extend_from_slice(&crc32fast::hash(&p).to_be_bytes());
                    must_fail(
                        format!("{prefix}-{}", base32_encode(&framed)),
                        format!("payload byte {at} changed"),
                    );
                }
                // And one character of the code as typed: the checksum refuses it.
                let mut chars: Vec<char> = code.trim().chars().collect();
                let middle = chars.len() / 2 + usize::from(chars[chars.len() / 2] == '-');
                chars[middle] = if chars[middle] == '7' { '8' } else { '7' };
                must_fail(chars.into_iter().collect(), "a character of the code changed".into());
            }
            _ => {}
        }
    }
    assert!(tried > 500, "only {tried} altered vectors were tried");
}

/// The altered vectors the service made are refused with their codes through the same path as the good ones; here,
/// also, a good license file verified on a clock within its life, for each of its modes of reading.
#[test]
fn the_license_file_vector_reads_whole() {
    let v = manifest()
        .into_iter()
        .find(|v| v.name == "license-file-encrypted")
        .expect("license-file-encrypted");
    let f = verify_license_file(&v.file("file"), &v.jwks(), &v.file_check()).unwrap();
    assert!(f.encrypted);
    assert_eq!(f.v, 1);
    assert_eq!(f.entitlements.product_code, "vector-studio");
    assert!(!f.key_id.is_empty());
    let refused = verify_license_file(
        &v.file("file"),
        &v.jwks(),
        &FileCheck {
            user_key: None,
            ..v.file_check()
        },
    );
    assert_eq!(refused.unwrap_err().code(), "decrypt");
}

/// A base URL where nothing listens: the service unreachable.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

/// A state directory as `OfflineGrace` leaves it after an online validation (the TypeScript package's `fileStore`
/// format): `kept` is the validation file's members besides `v`, and the vector's JWK Set beside it.
fn state_with(name: &str, kept: Value) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "licensing-client-rust-grace-{name}-{}",
        licensing_client::random_nonce()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut stored = json!({ "v": 1 });
    stored
        .as_object_mut()
        .unwrap()
        .extend(kept.as_object().unwrap().clone());
    std::fs::write(dir.join(VALIDATION_FILE), stored.to_string()).unwrap();
    std::fs::write(dir.join(JWKS_FILE), read("jwks.json")).unwrap();
    dir
}

/// Offline, from the validation vector kept in a state directory: usable within its signed 7 grace days counted
/// from its signed `iat`, and refused beyond them (`grace`), with the clock set back (`clock`), for another machine
/// or product, with an altered key (`grace`: nothing usable kept), and after a refusal by the service (its reason).
#[test]
fn offline_grace_from_the_kept_validation_vector() {
    let v = manifest()
        .into_iter()
        .find(|v| v.name == "validation-activated")
        .expect("validation-activated");
    let answer: Value = serde_json::from_str(&v.file("answer")).unwrap();
    let key = answer["license"]["licenseKey"].as_str().unwrap().to_string();
    let machine = v.param("machineId").unwrap();
    let product = v.param("productCode").unwrap();
    let iat = verify_license_key(
        &key,
        &v.jwks(),
        &KeyCheck {
            now: v.time("now"),
            ..Default::default()
        },
    )
    .unwrap()
    .issued_at();
    let day = Duration::from_secs(86_400);
    let unreachable = Client::new(closed_port(), "ABCDE-FGHJK-MNPQR-STVWX").unwrap();
    let offline = |dir: &Path, product: &str, machine: &str, now: SystemTime| {
        OfflineGrace::new(unreachable.clone(), dir)
            .product_code(product)
            .now(now)
            .validate(&ValidateRequest {
                machine_id: Some(machine.to_string()),
                ..Default::default()
            })
    };
    let kept = |name: &str, key: &str, last_seen: SystemTime| {
        state_with(
            name,
            json!({ "machineId": machine, "licenseKey": key, "lastSeen": iso(last_seen) }),
        )
    };
    let mut dirs = Vec::new();

    let dir = kept("within", &key, iat);
    match offline(&dir, &product, &machine, iat + day).unwrap() {
        GraceOutcome::Offline {
            license,
            grace_until,
            cause,
            ..
        } => {
            assert_eq!(license.license_id, "lic506A04DE");
            assert_eq!(grace_until, iat + 7 * day);
            assert_eq!(cause.code(), "network");
        }
        online => panic!("the service is unreachable, yet: {online:?}"),
    }
    // The time seen is kept: a clock set back before it afterwards is refused.
    assert_eq!(
        offline(&dir, &product, &machine, iat + day / 2).unwrap_err().code(),
        "clock"
    );
    dirs.push(dir);

    let code = |name: &str, key: &str, last_seen: SystemTime, product: &str, machine: &str, now: SystemTime| {
        let dir = kept(name, key, last_seen);
        let code = offline(&dir, product, machine, now).map(|o| o.license_id().to_string());
        let _ = std::fs::remove_dir_all(&dir);
        code.map_err(|e| e.code().to_string())
    };
    let grace = Err(String::from("grace"));
    let clock = Err(String::from("clock"));
    assert_eq!(
        code(
            "last-day",
            &key,
            iat,
            &product,
            &machine,
            iat + 7 * day - Duration::from_secs(1)
        ),
        Ok("lic506A04DE".into())
    );
    assert_eq!(code("beyond", &key, iat, &product, &machine, iat + 7 * day), grace);
    assert_eq!(code("before-iat", &key, iat, &product, &machine, iat - day), clock);
    assert_eq!(
        code("skew", &key, iat, &product, &machine, iat - Duration::from_secs(299)),
        Ok("lic506A04DE".into())
    );
    assert_eq!(
        code("last-seen", &key, iat + 3 * day, &product, &machine, iat + 2 * day),
        clock
    );
    assert_eq!(code("machine", &key, iat, &product, "PC-OTHER", iat + day), grace);
    assert_eq!(code("product", &key, iat, "other-product", &machine, iat + day), grace);
    for (part, at) in [(1, 40), (2, 10)] {
        let altered = flip_jws(&key, part, at);
        assert_eq!(
            code("altered", &altered, iat, &product, &machine, iat + day),
            grace,
            "part {part} byte {at}"
        );
    }

    // The service's last answer was a refusal: offline, the same refusal, whatever was kept before.
    let dir = state_with(
        "refused",
        json!({ "machineId": machine, "lastSeen": iso(iat),
                "refused": { "reason": "licenseRevoked", "message": "The license has been revoked", "status": 527,
                             "at": iso(iat) } }),
    );
    let error = offline(&dir, &product, &machine, iat + day).unwrap_err();
    assert_eq!((error.code(), error.status()), ("licenseRevoked", Some(527)));
    dirs.push(dir);

    // Nothing kept at all: `grace`; the bare client, `network`.
    let empty = std::env::temp_dir().join(format!(
        "licensing-client-rust-grace-empty-{}",
        licensing_client::random_nonce()
    ));
    assert_eq!(
        offline(&empty, &product, &machine, iat + day).unwrap_err().code(),
        "grace"
    );
    let error = unreachable
        .validate(&ValidateRequest {
            machine_id: Some(machine.clone()),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(error.code(), "network");
    dirs.push(empty);
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}
