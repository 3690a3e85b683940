"""The service's signing keys (CONTRACT 5) and ES256 verification: a JWK Set of P-256 keys, P1363 (r||s) signatures
over canonical JSON (update checks) or over a compact JWS's signing input (license keys, license files)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from ._wire import JsonObject, b64_decode, b64url_decode, parse_json
from .errors import ProtocolError, VerificationError
from .jcs import canonicalize

__all__ = ["JsonWebKeySet", "verify_data_signature", "verify_compact_jws", "CompactJws"]


@dataclass(frozen=True)
class JsonWebKeySet:
    """A JWK Set as ``GET /v1/extensions/keys`` answers it. ``keys`` are the JWKs as received (dicts of strings)."""

    keys: tuple[dict[str, str], ...] = field(default_factory=tuple)

    @classmethod
    def from_json(cls, value: Any) -> JsonWebKeySet:
        """From the parsed JSON (``{"keys": [...]}``); keys of other types are kept and never matched."""
        if not isinstance(value, dict) or not isinstance(value.get("keys"), list):
            raise ProtocolError("The key set is not {keys: [...]}")
        keys: list[dict[str, str]] = []
        for i, key in enumerate(value["keys"]):
            if not isinstance(key, dict) or not isinstance(key.get("kty"), str):
                raise ProtocolError(f"keys[{i}] is not a JWK")
            keys.append({k: v for k, v in key.items() if isinstance(v, str)})
        return cls(tuple(keys))

    @classmethod
    def from_text(cls, text: str | bytes) -> JsonWebKeySet:
        try:
            return cls.from_json(parse_json(text))
        except ValueError as error:
            raise ProtocolError(f"The key set is not JSON: {error}") from error

    def to_json(self) -> JsonObject:
        return {"keys": [dict(k) for k in self.keys]}

    def to_text(self) -> str:
        return json.dumps(self.to_json(), indent=2)

    def p256_keys(self) -> list[dict[str, str]]:
        """The ES256 (EC P-256) keys, with ``x`` and ``y``."""
        return [k for k in self.keys if k.get("kty") == "EC" and k.get("crv") == "P-256" and "x" in k and "y" in k]

    def find(self, kid: str) -> dict[str, str] | None:
        """The P-256 key with this ``kid``."""
        return next((k for k in self.p256_keys() if k.get("kid") == kid), None)

    def named_by_hash(self, key_id: bytes) -> list[dict[str, str]]:
        """The P-256 keys whose ``kid`` hashes (SHA-256, first bytes) to ``key_id``: an ``LRS2`` code's key id."""
        return [
            k
            for k in self.p256_keys()
            if "kid" in k and hashlib.sha256(k["kid"].encode("utf-8")).digest()[: len(key_id)] == key_id
        ]


def _public_key(jwk: dict[str, str]) -> ec.EllipticCurvePublicKey | None:
    return _point(jwk.get("x", ""), jwk.get("y", ""))


@lru_cache(maxsize=64)
def _point(x_text: str, y_text: str) -> ec.EllipticCurvePublicKey | None:
    """The P-256 public key of a JWK's x and y (checked on the curve once, then remembered)."""
    x = b64url_decode(x_text)
    y = b64url_decode(y_text)
    if x is None or y is None or len(x) != 32 or len(y) != 32:
        return None
    try:
        return ec.EllipticCurvePublicNumbers(
            int.from_bytes(x, "big"), int.from_bytes(y, "big"), ec.SECP256R1()
        ).public_key()
    except ValueError:
        return None


def es256_verifies(jwk: dict[str, str], signature: bytes, message: bytes) -> bool:
    """Whether ``signature`` (64 bytes, r||s) is the key's ES256 signature of ``message``; False for a key that is not
    a valid P-256 point."""
    if len(signature) != 64:
        return False
    key = _public_key(jwk)
    if key is None:
        return False
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    try:
        key.verify(der, message, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


def verify_data_signature(data: Any, signature: str, key_id: str, jwks: JsonWebKeySet) -> None:
    """Checks an update check's signature: ES256 by the key ``key_id`` over the RFC 8785 canonical JSON of ``data`` (as
    parsed). ``signature`` is standard (or URL-safe) base64 of the 64-byte r||s. Raises :class:`VerificationError`
    (``unknownKey``, ``signature``, ``malformed``)."""
    jwk = jwks.find(key_id)
    if jwk is None:
        raise VerificationError("unknownKey", f"No published P-256 key has the id {key_id}")
    raw = b64_decode(signature)
    if raw is None or len(raw) != 64:
        raise VerificationError("signature", "The signature is not 64 bytes of base64")
    message = canonicalize(data)
    if not es256_verifies(jwk, raw, message):
        raise VerificationError("signature", "The signature does not match the data")


@dataclass(frozen=True)
class CompactJws:
    """A verified compact JWS: its protected header, its payload bytes and the key that signed it."""

    header: JsonObject
    payload: bytes
    key_id: str


def verify_compact_jws(text: str, jwks: JsonWebKeySet, what: str = "The signed text") -> CompactJws:
    """Verifies a compact JWS (RFC 7515) signed ES256 by a key of ``jwks``: ``malformed`` when it does not read (not
    three base64url parts, a header that is not JSON, ``alg`` not ES256), ``unknownKey`` when no key matches its
    ``kid``, ``signature`` when the signature does not verify."""
    parts = text.strip().split(".")
    if len(parts) != 3:
        raise VerificationError("malformed", f"{what} is not a compact JWS (three base64url parts)")
    header_bytes, payload, signature = (b64url_decode(p) for p in parts)
    if header_bytes is None or payload is None or signature is None:
        raise VerificationError("malformed", f"{what} is not a compact JWS (three base64url parts)")
    try:
        header = parse_json(header_bytes)
    except (ValueError, UnicodeError):
        header = None
    if not isinstance(header, dict):
        raise VerificationError("malformed", f"{what}'s header is not a JSON object")
    if header.get("alg") != "ES256":
        raise VerificationError("malformed", f"{what} is signed with {header.get('alg')!r}, not ES256")
    if isinstance(header.get("crit"), list) and header["crit"]:
        raise VerificationError("malformed", f"{what} has critical header parameters this client does not read")
    kid = header.get("kid")
    if kid is not None and not isinstance(kid, str):
        raise VerificationError("malformed", f"{what}'s kid is not a string")
    candidates = jwks.p256_keys() if kid is None else [k for k in jwks.p256_keys() if k.get("kid") == kid]
    if not candidates:
        raise VerificationError(
            "unknownKey", f"{what} is signed by a key this application does not know (not in its JWKS)"
        )
    signing_input = f"{parts[0]}.{parts[1]}".encode("ascii")
    for jwk in candidates:
        if es256_verifies(jwk, signature, signing_input):
            return CompactJws(header, payload, jwk.get("kid", ""))
    raise VerificationError("signature", f"{what}'s signature does not verify: it was altered")
