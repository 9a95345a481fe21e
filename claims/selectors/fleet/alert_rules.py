"""The overview's seven alert rules, as one pure function of values the overview has read.

No query runs here: ``claims.selectors.fleet.overview`` reads the fleet and hands the results
over as an ``AlertInputs``, so each rule can be tested on plain values. The rules run in
a fixed order, which is the order the overview lists them in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from claims.protocol.timing import ClaimTiming
from claims.selectors.engines.liveness import LATE_INTERVALS
from claims.selectors.engines.passes import PASS_NAMES, pass_part

# How many workflow or engine ids an alert lists as examples.
EXAMPLES = 5


@dataclass(frozen=True)
class Alert:
    level: str  # "critical" or "warning"
    title: str
    detail: str
    link: str = ""  # a URL name, resolved by the template
    query: str = ""
    examples: list[str] = field(default_factory=list)
    examples_are: str = "workflows"  # or "engines"


@dataclass(frozen=True)
class LiveEngine:
    """An active or disposing engine, as the overview reads it."""

    engine_id: str
    heartbeat_at_ms: int
    clock_skew_ms: int | None
    pass_summary: Any  # the engine's JSON pass summary; anything but a dict reads as empty


@dataclass(frozen=True)
class AlertInputs:
    """What the rules judge, read at ``now_ms`` on the fleet clock."""

    now_ms: int
    timing: ClaimTiming
    ownerless_running: int
    ownerless_examples: list[str]
    claims_by_holder: Mapping[str, int]
    stale_examples: list[str]  # claims held by ``silent_holders``, at most EXAMPLES
    redrives_ageing: int  # pending re-drives that first failed over a TTL ago
    recently_dead: int  # engines marked dead whose last heartbeat was within the hour
    live_engines: Sequence[LiveEngine]
    index_complete: bool  # a backfill has finished clean


def late_before_ms(now_ms: int, timing: ClaimTiming) -> int:
    """A heartbeat or pass before this time is late."""
    return now_ms - LATE_INTERVALS * timing.renew_interval_ms


def silent_holders(
    claims_by_holder: Mapping[str, int], live_engines: Sequence[LiveEngine], late_before: int
) -> list[str]:
    """Engines holding claims that are not live or have not heartbeated since ``late_before``."""
    fresh = {e.engine_id for e in live_engines if e.heartbeat_at_ms >= late_before}
    return sorted(engine for engine in claims_by_holder if engine not in fresh)


def _ownerless_running(inputs: AlertInputs) -> Alert | None:
    if not inputs.ownerless_running:
        return None
    return Alert(
        "critical",
        f"{inputs.ownerless_running} running workflow(s) with no holder",
        "Stranded until a reclaim pass claims them; persistent counts mean no live "
        "engine runs their type, or reclaim is not running.",
        "claims:claims",
        "state=stranded",
        inputs.ownerless_examples,
    )


def _held_by_silent_engines(inputs: AlertInputs) -> Alert | None:
    late_before = late_before_ms(inputs.now_ms, inputs.timing)
    silent = silent_holders(inputs.claims_by_holder, inputs.live_engines, late_before)
    stale_held = sum(inputs.claims_by_holder[engine] for engine in silent)
    if not stale_held:
        return None
    return Alert(
        "critical",
        f"{stale_held} claim(s) held by a silent or dead engine",
        f"The holder has not heartbeated for {LATE_INTERVALS} renew intervals: these "
        "workflows are not progressing until their claims expire and are taken over.",
        "claims:engines",
        "",
        inputs.stale_examples,
    )


def _ageing_redrives(inputs: AlertInputs) -> Alert | None:
    if not inputs.redrives_ageing:
        return None
    return Alert(
        "warning",
        f"{inputs.redrives_ageing} re-drive(s) pending for longer than the TTL",
        "The holder keeps the claim but its drive keeps failing.",
        "claims:redrives",
    )


def _recently_dead(inputs: AlertInputs) -> Alert | None:
    if not inputs.recently_dead:
        return None
    return Alert(
        "critical",
        f"{inputs.recently_dead} engine(s) died in the last hour",
        "Marked dead after 3 x TTL without a heartbeat; their claims are reclaimable.",
        "claims:engines",
        "status=dead",
    )


def _clock_skew(inputs: AlertInputs) -> Alert | None:
    safe_skew_ms = inputs.timing.safe_skew_ms
    skewed = [
        e.engine_id
        for e in inputs.live_engines
        if e.clock_skew_ms is not None and abs(e.clock_skew_ms) > safe_skew_ms
    ]
    if not skewed:
        return None
    return Alert(
        "warning",
        f"{len(skewed)} engine(s) with clock skew over {safe_skew_ms} ms",
        "The safe limit is TTL - 3 x renew interval; engines judge expiry on the "
        "database clock, but their hosts' clocks need attention.",
        "claims:engines",
        "",
        skewed[:EXAMPLES],
        "engines",
    )


def _late_passes(inputs: AlertInputs) -> Alert | None:
    late_before = late_before_ms(inputs.now_ms, inputs.timing)
    # A pass that has not run yet counts from the engine's heartbeat.
    late = sorted(
        {
            e.engine_id
            for e in inputs.live_engines
            for name in PASS_NAMES
            if (pass_part(e.pass_summary, name).get("at_ms") or e.heartbeat_at_ms) < late_before
        }
    )
    if not late:
        return None
    return Alert(
        "warning",
        f"{len(late)} engine(s) with a pass late by over {LATE_INTERVALS} intervals",
        "A renew, reclaim or wake pass has not finished recently: a hung pass or a stalled worker.",
        "claims:engines",
        "",
        late[:EXAMPLES],
        "engines",
    )


def _index_incomplete(inputs: AlertInputs) -> Alert | None:
    if inputs.index_complete:
        return None
    return Alert(
        "warning",
        "Visibility index incomplete",
        "No backfill has finished clean, so listing pages cannot trust the index; "
        "the reclaim scan of the Workflow table still finds un-indexed workflows.",
        "claims:backfills",
    )


def engines_below_minimum(healthy: int, minimum: int) -> Alert | None:
    """Fewer active, non-silent engines than WEFTBOARD_MIN_ENGINES. Not one of the overview's
    rules: every page shows it at the top (claims.context_processors)."""
    if healthy >= minimum:
        return None
    if healthy == 0:
        title = "No engine is running"
    else:
        title = f"Only {healthy} of at least {minimum} engine(s) running"
    return Alert(
        "critical",
        title,
        "No workflow progresses without an engine, and claims held by silent engines wait "
        "for a live one to take them over. Start workers, or check the broker and beat.",
        "claims:engines",
    )


ALERT_RULES: tuple[Callable[[AlertInputs], Alert | None], ...] = (
    _ownerless_running,
    _held_by_silent_engines,
    _ageing_redrives,
    _recently_dead,
    _clock_skew,
    _late_passes,
    _index_incomplete,
)


def fleet_alerts(inputs: AlertInputs) -> list[Alert]:
    """The alerts that fire for ``inputs``, in rule order."""
    return [alert for rule in ALERT_RULES if (alert := rule(inputs)) is not None]
