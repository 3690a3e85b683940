"""A floating seat held by this process (CONTRACT 4): it beats every ``heartbeat_interval`` seconds from a daemon
thread so the service keeps the seat (a seat lives 2 x interval + 30 s after its last heartbeat) until ``release()``.
A network failure only reports and tries again at the next beat; a refusal by the service (token unknown or expired,
license revoked) means the seat is gone: the thread stops and ``state`` is ``"lost"``."""

from __future__ import annotations

import threading
from typing import Callable, Literal

from .errors import LicensingError, ServiceRefusal, ServiceUnavailable
from .models import FloatingGrant, HeartbeatResult, License, ReleaseResult

SeatState = Literal["active", "released", "lost"]
#: Called with a heartbeat failure and whether the seat is lost (``terminal``).
SeatErrorHandler = Callable[[LicensingError, bool], None]

__all__ = ["FloatingSeat", "SeatState", "SeatErrorHandler"]


class FloatingSeat:
    """A granted floating seat. Use it as a context manager to release it at the end of the block::

    with client.request_floating(machine_id, "alice") as seat:
        run_the_application()
    """

    def __init__(
        self,
        grant: FloatingGrant,
        *,
        heartbeat: Callable[[str], HeartbeatResult],
        release: Callable[[str], ReleaseResult],
        heartbeats: bool = True,
        heartbeat_interval: float | None = None,
        on_error: SeatErrorHandler | None = None,
        on_heartbeat: Callable[[HeartbeatResult], None] | None = None,
    ) -> None:
        self.license_token: str = grant.license_token
        self.license: License = grant.license
        self.token_expire_at = grant.token_expire_at
        self.active_client_count = grant.active_client_count
        self.max_client_count = grant.max_client_count
        self.heartbeat_interval: float = grant.heartbeat_interval
        self.last_error: LicensingError | None = None
        self._beat = heartbeat
        self._give_back = release
        self._interval = heartbeat_interval
        self._on_error = on_error
        self._on_heartbeat = on_heartbeat
        self._state: SeatState = "active"
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._released: ReleaseResult | None = None
        self._thread: threading.Thread | None = None
        if heartbeats:
            self._thread = threading.Thread(target=self._run, name=f"seat-{self.license_token[:12]}", daemon=True)
            self._thread.start()

    @property
    def state(self) -> SeatState:
        """``active`` while the seat is held, ``released`` after :meth:`release`, ``lost`` after a refused heartbeat."""
        return self._state

    def _seconds(self) -> float:
        return self._interval if self._interval is not None else max(1.0, self.heartbeat_interval)

    def _run(self) -> None:
        while not self._stop.wait(self._seconds()):
            if self._state != "active":
                return
            try:
                self.heartbeat()
            except LicensingError:
                pass  # reported by heartbeat(); a lost seat stops the loop through its state
            except Exception:  # noqa: BLE001 - a callback's failure must not stop the heartbeats
                pass

    def heartbeat(self) -> HeartbeatResult:
        """Sends one heartbeat now and updates the seat's expiry and counts. A refusal by the service marks the seat
        ``lost`` (and raises it); a network failure is raised and the next beat tries again."""
        if self._state != "active":
            raise LicensingError("seat", f"The seat is {self._state}")
        try:
            result = self._beat(self.license_token)
        except LicensingError as error:
            if self._state != "active":
                raise  # released while the heartbeat was in flight: not a loss
            terminal = (
                isinstance(error, ServiceRefusal)
                and not isinstance(error, ServiceUnavailable)
                and (error.http_status == 401 or 520 < error.http_status <= 536)
            )
            if terminal:
                self._state = "lost"
                self._stop.set()
            self.last_error = error
            if self._on_error is not None:
                self._on_error(error, terminal)
            raise
        self.token_expire_at = result.token_expire_at
        self.active_client_count = result.active_client_count
        self.max_client_count = result.max_client_count
        if result.heartbeat_interval > 0:
            self.heartbeat_interval = result.heartbeat_interval
        self.last_error = None
        if self._on_heartbeat is not None:
            self._on_heartbeat(result)
        return result

    def release(self) -> ReleaseResult:
        """Stops the heartbeats and gives the seat back; calling it again returns the same answer. A seat that was lost
        is still released on the service, whose refusal (``licenseTokenNotFound`` for a reclaimed seat) is raised."""
        with self._lock:
            if self._released is not None:
                return self._released
            self._state = "released"
            self._stop.set()
            self._released = self._give_back(self.license_token)
            return self._released

    def __enter__(self) -> FloatingSeat:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._released is None:
            try:
                self.release()
            except LicensingError:
                if exc[0] is None:
                    raise
