"""The codes of air-gapped activation (CONTRACT 11; byte by byte in docs/reference/offline-codes.md).

Each code is ``PREFIX-XXXXX-XXXXX-...``: Crockford base32 of its payload followed by the payload's CRC-32 (4 bytes,
big-endian), in groups of five. ``LRQ1`` a request (JSON), ``LRS2`` a response (a compact signed binary layout),
``LRS1`` a response of the first version (a license file's compact JWS).
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import zlib
from dataclasses import dataclass

from .errors import OfflineCodeError

REQUEST_CODE_PREFIX = "LRQ1"
RESPONSE_CODE_PREFIX = "LRS1"
COMPACT_RESPONSE_CODE_PREFIX = "LRS2"
COMPACT_KEY_ID_BYTES = 4
COMPACT_HASH_BYTES = 8
COMPACT_SIGNATURE_BYTES = 64
_CLIENT_FLAG = 1

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_VALUES = {c: i for i, c in enumerate(_ALPHABET)} | {"I": 1, "L": 1, "O": 0}


def crc32(data: bytes) -> int:
    """CRC-32 (IEEE 802.3, as zlib and PNG)."""
    return zlib.crc32(data) & 0xFFFFFFFF


def base32_encode(data: bytes) -> str:
    """Crockford base32, upper case, most significant bit first, the last character zero-padded, no ``=``."""
    out: list[str] = []
    buffer = 0
    bits = 0
    for byte in data:
        buffer = ((buffer << 8) | byte) & 0xFFFF
        bits += 8
        while bits >= 5:
            out.append(_ALPHABET[(buffer >> (bits - 5)) & 31])
            bits -= 5
    if bits > 0:
        out.append(_ALPHABET[(buffer << (5 - bits)) & 31])
    return "".join(out)


def base32_decode(text: str) -> bytes | None:
    """The whole bytes of Crockford base32 (any case, I and L as 1, O as 0); None for a character outside it."""
    out = bytearray()
    buffer = 0
    bits = 0
    for char in text.upper():
        value = _VALUES.get(char)
        if value is None:
            return None
        buffer = ((buffer << 5) | value) & 0xFFFF
        bits += 5
        if bits >= 8:
            out.append((buffer >> (bits - 8)) & 0xFF)
            bits -= 8
    return bytes(out)


def _encode_code(prefix: str, payload: bytes) -> str:
    data = payload + struct.pack(">I", crc32(payload))
    encoded = base32_encode(data)
    return "-".join([prefix, *(encoded[i : i + 5] for i in range(0, len(encoded), 5))])


_KIND_NAME = {
    REQUEST_CODE_PREFIX: "request code",
    RESPONSE_CODE_PREFIX: "response code",
    COMPACT_RESPONSE_CODE_PREFIX: "response code",
}
_READ_AS = {
    REQUEST_CODE_PREFIX: (REQUEST_CODE_PREFIX,),
    RESPONSE_CODE_PREFIX: (COMPACT_RESPONSE_CODE_PREFIX, RESPONSE_CODE_PREFIX),
}


def _decode_code(kind: str, code: str) -> tuple[str, bytes]:
    name = _KIND_NAME[kind]
    accepted = _READ_AS[kind]
    expected = accepted[0]
    compact = re.sub(r"[\s-]+", "", code).upper()
    if compact == "":
        raise OfflineCodeError("malformed", f"The {name} is empty.")
    prefix = compact[:4]
    if prefix not in accepted:
        other = _KIND_NAME.get(prefix)
        if other:
            hint = (
                "paste the code the application shows, not the answer"
                if expected == REQUEST_CODE_PREFIX
                else "enter the answer from the activation page, not the code the application shows"
            )
            raise OfflineCodeError("wrongKind", f"This is a {other} ({prefix}-…), not a {name} ({expected}-…): {hint}.")
        if re.fullmatch(r"LR[QS]\d", prefix):
            raise OfflineCodeError(
                "unknownVersion",
                f"This {name} is of version {prefix[3:]}, which this version does not read (expected {expected}-…).",
            )
        raise OfflineCodeError("malformed", f"A {name} starts with {expected}-.")
    data = base32_decode(compact[4:])
    if data is None:
        raise OfflineCodeError(
            "malformed",
            f"The {name} has characters that are not part of it (only digits and the letters A-Z except U).",
        )
    if len(data) <= 4:
        raise OfflineCodeError("checksum", f"The {name} is incomplete: part of it is missing.")
    payload, checksum = data[:-4], struct.unpack(">I", data[-4:])[0]
    if checksum != crc32(payload):
        raise OfflineCodeError(
            "checksum",
            f"The {name}'s checksum does not match: a character was mistyped or part of the code is missing.",
        )
    return prefix, payload


@dataclass(frozen=True)
class OfflineRequest:
    """What a request code carries: the license, this machine, and a nonce the answer must echo."""

    user_key: str
    machine_id: str
    nonce: str
    client_id: str | None = None
    product_code: str | None = None


def request_code_json(request: OfflineRequest) -> str:
    """The JSON a request code carries, as ``JSON.stringify`` writes it: ``{"v":1,"k","m","c"?,"n","p"?}``."""
    members: dict[str, object] = {"v": 1, "k": request.user_key, "m": request.machine_id}
    if request.client_id is not None:
        members["c"] = request.client_id
    members["n"] = request.nonce
    if request.product_code is not None:
        members["p"] = request.product_code
    return json.dumps(members, separators=(",", ":"), ensure_ascii=False)


def encode_request_code(request: OfflineRequest) -> str:
    """The request code (``LRQ1-…``) of a request."""
    return _encode_code(REQUEST_CODE_PREFIX, request_code_json(request).encode("utf-8"))


def decode_request_code(code: str) -> OfflineRequest:
    """The request a request code carries; :class:`OfflineCodeError` when it is not one, mistyped or incomplete."""
    _, payload = _decode_code(REQUEST_CODE_PREFIX, code)
    try:
        o = json.loads(payload.decode("utf-8"))
    except (ValueError, UnicodeError):
        raise OfflineCodeError("content", "The request code does not hold a request.") from None

    def text(v: object) -> bool:
        return isinstance(v, str) and v.strip() != ""

    if not isinstance(o, dict) or o.get("v") != 1 or not all(text(o.get(k)) for k in ("k", "m", "n")):
        raise OfflineCodeError("content", "The request code does not hold a request (license, machine and nonce).")
    if ("c" in o and not text(o["c"])) or ("p" in o and not text(o["p"])):
        raise OfflineCodeError("content", "The request code's client or product is not text.")
    return OfflineRequest(o["k"], o["m"], o["n"], o.get("c"), o.get("p"))


def encode_response_code(license_file: str) -> str:
    """The ``LRS1`` response code of a license file (its compact JWS). The service issues ``LRS2`` instead."""
    return _encode_code(RESPONSE_CODE_PREFIX, license_file.strip().encode("utf-8"))


def short_hash(text: str, length: int) -> bytes:
    """The first ``length`` bytes of SHA-256 of the UTF-8 text: an ``LRS2`` code's key id and bindings."""
    return hashlib.sha256(text.encode("utf-8")).digest()[:length]


@dataclass(frozen=True)
class CompactResponse:
    """The signed statement of an ``LRS2`` code; times are Unix seconds (0 = none), hashes as bytes."""

    key_id: bytes
    issued_at: int
    expires_at: int
    machine: bytes
    client: bytes | None
    nonce: bytes
    licensing_mode: int
    license_type: int
    max_clients: int
    issue_date: int
    expire_at: int
    support_expire_at: int
    license_id: str
    product_code: str
    edition: str
    features: tuple[str, ...]


def encode_compact_response(response: CompactResponse) -> bytes:
    """The body of an ``LRS2`` code (for tests and tools; the service makes real codes)."""

    def text(value: str) -> bytes:
        raw = value.encode("utf-8")
        if len(raw) > 255:
            raise ValueError("A text of an LRS2 code is at most 255 bytes")
        return bytes([len(raw)]) + raw

    out = bytearray([_CLIENT_FLAG if response.client else 0])
    out += response.key_id
    out += struct.pack(">II", response.issued_at, response.expires_at)
    out += response.machine + (response.client or b"") + response.nonce
    out += bytes([response.licensing_mode, response.license_type])
    out += struct.pack(
        ">IIII", response.max_clients, response.issue_date, response.expire_at, response.support_expire_at
    )
    out += text(response.license_id) + text(response.product_code) + text(response.edition)
    out.append(len(response.features))
    for feature in response.features:
        out += text(feature)
    return bytes(out)


def decode_compact_response(body: bytes) -> CompactResponse:
    """The fields of an ``LRS2`` body; :class:`OfflineCodeError` (``content``) when the bytes are not one."""
    at = 0

    def refuse() -> OfflineCodeError:
        return OfflineCodeError("content", "The response code does not hold a response.")

    def take(n: int) -> bytes:
        nonlocal at
        if at + n > len(body):
            raise refuse()
        at += n
        return body[at - n : at]

    def byte() -> int:
        return take(1)[0]

    def u32() -> int:
        value: int = struct.unpack(">I", take(4))[0]
        return value

    def text() -> str:
        try:
            return take(byte()).decode("utf-8")
        except UnicodeDecodeError:
            raise refuse() from None

    flags = byte()
    if flags & ~_CLIENT_FLAG:
        raise refuse()
    key_id = take(COMPACT_KEY_ID_BYTES)
    issued_at = u32()
    expires_at = u32()
    machine = take(COMPACT_HASH_BYTES)
    client = take(COMPACT_HASH_BYTES) if flags & _CLIENT_FLAG else None
    nonce = take(COMPACT_HASH_BYTES)
    licensing_mode = byte()
    license_type = byte()
    max_clients, issue_date, expire_at, support_expire_at = u32(), u32(), u32(), u32()
    license_id, product_code, edition = text(), text(), text()
    features = tuple(text() for _ in range(byte()))
    if at != len(body) or licensing_mode >= 3 or license_type >= 3:
        raise refuse()
    return CompactResponse(
        key_id,
        issued_at,
        expires_at,
        machine,
        client,
        nonce,
        licensing_mode,
        license_type,
        max_clients,
        issue_date,
        expire_at,
        support_expire_at,
        license_id,
        product_code,
        edition,
        features,
    )


@dataclass(frozen=True)
class ResponseCode:
    """A response code read (its checksum matched; nothing verified yet). ``version`` 1: ``license_file`` is the JWS.
    ``version`` 2: ``response``, ``signed`` (what the signature covers: ASCII ``LRS2`` + body), ``signature`` (r||s)
    and ``code`` (as the service writes it: upper case, in groups of five)."""

    version: int
    license_file: str | None = None
    code: str | None = None
    response: CompactResponse | None = None
    signed: bytes = b""
    signature: bytes = b""


_JWS_SHAPE = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")


def read_response_code(code: str) -> ResponseCode:
    """Reads a response code of either version: :class:`OfflineCodeError` when it is mistyped, incomplete, a request
    code, or holds no response."""
    prefix, payload = _decode_code(RESPONSE_CODE_PREFIX, code)
    if prefix == COMPACT_RESPONSE_CODE_PREFIX:
        if len(payload) <= COMPACT_SIGNATURE_BYTES:
            raise OfflineCodeError("content", "The response code does not hold a response.")
        body = payload[:-COMPACT_SIGNATURE_BYTES]
        return ResponseCode(
            version=2,
            code=_encode_code(prefix, payload),
            response=decode_compact_response(body),
            signed=COMPACT_RESPONSE_CODE_PREFIX.encode("ascii") + body,
            signature=payload[-COMPACT_SIGNATURE_BYTES:],
        )
    try:
        jws = payload.decode("utf-8")
    except UnicodeDecodeError:
        raise OfflineCodeError("content", "The response code does not hold a license file.") from None
    if not _JWS_SHAPE.match(jws):
        raise OfflineCodeError("content", "The response code does not hold a license file.")
    return ResponseCode(version=1, license_file=jws)


def is_code(text: str) -> bool:
    """Whether the text looks like an air-gap code (``LRQ1``/``LRS1``/``LRS2``…) rather than a license file's JWS."""
    return re.match(r"^LR[A-Z]\d", text.strip(), re.IGNORECASE) is not None
