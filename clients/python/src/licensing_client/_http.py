"""One JSON round trip over httpx, with the failures turned into the client's errors once. Internal."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

import certifi
import httpx

from ._wire import JsonObject, parse_json
from .errors import NetworkError, ProtocolError, ServiceRefusal, ServiceUnavailable

#: Seconds allowed to connect, and to each read and write, unless the caller chooses.
DEFAULT_TIMEOUT = 10.0


def ssl_context(ca_file: str | None) -> ssl.SSLContext:
    """The public authorities (certifi's bundle), plus ``ca_file`` when given (e.g. ``npm run dev``'s certificate)."""
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_file is not None:
        context.load_verify_locations(cafile=ca_file)
    return context


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    headers: httpx.Headers


def _message(body: Any, response: httpx.Response) -> str:
    if isinstance(body, dict):
        for key in ("message", "title", "detail"):
            if isinstance(body.get(key), str) and body[key]:
                return str(body[key])
    return response.reason_phrase or f"HTTP {response.status_code}"


def send(
    http: httpx.Client,
    method: str,
    url: str,
    *,
    json_body: JsonObject | None = None,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
) -> Answer:
    """Sends a request and returns the parsed JSON of a 2xx answer. Raises :class:`NetworkError` when the service
    cannot be reached, :class:`ServiceUnavailable` when it answers as one that is down (5xx other than a licensing
    52x, 429), :class:`ServiceRefusal` when it refuses (4xx, 52x), :class:`ProtocolError` when a 2xx answer is not
    JSON."""
    sent = {"accept": "application/json", **(headers or {})}
    try:
        if json_body is not None:
            response = http.request(method, url, json=json_body, headers=sent, params=params)
        else:
            response = http.request(method, url, headers=sent, params=params)
    except httpx.InvalidURL as error:
        raise ValueError(f"Not a valid address: {url}") from error
    except httpx.TimeoutException as error:
        raise NetworkError(f"Could not reach {url}: timed out ({type(error).__name__})") from error
    except (httpx.TransportError, ssl.SSLError, OSError) as error:
        hint = ""
        cause: BaseException | None = error
        while cause is not None:
            if isinstance(cause, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(cause):
                hint = " (the service's certificate is not trusted: pass ca_file= with it, e.g. npm run dev's cert.pem)"
                break
            cause = cause.__cause__ or cause.__context__
        raise NetworkError(f"Could not reach {url}: {error or type(error).__name__}{hint}") from error
    text = response.content
    content_type = response.headers.get("content-type", "")
    body: Any = None
    if text and "json" in content_type.lower():
        try:
            body = parse_json(text)
        except (ValueError, UnicodeError) as error:
            if response.is_success:
                raise ProtocolError(f"The answer from {url} is not valid JSON") from error
    status = response.status_code
    if not response.is_success:
        reason = body.get("reason") if isinstance(body, dict) and isinstance(body.get("reason"), str) else None
        reason = reason or response.headers.get("x-service-reason") or None
        message = _message(body, response)
        licensing = 520 < status <= 536
        if (status >= 500 and not licensing) or status == 429:
            raise ServiceUnavailable(f"{url} answered HTTP {status}: {message}", status, reason)
        raise ServiceRefusal(message, status, reason)
    if status != 204 and body is None:
        raise ProtocolError(f"The answer from {url} (HTTP {status}) has no JSON body")
    return Answer(status, body, response.headers)
