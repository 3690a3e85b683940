"""The checks of each vector kind (clients/vectors/README.md), with this package: each returns what the README says a
client reports, or raises the package's LicensingError whose ``code`` is the refusal code."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from licensing_client import (
    JsonWebKeySet,
    VerificationError,
    canonicalize,
    encode_request_code,
    parse_json,
    verify_activation_response,
    verify_data_signature,
    verify_license_file,
    verify_license_key,
)
from licensing_client._wire import iso, parse_instant
from licensing_client.models import UpdateCheck
from licensing_client.offline_codes import OfflineRequest, request_code_json

VECTORS = Path(__file__).resolve().parents[2] / "vectors"

Vector = dict[str, Any]


def manifest() -> list[Vector]:
    vectors: list[Vector] = json.loads((VECTORS / "manifest.json").read_text(encoding="utf-8"))
    return vectors


def read(vector: Vector, role: str) -> bytes:
    return (VECTORS / str(vector["files"][role])).read_bytes()


def text(vector: Vector, role: str) -> str:
    # As the interop program reads a file: bytes that are not UTF-8 become U+FFFD, which no check accepts.
    return read(vector, role).decode("utf-8", errors="replace")


def instant(value: str | None) -> datetime | None:
    if value is None:
        return None
    at = parse_instant(value)
    assert at is not None, f"not an instant: {value}"
    return at


def keys(vector: Vector) -> JsonWebKeySet:
    return JsonWebKeySet.from_text(read(vector, "jwks"))


def check_jcs(vector: Vector, _: dict[str, Any]) -> dict[str, Any]:
    try:
        value = parse_json(read(vector, "input"))
    except ValueError as error:
        raise VerificationError("malformed", f"not JSON: {error}") from error
    return {"canonical": canonicalize(value).decode("utf-8")}


def check_validation(vector: Vector, params: dict[str, Any]) -> dict[str, Any]:
    try:
        answer = parse_json(read(vector, "answer"))
    except ValueError as error:
        raise VerificationError("malformed", "The validation answer is not JSON") from error
    license = answer.get("license") if isinstance(answer, dict) else None
    key = license.get("licenseKey") if isinstance(license, dict) else None
    if not isinstance(key, str):
        raise VerificationError("malformed", "The validation answer carries no license key")
    payload = verify_license_key(
        key,
        keys(vector),
        now=instant(params.get("now")),
        machine_id=params.get("machineId"),
        product_code=params.get("productCode"),
        nonce=params.get("nonce"),
    )
    return {
        "valid": True,
        "licenseId": payload.license_id,
        "productCode": payload.product_code,
        "machineId": payload.machine_id,
        "licensingMode": payload.licensing_mode,
        "status": payload.status,
        "offlineGraceDays": payload.offline_grace_days or 0,
        "issuedAt": iso(datetime.fromtimestamp(payload.iat, tz=timezone.utc)),
        "expiresAt": None if payload.exp is None else iso(datetime.fromtimestamp(payload.exp, tz=timezone.utc)),
    }


def check_update(vector: Vector, _: dict[str, Any]) -> dict[str, Any]:
    from licensing_client.client import signed_parts

    try:
        answer = parse_json(read(vector, "answer"))
    except ValueError as error:
        raise VerificationError("malformed", "The update check is not JSON") from error
    data, signature, key_id = signed_parts(answer)
    verify_data_signature(data, signature, key_id, keys(vector))
    check = UpdateCheck.from_signed(data, signature, key_id)
    return {
        "available": check.update_available,
        "version": check.version,
        "required": check.required,
        "rollback": check.rollback,
    }


def check_license_file(vector: Vector, params: dict[str, Any]) -> dict[str, Any]:
    file = verify_license_file(
        text(vector, "file"),
        keys(vector),
        params["machineId"],
        product_code=params.get("productCode"),
        client_id=params.get("clientId"),
        user_key=params.get("userKey"),
        nonce=params.get("nonce"),
        now=instant(params.get("now")),
        last_seen=instant(params.get("lastSeen")),
    )
    return {
        "licenseId": file.license.license_id,
        "machineId": file.machine_id,
        "productCode": file.entitlements.product_code,
        "expiresAt": iso(file.expires_at),
        "encrypted": file.encrypted,
    }


def check_airgap_request(_: Vector, params: dict[str, Any]) -> dict[str, Any]:
    request = OfflineRequest(
        params["userKey"], params["machineId"], params["nonce"], params.get("clientId"), params.get("productCode")
    )
    return {"requestCode": encode_request_code(request), "json": request_code_json(request)}


def check_airgap_response(vector: Vector, params: dict[str, Any]) -> dict[str, Any]:
    file = verify_activation_response(
        text(vector, "code"),
        keys(vector),
        params["machineId"],
        params["nonce"],
        product_code=params.get("productCode"),
        client_id=params.get("clientId"),
        user_key=params.get("userKey"),
        now=instant(params.get("now")),
        last_seen=instant(params.get("lastSeen")),
    )
    return {
        "licenseId": file.license.license_id,
        "machineId": file.machine_id,
        "productCode": file.entitlements.product_code,
        "expiresAt": iso(file.expires_at),
    }


def vector(name: str) -> Vector:
    return next(v for v in manifest() if v["name"] == name)


def keep_validation(directory: Path, jwks_file: str = "jwks.json") -> tuple[str, datetime, str]:
    """Writes into ``directory`` what OfflineGrace keeps after an online validation (its state directory), from the
    vector ``validation-activated`` (a license key the service signed): the license key for its machine and the key
    set (``jwks_file`` of clients/vectors). Returns the machine id, the key's issue time and the license id."""
    v = vector("validation-activated")
    answer = json.loads(read(v, "answer"))
    machine = str(v["params"]["machineId"])
    directory.mkdir(parents=True, exist_ok=True)
    kept = {"v": 1, "machineId": machine, "licenseKey": answer["license"]["licenseKey"]}
    (directory / "licensing-validation.json").write_text(json.dumps(kept), encoding="utf-8")
    (directory / "jwks.json").write_bytes((VECTORS / jwks_file).read_bytes())
    issued = instant(v["expect"]["output"]["issuedAt"])
    assert issued is not None
    return machine, issued, str(v["expect"]["output"]["licenseId"])


CHECKS: dict[str, Callable[[Vector, dict[str, Any]], dict[str, Any]]] = {
    "jcs": check_jcs,
    "validation": check_validation,
    "update-check": check_update,
    "license-file": check_license_file,
    "airgap-request": check_airgap_request,
    "airgap-response": check_airgap_response,
}


def same(expected: Any, actual: Any) -> bool:
    """Equal, with instants compared as instants and null as absent."""
    if isinstance(expected, str) and isinstance(actual, str):
        a, b = parse_instant(expected), parse_instant(actual)
        if a is not None and b is not None and "T" in expected:
            return a == b
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return float(expected) == float(actual)
    return bool(expected == actual)
