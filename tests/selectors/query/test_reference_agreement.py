"""The database answers a query exactly as the language's reference evaluator does over the
same rows (claims/query/evaluate.py), on the claims listing and the workflows listing.

A fixed world of engines, workflows and claim rows covers every derived state, a claim whose
workflow row is gone, workflows never claimed, failures and names; hypothesis writes the
queries, from values that world has (and a few it has not), so most terms select something.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claims.models import Engine, Workflow, WorkflowClaim
from claims.protocol.states import derive_claim_state
from claims.protocol.timing import ClaimTiming
from claims.query import (
    STATES,
    WORKFLOW_STATUSES,
    AbsoluteTime,
    And,
    Between,
    Comparison,
    InList,
    Match,
    Not,
    Or,
    Query,
    RelativeTime,
    format_query,
    matches,
)
from claims.query.nodes import MATCH_OPS
from claims.selectors.query import (
    QueryContext,
    claim_query_condition,
    workflow_query_condition,
)
from claims.store.rows import claim_row_from_values

NOW_MS = 1_800_000_000_000
TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=10_000)
ENGINES = {"e-1": "engine1@host-a", "e-2": "engine2@host-b", "e-3": ""}
GHOST = "e-gone"  # holds a claim but has no engine row
TYPES = ("order", "invoice", "Order")
FAILURES = ("ValueError", "KeyError", "valueerror")
# A holder's expiry relative to now: live, in grace, expired.
EXPIRIES = (60_000, -5_000, -120_000)


def _world() -> None:
    for engine_id, name in ENGINES.items():
        Engine.objects.create(
            engine_id=engine_id,
            hostname="host",
            name=name,
            pid=1,
            started_at_ms=NOW_MS - 60_000,
            heartbeat_at_ms=NOW_MS,
            status="active",
        )
    holders = [*ENGINES, GHOST]
    for n in range(36):
        workflow_id = f"wf-{n:02d}" if n % 5 else f"WF-{n:02d}"
        status = WORKFLOW_STATUSES[n % len(WORKFLOW_STATUSES)]
        if n != 7:  # wf-07's claim row outlives its workflow row
            failure = {"type": FAILURES[n % 3], "message": "m"} if status == "failed" else None
            Workflow.objects.create(
                workflow_id=workflow_id,
                workflow_type=TYPES[n % 3],
                status=status,
                state={},
                created_at_ms=NOW_MS - 3_600_000 + n * 60_000,
                updated_at_ms=NOW_MS - n * 30_000,
                failure=failure,
            )
        if n % 6 == 5:
            continue  # never claimed
        epoch = 1 + n % 4
        held = n % 4 != 0
        garbled = n % 11 == 3
        WorkflowClaim.objects.create(
            workflow_id=workflow_id,
            epoch=epoch,
            holder_engine_id=holders[n % len(holders)] if held else None,
            holder_epoch=(epoch + 1 if garbled else epoch) if held else None,
            holder_expires_at_ms=NOW_MS + EXPIRIES[n % 3] if held else None,
            holder_claimed_at_ms=NOW_MS - 1_000 * n if held else None,
        )


def _reference_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The claims listing's rows and the workflows listing's, as plain values."""
    workflows = {w.workflow_id: w for w in Workflow.objects.all()}
    claim_rows: dict[str, dict[str, Any]] = {}
    for claim in WorkflowClaim.objects.all():
        row = claim_row_from_values(
            claim.workflow_id,
            claim.epoch,
            claim.holder_engine_id,
            claim.holder_epoch,
            claim.holder_expires_at_ms,
            claim.holder_claimed_at_ms,
            claim.holder_session_epoch,
        )
        workflow = workflows.get(claim.workflow_id)
        running = workflow is not None and workflow.status == "running"
        state = derive_claim_state(row, NOW_MS, TIMING)
        states: set[str] = {state}
        if state == "ownerless" and running:
            states.add("stranded")
        if state != "ownerless" or running:
            states.add("attention")
        claim_rows[claim.workflow_id] = {
            "id": claim.workflow_id,
            "epoch": claim.epoch,
            "engine_id": claim.holder_engine_id,
            "engine_name": ENGINES.get(claim.holder_engine_id or ""),
            "expires": row.expires_at_ms(),
            "claimed": claim.holder_claimed_at_ms,
            "state": states,
            **_workflow_values(workflow),
        }
    workflow_rows = []
    for workflow_id, workflow in workflows.items():
        claimed = claim_rows.get(workflow_id, {"state": set()})
        workflow_rows.append({**claimed, "id": workflow_id, **_workflow_values(workflow)})
    return list(claim_rows.values()), workflow_rows


def _workflow_values(workflow: Workflow | None) -> dict[str, Any]:
    if workflow is None:
        return {}
    return {
        "type": workflow.workflow_type,
        "status": workflow.status,
        "created": workflow.created_at_ms,
        "updated": workflow.updated_at_ms,
        "failure": (workflow.failure or {}).get("type"),
    }


# Values the world has, and some it has not, field by field.
_IDS = [f"wf-{n:02d}" for n in range(0, 36, 3)] + ["WF-05", "wf-99", "wf"]
_TEXT = {
    "id": st.sampled_from(_IDS),
    "type": st.sampled_from([*TYPES, "ord", "nothing"]),
    "engine": st.sampled_from([*ENGINES, *ENGINES.values(), GHOST, "engine", "host-a", "e"]),
    "failure": st.sampled_from([*FAILURES, "Error", "Value"]),
}
_times = st.one_of(
    st.builds(RelativeTime, st.integers(-4_000_000, 120_000)),
    st.builds(AbsoluteTime, st.integers(NOW_MS - 4_000_000, NOW_MS + 120_000)),
)
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    **_TEXT,
    "status": st.sampled_from(WORKFLOW_STATUSES),
    "state": st.sampled_from(STATES),
    "epoch": st.integers(0, 6),
    "expires": _times,
    "claimed": _times,
    "created": _times,
    "updated": _times,
}
_ORDERED = ("epoch", "expires", "claimed", "created", "updated")


@st.composite
def _terms(draw: st.DrawFn) -> Query:
    field = draw(st.sampled_from(sorted(_VALUES)))
    values = _VALUES[field]
    kinds = ["compare", "in"]
    if field in _ORDERED:
        kinds.append("between")
    if field in _TEXT:
        kinds.append("match")
    kind = draw(st.sampled_from(kinds))
    if kind == "compare":
        ops = ["=", "!=", "<", "<=", ">", ">="] if field in _ORDERED else ["=", "!="]
        return Comparison(field, draw(st.sampled_from(ops)), draw(values))
    if kind == "in":
        listed = tuple(draw(st.lists(values, min_size=1, max_size=3)))
        return InList(field, listed, negated=draw(st.booleans()))
    if kind == "between":
        return Between(field, draw(values), draw(values))
    op = draw(st.sampled_from(MATCH_OPS))
    return Match(field, op, draw(st.sampled_from(["wf-0", "e", "engine1", "Val", "r", "F"])))


def _combine(children: st.SearchStrategy[Query]) -> st.SearchStrategy[Query]:
    several = st.lists(children, min_size=2, max_size=3).map(tuple)
    return st.one_of(several.map(And), several.map(Or), children.map(Not))


queries = st.recursive(_terms(), _combine, max_leaves=5)


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any) -> Any:
    """Built once for the module's queries, which only read it; removed after."""
    with django_db_blocker.unblock():
        _world()
        yield _reference_rows()
        Workflow.objects.all().delete()
        WorkflowClaim.objects.all()._raw_delete(WorkflowClaim.objects.db)
        Engine.objects.all().delete()


# Each listing: which of the world's reference row lists it reads, its rows and its compiler.
LISTINGS: dict[str, tuple[int, Any, Any]] = {
    "claims": (0, WorkflowClaim.objects, claim_query_condition),
    "workflows": (1, Workflow.objects, workflow_query_condition),
}


@pytest.mark.django_db
@pytest.mark.parametrize("listing", LISTINGS)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=queries)
def test_the_listing_selects_what_the_reference_selects(
    world: Any, listing: str, query: Query
) -> None:
    which, rows, compile_query = LISTINGS[listing]
    wanted = sorted(row["id"] for row in world[which] if matches(query, row, NOW_MS))
    condition = compile_query(query, QueryContext(NOW_MS, TIMING))
    found = sorted(rows.filter(condition).values_list("workflow_id", flat=True))
    assert found == wanted, format_query(query)


def test_the_world_covers_every_state(world: Any) -> None:
    claim_rows, workflow_rows = world
    seen = set().union(*(row["state"] for row in claim_rows))
    assert seen == set(STATES)
    assert any("type" not in row for row in claim_rows)  # a claim whose workflow is gone
    assert any(not row["state"] for row in workflow_rows)  # a workflow never claimed
