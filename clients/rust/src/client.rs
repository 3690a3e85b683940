//! [`Client`]: the licensing service over REST (CONTRACT sections 4, 5, 11 and 13), blocking, with a timeout on
//! every request. Cheap to clone and `Send + Sync`: keep one in a Tauri `State` and call it from an `async` command
//! through `tauri::async_runtime::spawn_blocking` (a plain synchronous command runs on the main thread, whose window
//! would wait for the network).
//!
//! Credentials: an API key or a bearer token is sent as given; a user key alone is exchanged for a bearer token
//! (`POST /v1/auth/login`) that is reused and renewed before it expires.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Map, Value};
use ureq::tls::{parse_pem, PemItem, RootCerts, TlsConfig};

use crate::error::{Error, Result};
use crate::instant::system_time;
use crate::jwks::{verify_data_signature, Jwks};
use crate::license::{verify_license_key, KeyCheck, License, LicenseKeyPayload, LicenseStatus};
use crate::updates::{UpdateCheck, UpdateCheckRequest};
use crate::wire::{self, Object};

/// The default timeout of one request, connection to last byte.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// gRPC codes the licensing operations answer with (REST status = 520 + code).
const LICENSING_CODES: [u16; 8] = [3, 5, 6, 7, 8, 9, 15, 16];

/// Whether an HTTP status is a licensing refusal (520 + a licensing gRPC code, or 401).
pub(crate) fn is_licensing_status(status: u16) -> bool {
    status == 401 || (status > 520 && LICENSING_CODES.contains(&(status - 520)))
}

/// How a [`Client`] reaches the service. Build it with [`Client::builder`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    base_url: String,
    user_key: Option<String>,
    api_key: Option<String>,
    api_key_header: String,
    bearer_token: Option<String>,
    timeout: Duration,
    ca_pem: Option<Vec<u8>>,
    trusted_keys: Option<Jwks>,
    install_id: Option<String>,
    user_agent: String,
}

impl ClientBuilder {
    /// The license's user key: the default of every call, and the credential (signed in with
    /// `POST /v1/auth/login`) when neither an API key nor a bearer token is given.
    pub fn user_key(mut self, user_key: impl Into<String>) -> Self {
        self.user_key = Some(user_key.into());
        self
    }
    /// An API key, sent in `x-api-key` (or [`ClientBuilder::api_key_header`]); takes precedence over the rest.
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }
    /// The header the service reads API keys from (`Application:ApiKeyHeaderName`, default `x-api-key`).
    pub fn api_key_header(mut self, header: impl Into<String>) -> Self {
        self.api_key_header = header.into();
        self
    }
    /// A bearer token obtained elsewhere; sent as is and never renewed.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }
    /// The timeout of each request, from connecting to the last byte (default 15 s). A request that takes longer
    /// fails with the `network` refusal: never a hang.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
    /// Certificates (PEM) to trust for HTTPS instead of the Web PKI roots: the service's own certificate or its
    /// authority, e.g. `.wrangler/dev-cert/cert.pem` of `npm run dev`.
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_pem = Some(pem.into());
        self
    }
    /// Keys to verify signed answers with, instead of fetching `GET /v1/extensions/keys` from the same service.
    /// Pinning them in the application means an impersonated server cannot sign its own answers.
    pub fn trusted_keys(mut self, jwks: Jwks) -> Self {
        self.trusted_keys = Some(jwks);
        self
    }
    /// This installation's random id ([`crate::install_id`]), sent as `X-Service-Install-Id` on validations and
    /// update checks: rollouts admit by it and adoption counts the install once.
    pub fn install_id(mut self, install_id: impl Into<String>) -> Self {
        self.install_id = Some(install_id.into());
        self
    }
    /// The `User-Agent` header (default `licensing-client-rust/<version>`).
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent.into();
        self
    }

    /// The client. `malformed` when the base URL is not an http(s) URL or the PEM holds no certificate.
    pub fn build(self) -> Result<Client> {
        let base_url = self.base_url.trim().trim_end_matches('/').to_string();
        let scheme_ok = base_url.starts_with("http://") || base_url.starts_with("https://");
        if !scheme_ok || base_url.parse::<ureq::http::Uri>().is_err() {
            return Err(Error::malformed(format!(
                "The service's address is not an http(s) URL: {base_url}"
            )));
        }
        let mut tls = TlsConfig::builder();
        if let Some(pem) = &self.ca_pem {
            let certs: Vec<_> = parse_pem(pem)
                .filter_map(|item| match item {
                    Ok(PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(Error::malformed("The CA file holds no PEM certificate"));
            }
            tls = tls.root_certs(RootCerts::new_with_certs(&certs));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(self.timeout))
            .timeout_connect(Some(self.timeout.min(Duration::from_secs(10))))
            .max_redirects(0)
            .user_agent(self.user_agent.as_str())
            .tls_config(tls.build())
            .build();
        Ok(Client {
            inner: Arc::new(Inner {
                agent: config.into(),
                base_url,
                user_key: self.user_key,
                api_key: self.api_key,
                api_key_header: self.api_key_header,
                bearer_token: self.bearer_token,
                trusted_keys: self.trusted_keys,
                install_id: self.install_id,
                session: Mutex::new(None),
                keys: Mutex::new(None),
            }),
        })
    }
}

struct Session {
    token: String,
    renew_at: Instant,
}

struct Inner {
    agent: ureq::Agent,
    base_url: String,
    user_key: Option<String>,
    api_key: Option<String>,
    api_key_header: String,
    bearer_token: Option<String>,
    trusted_keys: Option<Jwks>,
    install_id: Option<String>,
    session: Mutex<Option<Session>>,
    keys: Mutex<Option<Jwks>>,
}

/// The licensing service, as a protected application sees it. Clone it freely (it shares one connection pool).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.inner.base_url)
            .finish_non_exhaustive()
    }
}

/// A successful answer: status, the `X-Service-Reason` header, and the JSON body (`Null` when empty).
pub(crate) struct Answer {
    pub status: u16,
    pub body: Value,
}

/// `POST /v1/license/activate`.
#[derive(Debug, Clone, Default)]
pub struct ActivateRequest {
    /// This machine's id.
    pub machine_id: String,
    /// The client on the machine, when the application uses one.
    pub client_id: Option<String>,
    /// A name for the machine, shown to the vendor and the customer.
    pub client_name: Option<String>,
    /// The application's product code: another product's license is refused (`wrongProduct`).
    pub product_code: Option<String>,
    /// The running version.
    pub version: Option<String>,
    /// A nonce the license key echoes.
    pub nonce: Option<String>,
    /// The user key, when not the client's.
    pub user_key: Option<String>,
}

/// What activate answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivateResult {
    /// The activation's token (`actk_…`).
    pub license_token: String,
    /// When the token expires, if it does.
    pub token_expire_at: Option<SystemTime>,
    /// Machines activated.
    pub active_client_count: u64,
    /// Machines allowed (0 = unlimited).
    pub max_client_count: u64,
    /// The license, with its signed `license_key` for this machine.
    pub license: License,
}

/// `POST /v1/license/deactivate`.
#[derive(Debug, Clone, Default)]
pub struct DeactivateRequest {
    /// The machine to free.
    pub machine_id: String,
    /// Its client.
    pub client_id: Option<String>,
    /// The activation's token.
    pub license_token: Option<String>,
    /// The user key, when not the client's.
    pub user_key: Option<String>,
}

/// Counts after a deactivation or release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    /// The license's id.
    pub license_id: String,
    /// Machines or seats in use.
    pub active_client_count: u64,
    /// Allowed (0 = unlimited).
    pub max_client_count: u64,
}

/// `POST /v1/license/validate`.
#[derive(Debug, Clone, Default)]
pub struct ValidateRequest {
    /// This machine (the answer then carries a license key for it).
    pub machine_id: Option<String>,
    /// Its client.
    pub client_id: Option<String>,
    /// A token of an activation or seat.
    pub license_token: Option<String>,
    /// The application's product code.
    pub product_code: Option<String>,
    /// The running version (counted for adoption).
    pub version: Option<String>,
    /// The nonce the license key must echo (default for [`Client::validate`]: a fresh random one).
    pub nonce: Option<String>,
    /// The user key, when not the client's.
    pub user_key: Option<String>,
}

/// A validation: the service's answer, its license key verified against the JWKS.
#[derive(Debug, Clone, PartialEq)]
pub struct Validation {
    /// The license's id.
    pub license_id: String,
    /// Activated, or NotActivated (no machine named, or File mode).
    pub status: LicenseStatus,
    /// The license.
    pub license: License,
    /// The token, when the validation named one or a machine's activation.
    pub license_token: Option<String>,
    /// The service's clock.
    pub server_time: SystemTime,
    /// Days the license stays usable offline after this validation.
    pub offline_grace_days: f64,
    /// The verified payload of the license key; `None` when the answer carries none (no machine named).
    pub payload: Option<LicenseKeyPayload>,
    /// The JSON body as the service answered it (to keep the signed answer).
    pub answer: Value,
}

impl Validation {
    /// Whether the answer's license key was verified (signature, machine, product, nonce).
    pub fn verified(&self) -> bool {
        self.payload.is_some()
    }
}

/// `POST /v1/license/request`: a floating seat.
#[derive(Debug, Clone, Default)]
pub struct SeatRequest {
    /// This machine.
    pub machine_id: String,
    /// The client holding the seat (one per user or process).
    pub client_id: String,
    /// A name for it.
    pub client_name: Option<String>,
    /// The user key, when not the client's.
    pub user_key: Option<String>,
}

/// A granted floating seat. Keep it alive with [`Client::heartbeat`] every `heartbeat_interval` seconds, or hand it
/// to a [`crate::SeatKeeper`] that does; give it back with [`Client::release`].
#[derive(Debug, Clone, PartialEq)]
pub struct Seat {
    /// The seat's token (`fltk_…`).
    pub license_token: String,
    /// When the seat lapses without another heartbeat.
    pub token_expire_at: Option<SystemTime>,
    /// Seconds between heartbeats the service expects.
    pub heartbeat_interval: u64,
    /// Seats in use.
    pub active_client_count: u64,
    /// Seats allowed (0 = unlimited).
    pub max_client_count: u64,
    /// The license, with a signed key for this machine and client.
    pub license: License,
    /// The client holding it.
    pub client_id: String,
}

/// What a heartbeat answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Heartbeat {
    /// When the seat lapses without another heartbeat.
    pub token_expire_at: Option<SystemTime>,
    /// Seconds until the next heartbeat.
    pub heartbeat_interval: u64,
    /// Seats in use.
    pub active_client_count: u64,
    /// Seats allowed.
    pub max_client_count: u64,
}

/// `POST /v1/license/checkout`.
#[derive(Debug, Clone, Default)]
pub struct CheckoutRequest {
    /// The machine the file binds.
    pub machine_id: String,
    /// Its client.
    pub client_id: Option<String>,
    /// Seconds the file should live (at least 60; only shortens the service's lifetime).
    pub ttl: Option<u64>,
    /// Seal the payload for this machine (AES-256-GCM under the user key and machine id).
    pub encrypt: bool,
    /// The user key, when not the client's.
    pub user_key: Option<String>,
}

/// A license file as checkout answers it: save `license_file` (e.g. as `<licenseId>.lic`) and verify it at each
/// start with [`crate::verify_license_file`].
#[derive(Debug, Clone, PartialEq)]
pub struct LicenseFileAnswer {
    /// The file's text (a compact JWS).
    pub license_file: String,
    /// When the service issued it.
    pub issued_at: SystemTime,
    /// When it stops being valid.
    pub expires_at: SystemTime,
    /// Whether it is encrypted.
    pub encrypted: bool,
}

fn count(o: &Object, key: &str, what: &str) -> Result<u64> {
    let n = wire::number(o, key, what)?;
    Ok(if n > 0.0 { n as u64 } else { 0 })
}

fn opt_time(o: &Object, key: &str, what: &str) -> Result<Option<SystemTime>> {
    Ok(wire::opt_date(o, key, what)?.map(system_time))
}

/// A body with the members whose value is given.
fn body(members: &[(&str, Option<Value>)]) -> Value {
    let mut map = Map::new();
    for (k, v) in members {
        if let Some(v) = v {
            map.insert((*k).to_string(), v.clone());
        }
    }
    Value::Object(map)
}

fn s(v: &Option<String>) -> Option<Value> {
    v.as_ref().map(|x| Value::String(x.clone()))
}

fn network_error(url: &str, error: &ureq::Error) -> Error {
    let tls =
        matches!(error, ureq::Error::Tls(_) | ureq::Error::Rustls(_)) || error.to_string().contains("certificate");
    let hint = if tls {
        " (the service's certificate is not trusted: pass its certificate with ClientBuilder::ca_pem, or --ca <pem>)"
    } else if matches!(error, ureq::Error::Timeout(_)) {
        " (no answer within the timeout)"
    } else {
        ""
    };
    Error::Network(format!("Could not reach {url}: {error}{hint}"))
}

impl Client {
    /// A builder for the service at `base_url` (`https://licensing.example.com`).
    pub fn builder(base_url: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            base_url: base_url.into(),
            user_key: None,
            api_key: None,
            api_key_header: String::from("x-api-key"),
            bearer_token: None,
            timeout: DEFAULT_TIMEOUT,
            ca_pem: None,
            trusted_keys: None,
            install_id: None,
            user_agent: format!("licensing-client-rust/{}", env!("CARGO_PKG_VERSION")),
        }
    }

    /// A client of the service at `base_url` signing in with `user_key`, with the defaults.
    pub fn new(base_url: impl Into<String>, user_key: impl Into<String>) -> Result<Client> {
        Client::builder(base_url).user_key(user_key).build()
    }

    /// The service's address, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// The keys given to [`ClientBuilder::trusted_keys`], if any.
    pub fn trusted_keys(&self) -> Option<&Jwks> {
        self.inner.trusted_keys.as_ref()
    }

    /// The client's user key, if it has one.
    pub fn user_key(&self) -> Option<&str> {
        self.inner.user_key.as_deref()
    }

    fn resolve_user_key(&self, given: &Option<String>) -> Result<String> {
        given
            .clone()
            .or_else(|| self.inner.user_key.clone())
            .ok_or_else(|| Error::malformed("A user key is required: pass it to the call or to the client"))
    }

    /// One HTTP exchange: the answer of a 2xx, else the error for it. `body` is sent as JSON when given.
    pub(crate) fn exchange(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(String, String)],
    ) -> Result<Answer> {
        let url = format!("{}{}", self.inner.base_url, path);
        let agent = &self.inner.agent;
        let result = if method == "GET" {
            let mut request = agent.get(&url).header("accept", "application/json");
            for (k, v) in headers {
                request = request.header(k.as_str(), v.as_str());
            }
            request.call()
        } else {
            let mut request = agent
                .post(&url)
                .header("accept", "application/json")
                .header("content-type", "application/json");
            for (k, v) in headers {
                request = request.header(k.as_str(), v.as_str());
            }
            request.send(body.map(Value::to_string).unwrap_or_default())
        };
        let mut response = result.map_err(|e| network_error(&url, &e))?;
        let status = response.status().as_u16();
        let reason_header = response
            .headers()
            .get("x-service-reason")
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| network_error(&url, &e))?;
        let parsed: Option<Value> = if text.trim().is_empty() {
            Some(Value::Null)
        } else {
            serde_json::from_str(&text).ok()
        };
        if (200..300).contains(&status) {
            return match parsed {
                Some(body) => {
                    if body.get("success") == Some(&Value::Bool(false)) {
                        return Err(Error::malformed(format!("{path} answered success:false with a {status} status")));
                    }
                    Ok(Answer { status, body })
                }
                // A captive portal's or a proxy's page: not the service.
                None => Err(Error::Network(format!(
                    "{url} answered {status} with something other than the licensing service's JSON (a captive portal or proxy?)"
                ))),
            };
        }
        let record = parsed.as_ref().and_then(Value::as_object);
        let text_of = |key: &str| {
            record
                .and_then(|r| r.get(key))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let message = text_of("message")
            .or_else(|| text_of("title"))
            .map(String::from)
            .unwrap_or_else(|| format!("HTTP {status}"));
        let reason = text_of("reason")
            .map(String::from)
            .or(reason_header)
            .unwrap_or_else(|| {
                if status == 401 {
                    String::from("grpc16")
                } else if is_licensing_status(status) {
                    format!("grpc{}", status - 520)
                } else {
                    format!("http{status}")
                }
            });
        Err(Error::Refused {
            reason,
            message,
            status,
        })
    }

    /// The bearer token from the user key, signing in when there is none or it is about to expire.
    fn session_token(&self, renew: bool) -> Result<String> {
        let mut session = self.inner.session.lock().unwrap_or_else(|e| e.into_inner());
        if !renew {
            if let Some(s) = session.as_ref().filter(|s| Instant::now() < s.renew_at) {
                return Ok(s.token.clone());
            }
        }
        let user_key = self
            .inner
            .user_key
            .clone()
            .ok_or_else(|| Error::malformed("No user key to sign in with"))?;
        let answer = self.exchange("POST", "/v1/auth/login", Some(&json!({ "userKey": user_key })), &[])?;
        let o = wire::object(Some(&answer.body), "login")?;
        let token = wire::string(o, "token", "login")?;
        let lifetime = wire::opt_number(o, "expiresIn", "login")?.unwrap_or(0.0).max(0.0);
        // Renew a tenth of the lifetime early (at most a minute), so no request carries a token expiring in flight.
        let early = (lifetime / 10.0).min(60.0);
        let valid_for =
            Duration::try_from_secs_f64((lifetime - early).clamp(0.0, 86_400.0 * 365.0)).unwrap_or_default();
        let renew_at = Instant::now().checked_add(valid_for).unwrap_or_else(Instant::now);
        *session = Some(Session {
            token: token.clone(),
            renew_at,
        });
        Ok(token)
    }

    /// The credential headers, and whether they came from the user key (and so can be renewed).
    fn credentials(&self) -> Result<(Vec<(String, String)>, bool)> {
        let inner = &self.inner;
        if let Some(key) = &inner.api_key {
            return Ok((vec![(inner.api_key_header.clone(), key.clone())], false));
        }
        if let Some(token) = &inner.bearer_token {
            return Ok((vec![("authorization".into(), format!("Bearer {token}"))], false));
        }
        if inner.user_key.is_some() {
            return Ok((
                vec![("authorization".into(), format!("Bearer {}", self.session_token(false)?))],
                true,
            ));
        }
        Ok((Vec::new(), false))
    }

    /// A licensing call with credentials; a session token the service refuses is renewed once.
    fn authorized(&self, path: &str, body: &Value, extra: &[(String, String)]) -> Result<Object> {
        let (mut headers, renewable) = self.credentials()?;
        headers.extend_from_slice(extra);
        let answer = match self.exchange("POST", path, Some(body), &headers) {
            Err(Error::Refused { status: 401, .. }) if renewable => {
                let mut headers = vec![(
                    "authorization".to_string(),
                    format!("Bearer {}", self.session_token(true)?),
                )];
                headers.extend_from_slice(extra);
                self.exchange("POST", path, Some(body), &headers)?
            }
            other => other?,
        };
        match answer.body {
            Value::Object(o) => Ok(o),
            _ => Err(Error::malformed(format!(
                "{path} answered something other than a JSON object"
            ))),
        }
    }

    /// Activates the license on a machine (`POST /v1/license/activate`). Idempotent per (license, machine, client).
    /// Over the activation limit: refused `alreadyActivated` (526).
    pub fn activate(&self, request: &ActivateRequest) -> Result<ActivateResult> {
        let user_key = self.resolve_user_key(&request.user_key)?;
        let o = self.authorized(
            "/v1/license/activate",
            &body(&[
                ("userKey", Some(user_key.into())),
                ("machineId", Some(request.machine_id.clone().into())),
                ("clientId", s(&request.client_id)),
                ("clientName", s(&request.client_name)),
                ("productCode", s(&request.product_code)),
                ("version", s(&request.version)),
                ("nonce", s(&request.nonce)),
            ]),
            &[],
        )?;
        Ok(ActivateResult {
            license_token: wire::string(&o, "licenseToken", "activate")?,
            token_expire_at: opt_time(&o, "tokenExpireAt", "activate")?,
            active_client_count: count(&o, "activeClientCount", "activate")?,
            max_client_count: count(&o, "maxClientCount", "activate")?,
            license: License::from_json(o.get("license"))?,
        })
    }

    /// Frees the machine's activation (`POST /v1/license/deactivate`). A machine holding an unexpired license file
    /// is refused (`licenseFileHeld`); past `Licensing:MaxDeactivationsPerMonth`, `deactivationLimit`.
    pub fn deactivate(&self, request: &DeactivateRequest) -> Result<Counts> {
        let user_key = self.resolve_user_key(&request.user_key)?;
        let o = self.authorized(
            "/v1/license/deactivate",
            &body(&[
                ("userKey", Some(user_key.into())),
                ("machineId", Some(request.machine_id.clone().into())),
                ("clientId", s(&request.client_id)),
                ("licenseToken", s(&request.license_token)),
            ]),
            &[],
        )?;
        counts(&o, "deactivate")
    }

    /// Validates the license online (`POST /v1/license/validate`) and verifies the answer: its license key against
    /// the JWKS ([`ClientBuilder::trusted_keys`], else `GET /v1/extensions/keys`), for this machine, product and a
    /// fresh nonce (unless the request gives one). Revoked, expired or tampered licenses are refused with the
    /// service's reason; a key that does not verify with `signature`, `unknownKey`, `machine`, `nonce`…
    pub fn validate(&self, request: &ValidateRequest) -> Result<Validation> {
        let nonce = request.nonce.clone().unwrap_or_else(crate::airgap::random_nonce);
        let validation = self.validate_unverified(&ValidateRequest {
            nonce: Some(nonce.clone()),
            ..request.clone()
        })?;
        self.verify_validation(validation, request, Some(&nonce), None)
    }

    /// Verifies a validation's license key (for [`Client::validate`] and offline grace).
    pub(crate) fn verify_validation(
        &self,
        mut validation: Validation,
        request: &ValidateRequest,
        nonce: Option<&str>,
        now: Option<SystemTime>,
    ) -> Result<Validation> {
        let Some(key) = validation.license.license_key.clone() else {
            if request.machine_id.is_some() {
                return Err(Error::malformed(
                    "The validation answer names a machine but carries no license key",
                ));
            }
            return Ok(validation);
        };
        let check = KeyCheck {
            now,
            clock_tolerance_secs: 0,
            product_code: request.product_code.clone(),
            machine_id: request.machine_id.clone(),
            nonce: nonce.map(String::from),
        };
        let payload = match verify_license_key(&key, &self.signing_keys(false)?, &check) {
            // A key signed by a key published since the keys were fetched: fetch them again once.
            Err(Error::UnknownKey(_)) if self.inner.trusted_keys.is_none() => {
                verify_license_key(&key, &self.signing_keys(true)?, &check)?
            }
            other => other?,
        };
        validation.payload = Some(payload);
        Ok(validation)
    }

    /// `POST /v1/license/validate` without verifying the license key (read [`Validation::payload`] as `None`).
    pub fn validate_unverified(&self, request: &ValidateRequest) -> Result<Validation> {
        let user_key = self.resolve_user_key(&request.user_key)?;
        let install: Vec<(String, String)> = self
            .inner
            .install_id
            .iter()
            .map(|id| ("x-service-install-id".to_string(), id.clone()))
            .collect();
        let sent = body(&[
            ("userKey", Some(user_key.into())),
            ("machineId", s(&request.machine_id)),
            ("clientId", s(&request.client_id)),
            ("licenseToken", s(&request.license_token)),
            ("productCode", s(&request.product_code)),
            ("version", s(&request.version)),
            ("nonce", s(&request.nonce)),
        ]);
        let o = self.authorized("/v1/license/validate", &sent, &install)?;
        let what = "validate";
        Ok(Validation {
            license_id: wire::string(&o, "licenseId", what)?,
            status: LicenseStatus::read(o.get("status"), "validate.status")?,
            license: License::from_json(o.get("license"))?,
            license_token: wire::opt_string(&o, "licenseToken", what)?,
            server_time: opt_time(&o, "serverTime", what)?
                .ok_or_else(|| Error::malformed("validate.serverTime is missing"))?,
            offline_grace_days: wire::opt_number(&o, "offlineGraceDays", what)?.unwrap_or(0.0),
            payload: None,
            answer: Value::Object(o),
        })
    }

    /// Requests a floating seat (`POST /v1/license/request`). All seats taken: refused `seatsExhausted` (528). A
    /// (machine, client) that already holds a seat gets that seat back.
    pub fn request_seat(&self, request: &SeatRequest) -> Result<Seat> {
        let user_key = self.resolve_user_key(&request.user_key)?;
        let o = self.authorized(
            "/v1/license/request",
            &body(&[
                ("userKey", Some(user_key.into())),
                ("machineId", Some(request.machine_id.clone().into())),
                ("clientId", Some(request.client_id.clone().into())),
                ("clientName", s(&request.client_name)),
            ]),
            &[],
        )?;
        Ok(Seat {
            license_token: wire::string(&o, "licenseToken", "request")?,
            token_expire_at: opt_time(&o, "tokenExpireAt", "request")?,
            heartbeat_interval: count(&o, "heartbeatInterval", "request")?,
            active_client_count: count(&o, "activeClientCount", "request")?,
            max_client_count: count(&o, "maxClientCount", "request")?,
            license: License::from_json(o.get("license"))?,
            client_id: request.client_id.clone(),
        })
    }

    /// One heartbeat for a seat's token (`POST /v1/license/heartbeat`). Refused `licenseTokenNotFound` or
    /// `licenseTokenExpired` when the seat is gone.
    pub fn heartbeat(&self, license_token: &str) -> Result<Heartbeat> {
        let o = self.authorized("/v1/license/heartbeat", &json!({ "licenseToken": license_token }), &[])?;
        Ok(Heartbeat {
            token_expire_at: opt_time(&o, "tokenExpireAt", "heartbeat")?,
            heartbeat_interval: count(&o, "heartbeatInterval", "heartbeat")?,
            active_client_count: count(&o, "activeClientCount", "heartbeat")?,
            max_client_count: count(&o, "maxClientCount", "heartbeat")?,
        })
    }

    /// Gives a floating seat back (`POST /v1/license/release`). An unknown token is refused
    /// `licenseTokenNotFound` (525).
    pub fn release(&self, license_token: &str) -> Result<Counts> {
        let sent = body(&[
            ("licenseToken", Some(license_token.into())),
            ("userKey", s(&self.inner.user_key)),
        ]);
        let o = self.authorized("/v1/license/release", &sent, &[])?;
        counts(&o, "release")
    }

    /// Checks out a license file for a machine (`POST /v1/license/checkout`) to run offline until its
    /// `expires_at`: File mode always, Activation mode for an activated machine, Floating for a seat's holder.
    pub fn checkout(&self, request: &CheckoutRequest) -> Result<LicenseFileAnswer> {
        let user_key = self.resolve_user_key(&request.user_key)?;
        let o = self.authorized(
            "/v1/license/checkout",
            &body(&[
                ("userKey", Some(user_key.into())),
                ("machineId", Some(request.machine_id.clone().into())),
                ("clientId", s(&request.client_id)),
                ("ttl", request.ttl.map(Value::from)),
                ("encrypt", Some(Value::Bool(request.encrypt))),
            ]),
            &[],
        )?;
        let what = "checkout";
        Ok(LicenseFileAnswer {
            license_file: wire::string(&o, "licenseFile", what)?,
            issued_at: system_time(wire::date(&o, "issuedAt", what)?),
            expires_at: system_time(wire::date(&o, "expiresAt", what)?),
            encrypted: wire::opt_bool(&o, "encrypted", what)?.unwrap_or(false),
        })
    }

    /// The JWK Set of the service's signing keys: the trusted keys given to the builder, else
    /// `GET /v1/extensions/keys`, cached by the client (`refresh` fetches it again). Keep it with the application
    /// (e.g. the state directory's `jwks.json`) to verify offline.
    pub fn signing_keys(&self, refresh: bool) -> Result<Jwks> {
        if let Some(keys) = &self.inner.trusted_keys {
            return Ok(keys.clone());
        }
        if !refresh {
            if let Some(keys) = self.inner.keys.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                return Ok(keys.clone());
            }
        }
        let answer = self.exchange("GET", "/v1/extensions/keys", None, &[])?;
        let keys: Jwks = serde_json::from_value(answer.body)
            .map_err(|e| Error::malformed(format!("The key set is not a JWK Set: {e}")))?;
        *self.inner.keys.lock().unwrap_or_else(|e| e.into_inner()) = Some(keys.clone());
        Ok(keys)
    }

    /// Checks for an update (`GET /v1/updates/{productCode}`) and verifies the answer's signature (ES256 over the
    /// RFC 8785 canonical JSON of `data`) before returning it. Nothing installable (204) is an answer with
    /// `available: false`. The service's refusals (403 `licenseExpired`, `licenseRevoked`…) are refused with the
    /// reason of its `X-Service-Reason` header.
    pub fn check_for_update(&self, request: &UpdateCheckRequest) -> Result<UpdateCheck> {
        let mut query = vec![
            format!("platform={}", encode_component(&request.platform)),
            format!("version={}", encode_component(&request.version)),
        ];
        if let Some(channel) = &request.channel {
            query.push(format!("channel={}", encode_component(channel)));
        }
        let mut headers = Vec::new();
        if let Some(key) = request.user_key.as_ref().or(self.inner.user_key.as_ref()) {
            headers.push(("x-service-user-key".to_string(), key.clone()));
        }
        if let Some(id) = request.install_id.as_ref().or(self.inner.install_id.as_ref()) {
            headers.push(("x-service-install-id".to_string(), id.clone()));
        }
        let path = format!(
            "/v1/updates/{}?{}",
            encode_component(&request.product_code),
            query.join("&")
        );
        let answer = self.exchange("GET", &path, None, &headers)?;
        if answer.status == 204 || answer.body.is_null() {
            return Ok(UpdateCheck::nothing());
        }
        let keys = self.signing_keys(false)?;
        match crate::updates::verify_update_check(&answer.body, &keys) {
            Err(Error::UnknownKey(_)) if self.inner.trusted_keys.is_none() => {
                crate::updates::verify_update_check(&answer.body, &self.signing_keys(true)?)
            }
            other => other,
        }
    }

    /// Sends sessions (`POST /v1/updates/{productCode}/sessions`, CONTRACT section 13) for one version: how many the
    /// service took. [`crate::SessionTracker`] keeps and sends them for an application.
    pub fn send_sessions(
        &self,
        product_code: &str,
        install_id: &str,
        version: &str,
        platform: Option<&str>,
        sessions: &[crate::sessions::SessionRecord],
    ) -> Result<u64> {
        let mut headers = vec![("x-service-install-id".to_string(), install_id.to_string())];
        if let Some(key) = &self.inner.user_key {
            headers.push(("x-service-user-key".to_string(), key.clone()));
        }
        let sent = body(&[
            ("version", Some(version.into())),
            ("platform", platform.map(Value::from)),
            (
                "sessions",
                Some(serde_json::to_value(sessions).unwrap_or(Value::Array(Vec::new()))),
            ),
        ]);
        let path = format!("/v1/updates/{}/sessions", encode_component(product_code));
        let answer = self.exchange("POST", &path, Some(&sent), &headers)?;
        Ok(answer.body.get("accepted").and_then(Value::as_u64).unwrap_or(0))
    }

    /// Verifies an update check answer with this client's keys (for an answer obtained elsewhere).
    pub fn verify_update_answer(&self, answer: &Value) -> Result<UpdateCheck> {
        crate::updates::verify_update_check(answer, &self.signing_keys(false)?)
    }

    /// Verifies `data` signed by the service with this client's keys.
    pub fn verify_signed_data(&self, data: &Value, signature: &str, key_id: &str) -> Result<()> {
        verify_data_signature(data, signature, key_id, &self.signing_keys(false)?)
    }
}

fn counts(o: &Object, what: &str) -> Result<Counts> {
    Ok(Counts {
        license_id: wire::string(o, "licenseId", what)?,
        active_client_count: count(o, "activeClientCount", what)?,
        max_client_count: count(o, "maxClientCount", what)?,
    })
}

/// Percent-encoding of a URL path segment or query value (RFC 3986 unreserved characters kept).
fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreachable_is_network_and_quick() {
        let client = Client::builder("http://127.0.0.1:9")
            .user_key("K")
            .timeout(Duration::from_secs(3))
            .build()
            .unwrap();
        let started = Instant::now();
        let error = client
            .validate(&ValidateRequest {
                machine_id: Some("M".into()),
                ..Default::default()
            })
            .unwrap_err();
        assert_eq!(error.code(), "network");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn bad_addresses_are_refused() {
        assert_eq!(Client::builder("ftp://x").build().unwrap_err().code(), "malformed");
        assert_eq!(
            Client::builder("https://x")
                .ca_pem("nothing")
                .build()
                .unwrap_err()
                .code(),
            "malformed"
        );
        assert_eq!(encode_component("a b/é"), "a%20b%2F%C3%A9");
    }
}
