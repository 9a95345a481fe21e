"""The fuzz table: every GET route of the pages and every query parameter each reads, with
the values that route takes, so the fuzz gets past the input checks to the queries and
the templates. A route or a parameter missing here fails the fuzz's completeness checks
(tests/security/test_page_fuzz.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import strategies as st

from claims.models import (
    BulkAction,
    BulkItemOutcome,
    ClaimEventKind,
    EngineStatus,
    WorkflowStatus,
)
from claims.query import format_query
from claims.selectors.claims.conditions import CLAIM_FILTERS
from claims.selectors.claims.sorting import SORT_KEYS
from claims.selectors.fleet.history import HISTORY_WINDOWS_MS
from claims.selectors.workflows.listing import TIME_FIELDS, WORKFLOW_SORTS
from claims.views.action_kinds import ACTIONS
from claims.workflow_types import registered_types
from tests.query.strategies import queries

from .imported import IMPORTED, IMPORTED_TYPE
from .scene import Scene
from .values import Value, edited_claims_cursor, edited_time_cursor

Valid = Callable[[Scene], st.SearchStrategy[Value]]


def one_of(*choices: str) -> Valid:
    return lambda _: st.sampled_from(choices)


def _datetimes(_: Scene) -> st.SearchStrategy[Value]:
    """UTC times as the date-range fields and people write them: near now, or anywhere in
    the years the time rule admits."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    near = st.datetimes(now - dt.timedelta(days=2), now + dt.timedelta(hours=1))
    anywhere = st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59))
    formats = st.sampled_from(
        ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%S+00:00"]
    )
    return st.builds(lambda at, form: at.strftime(form), near | anywhere, formats)


def _workflow_prefix(scene: Scene) -> st.SearchStrategy[Value]:
    ids = st.sampled_from(scene.workflow_ids)
    return st.one_of(
        st.tuples(ids, st.integers(0, 12)).map(lambda pair: pair[0][: pair[1]]),
        st.sampled_from(["order-", "payment-000", "status-", IMPORTED, "0004", "-", "%", "_"]),
    )


def _claims_cursor(scene: Scene) -> st.SearchStrategy[Value]:
    cursors = [c for found in scene.claim_cursors.values() for c in found]
    edited = [edited_claims_cursor(c) for c in cursors if c.startswith("k1.")]
    return st.one_of(st.sampled_from(cursors), *edited)


def _workflows_cursor(scene: Scene) -> st.SearchStrategy[Value]:
    cursors = [c for found in scene.workflow_cursors.values() for c in found]
    edited = [edited_time_cursor(c) for c in cursors]
    return st.one_of(st.sampled_from(cursors), *edited)


def _engine_ids(scene: Scene) -> st.SearchStrategy[Value]:
    return st.sampled_from([*scene.engine_ids, "e-gone"])


def _workflow_ids(scene: Scene) -> st.SearchStrategy[Value]:
    return st.sampled_from([*scene.workflow_ids, *scene.claim_only_ids, "wf-never"])


def _bulk_job_ids(_: Scene) -> st.SearchStrategy[Value]:
    return st.sampled_from(["1", "2", "9007199254740991"])


@dataclass(frozen=True)
class Param:
    name: str
    valid: Valid


@dataclass(frozen=True)
class Route:
    """A URL name; the kind of id its path ends in, if any; the query parameters it reads;
    the fragments an HTMX request may ask for by its target."""

    name: str
    path_id: Callable[[Scene], st.SearchStrategy[Value]] | None = None
    params: tuple[Param, ...] = ()
    fragments: tuple[str, ...] = ()
    examples: int = field(default=0)  # this route's share of the budget; 0: by its params

    @property
    def budget(self) -> int:
        return self.examples or 30 + 25 * len(self.params) + (30 if self.path_id else 0)


HISTORY = Param("history", one_of(*HISTORY_WINDOWS_MS))
SINCE = Param("since", _datetimes)
UNTIL = Param("until", _datetimes)
ENGINE = Param("engine", _engine_ids)
PREFIX = Param("prefix", _workflow_prefix)
OUTCOME = Param("outcome", lambda _: st.sampled_from([*BulkItemOutcome.values, "lost"]))


def _queries(_: Scene) -> st.SearchStrategy[Value]:
    """Queries that read (random ones, in their canonical text), the example of the README,
    and text a person gets wrong."""
    return st.one_of(
        queries.map(format_query),
        st.sampled_from(
            [
                'type = "order" AND state = "expired" AND expires > now - 10m',
                'engine STARTS_WITH "e-" OR failure = "PaymentGatewayError"',
                'type = "order" AND',
                "state = expired",
                '((((id = "x"',
                "colour != 1",
            ]
        ),
    )


QUERY = Param("query", _queries)

ROUTES: tuple[Route, ...] = (
    Route("claims:overview", params=(HISTORY,), fragments=("overview-live",)),
    Route(
        "claims:claims",
        params=(
            Param("state", one_of(*CLAIM_FILTERS)),
            ENGINE,
            PREFIX,
            Param("q", _workflow_prefix),
            Param("sort", one_of(*SORT_KEYS)),
            Param("cursor", _claims_cursor),
            Param("jump", _workflow_ids),
            Param("jumped", one_of("1", "0")),
            QUERY,
        ),
        fragments=("claims-table",),
    ),
    Route(
        "claims:workflows",
        params=(
            Param(
                "type",
                lambda _: st.sampled_from([*registered_types(), IMPORTED_TYPE, "nope"]),
            ),
            Param("status", one_of(*WorkflowStatus.values)),
            Param("time", one_of(*TIME_FIELDS)),
            SINCE,
            UNTIL,
            Param("sort", one_of(*WORKFLOW_SORTS)),
            Param("cursor", _workflows_cursor),
            QUERY,
        ),
        fragments=("workflows-live",),
    ),
    Route(
        "claims:workflow",
        path_id=_workflow_ids,
        fragments=("workflow-summary", "workflow-history"),
    ),
    Route(
        "claims:engines",
        params=(Param("status", one_of(*EngineStatus.values)),),
        fragments=("engines-live",),
    ),
    Route("claims:engine", path_id=_engine_ids, params=(HISTORY,), fragments=("engine-live",)),
    Route("claims:engine_release", path_id=_engine_ids),
    Route("claims:engine_drain", path_id=_engine_ids),
    Route("claims:engine_undrain", path_id=_engine_ids),
    Route("claims:reclaim", fragments=("reclaim-live",)),
    Route("claims:redrives", params=(ENGINE,), fragments=("redrives-live",)),
    Route("claims:backfills", fragments=("backfills-live",)),
    Route(
        "claims:audit",
        params=(
            Param("kind", one_of(*ClaimEventKind.values)),
            ENGINE,
            Param("actor", lambda scene: st.sampled_from([*scene.actors, "nobody"])),
            PREFIX,
            SINCE,
            UNTIL,
            Param("operator", one_of("1", "0", "")),
            Param("format", one_of("csv", "html")),
            Param("cursor", lambda scene: st.sampled_from(scene.audit_cursors or ("1",))),
            Param("bulk_job", _bulk_job_ids),
        ),
        fragments=("audit-live",),
    ),
    Route("claims:engine_floor"),
    # Bulk jobs. The fuzz's scene holds none: ids of no job (404) and the first ids a
    # job would take; the pages' own tests cover a job's every state.
    Route("claims:bulk_jobs", fragments=("bulk-jobs-live",)),
    Route(
        "claims:bulk_job",
        path_id=_bulk_job_ids,
        params=(OUTCOME, Param("cursor", lambda _: st.sampled_from(["1", "0", "x", "-1"]))),
        fragments=("bulk-job-live", "bulk-items"),
    ),
    Route("claims:bulk_items_csv", path_id=_bulk_job_ids, params=(OUTCOME,)),
    Route(
        "claims:bulk_new",
        params=(
            Param("list", one_of("claims", "workflows")),
            Param("query", _queries),
            Param("action", one_of(*BulkAction.values)),
            Param("target_engine_id", _engine_ids),
            Param("rate_per_s", one_of("", "100", "0", "x")),
            Param("reason", one_of("", "INC-1: engine lost")),
        ),
    ),
    *(
        Route(
            f"claims:{action}",
            path_id=_workflow_ids,
            params=(Param("epoch", lambda scene: st.sampled_from(scene.epochs).map(str)),),
            examples=60,
        )
        for action in ACTIONS
    ),
    Route("healthz", examples=10),
    Route("metrics", examples=10),
)
