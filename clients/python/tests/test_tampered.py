"""Changing one byte of a signed vector makes it fail: every byte of what the service signed (license keys, license
files, LRS1 and LRS2 codes, update-check data) and of each signature, one at a time."""

from __future__ import annotations

import base64
import json

import pytest
from vector_checks import VECTORS as FOLDER
from vector_checks import CHECKS, Vector, instant, keys, manifest, read, text

from licensing_client import (
    LicensingError,
    canonicalize,
    parse_json,
    verify_activation_response,
    verify_data_signature,
    verify_license_file,
    verify_license_key,
)
from licensing_client._wire import b64url_decode, b64url_encode
from licensing_client.offline_codes import encode_response_code, read_response_code, _encode_code

SIGNED_OK = [v for v in manifest() if v["expect"].get("ok") and v["kind"] not in ("jcs", "airgap-request")]


def flipped(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


def jws_variants(jws: str) -> list[tuple[str, str]]:
    """Every one-byte change of a compact JWS's header, payload and signature, re-encoded: (part, text)."""
    parts = jws.strip().split(".")
    out: list[tuple[str, str]] = []
    for which, name in enumerate(("header", "payload", "signature")):
        raw = b64url_decode(parts[which])
        assert raw is not None
        for i in range(len(raw)):
            changed = list(parts)
            changed[which] = b64url_encode(flipped(raw, i))
            out.append((name, ".".join(changed)))
    return out


def refused(run: object) -> LicensingError:
    assert callable(run)
    with pytest.raises(LicensingError) as caught:
        run()
    return caught.value


def test_the_unchanged_vectors_pass() -> None:
    assert SIGNED_OK, "no signed vector in the manifest"
    for vector in SIGNED_OK:
        CHECKS[vector["kind"]](vector, vector.get("params", {}))


@pytest.mark.parametrize("vector", [v for v in SIGNED_OK if v["kind"] == "validation"], ids=lambda v: v["name"])
def test_license_key_one_byte(vector: Vector) -> None:
    params = vector["params"]
    key = parse_json(read(vector, "answer"))["license"]["licenseKey"]
    for part, changed in jws_variants(key):
        error = refused(
            lambda: verify_license_key(
                changed,
                keys(vector),
                now=instant(params.get("now")),
                machine_id=params.get("machineId"),
                product_code=params.get("productCode"),
                nonce=params.get("nonce"),
            )
        )
        if part != "header":
            assert error.code == "signature", (part, error)


@pytest.mark.parametrize("vector", [v for v in SIGNED_OK if v["kind"] == "license-file"], ids=lambda v: v["name"])
def test_license_file_one_byte(vector: Vector) -> None:
    params = vector["params"]
    for part, changed in jws_variants(text(vector, "file")):
        error = refused(
            lambda: verify_license_file(
                changed,
                keys(vector),
                params["machineId"],
                product_code=params.get("productCode"),
                user_key=params.get("userKey"),
                now=instant(params.get("now")),
            )
        )
        if part != "header":
            assert error.code == "signature", (part, error)


@pytest.mark.parametrize("vector", [v for v in SIGNED_OK if v["kind"] == "airgap-response"], ids=lambda v: v["name"])
def test_airgap_response_one_byte(vector: Vector) -> None:
    params = vector["params"]
    code = read_response_code(text(vector, "code"))

    def verify(candidate: str) -> object:
        return verify_activation_response(
            candidate,
            keys(vector),
            params["machineId"],
            params["nonce"],
            product_code=params.get("productCode"),
            client_id=params.get("clientId"),
            now=instant(params.get("now")),
        )

    if code.version == 1:
        assert code.license_file is not None
        for part, changed in jws_variants(code.license_file):
            error = refused(lambda: verify(encode_response_code(changed)))
            if part != "header":
                assert error.code == "signature", (part, error)
        return
    body = code.signed[4:]
    payload = body + code.signature
    for i in range(len(payload)):
        # The checksum recomputed, so only the signature can tell.
        error = refused(lambda: verify(_encode_code("LRS2", flipped(payload, i))))
        assert error.code in ("signature", "unknownKey", "malformed"), (i, error)
        if i >= 5:  # past the flags and the key id, the layout still reads: the signature is what refuses
            assert error.code in ("signature", "malformed"), (i, error)


@pytest.mark.parametrize("vector", [v for v in SIGNED_OK if v["kind"] == "update-check"], ids=lambda v: v["name"])
def test_update_check_one_byte(vector: Vector) -> None:
    answer = parse_json(read(vector, "answer"))
    jwks = keys(vector)
    canonical = canonicalize(answer["data"])
    changes = 0
    for i in range(len(canonical)):
        try:
            data = parse_json(flipped(canonical, i))
        except (ValueError, UnicodeError):
            continue  # no longer JSON: refused as malformed before any signature
        if canonicalize(data) == canonical:
            continue
        changes += 1
        error = refused(lambda: verify_data_signature(data, answer["signature"], answer["keyId"], jwks))
        assert error.code == "signature", (i, error)
    assert changes > len(canonical) // 2
    signature = base64.b64decode(answer["signature"])
    for i in range(len(signature)):
        changed = base64.b64encode(flipped(signature, i)).decode("ascii")
        error = refused(lambda: verify_data_signature(answer["data"], changed, answer["keyId"], jwks))
        assert error.code == "signature"


def test_a_changed_byte_of_a_vector_file_is_noticed() -> None:
    """The files themselves: one byte changed inside the signed license file text fails the check."""
    vector = next(v for v in SIGNED_OK if v["name"] == "license-file-plain")
    original = (FOLDER / vector["files"]["file"]).read_bytes()
    middle = len(original) // 2
    changed = original[:middle] + (b"A" if original[middle : middle + 1] != b"A" else b"B") + original[middle + 1 :]
    params = vector["params"]
    error = refused(
        lambda: verify_license_file(
            changed.decode("ascii"), keys(vector), params["machineId"], now=instant(params.get("now"))
        )
    )
    assert error.code in ("signature", "malformed")
    assert json.dumps(params)  # params are plain JSON
