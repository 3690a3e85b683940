"""The Python interop program of CONTRACT 14: ``interop <case> [options]`` runs one case with this package and prints
one JSON object on stdout; exit 0 when the case succeeded, 1 when it was refused (``{"error": {"code", "message"}}``,
the refusal codes of CONTRACT 14), 2 on misuse. scripts/interop.mjs runs it against a local service.

Cases: activate, deactivate, validate, seat-request, seat-heartbeat, seat-release, checkout, verify-file,
airgap-request, airgap-verify, update-check, session, and bench-validate (bench/clients.mjs: validate with its
verification over one kept-alive connection for --seconds, then the verification alone). Options: --url, --product,
--user-key, --machine, --client, --version, --platform, --file, --state, --now, --ca, --nonce, --status, --seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, Sequence

from ._wire import iso, parse_instant
from .air_gap import create_activation_request, verify_activation_response
from .client import LicensingClient
from .errors import LicensingError, VerificationError
from .grace import JWKS_FILE, OfflineGrace, write_atomically
from .keys import JsonWebKeySet
from .license_file import verify_license_file
from .sessions import SESSION_STATUSES, new_session

#: Seconds a request may take before it is a ``network`` refusal.
TIMEOUT_SECONDS = 15.0

#: Seconds bench-validate repeats the verification alone for.
VERIFY_SECONDS = 1.0

CASES = (
    "activate",
    "deactivate",
    "validate",
    "seat-request",
    "seat-heartbeat",
    "seat-release",
    "checkout",
    "verify-file",
    "airgap-request",
    "airgap-verify",
    "update-check",
    "session",
    "bench-validate",
)
OPTIONS = (
    "url",
    "product",
    "user-key",
    "machine",
    "client",
    "version",
    "platform",
    "file",
    "state",
    "now",
    "ca",
    "nonce",
    "status",
    "seconds",
)


class Usage(Exception):
    """The program was called wrongly (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise Usage(message)


@dataclass
class Options:
    values: dict[str, str | None]

    def get(self, name: str) -> str | None:
        value = self.values.get(name)
        return value if value else None

    def need(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise Usage(f"--{name} is required for this case")
        return value

    def now(self) -> datetime | None:
        text = self.get("now")
        if text is None:
            return None
        at = parse_instant(text)
        if at is None:
            raise Usage(f"--now is not an ISO instant: {text}")
        return at


class Program:
    def __init__(self, options: Options) -> None:
        self.o = options
        self._clients: list[LicensingClient] = []

    def close(self) -> None:
        for client in self._clients:
            client.close()

    def client(self, anonymous: bool = False) -> LicensingClient:
        clock = self.o.now()
        client = LicensingClient(
            self.o.need("url"),
            user_key=None if anonymous else self.o.need("user-key"),
            install_id=self.o.get("machine"),
            timeout=TIMEOUT_SECONDS,
            ca_file=self.o.get("ca"),
            now=(lambda: clock) if clock is not None else None,
        )
        self._clients.append(client)
        return client

    def state_dir(self) -> Path | None:
        state = self.o.get("state")
        if state is None:
            return None
        path = Path(state)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def kept_keys(self) -> JsonWebKeySet | None:
        state = self.o.get("state")
        if state is None or not (Path(state) / JWKS_FILE).exists():
            return None
        return JsonWebKeySet.from_text((Path(state) / JWKS_FILE).read_bytes())

    def keys(self) -> JsonWebKeySet:
        """--state/jwks.json when present, else fetched once (and kept there when --state is given)."""
        kept = self.kept_keys()
        if kept is not None:
            return kept
        fetched = self.client(anonymous=True).get_signing_keys()
        state = self.state_dir()
        if state is not None:
            write_atomically(state / JWKS_FILE, fetched.to_text())
        return fetched

    def seat_file(self) -> Path:
        """Where a seat's token waits between the seat cases (--state, else a folder of the temporary directory)."""
        directory = self.state_dir() or Path(tempfile.gettempdir()) / "licensing-interop-python"
        directory.mkdir(parents=True, exist_ok=True)
        key = "\n".join(
            [self.o.get("url") or "", self.o.get("user-key") or "", self.o.need("machine"), self.o.need("client")]
        )
        return directory / f"seat-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}.json"

    # -- cases ---------------------------------------------------------------------------------------------------------

    def run(self, case: str) -> dict[str, Any]:
        o = self.o
        if case == "activate":
            machine = o.need("machine")
            activated = self.client().activate(
                machine, client_id=o.get("client"), product_code=o.get("product"), version=o.get("version")
            )
            return {"licenseId": activated.license.license_id, "machineId": machine}
        if case == "deactivate":
            self.client().deactivate(o.need("machine"), client_id=o.get("client"))
            return {}
        if case == "validate":
            return self.validate()
        if case == "bench-validate":
            return self.bench_validate()
        if case == "seat-request":
            client_id = o.need("client")
            grant = self.client().request_seat(o.need("machine"), client_id)
            write_atomically(
                self.seat_file(),
                json.dumps({"licenseToken": grant.license_token, "licenseId": grant.license.license_id}),
            )
            return {"licenseId": grant.license.license_id, "clientId": client_id}
        if case in ("seat-heartbeat", "seat-release"):
            client_id = o.need("client")
            file = self.seat_file()
            if not file.exists():
                raise Usage("No seat was requested for this machine and client (seat-request first)")
            seat = json.loads(file.read_text(encoding="utf-8"))
            if case == "seat-heartbeat":
                self.client().heartbeat(seat["licenseToken"])
                return {"licenseId": seat["licenseId"], "clientId": client_id}
            released = self.client().release(seat["licenseToken"])
            return {"licenseId": released.license_id, "clientId": client_id}
        if case == "checkout":
            path = Path(o.need("file"))
            answer = self.client().checkout(o.need("machine"), client_id=o.get("client"), encrypt=True)
            path.write_text(answer.license_file, encoding="utf-8")
            return {"expiresAt": iso(answer.expires_at)}
        if case == "verify-file":
            text = _read_text(o.need("file"))
            verified = verify_license_file(
                text,
                self.keys(),
                o.need("machine"),
                product_code=o.get("product"),
                user_key=o.get("user-key"),
                client_id=o.get("client"),
                now=o.now(),
            )
            return {
                "licenseId": verified.license.license_id,
                "machineId": verified.machine_id,
                "expiresAt": iso(verified.expires_at),
            }
        if case == "airgap-request":
            request = create_activation_request(
                o.need("user-key"),
                o.need("machine"),
                client_id=o.get("client"),
                product_code=o.get("product"),
                nonce=o.get("nonce"),
            )
            return {"requestCode": request.request_code, "nonce": request.nonce}
        if case == "airgap-verify":
            code = _read_text(o.need("file"))
            verified = verify_activation_response(
                code,
                self.keys(),
                o.need("machine"),
                o.need("nonce"),
                product_code=o.get("product"),
                client_id=o.get("client"),
                user_key=o.get("user-key"),
                now=o.now(),
            )
            return {"licenseId": verified.license.license_id, "machineId": verified.machine_id}
        if case == "update-check":
            check = self.client(anonymous=True).check_for_update(
                o.need("product"),
                o.need("version"),
                o.need("platform"),
                user_key=o.get("user-key"),
                install_id=o.get("machine"),
            )
            return {
                "available": check.update_available,
                "version": check.version,
                "required": check.required,
                "rollback": check.rollback,
            }
        if case == "session":
            status = next((s for s in SESSION_STATUSES if s == o.need("status")), None)
            if status is None:
                raise Usage("--status is one of started, exited, crashed, abnormal")
            session = new_session(status, duration_ms=None if status == "started" else 1000)
            accepted = self.client(anonymous=True).send_sessions(
                o.need("product"),
                o.need("version"),
                [session],
                install_id=o.need("machine"),
                platform=o.get("platform"),
                user_key=o.get("user-key"),
            )
            return {"accepted": accepted}
        raise Usage(f"Unknown case {case!r}: one of {', '.join(CASES)}")

    def validate(self) -> dict[str, Any]:
        o = self.o
        machine = o.need("machine")
        product = o.get("product")
        state = self.state_dir()
        if state is None:
            client = self.client()
            answer = client.validate(machine, client_id=o.get("client"), product_code=product, version=o.get("version"))
            return {
                "valid": True,
                "licenseId": answer.license_id,
                "verified": answer.verified is not None,
                "offline": False,
            }
        # The keys kept in the state, else fetched (and kept): offline with none kept, nothing can be verified.
        keys = self.kept_keys()
        if keys is None:
            try:
                keys = self.keys()
            except LicensingError:
                keys = JsonWebKeySet()
        client = self.client()
        client.trusted_keys = keys
        grace = OfflineGrace(client, state, product_code=product)
        result = grace.validate(machine, client_id=o.get("client"), version=o.get("version"), now=o.now())
        if result.online and result.validation is not None:
            return {
                "valid": True,
                "licenseId": result.validation.license_id,
                "verified": result.validation.verified is not None,
                "offline": False,
            }
        assert result.license is not None
        return {"valid": True, "licenseId": result.license.license_id, "verified": True, "offline": True}


    def bench_validate(self) -> dict[str, Any]:
        """Activates --machine (idempotent), then validates over and over for --seconds (default 5) with one client
        (one httpx.Client: its connection is kept alive), each answer's license key verified by ``validate`` for this
        machine, product and a fresh nonce; then times that verification alone (``verify_license_key``, the keys in
        hand) on the last answer for a second. Returns ``{requests, seconds, perSecond, verifyMicros}``."""
        o = self.o
        text = o.get("seconds")
        try:
            seconds = 5.0 if text is None else float(text)
        except ValueError:
            seconds = -1.0
        if not (seconds > 0 and seconds != float("inf")):
            raise Usage(f"--seconds is a positive number of seconds, not {text}")
        machine = o.need("machine")
        product = o.get("product")
        client = self.client()
        client.activate(machine, product_code=product)
        last = client.validate(machine, product_code=product)  # signs in and fetches the keys: not timed
        requests = 0
        started = time.perf_counter()
        until = started + seconds
        now = started
        while now < until:
            last = client.validate(machine, product_code=product)
            requests += 1
            now = time.perf_counter()
        elapsed = now - started
        key = last.license.license_key
        if key is None or last.verified is None:
            raise VerificationError("malformed", "The validation answer carries no license key")
        nonce = last.verified.nonce
        verifications = 0
        verify_started = time.perf_counter()
        verify_now = verify_started
        while verify_now - verify_started < VERIFY_SECONDS:
            client.verify_license_key(key, machine_id=machine, product_code=product, nonce=nonce)
            verifications += 1
            verify_now = time.perf_counter()
        return {
            "requests": requests,
            "seconds": round(elapsed, 3),
            "perSecond": round(requests / elapsed, 1),
            "verifyMicros": round((verify_now - verify_started) * 1e6 / verifications, 1),
        }


def _read_text(path: str) -> str:
    """A license file or code as text; bytes that are not UTF-8 become U+FFFD, which the checks refuse (malformed)."""
    return Path(path).read_bytes().decode("utf-8", errors="replace")


def _print(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(prog="interop", add_help=False)
    parser.add_argument("case", nargs="?")
    for name in OPTIONS:
        parser.add_argument(f"--{name}", dest=name.replace("-", "_"))
    try:
        args = parser.parse_args(argv)
        if not args.case:
            raise Usage("interop <case> [options]: a case is required")
        options = Options({name: getattr(args, name.replace("-", "_")) for name in OPTIONS})
        program = Program(options)
        try:
            output = program.run(args.case)
        finally:
            program.close()
    except Usage as error:
        _print({"error": {"code": "usage", "message": str(error)}})
        return 2
    except LicensingError as error:
        _print({"error": {"code": error.code, "message": error.message}})
        return 1
    except (OSError, ValueError) as error:
        # An unreadable --file or --ca, a --url that is not an address: the caller's mistake.
        _print({"error": {"code": "usage", "message": str(error)}})
        return 2
    except Exception as error:  # noqa: BLE001 - never a crash: an input nothing above expected is malformed
        _print({"error": {"code": "malformed", "message": f"{type(error).__name__}: {error}"}})
        return 1
    _print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
