"""Beat's fleet snapshot from the kept counts (claims.models.fleet_counts): the deltas the
writes left since the last snapshot folded in, then the parts that depend on the clock or
on a session judged now, all in one database snapshot (docs/design.md §7).

What each part costs, with nothing changing: the fold reads no delta; claims by derived
state read the kept groups (one per engine, session and class), the sessions they name, and the
workflow-lease claims past their expiry along the expiry index (none while every holder
renews; the engine-lease mode has none at all); workflows by status and type are kept
outright; ownerless running workflows are judged from the ownerless marks (a handful) and
the few running workflows recount found unmarked. Every RECOUNT_EVERY_MS the counts are
taken from the rows instead, in the same snapshot as the deltas they replace, and any
difference from the kept counts is logged and repaired.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from django.db import connection, transaction
from django.db.models import Case, CharField, Count, Exists, OuterRef, Value, When

from claims.models import (
    FleetCountKind,
    FleetCounts,
    OwnerlessMark,
    WorkflowClaim,
)
from claims.models.claims import HOLDER_INVALID, HOLDER_PRESENT
from claims.models.fleet_counts import FLEET_COUNT_DELTA_TABLE
from claims.protocol.timing import ClaimTiming
from claims.selectors.claims.state_counts import BY_SESSION, tally_states
from claims.selectors.fleet.alert_rules import EXAMPLES
from claims.selectors.fleet.snapshot import (
    FleetScan,
    grouped_by_type,
    ids_and_count,
    running_unheld,
    workflows_by_type,
)

logger = logging.getLogger(__name__)

# How often the counts are taken from the rows instead of the deltas: a scan of every claim
# and workflow (about a second at a million), once per this many milliseconds.
RECOUNT_EVERY_MS = 300_000
# Running workflows that recount found with no holder and no ownerless mark (a workflow
# running with no index row, which only the authoritative scan finds) judged again each
# snapshot, at most; with more than this, each snapshot judges every running workflow.
UNMARKED_KEPT = 1_000

ClaimKey = tuple[str | None, int | None, str]  # holder, session epoch, row class
WorkflowKey = tuple[str, str]  # status, type


def claim_class_case() -> Case:
    """A claim row's class, as the triggers of migration 0029 judge it: whether it has a
    holder, is garbage in its own columns, lives by its session, or by its own expiry."""
    return Case(
        When(~HOLDER_PRESENT, then=Value("ownerless")),
        When(HOLDER_INVALID, then=Value("invalid")),
        When(holder_session_epoch__isnull=False, then=Value("session")),
        default=Value("lease"),
        output_field=CharField(),
    )


def _claims_from_rows() -> Counter[ClaimKey]:
    groups = (
        WorkflowClaim.objects.annotate(cls=claim_class_case())
        .values_list("holder_engine_id", "holder_session_epoch", "cls")
        .annotate(n=Count("pk"))
        .order_by()
    )
    counts: Counter[ClaimKey] = Counter()
    for holder, session_epoch, cls, n in groups:
        counts[(holder, session_epoch if cls == "session" else None, cls)] += n
    return counts


def _workflows_from_rows() -> Counter[WorkflowKey]:
    _, by_type = workflows_by_type()
    return Counter(
        {
            (status, wf_type): n
            for wf_type, counts in by_type.items()
            for status, n in counts.items()
        }
    )


_DELETED = f"DELETE FROM {FLEET_COUNT_DELTA_TABLE} RETURNING kind, name, session_epoch, part, n"
# On PostgreSQL summed by the server, so a backlog (beat down for hours) crosses the network
# as one row per key; SQLite cannot DELETE inside a WITH, and its rows are read one by one.
_TAKE_DELTAS = {
    True: f"WITH d AS ({_DELETED}) SELECT kind, name, session_epoch, part, sum(n) FROM d "
    "GROUP BY kind, name, session_epoch, part",
    False: _DELETED,
}


def _take_deltas() -> tuple[Counter[ClaimKey], Counter[WorkflowKey]]:
    """Every delta this snapshot sees, deleted and summed: a delta committed after it stays
    for the next fold, so each is counted once."""
    claims: Counter[ClaimKey] = Counter()
    workflows: Counter[WorkflowKey] = Counter()
    with connection.cursor() as cursor:
        cursor.execute(_TAKE_DELTAS[connection.vendor == "postgresql"])
        for kind, name, session_epoch, part, n in cursor:
            if kind == FleetCountKind.CLAIM:
                claims[(name, session_epoch, part)] += n
            else:
                workflows[(name, part)] += n
    return claims, workflows


def _added(kept: Counter[Any], deltas: Counter[Any]) -> Counter[Any]:
    total = Counter(kept)
    for key, n in deltas.items():
        total[key] += n
    return Counter({key: n for key, n in total.items() if n != 0})


def _ownerless(unmarked: list[str]) -> tuple[int, list[str]]:
    """Running workflows with no holder among the marked ones and, apart, among the kept
    unmarked ones no mark names now: two reads each bounded by its list, never a scan of
    the running workflows; unless the recount found more unmarked ones than it keeps (the
    index missing thousands, until a backfill), when every running workflow is judged."""
    running = running_unheld()
    if len(unmarked) > UNMARKED_KEPT:
        return ids_and_count(running)
    marked_ids = OwnerlessMark.objects.values("workflow_id")
    count, examples = ids_and_count(running.filter(workflow_id__in=marked_ids))
    if unmarked:
        marked = OwnerlessMark.objects.filter(workflow_id=OuterRef("pk"))
        more, more_examples = ids_and_count(
            running.filter(workflow_id__in=unmarked).exclude(Exists(marked))
        )
        count += more
        examples = sorted([*examples, *more_examples])[:EXAMPLES]
    return count, examples


def _unmarked_ownerless() -> list[str]:
    marked = OwnerlessMark.objects.filter(workflow_id=OuterRef("pk"))
    return list(
        running_unheld()
        .exclude(Exists(marked))
        .order_by("workflow_id")
        .values_list("workflow_id", flat=True)[: UNMARKED_KEPT + 1]  # one more: overflowing
    )


def _past_expiry(now_ms: int, timing: ClaimTiming) -> list[tuple[str, str, int]]:
    """Workflow-lease claims past their own expiry, per holder and state, along the expiry
    index: what separates the kept "lease" count into live, in-grace and expired."""
    state = Case(
        When(holder_expires_at_ms__gte=now_ms - timing.grace_ms, then=Value("in-grace")),
        default=Value("expired"),
        output_field=CharField(),
    )
    return list(
        WorkflowClaim.objects.filter(holder_expires_at_ms__lt=now_ms, holder_session_epoch=None)
        .filter(HOLDER_PRESENT)
        .exclude(HOLDER_INVALID)
        .annotate(state=state)
        .values_list("holder_engine_id", "state")
        .annotate(n=Count("pk"))
        .order_by()
    )


def _state_groups(
    claims: Counter[ClaimKey], now_ms: int, timing: ClaimTiming
) -> list[tuple[str | None, int | None, str, int]]:
    past = _past_expiry(now_ms, timing) if any(k[2] == "lease" for k in claims) else []
    not_live: Counter[str | None] = Counter()
    groups: list[tuple[str | None, int | None, str, int]] = []
    for holder, state, n in past:
        not_live[holder] += n
        groups.append((holder, None, state, n))
    for (engine, session_epoch, cls), n in claims.items():
        if cls == "lease":
            live = n - not_live[engine]
            if live > 0:
                groups.append((engine, None, "live", live))
        elif cls == "session":
            groups.append((engine, session_epoch, BY_SESSION, n))
        else:
            groups.append((engine, None, cls, n))
    return groups


def _report_drift(name: str, kept: Counter[Any], counted: Counter[Any]) -> None:
    differ = {key for key in set(kept) | set(counted) if kept[key] != counted[key]}
    if differ:
        shown = sorted(differ, key=repr)[:5]
        logger.warning(
            "fleet counts repaired: kind=%s keys=%d first=%s",
            name,
            len(differ),
            [(key, kept[key], counted[key]) for key in shown],
        )


def _one_snapshot(outermost: bool) -> None:
    """On PostgreSQL, every read of this transaction from one snapshot, taken after no other
    fold can run: REPEATABLE READ where this call began the transaction, and the kept
    counts' table locked against another beat first (LOCK takes no snapshot, where a
    SELECT ... FOR UPDATE would take it before waiting, and then fail to serialise with
    the fold it waited for). SQLite's IMMEDIATE transaction already is both."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        if outermost:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cursor.execute(f"LOCK TABLE {FleetCounts._meta.db_table} IN SHARE ROW EXCLUSIVE MODE")


def kept_fleet_scan(*, now_ms: int, timing: ClaimTiming) -> FleetScan:
    """The fleet scan from the kept counts, folding in the deltas since the last snapshot;
    counted from the rows when there are no kept counts or a recount is due (or the clock
    went back past the last one). Beat calls it outside any transaction, as it must be on
    PostgreSQL for a recount to read the rows and the deltas it replaces in one snapshot."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        _one_snapshot(outermost)
        kept_row = FleetCounts.objects.filter(id=1).first()
        claim_deltas, workflow_deltas = _take_deltas()
        if kept_row is None or not 0 <= now_ms - kept_row.recounted_at_ms < RECOUNT_EVERY_MS:
            claims, workflows = _claims_from_rows(), _workflows_from_rows()
            if kept_row is not None:
                _report_drift("claim", _added(_kept_claims(kept_row), claim_deltas), claims)
                _report_drift(
                    "workflow", _added(_kept_workflows(kept_row), workflow_deltas), workflows
                )
            unmarked = _unmarked_ownerless()
            recounted_at_ms = now_ms
        else:
            claims = _added(_kept_claims(kept_row), claim_deltas)
            workflows = _added(_kept_workflows(kept_row), workflow_deltas)
            unmarked = list(kept_row.unmarked_ownerless)
            recounted_at_ms = kept_row.recounted_at_ms
        counts = tally_states(_state_groups(claims, now_ms, timing), now_ms, timing)
        ownerless, examples = _ownerless(unmarked)
        if 0 < len(unmarked) <= UNMARKED_KEPT:  # keep those still ownerless
            unmarked = _still_ownerless(unmarked)
        FleetCounts.objects.update_or_create(
            id=1,
            defaults={
                "recounted_at_ms": recounted_at_ms,
                "claims": [[*key, n] for key, n in sorted(claims.items(), key=repr)],
                "workflows": [[*key, n] for key, n in sorted(workflows.items())],
                "unmarked_ownerless": unmarked,
            },
        )
    by_status, by_type = grouped_by_type((*key, n) for key, n in sorted(workflows.items()))
    return FleetScan(
        now_ms,
        counts.by_state,
        counts.by_holder,
        ownerless,
        examples,
        by_status,
        by_type,
        counts.by_holder_state,
    )


def _still_ownerless(workflow_ids: list[str]) -> list[str]:
    return list(
        running_unheld()
        .filter(workflow_id__in=workflow_ids)
        .order_by("workflow_id")
        .values_list("workflow_id", flat=True)
    )


def _kept_claims(row: FleetCounts) -> Counter[ClaimKey]:
    return Counter(
        {(holder, session_epoch, cls): n for holder, session_epoch, cls, n in row.claims}
    )


def _kept_workflows(row: FleetCounts) -> Counter[WorkflowKey]:
    return Counter({(status, wf_type): n for status, wf_type, n in row.workflows})
