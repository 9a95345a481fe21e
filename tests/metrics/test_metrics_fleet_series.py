"""/metrics' fleet series: each one's name, type, labels and HELP pinned, the scope label
that lets several web replicas be aggregated with ``max``, and per-engine series only
for live engines that are not silent."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from claims.fleet_clock import fleet_now
from claims.models import BackfillJob, Engine, EngineStatus
from claims.protocol import ClaimMetrics, render_prometheus
from tests import factories

pytestmark = pytest.mark.django_db

# name: (type, labels besides scope, HELP). A change here is a change operators see:
# docs/design.md §6 lists the same series.
FLEET_SERIES = {
    "weft_workflow_claim_attempts": (
        "counter",
        {"outcome"},
        "Claim attempts by outcome, summed over every engine that ever ran",
    ),
    "weft_workflow_claims_active": (
        "gauge",
        set(),
        "Claims held by the active and disposing engines, summed over those engines",
    ),
    "weft_workflow_claim_renewal_failures": (
        "counter",
        set(),
        "Claim renewals lost or raised, summed over every engine that ever ran",
    ),
    "weftboard_broker_messages_rejected": (
        "counter",
        set(),
        "Broker messages an engine could not decode and set aside, summed over every engine "
        "that ever ran",
    ),
    # The engine-lease mode's session lease (docs/design.md §12); zero in the other mode.
    "weftboard_session_renewals": (
        "counter",
        {"outcome"},
        "Engine-session renewals by outcome (renewed; lost: the session had been closed "
        "for takeover; failed: the statement raised), summed over every engine that ever "
        "ran",
    ),
    "weftboard_session_expiries": (
        "counter",
        set(),
        "Expired engine sessions closed to take their claims over (each closed once), summed "
        "over every engine that ever ran",
    ),
    "weftboard_engines": (
        "gauge",
        {"status"},
        "Engine rows by status, as recorded in the database",
    ),
    "weftboard_engine_held_claims": (
        "gauge",
        {"engine"},
        "Claims held by one live engine (active or disposing, heard from within TTL plus "
        "two renew intervals); engines that stop, die or fall silent have no series",
    ),
    "weftboard_pending_redrives": (
        "gauge",
        set(),
        "Claimed workflows whose drive failed and awaits a retry, over all engines",
    ),
    "weftboard_reclaim_cursor_wraps": (
        "counter",
        set(),
        "Times the authoritative reclaim scan wrapped to the start of the workflow table, "
        "summed over every reclaim cursor",
    ),
    "weftboard_reclaim_scanned_workflows": (
        "counter",
        set(),
        "Workflow rows read by the authoritative reclaim scan, summed over every reclaim cursor",
    ),
    "weftboard_reclaim_candidates": (
        "gauge",
        {"source"},
        "Reclaim candidates found by the last reclaim pass of each active or disposing "
        "engine, summed by source",
    ),
    "weftboard_pass_duration_seconds": (
        "histogram",
        {"pass"},
        "Duration of engine sub-passes, buckets summed over every recorded engine",
    ),
    "weftboard_backfill_progress_ratio": (
        "gauge",
        set(),
        "Progress of the running visibility backfill (0 to 1); absent when none runs",
    ),
    # Bulk operations (docs/design.md §7).
    "weftboard_bulk_items": (
        "counter",
        {"action", "outcome"},
        "Items of bulk jobs acted on, by action and outcome (done: moved on from its frozen"
        " epoch; moved: its claim had moved since the freeze; refused: by the action's rules)",
    ),
    "weftboard_bulk_jobs": ("gauge", {"status"}, "Bulk jobs by status"),
    # The fleet's floor of live engines (WEFTBOARD_MIN_ENGINES), added by the engines work.
    "weftboard_engines_live": (
        "gauge",
        set(),
        "Active engines heard from within TTL plus two renew intervals (silent ones excluded)",
    ),
    "weftboard_engines_minimum": (
        "gauge",
        set(),
        "WEFTBOARD_MIN_ENGINES: the fewest live engines the fleet should run",
    ),
    "weftboard_engines_below_minimum": (
        "gauge",
        set(),
        "1 while fewer live engines run than WEFTBOARD_MIN_ENGINES, else 0",
    ),
}

# Series of this web process alone (request metrics, uncounted writes and reads): summed,
# no scope.
PER_PROCESS_PREFIXES = (
    "django_",
    "python_",
    "process_",
    "weftboard_api_writes_uncounted",
    "weftboard_reads_uncounted",
)


def families(client):
    response = client.get("/metrics")
    assert response.status_code == 200
    return {f.name: f for f in text_string_to_metric_families(response.content.decode())}


def engine(engine_id, *, status=EngineStatus.ACTIVE, held=0, heard_ms_ago=0):
    return factories.make_engine(
        engine_id, status=status, heard_ago_ms=heard_ms_ago, held_count=held
    )


def held_by_engine(client):
    family = families(client)["weftboard_engine_held_claims"]
    return {sample.labels["engine"]: sample.value for sample in family.samples}


def test_each_fleet_series_has_its_pinned_type_labels_and_help(client):
    """Every weft_/weftboard_ fleet family is pinned, and each says what the fleet value is."""
    engine("live", held=2)
    BackfillJob.objects.create(
        status="running", processed=1, total_estimate=4, run_at=timezone.now()
    )
    served = families(client)

    fleet = {
        name: family
        for name, family in served.items()
        if name.startswith(("weft_", "weftboard_")) and not name.startswith(PER_PROCESS_PREFIXES)
    }
    assert set(fleet) == set(FLEET_SERIES)
    for name, (kind, labels, help_text) in FLEET_SERIES.items():
        family = fleet[name]
        assert (family.type, family.documentation) == (kind, help_text), name
        assert family.samples, name
        for sample in family.samples:
            # A histogram's buckets add "le", as every Prometheus histogram does.
            assert set(sample.labels) - {"le"} == labels | {"scope"}, (name, sample)


def test_every_fleet_sample_carries_scope_fleet_and_per_process_ones_do_not(client):
    """The rule for several replicas: scope="fleet" series are equal everywhere, use max."""
    engine("live", held=1)
    for name, family in families(client).items():
        scopes = {sample.labels.get("scope") for sample in family.samples}
        if name in FLEET_SERIES:
            assert scopes <= {"fleet"}, name  # the backfill ratio is absent when none runs
        else:
            assert scopes <= {None}, name


def test_no_fleet_help_text_says_this_engine(client):
    """The fleet endpoint sums engines: a text meant for one engine would mislead."""
    for name in FLEET_SERIES:
        assert "this engine" not in families(client)[name].documentation


def test_the_engine_text_keeps_weft_seed_help_verbatim():
    """One engine's own export keeps weft's exact names and texts."""
    text = render_prometheus(ClaimMetrics().snapshot())
    assert (
        "# HELP weft_workflow_claims_active Workflows this engine currently holds a claim for"
        in text
    )
    assert "scope=" not in text


def test_per_engine_series_only_for_live_engines_that_are_not_silent(client):
    """Stopped, dead and silent engines have no series; active and disposing ones do."""
    engine("active", held=3)
    engine("disposing", status=EngineStatus.DISPOSING, held=1)
    engine("stopped", status=EngineStatus.STOPPED, held=0)
    engine("dead", status=EngineStatus.DEAD, held=4)
    engine("silent", held=5, heard_ms_ago=10 * 60_000)

    assert held_by_engine(client) == {"active": 3, "disposing": 1}


@override_settings(WEFT_CLAIM_TTL="30s", WEFT_CLAIM_RENEW_INTERVAL="5s")
def test_an_engine_series_disappears_when_it_stops_dies_or_falls_silent(client):
    """Engine ids change at every restart: a series must not outlive its engine."""
    row = engine("e1", held=2)
    assert held_by_engine(client) == {"e1": 2}

    # Silent: last heard more than TTL + 2 renew intervals (40 s) ago.
    Engine.objects.filter(pk=row.pk).update(heartbeat_at_ms=fleet_now()[0] - 41_000)
    assert held_by_engine(client) == {}

    Engine.objects.filter(pk=row.pk).update(heartbeat_at_ms=fleet_now()[0])
    assert held_by_engine(client) == {"e1": 2}
    Engine.objects.filter(pk=row.pk).update(status=EngineStatus.STOPPED)
    assert held_by_engine(client) == {}

    Engine.objects.filter(pk=row.pk).update(status=EngineStatus.DEAD)
    assert held_by_engine(client) == {}
    assert families(client)["weftboard_engines"].samples  # the fleet counts stay


def test_fleet_metrics_is_a_fixed_number_of_queries(django_assert_max_num_queries):
    """The per-engine series read nothing more, whatever the fleet's size."""
    from claims.selectors import fleet_metrics

    now_ms, timing = fleet_now()
    for index in range(30):
        engine(f"e{index}", held=index)
    with django_assert_max_num_queries(7):
        fleet = fleet_metrics(now_ms=now_ms, timing=timing)
    assert len(fleet.held_by_live_engine) == 30


def test_session_series_sum_each_engines_session_counters(client):
    """Each engine flushes its session counts under their counter names; /metrics sums them
    over the fleet, dead engines included, with every outcome present."""
    from claims.services.engines import counters_record, session_counter_totals

    counters_record(
        engine_id="engine-a",
        totals=session_counter_totals({"renewed": 7, "lost": 1, "failed": 0, "closed-expired": 2}),
    )
    counters_record(
        engine_id="engine-dead",
        totals=session_counter_totals({"renewed": 3, "lost": 0, "failed": 2, "closed-expired": 1}),
    )

    served = families(client)
    renewals = {
        sample.labels["outcome"]: sample.value
        for sample in served["weftboard_session_renewals"].samples
        if sample.name.endswith("_total")
    }
    expiries = [
        sample.value
        for sample in served["weftboard_session_expiries"].samples
        if sample.name.endswith("_total")
    ]
    assert renewals == {"renewed": 10, "lost": 1, "failed": 2}
    assert expiries == [3]
