"""API bearer tokens, written: mint one (its secret shown once) and revoke them.

The secret is stored only as the hash that claims.selectors.tokens looks it up by.
"""

from __future__ import annotations

import secrets

from django.db.models import QuerySet
from django.utils import timezone

from claims.models import ApiToken
from claims.selectors.tokens import SECRET_PREFIX, token_hash

SHOWN_PREFIX_LENGTH = 8


def api_token_mint(token: ApiToken) -> str:
    """Give an unsaved token a fresh secret, save it, and return the secret.

    The caller shows the secret once; it is never stored nor recoverable.
    """
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    token.prefix = secret[:SHOWN_PREFIX_LENGTH]
    token.token_hash = token_hash(secret)
    token.save()
    return secret


def api_tokens_revoke(tokens: QuerySet[ApiToken]) -> int:
    """Revoke the tokens not yet revoked; returns how many were."""
    return tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
