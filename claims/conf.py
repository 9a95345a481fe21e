"""The claim settings of this process, validated by the protocol's own rules."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from claims.protocol import ClaimTiming
    from claims.protocol.constants import EngineOwnershipMode


def claim_timing() -> ClaimTiming:
    """TTL and renew interval from WEFT_CLAIM_TTL / WEFT_CLAIM_RENEW_INTERVAL.

    Raises ClaimConfigError naming both settings when a value breaks a rule.
    """
    ttl, renew_interval = settings.WEFT_CLAIM_TTL, settings.WEFT_CLAIM_RENEW_INTERVAL
    try:
        return _cached_timing(ttl, renew_interval)
    except TypeError:  # an unhashable value: parse it, and let the parser say what is wrong
        return _parsed_timing(ttl, renew_interval)


@functools.lru_cache(maxsize=8)
def _cached_timing(ttl: object, renew_interval: object) -> ClaimTiming:
    """Parsed once per pair of values: hot paths read the timing on every request and pass,
    and keying on the values keeps a changed setting (tests) from being served stale."""
    return _parsed_timing(ttl, renew_interval)


def _parsed_timing(ttl: object, renew_interval: object) -> ClaimTiming:
    from claims.protocol import ClaimTiming
    from claims.protocol.errors import ClaimConfigError

    try:
        return ClaimTiming.parse(ttl, renew_interval)
    except ClaimConfigError as error:
        raise ClaimConfigError(
            f"WEFT_CLAIM_TTL={ttl!r}, WEFT_CLAIM_RENEW_INTERVAL={renew_interval!r}: {error}"
        ) from error


def ownership_mode() -> EngineOwnershipMode:
    """The mode this process's engine runs, from WEFT_OWNERSHIP_MODE.

    Raises ClaimConfigError naming the setting and the modes an engine runs.
    """
    from claims.protocol.constants import ENGINE_OWNERSHIP_MODES
    from claims.protocol.errors import ClaimConfigError

    configured = settings.WEFT_OWNERSHIP_MODE
    for mode in ENGINE_OWNERSHIP_MODES:
        if configured == mode:
            return mode
    raise ClaimConfigError(
        f"WEFT_OWNERSHIP_MODE={configured!r}: an engine runs one of "
        f"{', '.join(ENGINE_OWNERSHIP_MODES)}"
    )


def read_only_reason() -> str | None:
    """Why writes are switched off fleet-wide (WEFTBOARD_READ_ONLY), or None when they are on.

    The services refuse every operator write while it is set (claims.services.rules); the
    interfaces ask it too, to hide their buttons and show the reason.
    """
    reason = str(getattr(settings, "WEFTBOARD_READ_ONLY", "") or "").strip()
    if not reason or reason.lower() in {"0", "false", "no", "off"}:
        return None
    if reason.lower() in {"1", "true", "yes", "on"}:
        return "weftboard is in read-only mode"
    return f"weftboard is in read-only mode: {reason}"


MINUTE_MS = 60_000
DAY_MS = 86_400_000


def min_engines() -> int:
    """WEFTBOARD_MIN_ENGINES: fewer active, non-silent engines than this is an alert."""
    return max(0, int(getattr(settings, "WEFTBOARD_MIN_ENGINES", 1)))


def engine_history_ms() -> int:
    """WEFTBOARD_ENGINE_HISTORY_DAYS in ms: how long stopped and dead engines are kept."""
    return max(0, int(getattr(settings, "WEFTBOARD_ENGINE_HISTORY_DAYS", 7))) * DAY_MS
