"""Who may act: one policy for every page action, asked before the button is drawn and
again before the write (read-only mode first, then the permission)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser, AnonymousUser

from claims.conf import read_only_reason

FORCE_CLAIM = "claims.force_claim"
CANCEL_WORKFLOW = "claims.cancel_workflow"
SUSPEND_WORKFLOW = "claims.suspend_workflow"  # suspend and resume
DRAIN_ENGINE = "claims.drain_engine"  # drain and undrain


def action_refusal(user: AbstractUser | AnonymousUser, permission: str) -> str | None:
    """Why this user may not perform the action right now, or None when they may."""
    if reason := read_only_reason():
        return reason
    if not user.has_perm(permission):
        return f"you need the permission {permission}"
    return None
