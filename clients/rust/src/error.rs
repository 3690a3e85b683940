//! The one error type of the crate: every refusal carries a code of CONTRACT section 14, so an application (or the
//! interop program) switches on [`Error::code`] whatever the language of the client.

use std::fmt;

/// `Result<T, licensing_client::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why something was refused. [`Error::code`] is the CONTRACT 14 refusal code:
///
/// - the service's own `reason` when the service refused ([`Error::Refused`]: `licenseExpired`, `wrongProduct`,
///   `invalidUserKey`, `seatsExhausted`…);
/// - otherwise one of `signature`, `unknownKey`, `malformed`, `expired`, `product`, `machine`, `nonce`, `clock`,
///   `decrypt`, `grace`, `network`.
///
/// The message (`Display`) says it for a person. Nothing in this crate panics on bad input: every malformed answer,
/// file or code ends here.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The service refused the operation: a licensing refusal (HTTP 520 + gRPC code, with `reason`), a refused
    /// credential (401), or another answer that was not a success (400, 403, 404…). `reason` is the service's
    /// machine-readable reason (body `reason`, else the `X-Service-Reason` header); when it sent none, `grpc<n>` for a
    /// licensing status and `http<status>` for any other.
    #[error("{message}")]
    Refused {
        /// The service's reason (the refusal code).
        reason: String,
        /// The service's message (`The license has expired`…).
        message: String,
        /// The HTTP status it answered with.
        status: u16,
    },
    /// A signature does not verify: the data, key or file was altered (or a key of the same id signed it).
    #[error("{0}")]
    Signature(String),
    /// No key of the application's JWK Set has the id the signature names.
    #[error("{0}")]
    UnknownKey(String),
    /// Not readable as what it should be: not JSON, not a compact JWS, a mistyped code, a missing member.
    #[error("{0}")]
    Malformed(String),
    /// The license key, license file or license has expired.
    #[error("{0}")]
    Expired(String),
    /// Issued for another product than the application's.
    #[error("{0}")]
    Product(String),
    /// Issued to another machine (or client), or names none where its mode needs one.
    #[error("{0}")]
    Machine(String),
    /// Does not echo the nonce of this request: an older answer, or one to another request.
    #[error("{0}")]
    Nonce(String),
    /// The computer's clock is earlier than the issue time or than the last time seen: it was set back.
    #[error("{0}")]
    Clock(String),
    /// An encrypted license file does not open: no user key given, or made for another machine or license.
    #[error("{0}")]
    Decrypt(String),
    /// The service cannot be reached and the license cannot be used offline: no signed validation kept, or its
    /// offline grace has ended.
    #[error("{0}")]
    Grace(String),
    /// The service could not be reached (DNS, TCP, TLS, timeout), or answered as no licensing service does (a 5xx,
    /// 429, a proxy's page): worth retrying, and a reason for offline grace.
    #[error("{0}")]
    Network(String),
}

impl Error {
    /// The CONTRACT 14 refusal code: the service's reason, or `signature`, `unknownKey`, `malformed`, `expired`,
    /// `product`, `machine`, `nonce`, `clock`, `decrypt`, `grace`, `network`.
    pub fn code(&self) -> &str {
        match self {
            Error::Refused { reason, .. } => reason,
            Error::Signature(_) => "signature",
            Error::UnknownKey(_) => "unknownKey",
            Error::Malformed(_) => "malformed",
            Error::Expired(_) => "expired",
            Error::Product(_) => "product",
            Error::Machine(_) => "machine",
            Error::Nonce(_) => "nonce",
            Error::Clock(_) => "clock",
            Error::Decrypt(_) => "decrypt",
            Error::Grace(_) => "grace",
            Error::Network(_) => "network",
        }
    }

    /// Whether the service was not reached (or not the service answered): the case for offline grace and retries.
    pub fn is_network(&self) -> bool {
        matches!(self, Error::Network(_))
    }

    /// The HTTP status of a refusal by the service.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Refused { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub(crate) fn malformed(message: impl fmt::Display) -> Error {
        Error::Malformed(message.to_string())
    }
}

/// An error serializes as `{"code": "…", "message": "…"}`, so a Tauri command can return
/// `Result<T, licensing_client::Error>` as it is and the window reads `error.code`.
impl serde::Serialize for Error {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Error", 2)?;
        s.serialize_field("code", self.code())?;
        s.serialize_field("message", &self.to_string())?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_code_and_message() {
        let refused = Error::Refused {
            reason: "licenseExpired".into(),
            message: "The license has expired".into(),
            status: 527,
        };
        assert_eq!(
            serde_json::to_string(&refused).unwrap(),
            r#"{"code":"licenseExpired","message":"The license has expired"}"#
        );
        assert_eq!(Error::Grace("x".into()).code(), "grace");
    }
}
