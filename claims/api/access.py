"""Who may write: the read-only switch, the token's scope, the user's permission, the rate."""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.throttling import BaseThrottle
from prometheus_client import Counter

from claims.models import ApiToken, ApiTokenScope
from claims.services.rules import refuse_if_read_only
from weftboard.client_address import client_address

logger = logging.getLogger("weftboard.api")

# Per web process: a lasting cache fault (a wrong password, a read-only replica) turns the
# write limit off, and this is what an alert can watch.
WRITES_UNCOUNTED = Counter(
    "weftboard_api_writes_uncounted",
    "API writes let through without counting because the shared cache did not answer",
)

DEFAULT_WRITE_RATE = "60/min"
ACTOR_MAX_LENGTH = 150  # ClaimEvent.actor


def api_token(request: HttpRequest) -> ApiToken | None:
    """The bearer token this request authenticated with, if it did not use a session."""
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, ApiToken) else None


def actor_name(request: HttpRequest) -> str:
    """The audit name: the user, and the token's shown prefix when a token acted."""
    name = request.user.get_username()
    token = api_token(request)
    if token is not None:
        name = f"{name} (token {token.prefix})"
    return name[:ACTOR_MAX_LENGTH]


def check_write(request: HttpRequest, permission: str) -> str:
    """Raise PermissionDenied unless this request may perform a write needing ``permission``;
    return the actor name for the audit row.

    The read-only switch comes first (ReadOnlyError, 403), before the token's scope and
    the user's permission; the service the route calls checks it again.
    """
    refuse_if_read_only()
    token = api_token(request)
    if token is not None and token.scope != ApiTokenScope.WRITE:
        raise PermissionDenied("this API token is read-only")
    if not request.user.has_perm(permission):
        raise PermissionDenied(f"this needs the permission {permission}")
    return actor_name(request)


RATE_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400}


def parse_rate(rate: str) -> tuple[int, int]:
    """ "60/min" -> (60, 60): requests per window, and the window in seconds."""
    count, _, unit = rate.partition("/")
    seconds = RATE_UNITS.get(unit.strip()[:1].lower())
    if not count.strip().isdigit() or seconds is None:
        raise ValueError(f"a rate is like 60/min, not {rate!r}")
    return int(count), seconds


class WriteRateThrottle(BaseThrottle):
    """Writes per user at WEFTBOARD_API_WRITE_RATE, counted in the shared cache.

    A fixed window counted with the cache's atomic ``add`` and ``incr``: on Redis every web
    process counts against one limit, however many requests arrive at once (ninja's own
    throttle reads a history, appends and writes it back, so concurrent requests in
    several processes each see the old history). The rate is read per request.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def allow_request(self, request: HttpRequest) -> bool:
        rate = str(getattr(settings, "WEFTBOARD_API_WRITE_RATE", "") or DEFAULT_WRITE_RATE)
        limit, seconds = parse_rate(rate)
        user = getattr(request, "user", None)
        # The API authenticates before it throttles, so a caller here is signed in; the
        # address (as the sign-in lockout reads it) is the fallback should that change.
        who = (
            f"user-{user.pk}"
            if user is not None and user.is_authenticated
            else f"addr-{client_address(request)}"
        )
        now = time.time()
        key = f"weftboard:api-write:{who}:{int(now // seconds)}"
        try:
            used = self._count(key, seconds)
        except Exception:
            # The limit guards against a runaway script, not against the operator who
            # must release a claim while the cache (Redis) restarts: count nothing then.
            logger.warning("API write limit not counted: the cache did not answer", exc_info=True)
            WRITES_UNCOUNTED.inc()
            used = 1
        self._local.wait = seconds - now % seconds if used > limit else None
        return used <= limit

    @staticmethod
    def _count(key: str, seconds: int) -> int:
        if cache.add(key, 1, timeout=seconds + 1):
            return 1
        try:
            return int(cache.incr(key))
        except ValueError:  # expired between add and incr: a new window
            cache.add(key, 1, timeout=seconds + 1)
            return 1

    def wait(self) -> float | None:
        return getattr(self._local, "wait", None)


write_throttle = WriteRateThrottle()
