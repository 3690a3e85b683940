"""License files (CONTRACT 11): what ``POST /v1/license/checkout``, a borrowed seat and the air-gapped ``/activate/``
page hand an application to run offline, verified (and decrypted) here without the network.

A file is a compact JWS (ES256, header ``typ: "license-file+jwt"``) whose payload names the license, its
entitlements, the machine, ``issuedAt`` and ``expiresAt``. An encrypted file's payload is
``{v: 1, enc: "A256GCM", iv, ciphertext, machineHint}``: AES-256-GCM under HKDF-SHA256(ikm = the user key in its
compact form, salt = the machine id, info = "license-file"). An ``LRS2`` response code is taken too (same checks over
its signed binary layout).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ._wire import JsonObject, b64_decode, date_member, from_unix, parse_json, strings
from .errors import LicensingError, VerificationError
from .keys import JsonWebKeySet, es256_verifies, verify_compact_jws
from .models import (
    LICENSE_TYPES,
    LICENSING_MODES,
    License,
    LicenseEntitlements,
    LicenseFile,
)
from .offline_codes import COMPACT_HASH_BYTES, ResponseCode, is_code, read_response_code, short_hash

__all__ = ["LICENSE_FILE_TYPE", "compact_user_key", "file_key", "verify_license_file"]

#: The JWS header ``typ`` of a license file.
LICENSE_FILE_TYPE = "license-file+jwt"
_ENCRYPTION_INFO = b"license-file"


def compact_user_key(typed: str) -> str:
    """A user key as the service compares it (Crockford base32 as people type it): upper case, without spaces and
    dashes, I and L read as 1, O as 0."""
    compact = re.sub(r"[\s-]+", "", typed.upper())
    return compact.replace("I", "1").replace("L", "1").replace("O", "0")


def file_key(user_key: str, machine_id: str) -> bytes:
    """The AES-256 key of an encrypted file: HKDF-SHA256(compact user key, salt = machine id, info = "license-file")."""
    return HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=machine_id.encode("utf-8"),
        info=_ENCRYPTION_INFO,
    ).derive(compact_user_key(user_key).encode("utf-8"))


@dataclass(frozen=True)
class _Checks:
    product_code: str | None
    client_id: str | None
    user_key: str | None
    nonce: str | None
    now: datetime
    last_seen: datetime | None
    clock_skew_seconds: int


def _record(value: Any) -> JsonObject | None:
    return value if isinstance(value, dict) else None


def _decrypt(sealed: JsonObject, machine_id: str, user_key: str | None) -> Any:
    if sealed.get("enc") != "A256GCM":
        raise VerificationError("malformed", f"The license file is encrypted with {sealed.get('enc')!r}, not A256GCM")
    iv = b64_decode(sealed["iv"]) if isinstance(sealed.get("iv"), str) else None
    ciphertext = b64_decode(sealed["ciphertext"]) if isinstance(sealed.get("ciphertext"), str) else None
    if not iv or ciphertext is None:
        raise VerificationError("malformed", "The encrypted license file has no iv or ciphertext")
    if user_key is None:
        raise VerificationError("decrypt", "The license file is encrypted: pass the license's user key to open it")
    try:
        plain = AESGCM(file_key(user_key, machine_id)).decrypt(iv, ciphertext, None)
    except (InvalidTag, ValueError) as error:
        raise VerificationError(
            "decrypt",
            "The encrypted license file does not open with this machine id and user key: "
            "it was made for another machine or license",
        ) from error
    try:
        return parse_json(plain)
    except (ValueError, UnicodeError):
        raise VerificationError("malformed", "The decrypted license file is not JSON") from None


def _malformed(message: str) -> VerificationError:
    return VerificationError("malformed", message)


def _entitlements(value: Any) -> LicenseEntitlements:
    o = _record(value)
    if o is None:
        raise _malformed("The license file's entitlements are not an object")
    product_code, license_type, max_clients = o.get("productCode"), o.get("licenseType"), o.get("maxClients")
    if not isinstance(product_code, str) or not isinstance(license_type, str):
        raise _malformed("The license file's entitlements have no productCode or licenseType")
    if not isinstance(max_clients, (int, float)) or isinstance(max_clients, bool):
        raise _malformed("The license file's entitlements.maxClients is missing or not a number")
    edition = o.get("edition")
    try:
        features = strings(o, "features", "entitlements")
    except LicensingError as error:
        raise _malformed(error.message) from None
    return LicenseEntitlements(
        product_code=product_code,
        license_type=license_type,
        features=tuple(features),
        max_clients=int(max_clients),
        edition=edition if isinstance(edition, str) and edition else None,
        expire_at=date_member(o, "expireAt", "entitlements", _malformed),
        support_expire_at=date_member(o, "supportExpireAt", "entitlements", _malformed),
    )


def _in_force(
    license: License,
    entitlements: LicenseEntitlements,
    issued_at: datetime,
    ends: list[datetime],
    checks: _Checks,
) -> None:
    """The checks after the signature and binding: product, clock (set back), the file's ends, the license's expiry."""
    product_code, now, last_seen = checks.product_code, checks.now, checks.last_seen
    clock_skew_seconds = checks.clock_skew_seconds
    if product_code is not None and entitlements.product_code != product_code:
        raise VerificationError(
            "product", f"The license file is for product {entitlements.product_code}, not {product_code}"
        )
    skew = timedelta(seconds=clock_skew_seconds)
    if now + skew < issued_at:
        raise VerificationError(
            "clock",
            f"The computer's clock ({now.isoformat()}) is earlier than the license file's issue time "
            f"({issued_at.isoformat()}): the clock was set back",
        )
    if last_seen is not None and now + skew < last_seen:
        raise VerificationError(
            "clock",
            f"The computer's clock ({now.isoformat()}) is earlier than the last time this application saw "
            f"({last_seen.isoformat()}): the clock was set back",
        )
    end = min(ends)
    if now >= end:
        raise VerificationError("expired", f"The license file expired at {end.isoformat()}: check out a new one")
    if license.expire_at is not None and now >= license.expire_at:
        raise VerificationError("expired", f"The license expired at {license.expire_at.isoformat()}")


def verify_license_file(
    file: str,
    jwks: JsonWebKeySet,
    machine_id: str,
    *,
    product_code: str | None = None,
    client_id: str | None = None,
    user_key: str | None = None,
    nonce: str | None = None,
    now: datetime | None = None,
    last_seen: datetime | None = None,
    clock_skew_seconds: int = 300,
) -> LicenseFile:
    """Verifies a license file offline (its text: a compact JWS, or an ``LRS1``/``LRS2`` response code) and returns its
    content. Refusals (:class:`VerificationError` ``code``): ``malformed``, ``unknownKey``, ``signature``, ``decrypt``
    (encrypted and no or the wrong user key / machine), ``machine``, ``nonce``, ``product``, ``clock`` (the clock is
    earlier than the file's issue time or ``last_seen`` by more than the skew), ``expired``."""
    at = now or datetime.now(timezone.utc)
    text = file.strip()
    checks = _Checks(product_code, client_id, user_key, nonce, at, last_seen, clock_skew_seconds)
    if not is_code(text):
        return _verify_signed_file(text, jwks, machine_id, checks)
    read = read_response_code(text)
    if read.version == 1 and read.license_file is not None:
        return _verify_signed_file(read.license_file, jwks, machine_id, checks)
    return _verify_compact_response(read, jwks, machine_id, checks)


def _verify_signed_file(jws_text: str, jwks: JsonWebKeySet, machine_id: str, checks: _Checks) -> LicenseFile:
    client_id, user_key, nonce = checks.client_id, checks.user_key, checks.nonce
    jws = verify_compact_jws(jws_text, jwks, "The license file")
    typ = jws.header.get("typ")
    if typ != LICENSE_FILE_TYPE:
        raise _malformed(f"The signed text is not a license file (typ {typ or 'missing'}, not {LICENSE_FILE_TYPE})")
    try:
        outer = _record(parse_json(jws.payload))
    except (ValueError, UnicodeError):
        outer = None
    if outer is None:
        raise _malformed("The license file's payload is not a JSON object")
    encrypted = "enc" in outer or "ciphertext" in outer
    payload = _record(_decrypt(outer, machine_id, user_key)) if encrypted else outer
    if payload is None:
        raise _malformed("The license file's payload is not a JSON object")
    if payload.get("v") != 1 or isinstance(payload.get("v"), bool):
        raise _malformed(f"The license file is of version {payload.get('v')!r}, not 1")

    machine = _record(payload.get("machine"))
    file_machine = machine.get("machineId") if machine else None
    if machine is None or not isinstance(file_machine, str):
        raise _malformed("The license file names no machine")
    file_client = (
        machine.get("clientId") if isinstance(machine.get("clientId"), str) and machine.get("clientId") else None
    )
    if file_machine != machine_id:
        raise VerificationError("machine", "The license file was issued to another machine")
    if client_id is not None and file_client is not None and file_client != client_id:
        raise VerificationError("machine", "The license file was issued to another client on this machine")
    file_nonce = payload.get("nonce") if isinstance(payload.get("nonce"), str) else None
    if nonce is not None and file_nonce != nonce:
        raise VerificationError(
            "nonce",
            "The license file does not answer this request (another nonce): enter the answer to the code shown now",
        )

    issued_at = date_member(payload, "issuedAt", "license file", _malformed)
    expires_at = date_member(payload, "expiresAt", "license file", _malformed)
    if issued_at is None or expires_at is None:
        raise _malformed("The license file has no issuedAt or expiresAt")
    borrow = _record(payload.get("borrow"))
    borrow_until = date_member(borrow, "until", "license file's borrow", _malformed) if borrow else None
    if borrow is not None and borrow_until is None:
        raise _malformed("The license file's borrow has no end")
    try:
        license = License.from_json(payload.get("license"))
    except LicensingError as error:
        raise _malformed(f"The license file's license is not readable: {error.message}") from None
    entitlements = _entitlements(payload.get("entitlements"))
    ends = [expires_at] + ([borrow_until] if borrow_until else [])
    _in_force(license, entitlements, issued_at, ends, checks)
    return LicenseFile(
        v=1,
        license=license,
        entitlements=entitlements,
        machine_id=file_machine,
        client_id=file_client,
        issued_at=issued_at,
        expires_at=expires_at,
        nonce=file_nonce,
        borrow_until=borrow_until,
        encrypted=encrypted,
        key_id=jws.key_id,
        text=jws_text.strip(),
    )


def _verify_compact_response(read: ResponseCode, jwks: JsonWebKeySet, machine_id: str, checks: _Checks) -> LicenseFile:
    client_id, nonce = checks.client_id, checks.nonce
    code = read.response
    assert code is not None and read.code is not None
    named = jwks.named_by_hash(code.key_id)
    if not named:
        raise VerificationError(
            "unknownKey", "The response code is signed by a key this application does not know (not in its JWKS)"
        )
    signer = next((jwk for jwk in named if es256_verifies(jwk, read.signature, read.signed)), None)
    if signer is None:
        raise VerificationError("signature", "The response code's signature does not verify: it was altered")
    if short_hash(machine_id, COMPACT_HASH_BYTES) != code.machine:
        raise VerificationError("machine", "The response code was issued to another machine")
    client_matched = code.client is not None and client_id is not None
    if client_matched and short_hash(client_id or "", COMPACT_HASH_BYTES) != code.client:
        raise VerificationError("machine", "The response code was issued to another client on this machine")
    if nonce is not None and short_hash(nonce, COMPACT_HASH_BYTES) != code.nonce:
        raise VerificationError(
            "nonce",
            "The response code does not answer this request (another nonce): enter the answer to the code shown now",
        )

    def date(seconds: int) -> datetime | None:
        return None if seconds == 0 else from_unix(seconds)

    license_type = LICENSE_TYPES[code.license_type]
    edition = code.edition or None
    license = License(
        license_id=code.license_id,
        licensing_mode=LICENSING_MODES[code.licensing_mode],
        license_type=license_type,
        edition=edition,
        issue_date=date(code.issue_date),
        expire_at=date(code.expire_at),
        support_expire_at=date(code.support_expire_at),
        features=code.features,
    )
    entitlements = LicenseEntitlements(
        product_code=code.product_code,
        license_type=license_type,
        features=code.features,
        max_clients=code.max_clients,
        edition=edition,
        expire_at=license.expire_at,
        support_expire_at=license.support_expire_at,
    )
    issued_at, expires_at = from_unix(code.issued_at), from_unix(code.expires_at)
    _in_force(license, entitlements, issued_at, [expires_at], checks)
    return LicenseFile(
        v=2,
        license=license,
        entitlements=entitlements,
        machine_id=machine_id,
        client_id=client_id if client_matched else None,
        issued_at=issued_at,
        expires_at=expires_at,
        nonce=nonce,
        borrow_until=None,
        encrypted=False,
        key_id=signer.get("kid", ""),
        text=read.code,
    )
