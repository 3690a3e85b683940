"""The interop program (CONTRACT 14) where it needs no service: its misuse (exit 2), and the cases that run offline
(air-gap request codes, verifying license files and response codes with the keys of --state, validating from a kept
validation) on the shared vectors, with --url a closed port. Every case against the real service, HTTPS with --ca
included, is scripts/interop.mjs's (`npm run interop`)."""

from __future__ import annotations

import json
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from vector_checks import VECTORS, keep_validation, vector

from licensing_client.interop import main


@pytest.fixture
def closed_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(list(argv))
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1, out  # one JSON object on stdout
    return code, json.loads(out[0])


def keys_in(directory: Path) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "jwks.json").write_bytes((VECTORS / "jwks.json").read_bytes())
    return str(directory)


def test_misuse_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(capsys, "no-such-case", "--url", "http://127.0.0.1:1")[0] == 2
    assert run(capsys)[0] == 2
    code, out = run(capsys, "activate", "--url", "http://127.0.0.1:1")  # --user-key and --machine missing
    assert code == 2 and out["error"]["code"] == "usage"
    assert run(capsys, "activate", "--bogus-option", "x")[0] == 2
    assert run(capsys, "activate", "--url", "not an address", "--user-key", "K", "--machine", "m")[0] == 2
    assert run(capsys, "verify-file", "--machine", "m", "--file", str(tmp_path / "missing.lic"))[0] == 2
    validate = ("validate", "--url", "http://127.0.0.1:1", "--user-key", "K", "--machine", "m")
    assert run(capsys, *validate, "--now", "not an instant")[0] == 2
    # A heartbeat before any seat-request: nothing to beat.
    seat = ("--url", "http://127.0.0.1:1", "--user-key", "K", "--machine", "m", "--client", "c")
    assert run(capsys, "seat-heartbeat", *seat, "--state", str(tmp_path / "seats"))[0] == 2
    session = ("--url", "http://127.0.0.1:1", "--product", "p", "--version", "1.0.0", "--machine", "i")
    assert run(capsys, "session", *session, "--status", "sleeping")[0] == 2


def test_unreachable_is_network(capsys: pytest.CaptureFixture[str], closed_url: str) -> None:
    code, out = run(capsys, "validate", "--url", closed_url, "--user-key", "K", "--machine", "PC1")
    assert code == 1 and out["error"]["code"] == "network"
    code, out = run(capsys, "activate", "--url", closed_url, "--user-key", "K", "--machine", "PC1")
    assert code == 1 and out["error"]["code"] == "network"


def test_airgap_request_codes(capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("airgap-request-basic", "airgap-request-client-product"):
        v = vector(name)
        p = v["params"]
        argv = ["airgap-request", "--user-key", p["userKey"], "--machine", p["machineId"], "--nonce", p["nonce"]]
        if p.get("clientId"):
            argv += ["--client", p["clientId"]]
        if p.get("productCode"):
            argv += ["--product", p["productCode"]]
        assert run(capsys, *argv) == (0, {"requestCode": v["expect"]["output"]["requestCode"], "nonce": p["nonce"]})
    code, out = run(capsys, "airgap-request", "--user-key", "K", "--machine", "AIR")
    assert code == 0 and out["requestCode"].startswith("LRQ1-") and out["nonce"]


def test_verify_file_offline(capsys: pytest.CaptureFixture[str], closed_url: str, tmp_path: Path) -> None:
    v = vector("license-file-encrypted")
    p = v["params"]
    common = ("--url", closed_url, "--state", keys_in(tmp_path / "keys"), "--file", str(VECTORS / v["files"]["file"]))
    checks = ("--user-key", p["userKey"], "--product", p["productCode"], "--now", p["now"])
    code, out = run(capsys, "verify-file", *common, *checks, "--machine", p["machineId"])
    assert code == 0 and out["licenseId"] == v["expect"]["output"]["licenseId"]
    assert out["machineId"] == p["machineId"] and out["expiresAt"]
    code, out = run(capsys, "verify-file", *common, *checks, "--machine", "PC-OTHER")
    assert code == 1 and out["error"]["code"] == "decrypt"
    code, out = run(capsys, "verify-file", *common, *checks[:2], "--product", "another", "--machine", p["machineId"])
    assert code == 1 and out["error"]["code"] == "product"


def test_airgap_verify_offline(capsys: pytest.CaptureFixture[str], closed_url: str, tmp_path: Path) -> None:
    v = vector("airgap-response-lrs2")
    p = v["params"]
    common = ("--url", closed_url, "--state", keys_in(tmp_path / "keys"), "--file", str(VECTORS / v["files"]["code"]))
    checks = ("--product", p["productCode"], "--now", p["now"], "--machine", p["machineId"])
    assert run(capsys, "airgap-verify", *common, *checks, "--nonce", p["nonce"]) == (
        0,
        {"licenseId": v["expect"]["output"]["licenseId"], "machineId": p["machineId"]},
    )
    code, out = run(capsys, "airgap-verify", *common, *checks, "--nonce", "another-nonce")
    assert code == 1 and out["error"]["code"] == "nonce"


def test_validate_from_a_kept_validation(capsys: pytest.CaptureFixture[str], closed_url: str, tmp_path: Path) -> None:
    machine, issued, license_id = keep_validation(tmp_path / "state")
    offline = ("--url", closed_url, "--user-key", "K", "--machine", machine, "--state", str(tmp_path / "state"))
    assert run(capsys, "validate", *offline, "--now", (issued + timedelta(days=1)).isoformat()) == (
        0,
        {"valid": True, "licenseId": license_id, "verified": True, "offline": True},
    )
    code, out = run(capsys, "validate", *offline, "--now", (issued + timedelta(days=8)).isoformat())
    assert code == 1 and out["error"]["code"] == "grace"
