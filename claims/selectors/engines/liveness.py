"""When an engine counts as live, late or silent: the rules every engine read and /metrics
judge by (the engine pages, the overview, the alerts, the services that act on engines)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from claims.protocol.timing import ClaimTiming

LIVE_ENGINE_STATUSES = ("active", "disposing")
# A pass, heartbeat or holder is late once this many renew intervals went by without it.
LATE_INTERVALS = 2


# An engine writes its heartbeat after every pass, each interval at least (a tick lost on
# the way delays one): one not heard from for this many intervals has most likely stopped,
# though beat marks it dead only after a TTL more. Who hands out work (a bulk takeover's
# spread, beat's share of the moves) passes such an engine over.
HEARD_WITHIN_INTERVALS = 3


def heard_since_ms(now_ms: int, timing: ClaimTiming) -> int:
    """An engine whose last heartbeat is at or after this was heard from lately."""
    return now_ms - HEARD_WITHIN_INTERVALS * timing.renew_interval_ms


def silent_before_ms(now_ms: int, timing: ClaimTiming) -> int:
    """An engine whose last heartbeat is before this is silent: TTL + 2 renew intervals."""
    return now_ms - timing.ttl_ms - LATE_INTERVALS * timing.renew_interval_ms
