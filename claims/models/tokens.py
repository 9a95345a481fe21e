"""Bearer tokens for the JSON API."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiTokenScope(models.TextChoices):
    READ = "read"
    WRITE = "write"


class ApiToken(models.Model):
    """A bearer token for the JSON API. Only the SHA-256 of the secret is stored; the
    secret is shown once, when the token is created in the admin."""

    name = models.CharField(max_length=100)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    # The first characters of the secret, so an operator can tell tokens apart.
    prefix = models.CharField(max_length=8, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    scope = models.CharField(
        max_length=8, choices=ApiTokenScope.choices, default=ApiTokenScope.READ
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # None: until revoked. Past it the token is refused (401) and shown as expired.
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…, {self.scope})"
