"""The address a sign-in came from, for django-axes' lockout.

Behind N trusted proxies that each append the address they saw to X-Forwarded-For, the
client is the N-th entry from the right: entries further left were written by whoever
sent the request and prove nothing. (django-ipware counts proxies differently, treating
the left-most entry as the client's own, which a client can write.) With no trusted
proxy the header is ignored and REMOTE_ADDR is the client.

An IPv6 client counts as its /64: one host is routinely given a whole /64, so counting
each of its addresses apart would hand it 2^64 fresh tries.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    remote = str(request.META.get("REMOTE_ADDR", ""))
    hops = int(getattr(settings, "WEFTBOARD_TRUSTED_PROXY_COUNT", 0) or 0)
    forwarded = [
        entry.strip()
        for entry in str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",")
        if entry.strip()
    ]
    # Fewer entries than proxies: the request did not come through all of them. An entry
    # that is no address (a proxy may write "unknown") leaves the proxy's own address.
    if hops > 0 and len(forwarded) >= hops:
        unit = lockout_unit(forwarded[-hops])
        if unit is not None:
            return unit
    return lockout_unit(remote) or remote


def lockout_unit(address: str) -> str | None:
    """An IPv4 address as it is; an IPv6 address as the first address of its /64 (it is
    stored in an IP address column); None for text that is no address."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return None
    if parsed.version == 6:
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False).network_address)
    return str(parsed)
