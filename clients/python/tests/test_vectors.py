"""Every vector of clients/vectors/manifest.json, run with this package: ok vectors report the expected members,
refused ones the expected refusal code (clients/vectors/README.md)."""

from __future__ import annotations

from typing import Any

import pytest
from vector_checks import CHECKS, Vector, instant, keys, manifest, same, text

from licensing_client import LicensingError, verify_activation_response, verify_license_file

VECTORS = manifest()


def test_the_manifest_has_every_kind() -> None:
    kinds = {v["kind"] for v in VECTORS}
    assert kinds <= set(CHECKS), f"kinds this client does not know yet: {kinds - set(CHECKS)}"
    assert set(CHECKS) <= kinds
    assert len({v["name"] for v in VECTORS}) == len(VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector(vector: Vector) -> None:
    check = CHECKS[vector["kind"]]
    expect = vector["expect"]
    params = vector.get("params", {})
    if expect.get("ok"):
        output = check(vector, params)
        for member, expected in expect["output"].items():
            actual = output.get(member)
            assert same(expected, actual), f"{member}: expected {expected!r}, got {actual!r}"
    else:
        with pytest.raises(LicensingError) as refused:
            check(vector, params)
        assert refused.value.code == expect["error"], refused.value.message


AIRGAP_OK = [v for v in VECTORS if v["kind"] == "airgap-response" and v["expect"].get("ok")]


@pytest.mark.parametrize("vector", AIRGAP_OK, ids=[v["name"] for v in AIRGAP_OK])
def test_a_response_code_kept_as_the_license_file(vector: Vector) -> None:
    """What verify_activation_response says to keep (``text``) verifies as the license file at each start, without
    the request's nonce (docs/clients/python.md, air-gapped activation)."""
    p = vector["params"]
    options: dict[str, Any] = {
        "product_code": p.get("productCode"),
        "client_id": p.get("clientId"),
        "now": instant(p.get("now")),
    }
    answer = verify_activation_response(text(vector, "code"), keys(vector), p["machineId"], p["nonce"], **options)
    kept = verify_license_file(answer.text, keys(vector), p["machineId"], **options)
    assert kept.license.license_id == vector["expect"]["output"]["licenseId"] == answer.license.license_id
    assert kept.expires_at == answer.expires_at
