//! Air-gapped activation from the application's side (CONTRACT section 11): make the request code to show (type it
//! or scan its QR code into the service's `/activate/` page on any connected device), then verify the response code
//! or license file the person brings back, all without the network.

use crate::codes::{encode_request_code, looks_like_code, read_response_code, OfflineRequest, ResponseCode};
use crate::error::Result;
use crate::jwks::Jwks;
use crate::license_file::{verify_license_file, FileCheck, LicenseFile};

/// A request to show the person: the code, what its QR code should hold, and the nonce to keep until the answer
/// comes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivationRequest {
    /// `LRQ1-…`: the code to type into the `/activate/` page.
    pub request_code: String,
    /// The nonce the response must name (keep it with the pending request, e.g. in the state directory).
    pub nonce: String,
    /// What a QR code of the request should hold: the code, or the activation page's address with the code after
    /// `#` (render it with a QR crate such as `qrcode`).
    pub qr_text: String,
}

/// What [`create_activation_request`] needs.
#[derive(Debug, Clone, Default)]
pub struct ActivationRequestInput {
    /// The license's user key.
    pub user_key: String,
    /// This machine's id.
    pub machine_id: String,
    /// The client on the machine, when the application uses one.
    pub client_id: Option<String>,
    /// The application's product code: the service refuses another product's license.
    pub product_code: Option<String>,
    /// The nonce (default: 16 random bytes, hex).
    pub nonce: Option<String>,
    /// The service's activation page (`https://licensing.example.com/activate/`): the QR code then holds its address
    /// with the code after `#`, so a phone that scans it opens the page with the code filled in.
    pub activation_page_url: Option<String>,
}

/// A fresh random nonce: 16 bytes from the operating system, as hex.
pub fn random_nonce() -> String {
    let mut bytes = [0u8; 16];
    // The operating system's generator; should it fail (it does not on supported platforms), fall back to the clock
    // and the process id, which still never repeat on one machine.
    if getrandom::getrandom(&mut bytes).is_err() {
        let seed = crate::instant::now_millis() as u128 ^ (u128::from(std::process::id()) << 64);
        bytes = seed.to_be_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The request code, its QR text and its nonce, for a machine to activate without a network.
pub fn create_activation_request(input: &ActivationRequestInput) -> ActivationRequest {
    let nonce = input.nonce.clone().unwrap_or_else(random_nonce);
    let request_code = encode_request_code(&OfflineRequest {
        user_key: input.user_key.clone(),
        machine_id: input.machine_id.clone(),
        client_id: input.client_id.clone(),
        nonce: nonce.clone(),
        product_code: input.product_code.clone(),
    });
    let qr_text = match &input.activation_page_url {
        None => request_code.clone(),
        Some(page) => {
            let page = page.split('#').next().unwrap_or_default();
            format!("{page}#{request_code}")
        }
    };
    ActivationRequest {
        request_code,
        nonce,
        qr_text,
    }
}

/// Verifies what the person brought back from the `/activate/` page, offline: a response code (`LRS2-…`, or an
/// `LRS1-…` handed out earlier) or the downloaded license file's text, as the answer to the request of `nonce`.
/// Returns the verified content and the text to save as the application's license file (the file's JWS, or the
/// `LRS2` code itself in its canonical form), which [`verify_license_file`] takes at each start. Refusals: a code
/// that does not read is `malformed`; then those of [`verify_license_file`].
pub fn verify_activation_response(
    response: &str,
    nonce: &str,
    jwks: &Jwks,
    check: &FileCheck,
) -> Result<(LicenseFile, String)> {
    let text = response.trim();
    let license_file = if looks_like_code(text) {
        match read_response_code(text)? {
            ResponseCode::V1 { license_file } => license_file,
            ResponseCode::V2 { code, .. } => code,
        }
    } else {
        text.to_string()
    };
    let check = FileCheck {
        nonce: Some(nonce.to_string()),
        ..check.clone()
    };
    let file = verify_license_file(&license_file, jwks, &check)?;
    Ok((file, license_file))
}
