"""The typed results of the client: licenses, signed license keys, license files, update checks. Dates are aware UTC
``datetime`` objects; enumerations are their names (``"Activation"``, ``"Standard"``, ``"Activated"``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Sequence, TypeVar

from ._wire import JsonObject, date_member, obj, opt_str, req_num, req_str, strings
from .errors import ProtocolError

LicensingMode = Literal["File", "Activation", "Floating"]
LicenseType = Literal["Standard", "Demo", "Trial"]
LicenseStatus = Literal["Activated", "NotActivated", "Expired", "Revoked", "Tampered"]

LICENSING_MODES: tuple[LicensingMode, ...] = ("File", "Activation", "Floating")
LICENSE_TYPES: tuple[LicenseType, ...] = ("Standard", "Demo", "Trial")
LICENSE_STATUSES: tuple[LicenseStatus, ...] = ("Activated", "NotActivated", "Expired", "Revoked", "Tampered")

N = TypeVar("N", bound=str)


def enum_name(names: Sequence[N], value: Any, what: str) -> N:
    """An enumeration by name (any case) or by number (its index), as REST may send either."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, float) and value.is_integer() and 0 <= value < len(names):
        return names[int(value)]
    if isinstance(value, str):
        for name in names:
            if name.lower() == value.lower():
                return name
    raise ProtocolError(f"{what} has an unknown value: {value!r}")


@dataclass(frozen=True)
class Licensee:
    name: str | None = None
    email: str | None = None
    company: str | None = None


@dataclass(frozen=True)
class License:
    """The license as activate, validate and request answer it (and as a license file states it)."""

    license_id: str
    licensing_mode: LicensingMode
    license_type: LicenseType
    edition: str | None = None
    issue_date: datetime | None = None
    expire_at: datetime | None = None
    support_expire_at: datetime | None = None
    features: tuple[str, ...] = ()
    licensee: Licensee | None = None
    #: The signed license key (compact JWS), when the answer carries one.
    license_key: str | None = None

    @classmethod
    def from_json(cls, value: Any) -> License:
        o = obj(value, "license")
        licensee: Licensee | None = None
        if isinstance(o.get("licensee"), dict):
            lo: JsonObject = o["licensee"]
            found = Licensee(
                opt_str(lo, "name", "license.licensee"),
                opt_str(lo, "email", "license.licensee"),
                opt_str(lo, "company", "license.licensee"),
            )
            licensee = found if (found.name or found.email or found.company) else None
        elif o.get("licensee") is not None:
            raise ProtocolError("license.licensee is not an object")
        return cls(
            license_id=req_str(o, "licenseId", "license"),
            licensing_mode=enum_name(LICENSING_MODES, o.get("licensingMode"), "license.licensingMode"),
            license_type=enum_name(LICENSE_TYPES, o.get("licenseType"), "license.licenseType"),
            edition=opt_str(o, "edition", "license"),
            issue_date=date_member(o, "issueDate", "license", ProtocolError),
            expire_at=date_member(o, "expireAt", "license", ProtocolError),
            support_expire_at=date_member(o, "supportExpireAt", "license", ProtocolError),
            features=tuple(strings(o, "features", "license")),
            licensee=licensee,
            license_key=opt_str(o, "licenseKey", "license"),
        )


@dataclass(frozen=True)
class LicenseKeyPayload:
    """What a verified license key states, signed by the service (CONTRACT 4; docs/reference/offline.md)."""

    license_id: str
    iat: int
    product_code: str | None = None
    licensing_mode: LicensingMode | None = None
    license_type: str | None = None
    edition: str | None = None
    features: tuple[str, ...] = ()
    status: str | None = None
    expire_at: str | None = None
    support_expire_at: str | None = None
    machine_id: str | None = None
    client_id: str | None = None
    nonce: str | None = None
    exp: int | None = None
    offline_grace_days: float | None = None
    #: The payload as signed.
    claims: JsonObject = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class ActivateResult:
    license_token: str
    token_expire_at: datetime | None
    active_client_count: int
    max_client_count: int
    license: License


@dataclass(frozen=True)
class DeactivateResult:
    license_id: str
    active_client_count: int
    max_client_count: int


@dataclass(frozen=True)
class ValidateResult:
    """A validation the service answered. ``verified`` is the signed license key's payload, checked against the JWKS
    for this machine, nonce and product (``None`` when the answer carried no key: nothing proves a use here)."""

    license_id: str
    status: LicenseStatus
    license: License
    server_time: datetime
    license_token: str | None
    token_expire_at: datetime | None
    nonce: str | None
    offline_grace_days: float
    verified: LicenseKeyPayload | None


@dataclass(frozen=True)
class FloatingGrant:
    license_token: str
    token_expire_at: datetime | None
    active_client_count: int
    max_client_count: int
    heartbeat_interval: float
    license: License


@dataclass(frozen=True)
class HeartbeatResult:
    token_expire_at: datetime | None
    heartbeat_interval: float
    active_client_count: int
    max_client_count: int


@dataclass(frozen=True)
class ReleaseResult:
    license_id: str
    active_client_count: int
    max_client_count: int


@dataclass(frozen=True)
class LicenseFileAnswer:
    """A checked-out license file: ``license_file`` is the text to save (``<licenseId>.lic``)."""

    license_file: str
    issued_at: datetime
    expires_at: datetime
    encrypted: bool


@dataclass(frozen=True)
class LicenseEntitlements:
    product_code: str
    license_type: str
    features: tuple[str, ...]
    #: Machines (Activation) or seats (Floating); 0 = unlimited.
    max_clients: int
    edition: str | None = None
    expire_at: datetime | None = None
    support_expire_at: datetime | None = None


@dataclass(frozen=True)
class LicenseFile:
    """A verified license file (``v`` 1) or ``LRS2`` response code (``v`` 2)."""

    v: int
    license: License
    entitlements: LicenseEntitlements
    machine_id: str
    client_id: str | None
    issued_at: datetime
    expires_at: datetime
    nonce: str | None
    borrow_until: datetime | None
    encrypted: bool
    key_id: str
    #: The text to keep as the application's license file (the JWS, or the ``LRS2`` code).
    text: str = ""


@dataclass(frozen=True)
class UpdateRelease:
    version: str
    published_at: str
    name: str | None = None


@dataclass(frozen=True)
class UpdateDownload:
    file_name: str
    kind: str
    size: float
    sha256: str
    sha512: str
    url: str


@dataclass(frozen=True)
class UpdateCheck:
    """A signed update check whose signature verified. ``data`` is the signed object as received."""

    update_available: bool
    installable: bool
    current: str
    latest: str | None
    release: UpdateRelease | None
    download: UpdateDownload | None
    required: bool
    rollback: bool
    rollback_reason: str | None
    withheld_reason: str | None
    channel: str | None
    platform: str | None
    data: JsonObject
    signature: str
    key_id: str

    @property
    def version(self) -> str | None:
        """The version offered: the release's, ``None`` without a release."""
        return self.release.version if self.release else None

    @classmethod
    def from_signed(cls, data: JsonObject, signature: str, key_id: str) -> UpdateCheck:
        def bool_member(key: str, default: bool | None = None) -> bool:
            v = data.get(key)
            if v is None and default is not None:
                return default
            if not isinstance(v, bool):
                raise ProtocolError(f"data.{key} is missing or not a boolean")
            return v

        release = None
        if data.get("release") is not None:
            r = obj(data["release"], "data.release")
            release = UpdateRelease(
                req_str(r, "version", "data.release"),
                req_str(r, "publishedAt", "data.release"),
                opt_str(r, "name", "data.release"),
            )
        download = None
        if data.get("download") is not None:
            d = obj(data["download"], "data.download")
            download = UpdateDownload(
                req_str(d, "fileName", "data.download"),
                req_str(d, "kind", "data.download"),
                req_num(d, "size", "data.download"),
                req_str(d, "sha256", "data.download"),
                req_str(d, "sha512", "data.download"),
                req_str(d, "url", "data.download"),
            )
        return cls(
            update_available=bool_member("updateAvailable"),
            installable=bool_member("installable", False),
            current=opt_str(data, "current", "data") or "",
            latest=opt_str(data, "latest", "data"),
            release=release,
            download=download,
            required=bool_member("required", False),
            rollback=bool_member("rollback", False),
            rollback_reason=opt_str(data, "rollbackReason", "data"),
            withheld_reason=opt_str(data, "withheldReason", "data"),
            channel=opt_str(data, "channel", "data"),
            platform=opt_str(data, "platform", "data"),
            data=data,
            signature=signature,
            key_id=key_id,
        )


def counts(o: JsonObject, what: str) -> tuple[int, int]:
    return int(req_num(o, "activeClientCount", what)), int(req_num(o, "maxClientCount", what))
