"""The claim settings of this process, validated by the protocol's own rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from claims.protocol import ClaimTiming


def claim_timing() -> ClaimTiming:
    """TTL and renew interval from WEFT_CLAIM_TTL / WEFT_CLAIM_RENEW_INTERVAL.

    Raises ClaimConfigError naming both settings when a value breaks a rule.
    """
    from claims.protocol import ClaimTiming
    from claims.protocol.errors import ClaimConfigError

    ttl = settings.WEFT_CLAIM_TTL
    renew_interval = settings.WEFT_CLAIM_RENEW_INTERVAL
    try:
        return ClaimTiming.parse(ttl, renew_interval)
    except ClaimConfigError as error:
        raise ClaimConfigError(
            f"WEFT_CLAIM_TTL={ttl!r}, WEFT_CLAIM_RENEW_INTERVAL={renew_interval!r}: {error}"
        ) from error
