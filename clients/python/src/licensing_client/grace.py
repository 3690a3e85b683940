"""Offline grace (CONTRACT 11): a license that validated online stays usable for ``offlineGraceDays`` (signed into
every validation's license key) while the service cannot be reached, then is refused.

The state directory holds ``licensing-validation.json`` (the last signed license key, the machine, the latest time
seen, or the service's last refusal) and ``jwks.json`` (the key set that verified it). Only the license key is trusted,
through its signature: the grace is its signed ``offlineGraceDays`` counted from its signed ``iat``; a clock set back
(before that ``iat`` or the last time seen) is refused. A refusal by the service ends the grace at once.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ._wire import b64url_decode, from_unix, iso, parse_instant, parse_json
from .client import LicensingClient, new_nonce
from .errors import GraceError, LicensingError, NetworkError, ProtocolError, ServiceRefusal, ServiceUnavailable
from .keys import JsonWebKeySet
from .license_key import verify_license_key
from .models import LicenseKeyPayload, ValidateResult

__all__ = ["OfflineGrace", "GraceResult", "VALIDATION_FILE", "JWKS_FILE"]

#: The file the last validation is kept in, inside the state directory.
VALIDATION_FILE = "licensing-validation.json"
#: The key set kept beside it.
JWKS_FILE = "jwks.json"


@dataclass(frozen=True)
class GraceResult:
    """``online``: the service answered (``validation``). Else the license is used offline: ``license`` is the last
    validation's verified payload, usable until ``grace_until``; ``error`` says why the service was not reached."""

    online: bool
    license: LicenseKeyPayload | None
    validated_at: datetime | None
    grace_days: float
    grace_until: datetime | None
    validation: ValidateResult | None = None
    error: LicensingError | None = None


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def unreachable(error: LicensingError) -> bool:
    """Whether the error means the service was not reached (rather than that it refused): grace applies."""
    return isinstance(error, (NetworkError, ProtocolError, ServiceUnavailable))


def grace_of(payload: LicenseKeyPayload) -> tuple[datetime, float, datetime]:
    """When a verified key was signed, its grace days, and when its offline use ends. A Floating key's grace ends with
    its ``exp`` (the seat's lease): offline floating use is a borrow."""
    validated_at = from_unix(payload.iat)
    days = payload.offline_grace_days or 0.0
    until = validated_at + timedelta(days=days)
    if payload.licensing_mode == "Floating" and payload.exp is not None:
        until = min(until, from_unix(payload.exp))
    return validated_at, days, until


class OfflineGrace:
    """Validates online when the service answers, and keeps the license usable offline for its grace days when it
    does not. ``validate`` raises the service's :class:`ServiceRefusal` when it refuses the license (and ends the
    grace), :class:`GraceError` when it cannot be reached and the license is not usable offline."""

    def __init__(
        self,
        client: LicensingClient,
        state_dir: str | os.PathLike[str],
        *,
        product_code: str | None = None,
        clock_skew_seconds: int = 300,
    ) -> None:
        self.client = client
        self.state_dir = Path(state_dir)
        self.product_code = product_code
        self.clock_skew = timedelta(seconds=clock_skew_seconds)

    # -- the state directory -------------------------------------------------------------------------------------------

    def _load(self) -> dict[str, Any]:
        try:
            stored = parse_json((self.state_dir / VALIDATION_FILE).read_bytes())
        except (OSError, ValueError, UnicodeError):
            return {"v": 1}
        return {**stored, "v": 1} if isinstance(stored, dict) else {"v": 1}

    def _save(self, stored: dict[str, Any], now: datetime) -> None:
        last = parse_instant(stored["lastSeen"]) if isinstance(stored.get("lastSeen"), str) else None
        stored = {**stored, "v": 1, "lastSeen": iso(now) if last is None or now > last else stored["lastSeen"]}
        write_atomically(self.state_dir / VALIDATION_FILE, json.dumps(stored, indent=2))

    def stored_keys(self) -> JsonWebKeySet | None:
        """The key set kept in the state directory (or pinned in the client)."""
        if self.client.trusted_keys is not None:
            return self.client.trusted_keys
        try:
            return JsonWebKeySet.from_text((self.state_dir / JWKS_FILE).read_bytes())
        except (OSError, LicensingError):
            return None

    def _verified(self, stored: dict[str, Any], machine_id: str) -> LicenseKeyPayload | None:
        key = stored.get("licenseKey")
        keys = self.stored_keys()
        if not isinstance(key, str) or stored.get("machineId") != machine_id or keys is None:
            return None
        try:
            # Checked as of its own issue (signature, machine, product); the grace decides how long it lasts.
            unverified = _iat_of(key)
            return verify_license_key(
                key, keys, now=from_unix(unverified), machine_id=machine_id, product_code=self.product_code
            )
        except LicensingError:
            return None

    # -- validate ------------------------------------------------------------------------------------------------------

    def validate(
        self,
        machine_id: str,
        *,
        client_id: str | None = None,
        license_token: str | None = None,
        version: str | None = None,
        now: datetime | None = None,
    ) -> GraceResult:
        """Validates the license for ``machine_id``: online when the service answers (its verified license key is kept
        with the key set), else from the state directory within the grace."""
        stored = self._load()
        try:
            validation = self.client.validate(
                machine_id,
                client_id=client_id,
                license_token=license_token,
                product_code=self.product_code,
                version=version,
                nonce=new_nonce(),
            )
        except ServiceRefusal as error:
            if unreachable(error):
                return self._offline(stored, machine_id, error, now or self.client.now())
            if error.grpc_code is None:
                raise  # not a judgement of the license (a malformed request, a route that is not there)
            at = now or self.client.now()
            refused = {"message": error.message, "at": iso(at)}
            if error.reason:
                refused["reason"] = error.reason
            self._save({"v": 1, "machineId": machine_id, "refused": refused}, at)
            raise
        except LicensingError as error:
            if not unreachable(error):
                raise
            return self._offline(stored, machine_id, error, now or self.client.now())
        at = now or self.client.now()
        kept: dict[str, Any] = {"v": 1, "machineId": machine_id}
        if stored.get("lastSeen"):
            kept["lastSeen"] = stored["lastSeen"]
        if validation.verified is None or validation.license.license_key is None:
            # A usable license whose answer proves nothing for this machine (no key): nothing to keep for offline use.
            self._save(kept, at)
            return GraceResult(True, None, None, 0.0, None, validation=validation)
        kept["licenseKey"] = validation.license.license_key
        if self.client.trusted_keys is None:
            write_atomically(self.state_dir / JWKS_FILE, self.client.get_signing_keys().to_text())
        self._save(kept, at)
        validated_at, days, until = grace_of(validation.verified)
        return GraceResult(True, validation.verified, validated_at, days, until, validation=validation)

    def _offline(self, stored: dict[str, Any], machine_id: str, cause: LicensingError, now: datetime) -> GraceResult:
        refused = stored.get("refused")
        if isinstance(refused, dict) and stored.get("machineId") == machine_id:
            reason = refused.get("reason") if isinstance(refused.get("reason"), str) else None
            raise GraceError(
                "refused",
                "The licensing service cannot be reached, and at the last validation it refused the license "
                f"({refused.get('message')}): it cannot be used offline",
                code=reason,
            ) from cause
        payload = self._verified(stored, machine_id)
        if payload is None:
            raise GraceError(
                "noValidation",
                "The licensing service cannot be reached, and the license was never validated online on this "
                "machine: connect once to use it offline",
            ) from cause
        validated_at, days, until = grace_of(payload)
        info: dict[str, Any] = {"validated_at": validated_at, "grace_until": until}
        last_seen = parse_instant(stored["lastSeen"]) if isinstance(stored.get("lastSeen"), str) else None
        if now + self.clock_skew < validated_at or (last_seen is not None and now + self.clock_skew < last_seen):
            raise GraceError(
                "clock",
                f"The computer's clock ({iso(now)}) is earlier than the last validation or the last time this "
                "application ran: the clock was set back",
                **info,
            ) from cause
        expire_at = parse_instant(payload.expire_at) if payload.expire_at else None
        if expire_at is not None and expire_at <= now:
            raise GraceError("expired", f"The license expired at {payload.expire_at}", **info) from cause
        if now >= until:
            raise GraceError(
                "graceEnded",
                f"The licensing service cannot be reached, and the license's {days:g} days of offline use after its "
                f"last validation ({iso(validated_at)}) ended at {iso(until)}: connect to validate it",
                **info,
            ) from cause
        self._save(stored, now)
        return GraceResult(False, payload, validated_at, days, until, error=cause)


def _iat_of(license_key: str) -> int:
    """The ``iat`` of a license key before its signature is checked (only to choose the time it is checked at)."""
    parts = license_key.split(".")
    raw = b64url_decode(parts[1]) if len(parts) == 3 else None
    try:
        claims = parse_json(raw) if raw is not None else None
    except (ValueError, UnicodeError):
        claims = None
    iat = claims.get("iat") if isinstance(claims, dict) else None
    if not isinstance(iat, (int, float)) or isinstance(iat, bool):
        raise ProtocolError("The kept license key has no iat")
    return int(iat)
