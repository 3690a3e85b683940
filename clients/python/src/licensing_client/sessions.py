"""Release health from the application's side (CONTRACT 13): :class:`SessionTracker` records this run of the
application as a session (``started``, then ``exited``, ``crashed`` or ``abnormal``) and sends the sessions to
``POST /v1/updates/{productCode}/sessions``, so the service can measure crash-free sessions per release, halt a
rollout whose release crashes, and roll back an install whose new version crashes on start.

Sessions wait in a file in the directory given until the service has taken them: a crash (an uncaught exception in
the main thread or another thread) is written synchronously as the process dies and sent with the next start; offline,
they wait.
"""

from __future__ import annotations

import atexit
import json
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from ._wire import iso
from .client import LicensingClient
from .errors import LicensingError, NetworkError, ProtocolError, ServiceUnavailable
from .grace import write_atomically

SessionStatus = Literal["started", "exited", "crashed", "abnormal"]
SESSION_STATUSES: tuple[SessionStatus, ...] = ("started", "exited", "crashed", "abnormal")

#: The file sessions wait in, inside the directory given.
SESSIONS_FILE = "licensing-sessions.json"
#: Most sessions kept while the service cannot be reached (the oldest are dropped first).
MAX_KEPT_SESSIONS = 500
_BATCH = 100

__all__ = ["SessionTracker", "SessionStatus", "SESSIONS_FILE", "new_session", "waiting_sessions"]


def new_session(
    status: SessionStatus, started_at: datetime | None = None, duration_ms: int | None = None
) -> dict[str, Any]:
    """A session record as sent: a fresh random id, the status, ``startedAt`` (default now) and ``durationMs``."""
    record: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "status": status,
        "startedAt": iso(started_at or datetime.now(timezone.utc)),
    }
    if duration_ms is not None:
        record["durationMs"] = duration_ms
    return record


def waiting_sessions(file: Path) -> list[dict[str, Any]]:
    """The sessions waiting in ``file`` (none when it is missing or unreadable)."""
    try:
        kept = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [s for s in kept if isinstance(s, dict)] if isinstance(kept, list) else []


class SessionTracker:
    """This run's session. :meth:`start` records it as ``started``, marks it ``exited`` at a normal interpreter exit
    and ``crashed`` on an uncaught exception, and sends what waits (earlier runs' ends included). A run that ends
    without either (killed, hung, power lost) stays ``started``, which the service counts as ``abnormal`` after 24 h.
    Never raises for the service being unreachable: sessions wait in ``directory`` for the next start or :meth:`flush`.
    """

    def __init__(
        self,
        client: LicensingClient,
        directory: str | Path,
        *,
        product_code: str,
        version: str,
        install_id: str,
        platform: str | None = None,
    ) -> None:
        self.client = client
        self.file = Path(directory) / SESSIONS_FILE
        self.product_code = product_code
        self.version = version
        self.install_id = install_id
        self.platform = platform
        self._started = time.monotonic()
        self._session = {**new_session("started"), "version": version, **({"platform": platform} if platform else {})}
        self.session_id: str = self._session["id"]
        self._ended = False
        self._lock = threading.Lock()

    @classmethod
    def start(
        cls,
        client: LicensingClient,
        directory: str | Path,
        *,
        product_code: str,
        version: str,
        install_id: str,
        platform: str | None = None,
        hooks: bool = True,
    ) -> SessionTracker:
        """Starts this run's session (``hooks``: listen to the interpreter's exit and uncaught exceptions) and sends
        the sessions that wait."""
        tracker = cls(
            client, directory, product_code=product_code, version=version, install_id=install_id, platform=platform
        )
        tracker._keep(tracker._session)
        if hooks:
            tracker._install_hooks()
        tracker.flush()
        return tracker

    def _install_hooks(self) -> None:
        atexit.register(self.exited)
        previous = sys.excepthook

        def on_uncaught(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
            if not issubclass(kind, KeyboardInterrupt):
                self.crashed()
            previous(kind, value, tb)

        sys.excepthook = on_uncaught
        previous_thread = threading.excepthook

        def on_thread(args: threading.ExceptHookArgs) -> None:
            self.crashed()
            previous_thread(args)

        threading.excepthook = on_thread

    def _end(self, status: SessionStatus) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
        duration = int((time.monotonic() - self._started) * 1000)
        self._keep({**self._session, "status": status, "durationMs": duration})

    def crashed(self) -> None:
        """Records this run as crashed now, synchronously (so it survives the process ending right after)."""
        self._end("crashed")

    def exited(self) -> None:
        """Records a clean end of this run now (the interpreter's exit does it too)."""
        self._end("exited")

    def abnormal(self) -> None:
        """Records this run as ended abnormally (hung, killed by a watchdog)."""
        self._end("abnormal")

    def _keep(self, record: dict[str, Any]) -> None:
        sessions = [s for s in waiting_sessions(self.file) if s.get("id") != record["id"]]
        sessions.append(record)
        write_atomically(self.file, json.dumps(sessions[-MAX_KEPT_SESSIONS:]))

    def flush(self) -> int:
        """Sends every waiting session now; returns how many the service took (0 when it could not be reached).
        Sessions still ``started`` stay kept (their end is sent later); a batch the service refuses (4xx) is dropped,
        as it would be refused again."""
        taken = 0
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for s in waiting_sessions(self.file):
            groups.setdefault((str(s.get("version", self.version)), str(s.get("platform") or "")), []).append(s)
        for (version, platform), group in groups.items():
            for at in range(0, len(group), _BATCH):
                batch = group[at : at + _BATCH]
                sent: list[dict[str, Any]] = [
                    {k: s[k] for k in ("id", "status", "startedAt", "durationMs") if k in s} for s in batch
                ]
                try:
                    taken += self.client.send_sessions(
                        self.product_code, version, sent, install_id=self.install_id, platform=platform or None
                    )
                except (NetworkError, ProtocolError, ServiceUnavailable):
                    return taken  # unreachable, 5xx or 429: everything waits
                except LicensingError:
                    pass  # refused for good: dropped below
                done = {s["id"] for s in batch if s.get("status") != "started"}
                write_atomically(
                    self.file, json.dumps([s for s in waiting_sessions(self.file) if s.get("id") not in done])
                )
        return taken
