"""The client when the service cannot be reached, with nothing standing in for the service: a closed port and a TCP
listener that accepts and never answers are refused as ``network``, within the client's timeout; a validation that
OfflineGrace kept (the shared vector's license key, which the real service signed) keeps the license usable offline
for its signed grace days and no longer; sessions wait in the data directory.

What the client does when the service answers is the interop suite's (`npm run interop`, scripts/interop.mjs: every
case of interop.py and examples/example.py against the real service)."""

from __future__ import annotations

import json
import socket
import time
from datetime import timedelta
from pathlib import Path
from typing import Iterator

import pytest
from vector_checks import keep_validation

from licensing_client import GraceError, LicensingClient, NetworkError, OfflineGrace, SessionTracker
from licensing_client.sessions import SESSIONS_FILE, waiting_sessions

USER_KEY = "8TBQ6-4N23T-EEKGS-W0N64-QHE7P"  # never sent anywhere that answers
PRODUCT = "vector-studio"


@pytest.fixture
def closed_url() -> str:
    """An address where nothing listens: the connection is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A listener that accepts connections (the kernel completes them) and never reads or answers."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    try:
        yield f"http://127.0.0.1:{silent.getsockname()[1]}"
    finally:
        silent.close()


def test_a_closed_port_is_network(closed_url: str) -> None:
    started = time.monotonic()
    with LicensingClient(closed_url, user_key=USER_KEY, timeout=2) as client:
        with pytest.raises(NetworkError) as refused:
            client.activate("PC-1")
    assert refused.value.code == "network"
    assert time.monotonic() - started < 2


def test_a_listener_that_never_answers_is_network_within_the_timeout(silent_url: str) -> None:
    started = time.monotonic()
    with LicensingClient(silent_url, user_key=USER_KEY, timeout=0.5) as client:
        with pytest.raises(NetworkError) as refused:
            client.validate("PC-1")
    elapsed = time.monotonic() - started
    assert refused.value.code == "network"
    assert 0.4 <= elapsed < 5, elapsed  # it waited for the timeout, and no longer


def test_offline_grace_from_a_kept_validation(closed_url: str, tmp_path: Path) -> None:
    machine, issued, license_id = keep_validation(tmp_path)
    with LicensingClient(closed_url, user_key=USER_KEY, timeout=2) as client:
        grace = OfflineGrace(client, tmp_path, product_code=PRODUCT)
        within = grace.validate(machine, now=issued + timedelta(days=3))
        assert not within.online and isinstance(within.error, NetworkError)
        assert within.license is not None and within.license.license_id == license_id
        assert within.grace_days == 7 and within.grace_until == issued + timedelta(days=7)
        assert json.loads((tmp_path / "licensing-validation.json").read_text())["lastSeen"]

        with pytest.raises(GraceError) as beyond:
            grace.validate(machine, now=issued + timedelta(days=8))
        assert beyond.value.code == "grace" and beyond.value.reason == "graceEnded"
        with pytest.raises(GraceError) as rolled_back:  # earlier than the 3 days already seen
            grace.validate(machine, now=issued + timedelta(days=1))
        assert rolled_back.value.code == "clock"
        with pytest.raises(GraceError) as other_machine:
            grace.validate("PC-NEVER-VALIDATED", now=issued + timedelta(days=1))
        assert other_machine.value.code == "grace" and other_machine.value.reason == "noValidation"
        with pytest.raises(GraceError) as other_product:
            OfflineGrace(client, tmp_path, product_code="another").validate(machine, now=issued + timedelta(days=3))
        assert other_product.value.reason == "noValidation"


def test_a_clock_before_the_validation_is_refused(closed_url: str, tmp_path: Path) -> None:
    machine, issued, _ = keep_validation(tmp_path)
    with LicensingClient(closed_url, user_key=USER_KEY, timeout=2) as client:
        with pytest.raises(GraceError) as refused:
            OfflineGrace(client, tmp_path).validate(machine, now=issued - timedelta(days=1))
    assert refused.value.code == "clock"


def test_a_service_that_never_answers_is_unreachable_for_the_grace(silent_url: str, tmp_path: Path) -> None:
    machine, issued, _ = keep_validation(tmp_path)
    with LicensingClient(silent_url, user_key=USER_KEY, timeout=0.5) as client:
        result = OfflineGrace(client, tmp_path).validate(machine, now=issued + timedelta(days=1))
    assert not result.online and isinstance(result.error, NetworkError)


def test_an_altered_kept_validation_gives_no_grace(closed_url: str, tmp_path: Path) -> None:
    machine, issued, _ = keep_validation(tmp_path)
    state = tmp_path / "licensing-validation.json"
    kept = json.loads(state.read_text())
    head, payload, signature = kept["licenseKey"].split(".")
    kept["licenseKey"] = ".".join((head, payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB"), signature))
    state.write_text(json.dumps(kept))
    with LicensingClient(closed_url, user_key=USER_KEY, timeout=2) as client:
        with pytest.raises(GraceError) as refused:
            OfflineGrace(client, tmp_path).validate(machine, now=issued + timedelta(days=1))
    assert refused.value.reason == "noValidation"


def test_keys_that_did_not_sign_it_give_no_grace(closed_url: str, tmp_path: Path) -> None:
    machine, issued, _ = keep_validation(tmp_path, jwks_file="jwks-wrong-key.json")
    with LicensingClient(closed_url, user_key=USER_KEY, timeout=2) as client:
        with pytest.raises(GraceError) as refused:
            OfflineGrace(client, tmp_path).validate(machine, now=issued + timedelta(days=1))
    assert refused.value.reason == "noValidation"


def test_a_kept_refusal_gives_no_grace(closed_url: str, tmp_path: Path) -> None:
    # What OfflineGrace keeps when the service refused the license at the last validation (examples/example.py makes
    # the service refuse one, after its deactivation).
    machine, issued, _ = keep_validation(tmp_path)
    refused_at = (issued + timedelta(hours=1)).isoformat()
    state = tmp_path / "licensing-validation.json"
    state.write_text(
        json.dumps(
            {
                "v": 1,
                "machineId": machine,
                "refused": {"message": "The license has been revoked", "reason": "licenseRevoked", "at": refused_at},
            }
        )
    )
    with LicensingClient(closed_url, user_key=USER_KEY, timeout=2) as client:
        with pytest.raises(GraceError) as refused:
            OfflineGrace(client, tmp_path).validate(machine, now=issued + timedelta(days=1))
    assert refused.value.code == "licenseRevoked" and refused.value.reason == "refused"


def test_sessions_wait_while_the_service_cannot_be_reached(closed_url: str, tmp_path: Path) -> None:
    def statuses() -> list[tuple[str, str]]:
        return [(s["version"], s["status"]) for s in waiting_sessions(tmp_path / SESSIONS_FILE)]

    with LicensingClient(closed_url, user_key=USER_KEY, timeout=2) as client:
        tracker = SessionTracker.start(
            client, tmp_path, product_code=PRODUCT, version="1.0.0", install_id="install-1", hooks=False
        )
        assert statuses() == [("1.0.0", "started")]
        tracker.crashed()
        tracker.exited()  # a run ends once
        assert statuses() == [("1.0.0", "crashed")]
        assert waiting_sessions(tmp_path / SESSIONS_FILE)[0]["durationMs"] >= 0
        assert tracker.flush() == 0  # nothing taken: everything waits

        later = SessionTracker.start(
            client, tmp_path, product_code=PRODUCT, version="1.0.1", install_id="install-1", hooks=False
        )
        assert statuses() == [("1.0.0", "crashed"), ("1.0.1", "started")]
        later.exited()
        assert statuses() == [("1.0.0", "crashed"), ("1.0.1", "exited")]
