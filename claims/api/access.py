"""Who may write (the read-only switch, the token's scope, the user's permission), and how
often a user may write and read (the per-user rates, as ninja throttles)."""

from __future__ import annotations

import threading

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.throttling import BaseThrottle

from claims.http.user_limits import READS, WRITES, UserLimit
from claims.models import ApiToken, ApiTokenScope
from claims.services.rules import refuse_if_read_only

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
    actor = check_write_scope(request)
    if not request.user.has_perm(permission):
        raise PermissionDenied(f"this needs the permission {permission}")
    return actor


def check_write_scope(request: HttpRequest) -> str:
    """check_write for a write any signed-in user may make of their own things (a saved
    query): the read-only switch, then a token's scope; the actor name for the audit row."""
    refuse_if_read_only()
    token = api_token(request)
    if token is not None and token.scope != ApiTokenScope.WRITE:
        raise PermissionDenied("this API token is read-only")
    return actor_name(request)


class UserRateThrottle(BaseThrottle):
    """One of the per-user limits (claims.http.user_limits) as a ninja throttle: the API
    authenticates before it throttles, so a bearer token's user is counted, not the
    address. The wait before the next admitted request is kept per thread for
    Retry-After."""

    def __init__(self, limit: UserLimit, methods: frozenset[str] | None = None) -> None:
        self.limit = limit
        self.methods = methods
        self._local = threading.local()

    def allow_request(self, request: HttpRequest) -> bool:
        if self.methods is not None and request.method not in self.methods:
            self._local.wait = None
            return True
        verdict = self.limit.check(request)
        self._local.wait = verdict.wait_s
        return verdict.admitted

    def wait(self) -> float | None:
        return getattr(self._local, "wait", None)


# Set on each write route; every other route (the reads) gets the API's read throttle.
write_throttle = UserRateThrottle(WRITES)
read_throttle = UserRateThrottle(READS, methods=frozenset({"GET", "HEAD"}))
