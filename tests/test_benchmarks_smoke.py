"""The benchmark harness on tiny fleets: every part of ``scripts/bench`` runs to its tables
at the sizes of ``--smoke`` (its passes drain every stranded workflow, failover hands every
claim over and none early, the raw single-claim side sends the store's own statements, every
page answers), the seed builds what it says, and the charts are PNG files.

Nothing here is judged by time; the figures are the benchmark's business.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from benchmarks import charts, pages_fleet
from benchmarks.parts import PARTS, POSTGRESQL_PARTS, run_parts
from benchmarks.seed import Layout, seed
from benchmarks.smoke import SIZES, small_sizes
from claims.models import Workflow, WorkflowClaim, WorkflowVisibility

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_ON_POSTGRESQL = connection.vendor == "postgresql"


def _small_layout(*, now_ms: int) -> Layout:
    """A thousand workflows: 100 held, 10 in grace, 50 reserve, 20 never claimed."""
    return Layout(
        total=1_000,
        now_ms=now_ms,
        ttl_ms=30_000,
        renew_interval_ms=5_000,
        held=100,
        in_grace=10,
        reserve=50,
        ownerless=20,
    )


def test_layout_bands_are_disjoint_and_cover_their_counts() -> None:
    layout = _small_layout(now_ms=0)
    bands = {name: layout.ids(name) for name in ("held", "in_grace", "reserve", "ownerless")}
    every = [wf for ids in bands.values() for wf in ids]
    assert [len(ids) for ids in bands.values()] == [100, 10, 50, 20]
    assert len(set(every)) == len(every)


@pytest.mark.django_db(transaction=True)
def test_seed_loads_workflows_visibility_and_claim_rows_by_band() -> None:
    layout = _small_layout(now_ms=1_700_000_000_000)
    seed(layout)

    assert Workflow.objects.count() == 1_000
    assert WorkflowVisibility.objects.count() == 1_000
    assert Workflow.objects.filter(status="running").count() == 130
    assert set(
        Workflow.objects.filter(workflow_id__in=layout.ids("reserve")).values_list(
            "status", flat=True
        )
    ) == {"completed"}
    # Every workflow ever claimed keeps a row; the ownerless were never claimed.
    assert WorkflowClaim.objects.count() == 980
    held = WorkflowClaim.objects.filter(workflow_id__in=layout.ids("held"))
    assert held.filter(holder_engine_id__startswith="bench-live-").count() == 100
    assert not WorkflowClaim.objects.filter(workflow_id__in=layout.ids("ownerless")).exists()


def _results(vendor: str) -> dict[str, Any]:
    return {
        "vendor": vendor,
        "targets": [
            {"key": "renew10000.ratio", "label": "renew", "value": 1.3, "limit": 2.5, "unit": "x"},
            {
                "key": "micro.renew",
                "label": "single renew",
                "value": 2.0,
                "limit": 1.5,
                "unit": "x",
            },
            {"key": "pages.audit", "label": "audit", "value": 3.0, "limit": 16, "unit": "x"},
            {"key": "pages_large.audit", "label": "audit", "value": 3.0, "limit": 16, "unit": "x"},
        ],
        "micro": {"renew": {"store_over_raw": 2.0, "api_over_raw": 2.5}},
        "reclaim_scale": {
            "points": [
                {"total": t, "stranded": s, "first_pass": {"median_ms": t / 1_000 + s / 10}}
                for t, s in ((10_000, 1_000), (100_000, 1_000), (100_000, 10_000))
            ],
            "per_total": {
                "10000": {"idle_pass": {"median_ms": 5}},
                "100000": {"idle_pass": {"median_ms": 40}},
            },
        },
        "failover": {
            "workflows": 10,
            "ttl_ms": 3_000,
            "renew_interval_ms": 1_000,
            "bound_ms": 7_000,
            "stale_after_ms": 4_800,
            "curve": [[0, 0], [5_900, 5], [6_000, 10]],
        },
        **{
            key: {
                "claims": claims,
                "engines": 50,
                "calibration": {"median_ms": 3.0},
                "endpoints": [
                    {
                        "key": "audit",
                        "vs_calibration": 3.0,
                        "p95_vs_calibration": 4.0,
                        "ratio_limit": 16,
                    },
                    {
                        "key": "claims",
                        "vs_calibration": 90.0,
                        "p95_vs_calibration": 99.0,
                        "ratio_limit": 16,
                    },
                ],
            }
            for key, claims in (
                ("pages", 100_000),
                ("pages_1m", 1_000_000),
                ("pages_1m_sessions", 1_000_000),
            )
        },
        "sessions": {
            "modes": {
                f"{mode}/{n}": {"median_ms": ms * n, "wal_bytes": wal * n}
                for n in (10, 100)
                for mode, ms, wal in (("workflow-lease", 0.5, 800), ("engine-lease", 0.01, 12))
            }
        },
    }


def test_ratio_figures_take_targets_and_other_ratios_once_and_leave_pages_to_theirs() -> None:
    figures = {f.key: f for f in charts.ratio_figures(_results("sqlite"))}

    assert set(figures) == {"renew10000.ratio", "micro.renew", "micro.renew.api_over_raw"}
    assert figures["micro.renew"].limit == 1.5
    assert figures["micro.renew.api_over_raw"].limit is None


def test_charts_are_written_as_png(tmp_path: Path) -> None:
    paths = []
    for vendor in ("sqlite", "postgresql"):
        path = tmp_path / f"results-{vendor}.json"
        path.write_text(json.dumps(_results(vendor)))
        paths.append(path)

    written = charts.draw(paths, tmp_path / "charts")

    assert sorted(p.name for p in written) == [
        "failover.png",
        "ownership-modes.png",
        "pages-1m.png",
        "pages.png",
        "ratios.png",
        "reclaim-scale.png",
    ]
    for path in written:
        assert path.read_bytes()[:8] == PNG_MAGIC


@pytest.mark.django_db(transaction=True)
def test_seeded_session_claims_name_session_one_and_keep_no_expiry() -> None:
    layout = Layout(
        total=1_000,
        now_ms=1_700_000_000_000,
        ttl_ms=30_000,
        renew_interval_ms=5_000,
        held=300,
        live_engines=3,
        sessions=True,
    )
    seed(layout)

    held = WorkflowClaim.objects.filter(workflow_id__in=layout.ids("held"))
    assert held.count() == 300
    assert set(held.values_list("holder_session_epoch", "holder_expires_at_ms")) == {(1, None)}
    assert (
        not WorkflowClaim.objects.exclude(workflow_id__in=layout.ids("held"))
        .filter(holder_session_epoch__isnull=False)
        .exists()
    )
    with pytest.raises(ValueError, match="in_grace"):
        Layout(total=1_000, now_ms=0, ttl_ms=1, renew_interval_ms=1, in_grace=1, sessions=True)


# Every part of scripts/bench, as `--only PART` runs it, at the sizes of `--smoke`: on the
# database the suite runs on (CI runs it on SQLite and on PostgreSQL), so none can rot.
SMOKE_PARTS = [
    pytest.param(
        part,
        marks=pytest.mark.skipif(
            part in POSTGRESQL_PARTS and not _ON_POSTGRESQL,
            reason=f"{part} reads what PostgreSQL alone keeps (WAL bytes, statement times)",
        ),
    )
    for part in PARTS
]


@pytest.fixture
def bench_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    """The micro part's Redis comparison uses the suite's own Redis database (its keys are
    the run's, dropped after)."""
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if broker.startswith("redis://"):
        monkeypatch.setenv("WEFTBOARD_BENCH_REDIS_URL", broker)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("bench_redis")
@pytest.mark.parametrize("part", SMOKE_PARTS)
def test_every_benchmark_part_runs_to_its_tables_at_a_small_size(part: str) -> None:
    with small_sizes():
        payload, targets = run_parts([part], large=False, binding=False)

    assert targets
    assert all(math.isfinite(target.value) for target in targets)
    assert not any(target.binding for target in targets)
    CHECKS[part](payload)


def _renew(payload: dict[str, Any]) -> None:
    (renewed,) = payload["renew"]
    assert renewed["n"] == 300
    assert renewed["failures"] == []
    assert renewed["statements"] <= renewed["statement_limit"]


def _reclaim(payload: dict[str, Any]) -> None:
    found = payload["reclaim"]
    assert found["unexpected"] == []
    assert [p["status"] for p in found["passes"]] == ["completed"]
    assert found["discovery"]["sources"]["stale_holders"] == 20
    scale = payload["reclaim_scale"]
    assert [(p["total"], p["stranded"]) for p in scale["points"]] == [
        (200, 20),
        (600, 20),
        (600, 60),
    ]
    for point in scale["points"]:
        assert point["drained"]
        assert point["reclaimed_by_first_pass"] == [point["stranded"]]
        assert point["passes_to_drain"] == [1]
    # The part leaves its tables empty for whatever runs next.
    assert not Workflow.objects.exists()


def _failover_of(run: dict[str, Any], workflows: int) -> None:
    assert run["all_reheld"]
    assert run["safe"], "a workflow was taken over before its claim was stale"
    assert run["per_workflow_ms"]["min"] >= run["stale_after_ms"]
    assert run["curve"][-1][1] == workflows == run["setup"]["acquired"]


def _failover(payload: dict[str, Any]) -> None:
    assert payload["failover"]["mode"] == "workflow-lease"
    _failover_of(payload["failover"], 200)


def _micro(payload: dict[str, Any]) -> None:
    micro = payload["micro"]
    assert micro["failed_ops"] == 0
    assert micro["statements_identical"], "the raw side no longer sends the store's statements"
    for op in ("acquire", "renew", "release", "takeover", "read"):
        assert micro[op]["store_over_raw_p50"] > 0
    if _ON_POSTGRESQL:
        assert "pg_try_advisory_lock" in micro["acquire"]


def _pages_of(pages: dict[str, Any], claims: int) -> None:
    assert pages["claims"] == claims
    assert pages["calibration"]["median_ms"] > 0
    keys = {e["key"] for e in pages["endpoints"]}
    assert {"claims_page", "engine", "metrics", "claims_search_broad"} <= keys
    for endpoint in pages["endpoints"]:
        assert endpoint["vs_calibration"] >= 0
        assert endpoint["ratio_limit"] > 0
        assert endpoint["limit_ms"] >= 50


def _sessions(payload: dict[str, Any]) -> None:
    sessions = payload["sessions"]
    assert sessions["failures"] == []
    assert {key: value["statements"] for key, value in sessions["modes"].items()} == {
        f"{mode}/{n}": 1 for mode in ("workflow-lease", "engine-lease") for n in (100, 300)
    }
    assert payload["failover_sessions"]["mode"] == "engine-lease"
    _failover_of(payload["failover_sessions"], 200)
    _pages_of(payload["pages_sessions"], 600)
    assert payload["pages_sessions"]["mode"] == "engine-lease"


def _pages(payload: dict[str, Any]) -> None:
    _pages_of(payload["pages"], 600)
    assert payload["pages"]["mode"] == "workflow-lease"


def _fleet(payload: dict[str, Any]) -> None:
    fleet = payload["fleet"]
    assert fleet["failures"] == []
    assert fleet["engine-lease"]["renew"]["rows"] == 4
    assert fleet["engine-lease"]["held"] == 1_000
    assert fleet["workflow-lease"]["renew_one_engine"]["rows"] == 250
    assert fleet["executing"] == 10
    engine, workflow = fleet["engine-lease"], fleet["workflow-lease"]
    assert engine["renew"]["wal_bytes"] < workflow["renew"]["wal_bytes"]


def _discovery(payload: dict[str, Any]) -> None:
    """Each fleet kept every claim, every engine ran its passes, and the database's own time
    (pg_stat_statements on the part's private server) was given to the passes that sent it:
    now beat's reads for the fleet, before the engines' own."""
    discovery = payload["discovery"]
    assert discovery["failures"] == []
    assert set(discovery["by_engines"]) == {"2", "3"}
    for engines, runs in discovery["by_engines"].items():
        assert set(runs) == {"now", "before"}
        for variant, run in runs.items():
            assert run["held"] == 1_000
            assert run["reclaimed"] == 0
            assert run["reclaim_passes"] >= int(engines)
            if variant == "now":
                assert run["database_ms"]["beat"] > 0
                assert run["beat_read_ms"] > 0
            else:
                assert run["database_ms"]["reclaim"] > 0
                assert "wake" in run["database_ms"]  # its one read may round to 0.0 ms here
                assert "beat" not in run["database_ms"]
            assert run["database_ms"].get("unattributed", 0.0) <= run["passes_ms"]


def _failover_mass(payload: dict[str, Any]) -> None:
    """Every claim of the dead engines was taken over, by the live engines between them."""
    mass = payload["failover_mass"]
    assert mass["stranded"] == 100  # one in ten of 1,000
    assert mass["all_held_ms_after_expiry"] is not None
    assert mass["takeovers"] == 100
    assert mass["curve"][0][1] == 100
    assert mass["curve"][-1][1] == 0


def _pages_1m(payload: dict[str, Any]) -> None:
    """The million-claim code path: parked workflows loaded in SQL, held live, each mode."""
    for key, mode in (("pages_1m", "workflow-lease"), ("pages_1m_sessions", "engine-lease")):
        _pages_of(payload[key], 600 + 300)
        assert payload[key]["mode"] == mode
        assert payload[key]["parked"] == 300
    # The last fleet (engine-lease) is still there: its parked claims name session 1.
    parked = WorkflowClaim.objects.filter(workflow_id__startswith="wf-p")
    assert parked.count() == 300
    assert not parked.filter(holder_session_epoch__isnull=True).exists()
    assert Workflow.objects.filter(workflow_id__startswith="wf-p", status="running").count() == 300


def _bulk(payload: dict[str, Any]) -> None:
    bulk = payload["bulk"]
    assert bulk["released"] == 300
    assert set(bulk["baselines"]) == {"50", "300"}
    assert bulk["renew_beside"]["samples_ms"]


def _bulk_1m(payload: dict[str, Any]) -> None:
    assert payload["bulk_1m"]["freeze_ms"] > 0
    assert len(payload["bulk_1m"]["preview"]["samples_ms"]) == 1


CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "renew": _renew,
    "reclaim": _reclaim,
    "failover": _failover,
    "micro": _micro,
    "pages": _pages,
    "sessions": _sessions,
    "fleet": _fleet,
    "discovery": _discovery,
    "failover-mass": _failover_mass,
    "pages-1m": _pages_1m,
    "bulk": _bulk,
    "bulk-1m": _bulk_1m,
}


def test_the_smoke_sizes_last_for_the_block_alone() -> None:
    small = SIZES["benchmarks.pages_fleet"]
    before = {name: getattr(pages_fleet, name) for name in small}
    with small_sizes():
        during = {name: getattr(pages_fleet, name) for name in small}
    assert during == small
    assert {name: getattr(pages_fleet, name) for name in small} == before != small
