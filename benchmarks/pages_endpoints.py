"""The endpoints the pages benchmark requests, and what each may take.

Each endpoint is judged in calibration requests timed alongside it in the same run
(``page_calibration``, ``pages``): at most FRAGMENT_RATIO times for the
claims page and every live fragment, METRICS_RATIO for /metrics. The absolute times
those ratios stand for on the reference machine (50 and 100 ms) are reported beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db import connection

from claims.fleet_clock import fleet_clock
from claims.selectors.claims.sorting import SORT_KEYS, ClaimSort, encode_cursor

from .pages_fleet import MINUTE_MS, Fleet
from .report import Timing
from .setup import timed_ms

# The calibration request's median in a quiet hour on the reference machine (BENCHMARKS.md,
# "Pages judged in calibration requests"): the ratios hold every endpoint to what the
# absolute targets they replace, 50 and 100 ms, meant in such an hour (48 and 96 ms).
QUIET_CALIBRATION_MS = 8.0
FRAGMENT_RATIO = 6.0
METRICS_RATIO = 12.0
UNBOUNDED_REPS = 5


@dataclass(frozen=True)
class Budget:
    """What an endpoint may take: ``ratio`` times the calibration request, after
    ``allowance_ms`` of wall time it spends by design (a search's time budget, which is a
    clock, not work); ``reference_ms``: the absolute target it stood for, for reference."""

    ratio: float
    reference_ms: float
    allowance_ms: float = 0.0

    def judged(self, median_ms: float, calibration_ms: float) -> float:
        """The endpoint's median in calibration requests, past its allowance."""
        return max(0.0, median_ms - self.allowance_ms) / calibration_ms


FRAGMENT = Budget(FRAGMENT_RATIO, 50.0)
METRICS = Budget(METRICS_RATIO, 100.0)


@dataclass(frozen=True)
class Endpoint:
    key: str
    label: str
    path: str
    target: str | None  # the HX-Target of a fragment request; None: a full page or /metrics
    budget: Budget
    # Several views read the fleet snapshot beat takes every renew interval: "fresh" takes
    # one first, as beat would have; "none" deletes it (they then count for themselves).
    snapshot: str = "fresh"
    binding: bool = True
    # The answers that count as served: a hostile search may be refused (400).
    statuses: tuple[int, ...] = (200,)
    # Settings the endpoint is measured under, e.g. a smaller search budget.
    overrides: tuple[tuple[str, Any], ...] = ()


def endpoints(fleet: Fleet) -> list[Endpoint]:
    f, m = FRAGMENT, METRICS
    workflow = f"/workflows/{fleet.featured}/"
    engine = f"/engines/{fleet.live_engines[0]}/"
    return [
        Endpoint("claims_page", "claims page (full)", "/claims/", None, f),
        Endpoint("claims_table", "claims table", "/claims/", "claims-table", f),
        Endpoint(
            "claims_page_3",
            "  page after wf-050000",
            "/claims/?cursor=wf-050000",
            "claims-table",
            f,
        ),
        Endpoint(
            "claims_engine",
            "  engine filter",
            f"/claims/?engine={fleet.live_engines[3]}",
            "claims-table",
            f,
        ),
        Endpoint("claims_prefix", "  prefix wf-0777", "/claims/?prefix=wf-0777", "claims-table", f),
        Endpoint("claims_expired", "  state=expired", "/claims/?state=expired", "claims-table", f),
        Endpoint(
            "claims_invalid",
            "  state=invalid (50 rows)",
            "/claims/?state=invalid",
            "claims-table",
            f,
        ),
        *_claims_sort_endpoints(),
        *_workflow_list_endpoints(),
        *_query_endpoints(fleet),
        *_with_and_without_snapshot("overview", "overview fragment", "/"),
        Endpoint("workflow_summary", "workflow summary", workflow, "workflow-summary", f),
        Endpoint("workflow_history", "workflow history", workflow, "workflow-history", f),
        *_with_and_without_snapshot("engines", "engines fragment", "/engines/"),
        Endpoint("engine", "engine fragment", engine, "engine-live", f),
        Endpoint("reclaim", "reclaim fragment", "/reclaim/", "reclaim-live", f),
        Endpoint("redrives", "re-drives fragment", "/redrives/", "redrives-live", f),
        Endpoint("backfills", "backfills fragment", "/backfills/", "backfills-live", f),
        Endpoint("audit", "audit fragment", "/audit/", "audit-live", f),
        Endpoint("metrics", "/metrics", "/metrics", None, m),
    ]


def _with_and_without_snapshot(key: str, label: str, path: str) -> list[Endpoint]:
    """A fragment that reads beat's fleet snapshot (the overview's counts, the engines'
    holdings): with a fresh one, as in production, and for reference with none, when it
    counts on every request (beat down)."""
    target = f"{key}-live"
    return [
        Endpoint(key, label, path, target, FRAGMENT),
        Endpoint(
            f"{key}_no_snapshot",
            "  with no fresh snapshot",
            path,
            target,
            FRAGMENT,
            snapshot="none",
            binding=False,
        ),
    ]


def _workflow_list_endpoints() -> list[Endpoint]:
    """The workflows page over 100,000 workflows: whole, its table, a status, a type, a
    time range, each sort, and a page deep inside one."""
    f = FRAGMENT
    since = "2000-01-01T00:00"

    def table(key: str, label: str, query: str) -> Endpoint:
        return Endpoint(key, label, f"/workflows/{query}", "workflows-live", f)

    return [
        Endpoint("workflows_page", "workflows page (full)", "/workflows/", None, f),
        table("workflows_table", "workflows table", ""),
        table("workflows_failed", "  status=failed", "?status=failed"),
        table("workflows_type", "  type=ledger, status=running", "?type=ledger&status=running"),
        table("workflows_since", "  created since (a range)", f"?time=created&since={since}"),
        table("workflows_created", "  sort=created", "?sort=created"),
        table("workflows_id", "  sort=id", "?sort=id"),
        table("workflows_deep", "  sort=id, deep page", "?sort=id&cursor=wf-050000"),
    ]


def _query_endpoints(fleet: Fleet) -> list[Endpoint]:
    """Lists under a query in the query language (claims.query): reported beside the others,
    not yet judged (binding=False) until their budget is measured at a million claims."""

    def under(key: str, label: str, path: str, text: str, target: str) -> Endpoint:
        query = urlencode({"query": text})
        return Endpoint(key, label, f"{path}?{query}", target, FRAGMENT, binding=False)

    engine = fleet.live_engines[3]
    return [
        under(
            "claims_query_example",
            "  query: type, engine, expired, expires > now - 10m",
            "/claims/",
            f'type = "order" AND engine = "{engine}" AND state = "expired" AND expires > now - 10m',
            "claims-table",
        ),
        under(
            "claims_query_stranded",
            "  query: stranded invoices",
            "/claims/",
            'state = "stranded" AND type = "invoice"',
            "claims-table",
        ),
        under(
            "workflows_query_failed",
            "  query: failed in the last hour",
            "/workflows/",
            'status = "failed" AND updated > now - 1h',
            "workflows-live",
        ),
    ]


def _claims_sort_endpoints() -> list[Endpoint]:
    """Every sort of the claims table both ways, every claim (state=all) and the default
    scope, substring searches (common and rare), and a page deep inside a sort."""
    f = FRAGMENT
    deep = encode_cursor(
        ClaimSort.parse("expires_at"), fleet_clock()() + 10 * MINUTE_MS + 10_000, "wf-050000"
    )
    sorts = [
        Endpoint(
            f"claims_sort_{key.replace('-', 'desc_')}",
            f"  sort={key}",
            f"/claims/?state=all&sort={key}",
            "claims-table",
            f,
        )
        for key in SORT_KEYS
    ]
    return [
        Endpoint(
            "claims_all", "  state=all (every claim)", "/claims/?state=all", "claims-table", f
        ),
        *sorts,
        Endpoint(
            "claims_sort_state_attention",
            "  sort=-state, attention",
            "/claims/?sort=-state",
            "claims-table",
            f,
        ),
        Endpoint(
            "claims_sort_deep",
            "  sort=expires_at, deep page",
            f"/claims/?state=all&sort=expires_at&cursor={deep}",
            "claims-table",
            f,
        ),
        Endpoint(
            "claims_search", "  search q=0777", "/claims/?state=all&q=0777", "claims-table", f
        ),
        Endpoint(
            "claims_search_rare",
            "  search q=99999 (1 row)",
            "/claims/?state=all&q=99999",
            "claims-table",
            f,
        ),
        Endpoint(
            "claims_search_none",
            "  search q=nomatch (0 rows)",
            "/claims/?state=all&q=nomatch",
            "claims-table",
            f,
        ),
        Endpoint(
            "claims_search_sorted",
            "  search q=77 sort=-claimed_at",
            "/claims/?q=77&sort=-claimed_at",
            "claims-table",
            f,
        ),
        *_hostile_search_endpoints(),
    ]


# Three distinct pieces in 252 characters: refused by its shape before any read.
REPEATED_SEARCH = "wf-" * 84
# Three pieces every id holds, in 15 characters (too short to refuse by shape): the trigram
# index rules out no id, and every id is checked against the fragment.
BROAD_SEARCH = "wf-" * 5
SMALL_SEARCH_BUDGET_MS = 100


def _hostile_search_endpoints() -> list[Endpoint]:
    """Searches built to read every id. Every answer is bounded: refused at once, or within
    the search budget (WEFTBOARD_SEARCH_TIMEOUT_MS) plus a page's own time."""
    budget = float(settings.WEFTBOARD_SEARCH_TIMEOUT_MS)
    small = SMALL_SEARCH_BUDGET_MS

    def search(key: str, label: str, q: str, allowance_ms: float, **fields: Any) -> Endpoint:
        path = f"/claims/?state=all&q={q}"
        within = Budget(FRAGMENT_RATIO, allowance_ms + FRAGMENT.reference_ms, allowance_ms)
        return Endpoint(key, label, path, "claims-table", within, **fields)

    return [
        search(
            "claims_search_repeated",
            "  hostile: q='wf-' x 84 (refused)",
            REPEATED_SEARCH,
            0.0,
            statuses=(400,),
        ),
        search(
            "claims_search_broad",
            f"  hostile: q={BROAD_SEARCH} (no id ruled out)",
            BROAD_SEARCH,
            budget,
            statuses=(200, 400),
        ),
        search(
            "claims_search_small_budget",
            f"    the same with a {small} ms budget",
            BROAD_SEARCH,
            small,
            statuses=(200, 400),
            overrides=(("WEFTBOARD_SEARCH_TIMEOUT_MS", small),),
        ),
    ]


def unbounded_repeated_lookup() -> Timing:
    """For reference: what the refused fragment's read would cost without the bounds (the
    id lookup on PostgreSQL, the scan of the claim rows on SQLite), straight to the
    database with no limit."""
    if connection.vendor == "postgresql":
        sql = "SELECT workflow_id FROM claims_claimidsearch WHERE workflow_id LIKE %s LIMIT 1001"
        param = f"%{REPEATED_SEARCH}%"
    else:
        sql = (
            "SELECT workflow_id FROM claims_workflowclaim WHERE instr(workflow_id, %s) > 0 LIMIT 51"
        )
        param = REPEATED_SEARCH

    def lookup() -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql, [param])
            cursor.fetchall()

    lookup()
    return Timing(tuple(timed_ms(lookup)[0] for _ in range(UNBOUNDED_REPS)))
