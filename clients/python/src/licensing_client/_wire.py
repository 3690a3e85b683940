"""Reading JSON without trusting it: numbers as the service reads them (doubles), typed member readers, ISO dates,
base64. Internal to the package."""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, TypeGuard, TypeVar

from .errors import LicensingError, ProtocolError

JsonObject = dict[str, Any]

_SAFE_INTEGER = 2**53
E = TypeVar("E", bound=LicensingError)


def _parse_int(text: str) -> int | float:
    # JavaScript reads every number as a double: an integer beyond 2^53 becomes the nearest double, as the service
    # (and RFC 8785) sees it, so canonical JSON of what was received matches what was signed.
    value = int(text)
    return value if -_SAFE_INTEGER <= value <= _SAFE_INTEGER else float(value)


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str | bytes) -> Any:
    """JSON as the service reads it (integers beyond 2^53 as doubles; NaN and Infinity refused); ValueError when it
    is not JSON."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return json.loads(text, parse_int=_parse_int, parse_constant=_refuse_constant)


def dumps(value: Any) -> str:
    """Compact JSON as ``JSON.stringify`` writes it (no spaces, non-ASCII as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def obj(value: Any, what: str, error: Callable[[str], LicensingError] = ProtocolError) -> JsonObject:
    if not isinstance(value, dict):
        raise error(f"{what} is not an object")
    return value


def req_str(o: JsonObject, key: str, what: str) -> str:
    v = o.get(key)
    if not isinstance(v, str):
        raise ProtocolError(f"{what}.{key} is missing or not a string")
    return v


def opt_str(o: JsonObject, key: str, what: str) -> str | None:
    """An optional string; null and "" read as absent."""
    v = o.get(key)
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise ProtocolError(f"{what}.{key} is not a string")
    return v


def _is_number(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def req_num(o: JsonObject, key: str, what: str) -> float:
    v = o.get(key)
    if not _is_number(v):
        raise ProtocolError(f"{what}.{key} is missing or not a number")
    return float(v)


def req_int(o: JsonObject, key: str, what: str) -> int:
    return int(req_num(o, key, what))


def opt_num(o: JsonObject, key: str, what: str) -> float | None:
    v = o.get(key)
    if v is None:
        return None
    if not _is_number(v):
        raise ProtocolError(f"{what}.{key} is not a number")
    return float(v)


def opt_bool(o: JsonObject, key: str, what: str) -> bool | None:
    v = o.get(key)
    if v is None:
        return None
    if not isinstance(v, bool):
        raise ProtocolError(f"{what}.{key} is not a boolean")
    return v


def strings(o: JsonObject, key: str, what: str) -> list[str]:
    v = o.get(key)
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise ProtocolError(f"{what}.{key} is not an array of strings")
    return list(v)


# ISO 8601 as JavaScript's Date.parse reads the service's dates: a date, optionally a time with seconds and fraction,
# and Z or an offset (a date-time without one is read as UTC here, as the service writes only UTC).
_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"\s*(Z|z|[+-]\d{2}:?\d{2})?$"
)


def parse_instant(text: str) -> datetime | None:
    """An ISO 8601 instant as an aware UTC datetime (milliseconds kept), or None when it is not one."""
    m = _ISO.match(text.strip())
    if not m:
        return None
    year, month, day, hour, minute, second, fraction, zone = m.groups()
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        value = datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            micro,
            tzinfo=timezone.utc,
        )
    except ValueError:
        return None
    if zone and zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        offset = sign * (int(digits[:2]) * 60 + int(digits[2:]))
        value = value - timedelta(minutes=offset)
    return value


def date_member(o: JsonObject, key: str, what: str, error: Callable[[str], E]) -> datetime | None:
    """An optional ISO date member (null/absent -> None); ``error`` is raised when present and not a date."""
    v = o.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise error(f"{what}.{key} is not a date")
    date = parse_instant(v)
    if date is None:
        raise error(f"{what}.{key} is not an ISO 8601 date: {v}")
    return date


def iso(value: datetime) -> str:
    """An instant as JavaScript's ``toISOString`` writes it: ``2026-01-01T00:00:00.000Z``."""
    utc = value.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def from_unix(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def unix_ms(value: datetime) -> int:
    """Milliseconds since the epoch (as JavaScript's getTime)."""
    delta = value.astimezone(timezone.utc) - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


_B64URL = re.compile(r"^[A-Za-z0-9_-]*$")


def b64url_decode(text: str) -> bytes | None:
    """Strict base64url without padding (a JWS part); None when it is not."""
    if not _B64URL.match(text) or len(text) % 4 == 1:
        return None
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None


_B64_ANY = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


def b64_decode(text: str) -> bytes | None:
    """Standard or URL-safe base64, padded or not, whitespace ignored; None when it is not base64."""
    normalized = re.sub(r"\s+", "", text).replace("-", "+").replace("_", "/")
    if not _B64_ANY.match(normalized):
        return None
    stripped = normalized.rstrip("=")
    if len(stripped) % 4 == 1:
        return None
    try:
        return base64.b64decode(stripped + "=" * (-len(stripped) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
