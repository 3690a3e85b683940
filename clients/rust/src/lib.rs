//! # licensing-client
//!
//! The Rust client of the licensing service (CONTRACT section 14): activate, validate (the signed answer verified
//! against the service's JWKS, with offline grace from a state directory), deactivate, floating seats (request,
//! heartbeat, release, or a [`SeatKeeper`] thread), license files (checkout, verify and decrypt offline), air-gapped
//! request and response codes (`LRQ1`, `LRS2`, `LRS1`), the signed update check, and session pings.
//!
//! It is synchronous (ureq with rustls, a timeout on every request) and has no Tauri dependency: call it from a
//! Tauri command, a CLI or a service alike. Every fallible function returns `Result<T, licensing_client::Error>`;
//! [`Error::code`] is the refusal code every client of the service shares (the service's `reason`, or `signature`,
//! `unknownKey`, `malformed`, `expired`, `product`, `machine`, `nonce`, `clock`, `decrypt`, `grace`, `network`).
//! Bad input never panics.
//!
//! ```no_run
//! use licensing_client::{Client, OfflineGrace, ValidateRequest};
//!
//! # fn main() -> Result<(), licensing_client::Error> {
//! let client = Client::new("https://licensing.example.com", "ABCDE-FGHJK-MNPQR-STVWX")?;
//! let grace = OfflineGrace::new(client, "/path/to/app-data").product_code("studio");
//! let outcome = grace.validate(&ValidateRequest { machine_id: Some("machine-1".into()), ..Default::default() })?;
//! println!("{} (offline: {})", outcome.license_id(), outcome.is_offline());
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod airgap;
mod client;
mod codes;
mod error;
mod grace;
mod instant;
pub mod jcs;
mod jwks;
mod jws;
mod license;
mod license_file;
mod machine;
mod seat;
mod sessions;
mod updates;
mod wire;

pub use airgap::{
    create_activation_request, random_nonce, verify_activation_response, ActivationRequest, ActivationRequestInput,
};
pub use client::{
    ActivateRequest, ActivateResult, CheckoutRequest, Client, ClientBuilder, Counts, DeactivateRequest, Heartbeat,
    LicenseFileAnswer, Seat, SeatRequest, ValidateRequest, Validation, DEFAULT_TIMEOUT,
};
pub use codes::{
    base32_decode, base32_encode, decode_compact_response, decode_request_code, encode_request_code,
    encode_response_code, read_response_code, request_json, CompactResponse, OfflineRequest, ResponseCode,
    COMPACT_RESPONSE_CODE_PREFIX, REQUEST_CODE_PREFIX, RESPONSE_CODE_PREFIX,
};
pub use error::{Error, Result};
pub use grace::{keep_keys, kept_keys, unreachable, GraceOutcome, OfflineGrace, JWKS_FILE, VALIDATION_FILE};
pub use instant::{format_iso, format_system_time, parse_iso, parse_system_time};
pub use jwks::{verify_data_signature, Jwk, Jwks};
pub use license::{
    verify_license_key, KeyCheck, License, LicenseKeyPayload, LicenseStatus, LicenseType, Licensee, LicensingMode,
};
pub use license_file::{
    compact_user_key, verify_license_file, Entitlements, FileCheck, LicenseFile, LICENSE_FILE_TYPE,
};
pub use machine::machine_id;
pub use seat::{SeatEvent, SeatKeeper, SeatState};
pub use sessions::{
    install_id, random_uuid, SessionOptions, SessionRecord, SessionStatus, SessionTracker, INSTALL_ID_FILE,
    MAX_KEPT_SESSIONS, SESSIONS_FILE,
};
pub use updates::{verify_update_check, UpdateCheck, UpdateCheckRequest, UpdateDownload};
