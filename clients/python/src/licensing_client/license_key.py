"""Verifying a license key offline (CONTRACT 4): the compact JWS (ES256) in ``license.licenseKey`` of activate and
validate answers, against the service's JWK Set, for this machine, product and nonce."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import TypeGuard

from ._wire import parse_instant, parse_json, unix_ms
from .errors import VerificationError
from .keys import JsonWebKeySet, verify_compact_jws
from .models import LICENSING_MODES, LicenseKeyPayload, LicensingMode

__all__ = ["verify_license_key"]


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _opt_text(claims: dict[str, object], key: str) -> str | None:
    v = claims.get(key)
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise VerificationError("malformed", f"The license key's payload.{key} is not a string")
    return v


def verify_license_key(
    license_key: str,
    jwks: JsonWebKeySet,
    *,
    now: datetime | None = None,
    machine_id: str | None = None,
    product_code: str | None = None,
    nonce: str | None = None,
    clock_tolerance_seconds: int = 0,
) -> LicenseKeyPayload:
    """Verifies a license key and returns its payload. Refusals (:class:`VerificationError`), in this order:
    ``malformed`` (not a compact ES256 JWS, a payload that is not a license), ``unknownKey``, ``signature``,
    ``expired`` (``exp`` or the license's ``expireAt`` has passed at ``now``), ``product``, ``machine`` (another
    machine, or an Activation/Floating key naming none), ``nonce`` (does not echo the request's nonce)."""
    at = now or datetime.now(timezone.utc)
    jws = verify_compact_jws(license_key, jwks, "The license key")
    try:
        claims = parse_json(jws.payload)
    except (ValueError, UnicodeError):
        claims = None
    if not isinstance(claims, dict):
        raise VerificationError("malformed", "The license key's payload is not a JSON object")
    for member in ("exp", "iat", "nbf"):
        if claims.get(member) is not None and not _number(claims[member]):
            raise VerificationError("malformed", f"The license key's {member} is not a number")
    now_seconds = math.floor(unix_ms(at) / 1000)
    exp = claims.get("exp")
    if _number(exp) and now_seconds >= float(exp) + clock_tolerance_seconds:
        raise VerificationError("expired", "The license key has expired")
    nbf = claims.get("nbf")
    if _number(nbf) and float(nbf) > now_seconds + clock_tolerance_seconds:
        raise VerificationError("malformed", "The license key is not valid yet (nbf)")
    license_id = claims.get("licenseId")
    iat = claims.get("iat")
    if not isinstance(license_id, str) or not _number(iat):
        raise VerificationError("malformed", "The license key's payload is not a license (licenseId, iat)")
    mode_value = claims.get("licensingMode")
    mode: LicensingMode | None = None
    if mode_value is not None:
        found = [m for m in LICENSING_MODES if isinstance(mode_value, str) and m.lower() == mode_value.lower()]
        if isinstance(mode_value, int) and not isinstance(mode_value, bool) and 0 <= mode_value < 3:
            found = [LICENSING_MODES[mode_value]]
        if not found:
            raise VerificationError("malformed", f"The license key's licensingMode is unknown: {mode_value!r}")
        mode = found[0]
    features = claims.get("features")
    if features is not None and (not isinstance(features, list) or not all(isinstance(f, str) for f in features)):
        raise VerificationError("malformed", "The license key's features are not strings")
    grace = claims.get("offlineGraceDays")
    if grace is not None and not _number(grace):
        raise VerificationError("malformed", "The license key's offlineGraceDays is not a number")
    license_type = claims.get("licenseType")
    payload = LicenseKeyPayload(
        license_id=license_id,
        iat=int(iat),
        product_code=_opt_text(claims, "productCode"),
        licensing_mode=mode,
        license_type=str(license_type) if license_type is not None else None,
        edition=_opt_text(claims, "edition"),
        features=tuple(features or ()),
        status=_opt_text(claims, "status"),
        expire_at=_opt_text(claims, "expireAt"),
        support_expire_at=_opt_text(claims, "supportExpireAt"),
        machine_id=_opt_text(claims, "machineId"),
        client_id=_opt_text(claims, "clientId"),
        nonce=_opt_text(claims, "nonce"),
        exp=int(exp) if _number(exp) else None,
        offline_grace_days=float(grace) if grace is not None else None,
        claims=claims,
    )
    if payload.expire_at is not None:
        expire_at = parse_instant(payload.expire_at)
        if expire_at is None:
            raise VerificationError("malformed", f"The license key's expireAt is not a date: {payload.expire_at}")
        if unix_ms(expire_at) + clock_tolerance_seconds * 1000 <= unix_ms(at):
            raise VerificationError("expired", f"The license expired at {payload.expire_at}")
    if product_code is not None and payload.product_code != product_code:
        raise VerificationError(
            "product", f"The license key is for product {payload.product_code or '(none)'}, not {product_code}"
        )
    if machine_id is not None:
        needs_machine = payload.licensing_mode in ("Activation", "Floating")
        if (payload.machine_id is None and needs_machine) or (
            payload.machine_id is not None and payload.machine_id != machine_id
        ):
            raise VerificationError(
                "machine",
                "The license key names no machine"
                if payload.machine_id is None
                else "The license key was issued to another machine",
            )
    if nonce is not None and payload.nonce != nonce:
        raise VerificationError(
            "nonce", "The license key does not echo this request's nonce: it is not the answer to this request"
        )
    return payload
