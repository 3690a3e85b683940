"""``LicensingClient``: what a protected application embeds to activate, validate (verifying the signed answer),
hold floating seats, check out license files, check for signed updates and send session pings, over the service's
REST routes (CONTRACT 4, 5, 11, 13). Synchronous; every request has a timeout, and a network failure raises
:class:`NetworkError` (``code`` ``network``), never hangs.
"""

from __future__ import annotations

import secrets
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import quote

import httpx

from ._http import DEFAULT_TIMEOUT, send, ssl_context
from ._wire import JsonObject, date_member, obj, opt_num, opt_str, req_num, req_str
from .errors import ProtocolError, ServiceRefusal, VerificationError
from .keys import JsonWebKeySet, verify_data_signature
from .license_key import verify_license_key
from .models import (
    LICENSE_STATUSES,
    ActivateResult,
    DeactivateResult,
    FloatingGrant,
    HeartbeatResult,
    License,
    LicenseFileAnswer,
    LicenseKeyPayload,
    ReleaseResult,
    UpdateCheck,
    ValidateResult,
    counts,
    enum_name,
)
from .seat import FloatingSeat, SeatErrorHandler

__all__ = ["LicensingClient", "new_nonce"]

_UNSET: Any = object()


def new_nonce() -> str:
    """A fresh nonce: 16 random bytes as hex."""
    return secrets.token_hex(16)


def _compact(body: Mapping[str, Any]) -> JsonObject:
    return {k: v for k, v in body.items() if v is not None}


class LicensingClient:
    """The licensing service, as a protected application sees it.

    Credentials: ``api_key`` (sent in ``api_key_header``), else ``bearer_token``, else ``user_key``: the client signs
    in with the license's user key (``POST /v1/auth/login``) and reuses the bearer token until shortly before it
    expires. ``user_key`` is also every call's default user key.

    ``trusted_keys`` pins the JWK Set that signed answers are verified with (recommended: ship it with the application,
    so an impersonated server cannot sign its own answers); without it the set is fetched from
    ``GET /v1/extensions/keys`` once and cached. ``ca_file`` adds a certificate to trust (the local dev service's).
    ``now`` is the clock the client believes (default: the computer's), for verification.
    """

    def __init__(
        self,
        base_url: str,
        *,
        user_key: str | None = None,
        api_key: str | None = None,
        api_key_header: str = "x-api-key",
        bearer_token: str | None = None,
        trusted_keys: JsonWebKeySet | None = None,
        install_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        ca_file: str | None = None,
        http_client: httpx.Client | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        try:
            parsed = httpx.URL(base_url)
        except (httpx.InvalidURL, TypeError) as error:
            raise ValueError(f"Not an http(s) address: {base_url!r}") from error
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"Not an http(s) address: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.user_key = user_key
        self.install_id = install_id
        self.trusted_keys = trusted_keys
        self._api_key = api_key
        self._api_key_header = api_key_header
        self._bearer = bearer_token
        self._now = now or (lambda: datetime.now(timezone.utc))
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(
            timeout=httpx.Timeout(timeout), verify=ssl_context(ca_file), follow_redirects=False
        )
        self._lock = threading.Lock()
        self._session: tuple[str, float] | None = None
        self._keys: JsonWebKeySet | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the connections (when the client made its own httpx client)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> LicensingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> datetime:
        return self._now()

    # -- credentials -------------------------------------------------------------------------------------------------

    def _user_key(self, given: str | None) -> str:
        key = given if given is not None else self.user_key
        if not key:
            raise ValueError("A user key is required: pass user_key to the call or to the LicensingClient")
        return key

    def _session_token(self, renew: bool) -> str:
        with self._lock:
            if not renew and self._session and time.monotonic() < self._session[1]:
                return self._session[0]
            answer = send(self._http, "POST", f"{self.base_url}/v1/auth/login", json_body={"userKey": self.user_key})
            o = obj(answer.body, "login")
            token = req_str(o, "token", "login")
            lifetime = max(0.0, req_num(o, "expiresIn", "login"))
            # Renewed a tenth of its lifetime early (at most a minute): no request carries a token expiring in flight.
            self._session = (token, time.monotonic() + lifetime - min(60.0, lifetime / 10))
            return token

    def _credentials(self) -> tuple[dict[str, str], bool]:
        if self._api_key is not None:
            return {self._api_key_header: self._api_key}, False
        if self._bearer is not None:
            return {"authorization": f"Bearer {self._bearer}"}, False
        if self.user_key is not None:
            return {"authorization": f"Bearer {self._session_token(False)}"}, True
        return {}, False

    def _licensing(self, path: str, body: Mapping[str, Any], extra: Mapping[str, str] | None = None) -> JsonObject:
        """POSTs a licensing call with credentials; a session token the service refuses is renewed once."""
        headers, renewable = self._credentials()
        url = f"{self.base_url}{path}"
        try:
            answer = send(self._http, "POST", url, json_body=_compact(body), headers={**headers, **(extra or {})})
        except ServiceRefusal as error:
            if not renewable or error.http_status != 401:
                raise
            headers = {"authorization": f"Bearer {self._session_token(True)}"}
            answer = send(self._http, "POST", url, json_body=_compact(body), headers={**headers, **(extra or {})})
        o = obj(answer.body, path)
        if o.get("success") is False:
            raise ProtocolError(f"{path} answered success:false with a 2xx status")
        return o

    # -- keys ----------------------------------------------------------------------------------------------------------

    def get_signing_keys(self, refresh: bool = False) -> JsonWebKeySet:
        """The service's JWK Set (``GET /v1/extensions/keys``), cached; ``refresh`` fetches it again. Store it with the
        application to verify offline. With ``trusted_keys`` set, those are returned and nothing is fetched."""
        if self.trusted_keys is not None:
            return self.trusted_keys
        if refresh or self._keys is None:
            answer = send(self._http, "GET", f"{self.base_url}/v1/extensions/keys")
            self._keys = JsonWebKeySet.from_json(answer.body)
        return self._keys

    def _keys_for(self, kid: str | None) -> JsonWebKeySet:
        keys = self.get_signing_keys()
        if kid is not None and keys.find(kid) is None and self.trusted_keys is None:
            keys = self.get_signing_keys(refresh=True)  # a rotation: the new key is published before it signs
        return keys

    # -- licensing -----------------------------------------------------------------------------------------------------

    def activate(
        self,
        machine_id: str,
        *,
        client_id: str | None = None,
        client_name: str | None = None,
        product_code: str | None = None,
        version: str | None = None,
        nonce: str | None = None,
        user_key: str | None = None,
    ) -> ActivateResult:
        """Activates the license on a machine (``POST /v1/license/activate``); idempotent per machine and client. Over
        the activation limit: :class:`ServiceRefusal` ``alreadyActivated`` (HTTP 526)."""
        o = self._licensing(
            "/v1/license/activate",
            {
                "userKey": self._user_key(user_key),
                "machineId": machine_id,
                "clientId": client_id,
                "clientName": client_name,
                "productCode": product_code,
                "version": version,
                "nonce": nonce,
            },
        )
        active, maximum = counts(o, "activate")
        return ActivateResult(
            license_token=req_str(o, "licenseToken", "activate"),
            token_expire_at=date_member(o, "tokenExpireAt", "activate", ProtocolError),
            active_client_count=active,
            max_client_count=maximum,
            license=License.from_json(o.get("license")),
        )

    def deactivate(
        self,
        machine_id: str,
        *,
        client_id: str | None = None,
        license_token: str | None = None,
        user_key: str | None = None,
    ) -> DeactivateResult:
        """Frees the machine's activation (``POST /v1/license/deactivate``)."""
        o = self._licensing(
            "/v1/license/deactivate",
            {
                "userKey": self._user_key(user_key),
                "machineId": machine_id,
                "clientId": client_id,
                "licenseToken": license_token,
            },
        )
        active, maximum = counts(o, "deactivate")
        return DeactivateResult(req_str(o, "licenseId", "deactivate"), active, maximum)

    def validate(
        self,
        machine_id: str | None = None,
        *,
        client_id: str | None = None,
        license_token: str | None = None,
        product_code: str | None = None,
        version: str | None = None,
        nonce: str | None = _UNSET,
        user_key: str | None = None,
        verify: bool = True,
    ) -> ValidateResult:
        """Validates the license online (``POST /v1/license/validate``) and verifies the signed answer: the license key
        against the JWK Set, for ``machine_id``, ``product_code`` and the nonce sent (a fresh random one unless given;
        ``None`` sends none). The service's refusals (revoked, expired, not activated, tampered…) raise
        :class:`ServiceRefusal`; an answer that does not verify raises :class:`VerificationError`."""
        sent_nonce = new_nonce() if nonce is _UNSET else nonce
        extra = {"x-service-install-id": self.install_id} if self.install_id else None
        o = self._licensing(
            "/v1/license/validate",
            {
                "userKey": self._user_key(user_key),
                "machineId": machine_id,
                "clientId": client_id,
                "licenseToken": license_token,
                "productCode": product_code,
                "version": version,
                "nonce": sent_nonce,
            },
            extra,
        )
        server_time = date_member(o, "serverTime", "validate", ProtocolError)
        if server_time is None:
            raise ProtocolError("validate.serverTime is missing")
        license = License.from_json(o.get("license"))
        verified: LicenseKeyPayload | None = None
        if verify and license.license_key is not None:
            verified = self.verify_license_key(
                license.license_key, machine_id=machine_id, product_code=product_code, nonce=sent_nonce
            )
        return ValidateResult(
            license_id=req_str(o, "licenseId", "validate"),
            status=enum_name(LICENSE_STATUSES, o.get("status"), "validate.status"),
            license=license,
            server_time=server_time,
            license_token=opt_str(o, "licenseToken", "validate"),
            token_expire_at=date_member(o, "tokenExpireAt", "validate", ProtocolError),
            nonce=opt_str(o, "nonce", "validate"),
            offline_grace_days=opt_num(o, "offlineGraceDays", "validate") or 0.0,
            verified=verified,
        )

    def verify_license_key(
        self,
        license_key: str,
        *,
        machine_id: str | None = None,
        product_code: str | None = None,
        nonce: str | None = None,
        now: datetime | None = None,
    ) -> LicenseKeyPayload:
        """Verifies a license key with the service's keys (fetched again once for an unknown ``kid``)."""
        try:
            keys = self.get_signing_keys()
            return verify_license_key(
                license_key, keys, now=now or self.now(), machine_id=machine_id, product_code=product_code, nonce=nonce
            )
        except VerificationError as error:
            if error.code != "unknownKey" or self.trusted_keys is not None:
                raise
        return verify_license_key(
            license_key,
            self.get_signing_keys(refresh=True),
            now=now or self.now(),
            machine_id=machine_id,
            product_code=product_code,
            nonce=nonce,
        )

    # -- floating seats ------------------------------------------------------------------------------------------------

    def request_floating(
        self,
        machine_id: str,
        client_id: str,
        *,
        client_name: str | None = None,
        user_key: str | None = None,
        heartbeats: bool = True,
        heartbeat_interval: float | None = None,
        on_error: SeatErrorHandler | None = None,
        on_heartbeat: Callable[[HeartbeatResult], None] | None = None,
    ) -> FloatingSeat:
        """Requests a floating seat (``POST /v1/license/request``) and returns it as a :class:`FloatingSeat` that sends
        heartbeats from a daemon thread every ``heartbeat_interval`` seconds (default: the service's) until
        ``seat.release()`` (or the end of a ``with`` block). ``heartbeats=False``: the caller calls
        ``seat.heartbeat()`` itself. All seats taken: :class:`ServiceRefusal` ``seatsExhausted`` (HTTP 528)."""
        if heartbeat_interval is not None and not heartbeat_interval > 0:
            raise ValueError("heartbeat_interval must be a positive number of seconds")
        key = self._user_key(user_key)
        grant = self.request_seat(machine_id, client_id, client_name=client_name, user_key=key)
        return FloatingSeat(
            grant,
            heartbeat=self.heartbeat,
            release=lambda token: self.release(token, user_key=key),
            heartbeats=heartbeats,
            heartbeat_interval=heartbeat_interval,
            on_error=on_error,
            on_heartbeat=on_heartbeat,
        )

    def request_seat(
        self, machine_id: str, client_id: str, *, client_name: str | None = None, user_key: str | None = None
    ) -> FloatingGrant:
        """The seat request alone (``POST /v1/license/request``): a grant without a heartbeat thread."""
        o = self._licensing(
            "/v1/license/request",
            {
                "userKey": self._user_key(user_key),
                "machineId": machine_id,
                "clientId": client_id,
                "clientName": client_name,
            },
        )
        active, maximum = counts(o, "request")
        return FloatingGrant(
            license_token=req_str(o, "licenseToken", "request"),
            token_expire_at=date_member(o, "tokenExpireAt", "request", ProtocolError),
            active_client_count=active,
            max_client_count=maximum,
            heartbeat_interval=req_num(o, "heartbeatInterval", "request"),
            license=License.from_json(o.get("license")),
        )

    def heartbeat(self, license_token: str) -> HeartbeatResult:
        """One heartbeat for a seat's token (``POST /v1/license/heartbeat``)."""
        o = self._licensing("/v1/license/heartbeat", {"licenseToken": license_token})
        active, maximum = counts(o, "heartbeat")
        return HeartbeatResult(
            token_expire_at=date_member(o, "tokenExpireAt", "heartbeat", ProtocolError),
            heartbeat_interval=req_num(o, "heartbeatInterval", "heartbeat"),
            active_client_count=active,
            max_client_count=maximum,
        )

    def release(self, license_token: str, *, user_key: str | None = None) -> ReleaseResult:
        """Gives a seat back by its token (``POST /v1/license/release``); an unknown token: ``licenseTokenNotFound``."""
        o = self._licensing(
            "/v1/license/release", {"licenseToken": license_token, "userKey": user_key or self.user_key}
        )
        active, maximum = counts(o, "release")
        return ReleaseResult(req_str(o, "licenseId", "release"), active, maximum)

    # -- license files -------------------------------------------------------------------------------------------------

    def checkout(
        self,
        machine_id: str,
        *,
        client_id: str | None = None,
        ttl: int | None = None,
        encrypt: bool = False,
        user_key: str | None = None,
    ) -> LicenseFileAnswer:
        """Checks out a license file for a machine (``POST /v1/license/checkout``) to run offline until its
        ``expires_at``; ``encrypt=True`` seals it for that machine. Save ``license_file`` and check it with
        :func:`verify_license_file`."""
        o = self._licensing(
            "/v1/license/checkout",
            {
                "userKey": self._user_key(user_key),
                "machineId": machine_id,
                "clientId": client_id,
                "ttl": ttl,
                "encrypt": True if encrypt else None,
            },
        )
        return _file_answer(o, "checkout")

    def borrow(
        self, machine_id: str, client_id: str, hours: float, *, user_key: str | None = None
    ) -> tuple[LicenseFileAnswer, str, datetime]:
        """Borrows a floating seat for ``hours`` (``POST /v1/license/borrow``): the license file, the seat's token and
        when the borrow ends."""
        o = self._licensing(
            "/v1/license/borrow",
            {"userKey": self._user_key(user_key), "machineId": machine_id, "clientId": client_id, "hours": hours},
        )
        until = date_member(o, "borrowUntil", "borrow", ProtocolError)
        if until is None:
            raise ProtocolError("borrow.borrowUntil is missing")
        return _file_answer(o, "borrow"), req_str(o, "licenseToken", "borrow"), until

    def return_seat(
        self,
        *,
        license_token: str | None = None,
        machine_id: str | None = None,
        client_id: str | None = None,
        user_key: str | None = None,
    ) -> ReleaseResult:
        """Returns a borrowed seat early (``POST /v1/license/return``), by its token or by machine and client."""
        o = self._licensing(
            "/v1/license/return",
            {
                "userKey": self._user_key(user_key),
                "licenseToken": license_token,
                "machineId": machine_id,
                "clientId": client_id,
            },
        )
        active, maximum = counts(o, "return")
        return ReleaseResult(req_str(o, "licenseId", "return"), active, maximum)

    # -- updates and sessions ------------------------------------------------------------------------------------------

    def check_for_update(
        self,
        product_code: str,
        version: str,
        platform: str,
        *,
        channel: str | None = None,
        install_id: str | None = None,
        user_key: str | None = None,
    ) -> UpdateCheck:
        """Checks for an update (``GET /v1/updates/{productCode}``) and verifies the answer's signature (ES256 over the
        RFC 8785 canonical JSON of ``data``) before returning it. A signature that does not verify raises
        :class:`VerificationError`; the service's refusals (403 revoked or expired, 404) :class:`ServiceRefusal`."""
        params = {"platform": platform, "version": version}
        if channel is not None:
            params["channel"] = channel
        headers: dict[str, str] = {}
        key = user_key if user_key is not None else self.user_key
        if key:
            headers["x-service-user-key"] = key  # the header keeps the key out of access logs
        install = install_id if install_id is not None else self.install_id
        if install:
            headers["x-service-install-id"] = install
        answer = send(
            self._http,
            "GET",
            f"{self.base_url}/v1/updates/{quote(product_code, safe='')}",
            headers=headers,
            params=params,
        )
        data, signature, key_id = signed_parts(answer.body)
        verify_data_signature(data, signature, key_id, self._keys_for(key_id))
        return UpdateCheck.from_signed(data, signature, key_id)

    def send_sessions(
        self,
        product_code: str,
        version: str,
        sessions: Iterable[Mapping[str, Any]],
        *,
        install_id: str | None = None,
        platform: str | None = None,
        user_key: str | None = None,
    ) -> int:
        """Sends sessions of one version (``POST /v1/updates/{productCode}/sessions``, 1 to 100 of
        ``{id, status, startedAt, durationMs?}``) and returns how many the service took. :class:`SessionTracker`
        does this for an application's own runs."""
        install = install_id if install_id is not None else self.install_id
        if not install:
            raise ValueError("An install id is required to send sessions")
        headers = {"x-service-install-id": install}
        key = user_key if user_key is not None else self.user_key
        if key:
            headers["x-service-user-key"] = key
        body: JsonObject = {"version": version, "sessions": [dict(s) for s in sessions]}
        if platform:
            body["platform"] = platform
        answer = send(
            self._http,
            "POST",
            f"{self.base_url}/v1/updates/{quote(product_code, safe='')}/sessions",
            json_body=body,
            headers=headers,
        )
        return int(req_num(obj(answer.body, "sessions"), "accepted", "sessions"))


def signed_parts(answer: Any) -> tuple[JsonObject, str, str]:
    """``data``, ``signature`` and ``keyId`` of a signed answer; ``malformed`` when it is not one."""
    if not isinstance(answer, dict):
        raise VerificationError("malformed", "The update check is not a JSON object")
    data, signature, key_id = answer.get("data"), answer.get("signature"), answer.get("keyId")
    if not isinstance(data, dict) or not isinstance(signature, str) or not isinstance(key_id, str):
        raise VerificationError("malformed", "The update check has no data, signature or keyId")
    return data, signature, key_id


def _file_answer(o: JsonObject, what: str) -> LicenseFileAnswer:
    issued_at = date_member(o, "issuedAt", what, ProtocolError)
    expires_at = date_member(o, "expiresAt", what, ProtocolError)
    if issued_at is None or expires_at is None:
        raise ProtocolError(f"{what}.issuedAt or expiresAt is missing")
    encrypted = o.get("encrypted")
    return LicenseFileAnswer(
        license_file=req_str(o, "licenseFile", what),
        issued_at=issued_at,
        expires_at=expires_at,
        encrypted=encrypted is True,
    )
