"""Silent engines, and the fleet's floor of live engines.

``silent`` is a display state derived at read time, never written: an active or disposing
engine whose heartbeat is older than TTL + 2 x renew interval. By then every claim it held
has passed its expiry (each was renewed at most at its last heartbeat) and is in grace, so
an operator should know at once. ``dead`` stays the bookkeeping status beat writes after
3 x TTL (claims.services.engines). docs/design.md §7.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Max

from claims.models import Engine, EngineStatus, WorkflowClaim
from claims.protocol.sessions import SessionRow
from claims.protocol.timing import ClaimTiming
from claims.selectors.fleet.alert_rules import Alert, engines_below_minimum
from claims.store import OrmClaimStore

from .liveness import LIVE_ENGINE_STATUSES, silent_before_ms

SILENT = "silent"


def is_silent(status: str, heartbeat_at_ms: int, now_ms: int, timing: ClaimTiming) -> bool:
    return status in LIVE_ENGINE_STATUSES and heartbeat_at_ms < silent_before_ms(now_ms, timing)


def display_status(status: str, heartbeat_at_ms: int, now_ms: int, timing: ClaimTiming) -> str:
    """The status an engine is shown with: its stored one, or ``silent``."""
    return SILENT if is_silent(status, heartbeat_at_ms, now_ms, timing) else status


@dataclass(frozen=True)
class SilentHolding:
    """What a silent engine still holds, and when the last of it can be taken over."""

    claims: int
    takeover_at_ms: int | None  # the latest expiry plus grace; None when it holds nothing


def silent_holdings(engine_ids: list[str], timing: ClaimTiming) -> dict[str, SilentHolding]:
    """Claims held by each of ``engine_ids`` (the silent ones) and their takeover time; one
    query, none when the list is empty (the usual case)."""
    if not engine_ids:
        return {}
    rows = [
        (str(engine_id), int(n), last)
        for engine_id, n, last in WorkflowClaim.objects.filter(holder_engine_id__in=engine_ids)
        .values("holder_engine_id")
        .annotate(n=Count("*"), last=Max("holder_expires_at_ms"))
        .order_by()
        .values_list("holder_engine_id", "n", "last")
    ]
    # Claims held under a session store no expiry of their own: theirs is the session's
    # (the engine-lease mode), read only for the silent engines that hold such claims.
    by_session = [engine_id for engine_id, n, last in rows if n and last is None]
    sessions = OrmClaimStore().read_sessions(by_session) if by_session else {}
    found = {}
    for engine_id, n, last in rows:
        session = sessions.get(engine_id)
        if last is None and session is not None:
            found[engine_id] = SilentHolding(n, _session_takeover_at(session, timing))
        else:
            found[engine_id] = SilentHolding(n, None if last is None else last + timing.grace_ms)
    return {engine_id: found.get(engine_id, SilentHolding(0, None)) for engine_id in engine_ids}


def _session_takeover_at(session: SessionRow, timing: ClaimTiming) -> int:
    """When a session's claims may be taken over: at once once it is closed, else after its
    expiry plus grace."""
    if session.closed_at_ms is not None:
        return session.closed_at_ms
    return session.expires_at_ms + timing.grace_ms


def silent_holdings_of(
    engines: list[Engine], now_ms: int, timing: ClaimTiming
) -> dict[str, SilentHolding]:
    """``silent_holdings`` for whichever of ``engines`` are silent at ``now_ms``."""
    silent = [
        e.engine_id for e in engines if is_silent(e.status, e.heartbeat_at_ms, now_ms, timing)
    ]
    return silent_holdings(silent, timing)


def healthy_engine_count(now_ms: int, timing: ClaimTiming) -> int:
    """Active engines that are not silent (a disposing engine is leaving); one query."""
    return Engine.objects.filter(
        status=EngineStatus.ACTIVE, heartbeat_at_ms__gte=silent_before_ms(now_ms, timing)
    ).count()


def engine_floor_alert(now_ms: int, timing: ClaimTiming, minimum: int) -> Alert | None:
    """The every-page alert when fewer than ``minimum`` engines are healthy; one query."""
    return engines_below_minimum(healthy_engine_count(now_ms, timing), minimum)
