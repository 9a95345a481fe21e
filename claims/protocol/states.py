"""The state an operator sees for a claim, derived with the protocol's own expiry rule."""

from __future__ import annotations

from typing import Literal

from .records import ClaimRow
from .timing import ClaimTiming, is_claim_expired

ClaimState = Literal["live", "in-grace", "expired", "invalid", "ownerless"]
CLAIM_STATES: tuple[ClaimState, ...] = ("live", "in-grace", "expired", "invalid", "ownerless")


def derive_claim_state(row: ClaimRow, now_ms: int, timing: ClaimTiming) -> ClaimState:
    """live until expires_at; in grace until takeover is allowed; then expired."""
    if row.holder is None:
        return "ownerless"
    if not row.holder_is_valid():
        return "invalid"
    expires = row.holder.expires_at_ms
    assert expires is not None
    if now_ms <= expires:
        return "live"
    return "expired" if is_claim_expired(expires, now_ms, timing) else "in-grace"
