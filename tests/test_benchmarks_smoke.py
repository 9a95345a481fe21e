"""The benchmark harness on tiny fleets: it builds what it says, its passes drain every
stranded workflow, failover hands every claim over, and the charts are PNG files.

Nothing here is timed; the figures are the benchmark's business (``scripts/bench``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import charts, failover, fleet_scale, pages, reclaim_scale, session_renew
from benchmarks.seed import Layout, seed
from claims.models import Workflow, WorkflowClaim, WorkflowVisibility
from claims.protocol import ClaimTiming

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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


@pytest.mark.django_db(transaction=True)
def test_reclaim_at_scale_drains_every_stranded_workflow_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reclaim_scale, "REPS", 1)

    points, per_total = reclaim_scale.measure({1_000: [20, 60]})

    assert [(p.total, p.stranded) for p in points] == [(1_000, 20), (1_000, 60)]
    for point in points:
        assert point.drained == [True]
        assert point.reclaimed_first == [point.stranded]
        assert point.drain_passes == [1]
    assert set(per_total) == {1_000}
    # The measure leaves its tables empty for whatever runs next.
    assert not Workflow.objects.exists()


@pytest.mark.parametrize("mode", ["workflow-lease", "engine-lease"])
@pytest.mark.django_db(transaction=True)
def test_failover_hands_every_claim_to_the_live_engine_and_none_early(mode: str) -> None:
    timing = ClaimTiming(ttl_ms=1_200, renew_interval_ms=400)

    run, setup = failover.failover(workflows=200, timing=timing, mode=mode)

    assert setup["acquired"] == 200
    assert len(run.reheld_at_ms) == 200
    stale_after = timing.ttl_ms + 2 * timing.renew_interval_ms
    stale_after -= run.t0_ms - run.last_renewal_ms
    assert min(run.reheld_at_ms.values()) >= stale_after
    assert run.curve[-1][1] == 200


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
            {"key": "pages.audit", "label": "audit", "value": 9.0, "limit": 50, "unit": "ms"},
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
        "pages": {
            "claims": 100_000,
            "engines": 50,
            "endpoints": [{"key": "audit", "median_ms": 9.0, "p95_ms": 12.0, "limit_ms": 50.0}],
        },
        **{
            key: {
                "claims": 1_000_000,
                "engines": 50,
                "endpoints": [{"key": "audit", "median_ms": 9.0, "p95_ms": 12.0, "limit_ms": 50.0}],
            }
            for key in ("pages_1m", "pages_1m_sessions")
        },
        "sessions": {
            "modes": {
                f"{mode}/{n}": {"median_ms": ms * n, "wal_bytes": wal * n}
                for n in (10, 100)
                for mode, ms, wal in (("workflow-lease", 0.5, 800), ("engine-lease", 0.01, 12))
            }
        },
    }


def test_ratio_figures_take_targets_and_other_ratios_once() -> None:
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
def test_the_session_renew_benchmark_renews_every_claim_in_both_modes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(session_renew, "SIZES", (10, 40))
    monkeypatch.setattr(session_renew, "REPS", {"workflow-lease": 1, "engine-lease": 2})

    data, section, targets = session_renew.run(binding=False)

    assert data["failures"] == []
    assert [row[0] for row in section.rows] == ["10", "40"]
    assert {key: value["statements"] for key, value in data["modes"].items()} == {
        "workflow-lease/10": 1,
        "engine-lease/10": 1,
        "workflow-lease/40": 1,
        "engine-lease/40": 1,
    }
    statement_targets = [t for t in targets if t.key.endswith(".statements")]
    assert [t.value for t in statement_targets] == [1, 1]


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


@pytest.mark.django_db(transaction=True)
def test_the_fleet_benchmark_renews_one_row_per_engine_and_reclaims_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import connection

    monkeypatch.setattr(fleet_scale, "TOTAL", 2_000)
    monkeypatch.setattr(fleet_scale, "ENGINES", 4)
    monkeypatch.setattr(fleet_scale, "ONE_ENGINE_SHARE", 500)
    monkeypatch.setattr(fleet_scale, "REPS", 1)

    data, _section, targets = fleet_scale.run(binding=False)

    if connection.vendor != "postgresql":
        assert data == {"skipped": "PostgreSQL only"}
        return
    assert data["failures"] == []
    assert data["engine-lease"]["renew"]["rows"] == 4
    assert data["engine-lease"]["held"] == 2_000
    assert data["workflow-lease"]["renew_one_engine"]["rows"] == 500
    assert data["workflow-lease"]["renew"]["rows"] == 2_000
    assert data["executing"] == 20
    assert data["engine-lease"]["renew"]["wal_bytes"] < data["workflow-lease"]["renew"]["wal_bytes"]
    assert [t.value for t in targets if t.key == "fleet.session_row_writes"] == [4]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("sessions", [False, True], ids=["workflow-lease", "engine-lease"])
def test_the_pages_benchmark_answers_every_endpoint_over_parked_workflows(
    monkeypatch: pytest.MonkeyPatch, sessions: bool
) -> None:
    """Every page and fragment answers 200 (the run raises otherwise) over a small fleet
    with parked workflows loaded in SQL, held live, in either mode."""
    sizes = {"CLAIMS": 1_000, "HELD_LIVE": 300, "IN_GRACE": 10, "EXPIRED": 20, "INVALID": 5}
    sizes |= {"OWNERLESS_RUNNING": 5, "UNINDEXED": 5, "WARMUP": 0, "REPS": 1, "SNAPSHOT_REPS": 1}
    for name, value in sizes.items():
        monkeypatch.setattr(pages, name, value)

    data, _section, targets = pages.run(binding=False, sessions=sessions, parked=500)

    assert data["claims"] == 1_500
    assert (
        WorkflowClaim.objects.filter(holder_engine_id__isnull=False).count()
        == 300 + 10 + 20 + 5 + 500
    )
    parked = WorkflowClaim.objects.filter(workflow_id__startswith="wf-p")
    assert parked.count() == 500
    assert parked.filter(holder_session_epoch__isnull=sessions).count() == 0
    assert Workflow.objects.filter(workflow_id__startswith="wf-p", status="running").count() == 500
    assert {e["key"] for e in data["endpoints"]} >= {"claims_page", "engine", "metrics"}
    assert all(
        t.key.startswith("pages_sessions_large." if sessions else "pages_large.") for t in targets
    )
