"""A desktop application's licensing with the Python client, against the real service: a session for release health,
activation, validation with offline grace, a floating seat, a license file verified offline, an air-gapped activation,
the signed update check and deactivation. docs/clients/python.md walks through it.

Its settings are environment variables; `npm run interop` (scripts/interop.mjs) sets them when it runs the `example`
of clients/interop.json against the service it started:

    LICENSING_URL           the licensing service
    LICENSING_PRODUCT       the product code
    LICENSING_USER_KEY      a node-locked (Activation) license's user key; it activates three machines: the one below,
                            <machine>-file (a license file) and <machine>-air (air-gapped), and frees the first
    LICENSING_MACHINE       this machine's id (empty: machine_id(), this computer's, hashed with the product code)
    LICENSING_FLOATING_KEY  a Floating license's user key
    LICENSING_CA            a certificate to trust, a PEM file (`npm run dev`'s); empty: the public authorities only
    LICENSING_STATE         the application's data directory, kept between runs (empty: a new temporary one)

    clients/python/.venv/bin/python clients/python/examples/example.py

Each step prints what it did. Exit 0 when every step worked, 1 when one was refused or the service could not be reached
(its refusal code is printed), 2 when a setting is missing.
"""

from __future__ import annotations

import os
import ssl
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import httpx

from licensing_client import (
    GraceError,
    LicensingClient,
    LicensingError,
    OfflineGrace,
    SessionTracker,
    create_activation_request,
    install_id,
    machine_id,
    verify_activation_response,
    verify_license_file,
)

VERSION = "1.0.0"  # this application's version and build (the interop suite publishes 1.0.0 and 2.0.0 for win-x64)
PLATFORM = "win-x64"


@dataclass(frozen=True)
class Settings:
    url: str
    product: str
    user_key: str
    floating_key: str
    machine: str
    ca: str | None
    state: Path


def settings(env: Mapping[str, str]) -> Settings:
    """The settings from the environment; ``ValueError`` names the variables that are missing."""
    required = ("LICENSING_URL", "LICENSING_PRODUCT", "LICENSING_USER_KEY", "LICENSING_FLOATING_KEY")
    missing = [name for name in required if not env.get(name)]
    if missing:
        raise ValueError(f"{', '.join(missing)} must be set (see the top of examples/example.py)")
    product = env["LICENSING_PRODUCT"]
    return Settings(
        url=env["LICENSING_URL"],
        product=product,
        user_key=env["LICENSING_USER_KEY"],
        floating_key=env["LICENSING_FLOATING_KEY"],
        machine=env.get("LICENSING_MACHINE") or machine_id(salt=product),
        ca=env.get("LICENSING_CA") or None,
        state=Path(env.get("LICENSING_STATE") or tempfile.mkdtemp(prefix="licensing-example-")),
    )


def run(s: Settings) -> int:
    install = install_id(s.state)  # this installation's random id, kept in the data directory
    with LicensingClient(s.url, user_key=s.user_key, install_id=install, ca_file=s.ca) as client:
        # Release health: this run is a `started` session, sent now (kept in the data directory while offline) and
        # ended as `exited` at the interpreter's exit or `crashed` on an uncaught exception.
        tracker = SessionTracker.start(
            client, s.state, product_code=s.product, version=VERSION, install_id=install, platform=PLATFORM
        )
        print(f"session {tracker.session_id} started")

        # 1. Activate this machine (a repeat returns the same activation).
        activated = client.activate(s.machine, client_name="Example PC", product_code=s.product)
        license_id = activated.license.license_id
        print(f"activated {license_id} on {s.machine} ({activated.active_client_count} machines)")

        # 2. Validate at each start: online the signed answer is verified and kept in the state directory; while the
        #    service cannot be reached it is used for the grace days signed into it. A refusal ends the grace at once.
        grace = OfflineGrace(client, s.state / "licensing", product_code=s.product)
        try:
            result = grace.validate(s.machine, version=VERSION)
        except GraceError as error:  # offline beyond the grace (`grace`), clock set back (`clock`)…
            print(f"cannot run offline: {error.code}: {error.message}")
            return 1
        if result.online:
            print(f"validated online; usable offline until {result.grace_until} ({result.grace_days:g} days)")
        else:
            print(f"offline ({result.error}); usable until {result.grace_until}")

        # 3. A floating seat: requested, kept by heartbeats from a daemon thread, released at the end of the block.
        with LicensingClient(s.url, user_key=s.floating_key, ca_file=s.ca) as desk:
            with desk.request_floating(
                s.machine, "example-user", on_error=lambda error, lost: print(f"seat: {error.code}, lost: {lost}")
            ) as seat:
                print(f"seat held ({seat.active_client_count}/{seat.max_client_count} in use)")
                beat = seat.heartbeat()  # what the thread sends every heartbeat_interval, once now
                print(f"heartbeat: seat kept until {beat.token_expire_at}, next in {beat.heartbeat_interval:g} s")
            released = seat.release()  # the block released it: the same answer again
            print(f"seat {seat.state} ({released.active_client_count}/{released.max_client_count} in use)")

        # 4. A license file, to run offline until it ends, for a second machine (a laptop that travels): checked out
        #    encrypted for it, verified with no network. A machine that holds one keeps its activation until it ends.
        laptop = f"{s.machine}-file"
        client.activate(laptop, client_name="Example laptop", product_code=s.product)
        keys = client.get_signing_keys()  # ship them with the application, or keep them beside the file
        checked_out = client.checkout(laptop, encrypt=True)
        license_path = s.state / f"{license_id}.lic"
        license_path.write_text(checked_out.license_file, encoding="utf-8")
        file = verify_license_file(
            license_path.read_text(encoding="utf-8"), keys, laptop, user_key=s.user_key, product_code=s.product
        )
        print(f"license file for {laptop} valid offline until {file.expires_at}")
        try:
            client.deactivate(laptop)
        except LicensingError as error:
            if error.code != "licenseFileHeld":
                raise
            print(f"{laptop} keeps its activation while it holds the file ({error.code})")
        else:
            print(f"{laptop} deactivated although it holds a license file")
            return 1

        # 5. Air-gapped activation: show the request code; the person brings back the response code from the
        #    service's /activate/ page. Here the example plays the person's part with the page's own route.
        air = f"{s.machine}-air"
        request = create_activation_request(
            s.user_key, air, product_code=s.product, activation_page_url=f"{s.url}/activate/"
        )
        print(f"request code: {request.request_code[:29]}…")
        trust = ssl.create_default_context()
        if s.ca:
            trust.load_verify_locations(cafile=s.ca)
        page = httpx.post(
            f"{client.base_url}/v1/license/offline-activation",
            json={"requestCode": request.request_code},
            verify=trust,
            timeout=10,
        )
        shown = page.json() if page.headers.get("content-type", "").startswith("application/json") else {}
        if page.status_code != 200 or not isinstance(shown.get("responseCode"), str):
            # What the page would show the person: e.g. alreadyActivated, every machine of the license in use.
            print(f"the activation page refused: {shown.get('reason') or page.status_code}", file=sys.stderr)
            return 1
        typed = shown["responseCode"]
        answer = verify_activation_response(typed, keys, air, request.nonce, product_code=s.product)
        print(f"air-gapped activation of {air} verified; keep {answer.text[:14]}… as its license file")

        # 6. The signed update check.
        update = client.check_for_update(s.product, VERSION, PLATFORM)
        if update.update_available:
            where = f": {update.download.url}" if update.download else ""
            print(f"update {update.version} available{where}{' (required)' if update.required else ''}")
        else:
            print(f"no update (latest {update.latest})")

        # 7. Deactivate this machine, which frees it for another; its next validation is refused, which ends the
        #    offline grace too.
        freed = client.deactivate(s.machine)
        print(f"deactivated {s.machine} ({freed.active_client_count}/{freed.max_client_count} machines)")
        try:
            grace.validate(s.machine, version=VERSION)
        except LicensingError as error:
            print(f"validation after deactivation refused: {error.code}")
        else:
            print("validation after deactivation still passed")
            return 1

        # The session's end: the interpreter's exit records it; sent now here, else at the next start.
        tracker.exited()
        sent = tracker.flush()
        print(f"session ended: exited ({sent} sent)")
        return 0 if sent == 1 else 1


def main(env: Mapping[str, str] | None = None) -> int:
    try:
        s = settings(os.environ if env is None else env)
    except ValueError as error:
        print(f"example: {error}", file=sys.stderr)
        return 2
    try:
        return run(s)
    except LicensingError as error:
        print(f"refused: {error.code}: {error.message}", file=sys.stderr)
        return 1
    except ValueError as error:  # LICENSING_URL is not an http(s) address
        print(f"example: {error}", file=sys.stderr)
        return 2
    except httpx.HTTPError as error:  # the activation page's route, called directly
        print(f"the activation page could not be reached: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
