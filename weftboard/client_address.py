"""The address a sign-in came from, for django-axes' lockout.

Behind N trusted proxies that each append the address they saw to X-Forwarded-For, the
client is the N-th entry from the right: entries further left were written by whoever
sent the request and prove nothing. (django-ipware counts proxies differently, treating
the left-most entry as the client's own, which a client can write.) With no trusted
proxy the header is ignored and REMOTE_ADDR is the client.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    remote = str(request.META.get("REMOTE_ADDR", ""))
    hops = int(getattr(settings, "WEFTBOARD_TRUSTED_PROXY_COUNT", 0) or 0)
    if hops <= 0:
        return remote
    forwarded = [
        entry.strip()
        for entry in str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",")
        if entry.strip()
    ]
    # Fewer entries than proxies: the request did not come through all of them.
    return forwarded[-hops] if len(forwarded) >= hops else remote
