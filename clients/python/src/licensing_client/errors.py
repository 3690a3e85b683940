"""The client's errors: one base class, :class:`LicensingError`, whose ``code`` is a refusal code of CONTRACT 14.

``code`` is the service's ``reason`` when the service refused (``licenseExpired``, ``wrongProduct``,
``invalidUserKey``, ``seatsExhausted`` ...), else one of :data:`REFUSAL_CODES`: ``signature``, ``unknownKey``,
``malformed``, ``expired``, ``product``, ``machine``, ``nonce``, ``clock``, ``decrypt``, ``grace``, ``network``.
An application switches on ``code`` (or catches a subclass) and shows ``message`` to a person.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

#: The refusal codes the client itself gives (the service's own ``reason`` values come beside them).
REFUSAL_CODES: Final = (
    "signature",
    "unknownKey",
    "malformed",
    "expired",
    "product",
    "machine",
    "nonce",
    "clock",
    "decrypt",
    "grace",
    "network",
)

#: Why a signature, license key, license file or code did not verify.
VerificationCode = Literal[
    "signature", "unknownKey", "malformed", "expired", "product", "machine", "nonce", "clock", "decrypt"
]


class LicensingError(Exception):
    """Base of every error this package raises. ``code`` says what failed, ``message`` says it for a person."""

    code: str
    message: str

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.message} ({self.code})"


class ServiceRefusal(LicensingError):
    """The service refused the call (a 4xx or 52x answer). ``code`` is its ``reason`` when it gave one.

    ``http_status`` is the HTTP status (520 + the gRPC code for a licensing refusal: 525 not found, 526 already
    activated, 527 revoked/expired/wrong product, 528 seats exhausted, 529 not activated, 535 tampered; 401 for a
    refused credential), ``reason`` the service's machine-readable reason (the body's ``reason`` or the
    ``X-Service-Reason`` header), ``None`` when it sent none.
    """

    http_status: int
    reason: str | None

    def __init__(self, message: str, http_status: int, reason: str | None) -> None:
        super().__init__(reason if reason else _code_without_reason(http_status), message)
        self.http_status = http_status
        self.reason = reason

    @property
    def grpc_code(self) -> int | None:
        """The gRPC status code of a licensing refusal (HTTP 520 + code), 16 for a refused credential."""
        if self.http_status == 401:
            return 16
        code = self.http_status - 520
        return code if 0 < code <= 16 else None


def _code_without_reason(http_status: int) -> str:
    # A refusal without a reason (a refused API key or bearer token, a validation problem, a route that is not there):
    # named as the TypeScript client's interop program names it, `grpc<code>` for a licensing status, else
    # `http<status>`.
    if http_status == 401:
        return "grpc16"
    if 520 < http_status <= 536:
        return f"grpc{http_status - 520}"
    return f"http{http_status}"


class ServiceUnavailable(ServiceRefusal):
    """The service (or what stands before it) is down or overloaded: a 5xx other than a licensing 52x, or 429. Not a
    judgement of the license: offline grace applies, and a seat's heartbeats go on."""


class NetworkError(LicensingError):
    """The service could not be reached (DNS, connection refused, TLS, timeout). Worth retrying, and what offline grace
    covers. ``code`` is ``network``."""

    def __init__(self, message: str) -> None:
        super().__init__("network", message)


class ProtocolError(LicensingError):
    """An answer that does not follow the contract (not JSON, a member missing). ``code`` is ``malformed``."""

    def __init__(self, message: str) -> None:
        super().__init__("malformed", message)


class VerificationError(LicensingError):
    """A signature, license key, license file or air-gap code that does not verify; never retry with the same data."""

    def __init__(self, code: VerificationCode, message: str) -> None:
        super().__init__(code, message)


#: Why an air-gap code does not read (its ``code`` is ``malformed`` whatever the problem).
OfflineCodeProblem = Literal["malformed", "wrongKind", "unknownVersion", "checksum", "content"]


class OfflineCodeError(VerificationError):
    """A request or response code that cannot be read: mistyped (``checksum``), incomplete, the other kind
    (``wrongKind``), a version this client does not read, or bytes that are not a request/response."""

    problem: OfflineCodeProblem

    def __init__(self, problem: OfflineCodeProblem, message: str) -> None:
        super().__init__("malformed", message)
        self.problem = problem


#: Why a license cannot be used offline.
GraceFailure = Literal["graceEnded", "noValidation", "refused", "clock", "expired"]


class GraceError(LicensingError):
    """The service cannot be reached and the license cannot be used offline.

    ``reason``: ``graceEnded`` or ``noValidation`` (``code`` ``grace``), ``clock`` (the computer's clock was set
    back; ``code`` ``clock``), ``expired`` (the license itself expired; ``code`` ``expired``), ``refused`` (the
    service refused the license at its last validation; ``code`` is that refusal's reason, ``grace`` without one).
    """

    reason: GraceFailure
    validated_at: datetime | None
    grace_until: datetime | None

    def __init__(
        self,
        reason: GraceFailure,
        message: str,
        *,
        code: str | None = None,
        validated_at: datetime | None = None,
        grace_until: datetime | None = None,
    ) -> None:
        default = reason if reason in ("clock", "expired") else "grace"
        super().__init__(code or default, message)
        self.reason = reason
        self.validated_at = validated_at
        self.grace_until = grace_until
