"""Python client of the edge licensing service (CONTRACT 14): activation, validation verified against the service's
JWK Set with offline grace, floating seats, license files, air-gapped codes, signed update checks and session pings.

Synchronous, typed (PEP 561). Every failure is a :class:`LicensingError` whose ``code`` is the service's ``reason``
when it refused, else one of ``signature``, ``unknownKey``, ``malformed``, ``expired``, ``product``, ``machine``,
``nonce``, ``clock``, ``decrypt``, ``grace``, ``network``.
"""

from .air_gap import ActivationRequest, create_activation_request, verify_activation_response
from .client import LicensingClient, new_nonce
from .errors import (
    REFUSAL_CODES,
    GraceError,
    LicensingError,
    NetworkError,
    OfflineCodeError,
    ProtocolError,
    ServiceRefusal,
    ServiceUnavailable,
    VerificationError,
)
from .grace import GraceResult, OfflineGrace
from .jcs import canonicalize, parse_json
from .keys import JsonWebKeySet, verify_data_signature
from .license_file import compact_user_key, verify_license_file
from .license_key import verify_license_key
from .machine import install_id, machine_id
from .models import (
    ActivateResult,
    DeactivateResult,
    FloatingGrant,
    HeartbeatResult,
    License,
    LicenseEntitlements,
    LicenseFile,
    LicenseFileAnswer,
    LicenseKeyPayload,
    Licensee,
    ReleaseResult,
    UpdateCheck,
    ValidateResult,
)
from .offline_codes import decode_request_code, encode_request_code, read_response_code
from .seat import FloatingSeat
from .sessions import SessionTracker

__version__ = "0.1.0"

__all__ = [
    "REFUSAL_CODES",
    "ActivateResult",
    "ActivationRequest",
    "DeactivateResult",
    "FloatingGrant",
    "FloatingSeat",
    "GraceError",
    "GraceResult",
    "HeartbeatResult",
    "JsonWebKeySet",
    "License",
    "LicenseEntitlements",
    "LicenseFile",
    "LicenseFileAnswer",
    "LicenseKeyPayload",
    "Licensee",
    "LicensingClient",
    "LicensingError",
    "NetworkError",
    "OfflineCodeError",
    "OfflineGrace",
    "ProtocolError",
    "ReleaseResult",
    "ServiceRefusal",
    "ServiceUnavailable",
    "SessionTracker",
    "UpdateCheck",
    "ValidateResult",
    "VerificationError",
    "canonicalize",
    "compact_user_key",
    "create_activation_request",
    "decode_request_code",
    "encode_request_code",
    "install_id",
    "machine_id",
    "new_nonce",
    "parse_json",
    "read_response_code",
    "verify_activation_response",
    "verify_data_signature",
    "verify_license_file",
    "verify_license_key",
]
