"""Each of the overview's alert rules fires on its condition and stays quiet just below it.

Plain values in, alerts out: no database.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from claims.protocol.timing import ClaimTiming
from claims.selectors.fleet.alert_rules import (
    ALERT_RULES,
    EXAMPLES,
    Alert,
    AlertInputs,
    LiveEngine,
    engines_below_minimum,
    fleet_alerts,
    late_before_ms,
    silent_holders,
)

TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)
NOW_MS = 1_800_000_000_000
LATE_BEFORE = late_before_ms(NOW_MS, TIMING)  # two renew intervals ago


def passes(at_ms: int) -> dict[str, Any]:
    return {name: {"at_ms": at_ms, "duration_ms": 3.0} for name in ("renew", "reclaim", "wake")}


def engine(engine_id: str = "e-1", **fields: Any) -> LiveEngine:
    values: dict[str, Any] = {
        "heartbeat_at_ms": NOW_MS,
        "clock_skew_ms": 0,
        "pass_summary": passes(NOW_MS),
    }
    values.update(fields)
    return LiveEngine(engine_id, **values)


def healthy(**changes: Any) -> AlertInputs:
    """One fresh engine holding three claims; nothing stranded, ageing, dead, skewed or late."""
    inputs = AlertInputs(
        now_ms=NOW_MS,
        timing=TIMING,
        ownerless_running=0,
        ownerless_examples=[],
        claims_by_holder={"e-1": 3},
        stale_examples=[],
        redrives_ageing=0,
        recently_dead=0,
        live_engines=[engine()],
        index_complete=True,
    )
    return replace(inputs, **changes)


def titles(inputs: AlertInputs) -> list[str]:
    return [alert.title for alert in fleet_alerts(inputs)]


def only(inputs: AlertInputs) -> Alert:
    alerts = fleet_alerts(inputs)
    assert len(alerts) == 1, [alert.title for alert in alerts]
    return alerts[0]


def test_a_healthy_fleet_raises_nothing() -> None:
    assert fleet_alerts(healthy()) == []


def test_there_are_seven_rules() -> None:
    assert len(ALERT_RULES) == 7


# -- 1. running workflows with no holder ---------------------------------------------


def test_ownerless_running_workflows_fire_a_critical_alert_with_their_examples() -> None:
    alert = only(healthy(ownerless_running=1, ownerless_examples=["wf-1"]))
    assert (alert.level, alert.title) == ("critical", "1 running workflow(s) with no holder")
    assert (alert.link, alert.query, alert.examples) == (
        "claims:claims",
        "state=stranded",
        ["wf-1"],
    )
    assert alert.examples_are == "workflows"


def test_no_ownerless_running_workflow_is_quiet() -> None:
    assert titles(healthy(ownerless_running=0)) == []


# -- 2. claims held by a silent or dead engine ---------------------------------------


def test_claims_of_an_engine_silent_for_two_intervals_fire() -> None:
    silent = engine(heartbeat_at_ms=LATE_BEFORE - 1, pass_summary=passes(NOW_MS))
    alert = only(healthy(live_engines=[silent], stale_examples=["wf-1", "wf-2"]))
    assert (alert.level, alert.title) == ("critical", "3 claim(s) held by a silent or dead engine")
    assert (alert.link, alert.examples) == ("claims:engines", ["wf-1", "wf-2"])


def test_claims_of_an_engine_that_heartbeated_on_the_limit_are_quiet() -> None:
    on_time = engine(heartbeat_at_ms=LATE_BEFORE)
    assert titles(healthy(live_engines=[on_time])) == []


def test_claims_of_an_engine_that_is_not_live_fire() -> None:
    alert = only(healthy(claims_by_holder={"e-1": 3, "e-gone": 2}))
    assert alert.title == "2 claim(s) held by a silent or dead engine"


def test_silent_holders_are_the_holders_not_fresh_and_live_in_name_order() -> None:
    live = [engine("e-1"), engine("e-2", heartbeat_at_ms=LATE_BEFORE - 1)]
    by_holder = {"e-3": 1, "e-2": 1, "e-1": 1}
    assert silent_holders(by_holder, live, LATE_BEFORE) == ["e-2", "e-3"]


# -- 3. re-drives pending for longer than the TTL ------------------------------------


def test_an_ageing_redrive_fires_a_warning() -> None:
    alert = only(healthy(redrives_ageing=1))
    assert (alert.level, alert.title, alert.link) == (
        "warning",
        "1 re-drive(s) pending for longer than the TTL",
        "claims:redrives",
    )


def test_no_ageing_redrive_is_quiet() -> None:
    assert titles(healthy(redrives_ageing=0)) == []


# -- 4. engines that died in the last hour -------------------------------------------


def test_a_recently_dead_engine_fires_a_critical_alert() -> None:
    alert = only(healthy(recently_dead=2))
    assert (alert.level, alert.title) == ("critical", "2 engine(s) died in the last hour")
    assert (alert.link, alert.query) == ("claims:engines", "status=dead")


def test_no_recently_dead_engine_is_quiet() -> None:
    assert titles(healthy(recently_dead=0)) == []


# -- 5. clock skew over the safe limit -----------------------------------------------


@pytest.mark.parametrize("sign", [1, -1])
def test_skew_just_over_the_safe_limit_fires_either_way(sign: int) -> None:
    skewed = engine(clock_skew_ms=sign * (TIMING.safe_skew_ms + 1))
    alert = only(healthy(live_engines=[skewed]))
    assert (alert.level, alert.examples, alert.examples_are) == ("warning", ["e-1"], "engines")
    assert alert.title == f"1 engine(s) with clock skew over {TIMING.safe_skew_ms} ms"


@pytest.mark.parametrize("skew", [15_000, -15_000, None])
def test_skew_on_the_safe_limit_or_unknown_is_quiet(skew: int | None) -> None:
    assert TIMING.safe_skew_ms == 15_000
    assert titles(healthy(live_engines=[engine(clock_skew_ms=skew)])) == []


def test_skew_examples_are_capped() -> None:
    skewed = [engine(f"e-{n}", clock_skew_ms=20_000) for n in range(EXAMPLES + 2)]
    alert = only(healthy(live_engines=skewed, claims_by_holder={}))
    assert alert.title.startswith(f"{EXAMPLES + 2} engine(s)")
    assert len(alert.examples) == EXAMPLES


# -- 6. a pass late by over two intervals --------------------------------------------


def test_a_pass_finished_before_the_limit_fires() -> None:
    summary = passes(NOW_MS)
    summary["wake"] = {"at_ms": LATE_BEFORE - 1}
    alert = only(healthy(live_engines=[engine(pass_summary=summary)]))
    assert (alert.level, alert.examples, alert.examples_are) == ("warning", ["e-1"], "engines")
    assert alert.title == "1 engine(s) with a pass late by over 2 intervals"


def test_passes_finished_on_the_limit_are_quiet() -> None:
    assert titles(healthy(live_engines=[engine(pass_summary=passes(LATE_BEFORE))])) == []


def test_a_pass_that_never_ran_counts_from_the_heartbeat() -> None:
    fresh = engine(pass_summary={}, heartbeat_at_ms=LATE_BEFORE)
    assert titles(healthy(live_engines=[fresh])) == []
    stale = engine(pass_summary=None, heartbeat_at_ms=LATE_BEFORE - 1)
    alerts = titles(healthy(live_engines=[stale], claims_by_holder={}))
    assert alerts == ["1 engine(s) with a pass late by over 2 intervals"]


# -- 7. the visibility index is incomplete -------------------------------------------


def test_an_incomplete_index_fires_a_warning() -> None:
    alert = only(healthy(index_complete=False))
    assert (alert.level, alert.title, alert.link) == (
        "warning",
        "Visibility index incomplete",
        "claims:backfills",
    )


def test_a_complete_index_is_quiet() -> None:
    assert titles(healthy(index_complete=True)) == []


def test_alerts_come_in_rule_order() -> None:
    everything = healthy(
        ownerless_running=1,
        claims_by_holder={"e-gone": 1},
        redrives_ageing=1,
        recently_dead=1,
        live_engines=[engine(clock_skew_ms=20_000, pass_summary={}, heartbeat_at_ms=0)],
        index_complete=False,
    )
    assert [alert.level for alert in fleet_alerts(everything)] == [
        "critical",
        "critical",
        "warning",
        "critical",
        "warning",
        "warning",
        "warning",
    ]


# The every-page rule: fewer active, non-silent engines than WEFTBOARD_MIN_ENGINES.


@pytest.mark.parametrize(("healthy", "minimum"), [(1, 1), (3, 2), (0, 0)])
def test_engine_floor_quiet_at_or_above_the_minimum(healthy, minimum) -> None:
    assert engines_below_minimum(healthy, minimum) is None


def test_engine_floor_with_no_engine_says_none_runs() -> None:
    alert = engines_below_minimum(0, 1)

    assert alert is not None
    assert (alert.level, alert.title, alert.link) == (
        "critical",
        "No engine is running",
        "claims:engines",
    )


def test_engine_floor_below_the_minimum_names_both_numbers() -> None:
    alert = engines_below_minimum(1, 3)

    assert alert is not None
    assert alert.level == "critical"
    assert alert.title == "Only 1 of at least 3 engine(s) running"


def test_engine_floor_is_not_one_of_the_overview_rules() -> None:
    """Every page shows it in its frame; the overview's list would show it twice."""
    assert engines_below_minimum not in ALERT_RULES
