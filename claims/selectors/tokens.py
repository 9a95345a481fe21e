"""API bearer tokens, read: the live token a secret names, found by the secret's hash.

A secret is minted once (claims.services.tokens) and stored only as its SHA-256 hash.
The secret has 256 random bits, so a plain hash (no salt, no slow KDF) is enough:
nobody can guess a preimage, and the hash doubles as the lookup key.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from claims.models import ApiToken

SECRET_PREFIX = "wb_"
# Refreshing last_used_at on every call would turn every read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_token_authenticate(secret: str) -> ApiToken | None:
    """The live token with this secret (not revoked, not expired, its user loaded and
    active), or None. Its last_used_at is refreshed at most once a LAST_USED_RESOLUTION."""
    if not secret.startswith(SECRET_PREFIX):
        return None
    now = timezone.now()
    token = (
        ApiToken.objects.select_related("user")
        .filter(token_hash=token_hash(secret), revoked_at__isnull=True, user__is_active=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .first()
    )
    if token is None:
        return None
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
