"""Claim timing: TTL and renew interval, their rules, and the expiry judgement."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal

from .constants import (
    DEFAULT_RENEW_INTERVAL_MS,
    DEFAULT_TTL_MS,
    GRACE_MULTIPLIER,
    MAX_SAFE_INTEGER,
    TTL_SAFETY_MULTIPLIER,
)
from .errors import ClaimConfigError

_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?|\.[0-9]+)(ms|s|m)\s*$")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000}


def parse_duration_ms(value: object, *, name: str) -> int:
    """Milliseconds from an int of ms or a string like "45s", "9999ms", "1.5m" (rounded up)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ClaimConfigError(
            f"{name} must be an integer of milliseconds or a duration like '30s'; got {value!r}"
        )
    if isinstance(value, int):
        ms = value
    else:
        match = _DURATION.match(value)
        if match is None:
            raise ClaimConfigError(
                f"{name} must be a duration like '30s', '9999ms' or '10m'; got {value!r}"
            )
        number, unit = match.groups()
        # Decimal, not float: 2.007 s must be 2007 ms, not 2008.
        ms = math.ceil(Decimal(number) * _UNIT_MS[unit])
    if ms > MAX_SAFE_INTEGER:
        raise ClaimConfigError(f"{name} must be below 2^53 ms; got {value!r}")
    return ms


@dataclass(frozen=True, slots=True)
class ClaimTiming:
    """How long a claim lives without renewal, and how often its holder renews it."""

    ttl_ms: int = DEFAULT_TTL_MS
    renew_interval_ms: int = DEFAULT_RENEW_INTERVAL_MS

    def __post_init__(self) -> None:
        ttl, interval = self.ttl_ms, self.renew_interval_ms
        for name, value in (("ttl", ttl), ("renew interval", interval)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ClaimConfigError(f"{name} must be an integer of milliseconds; got {value!r}")
        if ttl <= 0 or interval <= 0:
            raise ClaimConfigError(
                f"ttl and renew interval must both be positive; got ttl={ttl}ms, "
                f"renew interval={interval}ms"
            )
        if interval >= ttl:
            raise ClaimConfigError(
                f"renew interval must be strictly less than ttl; got ttl={ttl}ms, "
                f"renew interval={interval}ms"
            )
        if ttl < TTL_SAFETY_MULTIPLIER * interval:
            raise ClaimConfigError(
                f"ttl must be at least {TTL_SAFETY_MULTIPLIER} x renew interval; got ttl={ttl}ms, "
                f"renew interval={interval}ms (needs ttl >= {TTL_SAFETY_MULTIPLIER * interval}ms)"
            )

    @classmethod
    def parse(cls, ttl: object, renew_interval: object) -> ClaimTiming:
        return cls(
            ttl_ms=parse_duration_ms(ttl, name="ttl"),
            renew_interval_ms=parse_duration_ms(renew_interval, name="renew interval"),
        )

    @property
    def grace_ms(self) -> int:
        return GRACE_MULTIPLIER * self.renew_interval_ms

    @property
    def safe_skew_ms(self) -> int:
        """Largest clock skew between engines that the grace still absorbs."""
        return self.ttl_ms - TTL_SAFETY_MULTIPLIER * self.renew_interval_ms


def is_claim_expired(expires_at_ms: int, now_ms: int, timing: ClaimTiming) -> bool:
    """Expired only strictly after the grace: equality is still alive."""
    return expires_at_ms + timing.grace_ms < now_ms
