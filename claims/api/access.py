"""Who may write: the read-only switch, the token's scope, the user's permission, the rate."""

from __future__ import annotations

import threading

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.throttling import BaseThrottle, UserRateThrottle

from claims.conf import read_only_reason
from claims.models import ApiToken, ApiTokenScope

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
    return the actor name for the audit row."""
    reason = read_only_reason()
    if reason is not None:
        raise PermissionDenied(reason)
    token = api_token(request)
    if token is not None and token.scope != ApiTokenScope.WRITE:
        raise PermissionDenied("this API token is read-only")
    if not request.user.has_perm(permission):
        raise PermissionDenied(f"this needs the permission {permission}")
    return actor_name(request)


class _UserWriteThrottle(UserRateThrottle):
    scope = "weftboard-write"


class WriteRateThrottle(BaseThrottle):
    """Writes per user at WEFTBOARD_API_WRITE_RATE, read per request rather than at import.

    Each request gets its own throttle object: ninja's keep the request's cache key and
    history on the instance, which threads serving requests at once would share.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def allow_request(self, request: HttpRequest) -> bool:
        rate = str(getattr(settings, "WEFTBOARD_API_WRITE_RATE", "") or DEFAULT_WRITE_RATE)
        self._local.throttle = _UserWriteThrottle(rate)
        return bool(self._local.throttle.allow_request(request))

    def wait(self) -> float | None:
        throttle = getattr(self._local, "throttle", None)
        return None if throttle is None else throttle.wait()


write_throttle = WriteRateThrottle()
