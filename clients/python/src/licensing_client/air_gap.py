"""Air-gapped activation from the application's side (CONTRACT 11): make the request code to show, then verify the
response code (or license file) a person brings back from the service's ``/activate/`` page, all without the network.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urldefrag

from .keys import JsonWebKeySet
from .license_file import verify_license_file
from .models import LicenseFile
from .offline_codes import OfflineRequest, encode_request_code, is_code, read_response_code

__all__ = ["ActivationRequest", "create_activation_request", "verify_activation_response"]


@dataclass(frozen=True)
class ActivationRequest:
    """A request to show the person: ``request_code`` (``LRQ1-…``, also to put in a QR code: ``qr_text``) and the
    ``nonce`` to keep until the answer comes back."""

    request_code: str
    nonce: str
    qr_text: str


def create_activation_request(
    user_key: str,
    machine_id: str,
    *,
    client_id: str | None = None,
    product_code: str | None = None,
    nonce: str | None = None,
    activation_page_url: str | None = None,
) -> ActivationRequest:
    """The request code and nonce (default: 16 random bytes as hex) for a machine to activate without a network.
    With ``activation_page_url`` (``https://licensing.example.com/activate/``) ``qr_text`` is the page's address with
    the code after ``#``, so a phone that scans it opens the page with the code filled in."""
    chosen = nonce if nonce is not None else secrets.token_hex(16)
    code = encode_request_code(OfflineRequest(user_key, machine_id, chosen, client_id, product_code))
    qr_text = code if activation_page_url is None else f"{urldefrag(activation_page_url)[0]}#{code}"
    return ActivationRequest(code, chosen, qr_text)


def verify_activation_response(
    response: str,
    jwks: JsonWebKeySet,
    machine_id: str,
    nonce: str,
    *,
    product_code: str | None = None,
    client_id: str | None = None,
    user_key: str | None = None,
    now: datetime | None = None,
    last_seen: datetime | None = None,
) -> LicenseFile:
    """Verifies what the person brought back, offline: an ``LRS2-…`` response code (as the service issues it), an
    ``LRS1-…`` one handed out earlier, or the downloaded license file's text. The answer must name ``nonce`` (the
    request's). Returns the verified content; its ``text`` is what to save as the application's license file and pass
    to :func:`verify_license_file` at each start (the JWS, or the ``LRS2`` code itself). Refusals are those of
    :func:`verify_license_file`; a mistyped code is ``malformed`` (an ``OfflineCodeError`` saying why)."""
    text = response.strip()
    if is_code(text):
        read = read_response_code(text)
        if read.version == 1 and read.license_file is not None:
            text = read.license_file
    return verify_license_file(
        text,
        jwks,
        machine_id,
        product_code=product_code,
        client_id=client_id,
        user_key=user_key,
        nonce=nonce,
        now=now,
        last_seen=last_seen,
    )
