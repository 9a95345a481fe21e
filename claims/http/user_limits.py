"""The two per-user limits: API writes (WEFTBOARD_API_WRITE_RATE) and reads, pages and API
together (WEFTBOARD_READ_RATE), each a sliding window in the shared cache
(claims.http.rate_limit).

While the cache does not answer, requests go through uncounted: the limits guard against a
runaway script or a wall of polling tabs, not against the operator who must release a
claim while Redis restarts. Each one so let through is counted for an alert.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.http import HttpRequest
from prometheus_client import Counter

from claims.http.client_address import client_address
from claims.http.rate_limit import ADMITTED, Rate, Verdict, admit

# Per web process: a lasting cache fault (a wrong password, a read-only replica) turns the
# limits off, and these are what an alert can watch.
WRITES_UNCOUNTED = Counter(
    "weftboard_api_writes_uncounted",
    "API writes let through without counting because the shared cache did not answer",
)
READS_UNCOUNTED = Counter(
    "weftboard_reads_uncounted",
    "Page and API reads let through without counting because the shared cache did not answer",
)


# A rate setting that turns its limit off (a benchmark, a wall of dashboards).
OFF = "off"


@dataclass
class UserLimit:
    name: str
    setting: str
    default: str
    uncounted: Counter
    logger: logging.Logger
    what: str
    # Seconds between two warnings that the cache did not answer (0: warn every time).
    warn_every_s: float = 0.0
    _last_warned: float = field(default=float("-inf"), repr=False)
    _warn_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def rate(self) -> Rate | None:
        """Read per request, so a test or a settings change applies at once; None: off."""
        text = str(getattr(settings, self.setting, "") or self.default).strip()
        return None if text.lower() == OFF else Rate.parse(text)

    def check(self, request: HttpRequest) -> Verdict:
        """Count one request of this request's user (the address when nobody signed in)."""
        rate = self.rate()
        if rate is None:
            return ADMITTED
        user = getattr(request, "user", None)
        who = (
            f"user-{user.pk}"
            if user is not None and user.is_authenticated
            else f"addr-{client_address(request)}"
        )
        try:
            return admit(f"{self.name}:{who}", rate)
        except Exception:
            self.uncounted.inc()
            self._warn()
            return ADMITTED

    def _warn(self) -> None:
        with self._warn_lock:
            now = time.monotonic()
            if now - self._last_warned < self.warn_every_s:
                return
            self._last_warned = now
        self.logger.warning("%s not counted: the cache did not answer", self.what, exc_info=True)


WRITES = UserLimit(
    name="api-write",
    setting="WEFTBOARD_API_WRITE_RATE",
    default="60/min",
    uncounted=WRITES_UNCOUNTED,
    logger=logging.getLogger("weftboard.api"),
    what="API write limit",
)
# Pages poll every 2 s per fragment: reads outnumber writes, so their warning is
# logged once a minute per process while every one is still counted above.
READS = UserLimit(
    name="read",
    setting="WEFTBOARD_READ_RATE",
    default="600/min",
    uncounted=READS_UNCOUNTED,
    logger=logging.getLogger("weftboard.limits"),
    what="read limit",
    warn_every_s=60.0,
)
