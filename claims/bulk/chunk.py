"""One chunk of a bulk job: a few hundred items judged and acted on in one transaction.

The chunk locks the claim rows of its items, then, where it moves a workflow's status or
claims a workflow never claimed, their workflow rows (the order every fenced write
takes), with SKIP LOCKED: a row an engine is writing right now is left
pending for a later sweep instead of waited on, so the job never waits inside a lock an
engine needs and the two cannot deadlock. Each locked item is judged against its frozen
epoch: ``moved`` if its claim has left it, ``refused`` if the action's rules refuse it,
else acted on by one set-based UPDATE per target engine (every row is locked and its epoch
checked, so each statement changes exactly the rows judged), with one claim event per
item naming the job. A crash rolls the whole chunk back, its items still pending.

On PostgreSQL a release or a takeover chunk of claimed workflows makes the same judgement
and writes in one statement (claims.bulk.chunk_set); the rest takes the path here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import (
    BigIntegerField,
    CharField,
    F,
    Value,
)
from django.db.models.functions import NullIf

from claims.models import (
    BulkAction,
    BulkItemOutcome,
    BulkJob,
    BulkJobItem,
    ClaimEvent,
    Workflow,
    WorkflowClaim,
    WorkflowVisibility,
)
from claims.models.any_of import AnyOf
from claims.protocol.timing import ClaimTiming
from claims.store.rows import EVENT_FIELDS

from . import chunk_set
from .actions import ACTION_RULES, refusal
from .insert_select import insert_select
from .locks import LockedWorkflow, lock_claims, lock_workflows, read_workflows
from .targets import Target, Targets


@dataclass
class ChunkResult:
    done: int = 0
    moved: int = 0
    refused: int = 0
    skipped: int = 0  # locked by another writer: still pending, for a later sweep
    adopt: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # queue -> claims


@dataclass
class ChunkItem:
    """One pending item as the chunk judges it: read as a tuple, not a model instance (a
    chunk handles hundreds), its outcome filled in and written back set-based."""

    id: int
    workflow_id: str
    frozen_epoch: int
    outcome: str = BulkItemOutcome.PENDING
    detail: str = ""
    acted_at_ms: int | None = None
    epoch_after: int | None = None


CHUNK_ITEM_FIELDS = ("id", "workflow_id", "frozen_epoch")


def act_on_chunk(
    job: BulkJob, items: Sequence[ChunkItem], *, now_ms: int, timing: ClaimTiming
) -> ChunkResult:
    """Judge and act on ``items``; the caller holds the transaction and saves the job."""
    targets = (
        Targets(job.target_engine_id, now_ms=now_ms, timing=timing)
        if job.action == BulkAction.TAKEOVER
        else None
    )
    result = ChunkResult()
    if chunk_set.applies(job, items, targets):
        chunk_set.act_in_one_statement(job, items, targets, result, now_ms=now_ms, timing=timing)
        return result
    ids = [item.workflow_id for item in items]
    locks_workflows = ACTION_RULES[job.action].new_status is not None or any(
        item.frozen_epoch == 0 for item in items
    )
    claims, claims_busy = lock_claims(ids, with_status=not locks_workflows)
    if locks_workflows:
        workflows, workflows_busy = lock_workflows(ids)
    else:
        # Release and takeover of claimed workflows write the claim alone: its lock keeps
        # the workflow's status still (a write of the status takes the claim's lock first).
        # A workflow never claimed has no claim row to lock: the branch above locks it.
        workflows, workflows_busy = read_workflows(ids, claims), set()
    acting: dict[Target | None, list[ChunkItem]] = defaultdict(list)
    for item in items:
        if item.workflow_id in claims_busy or item.workflow_id in workflows_busy:
            result.skipped += 1
            continue
        claim = claims.get(item.workflow_id)
        epoch = 0 if claim is None else claim.epoch
        if epoch != item.frozen_epoch:
            _judge(item, BulkItemOutcome.MOVED, now_ms, f"at epoch {epoch} now")
            continue
        workflow = workflows.get(item.workflow_id)
        held = claim is not None and claim.held
        rule = refusal(job.action, None if workflow is None else workflow.status, held)
        if rule is None and targets is not None:
            rule = targets.refusal
        if rule is not None:
            _judge(item, BulkItemOutcome.REFUSED, now_ms, rule)
            continue
        acting[None if targets is None else targets.next()].append(item)
    done: list[ChunkItem] = []
    for target, group in acting.items():
        done += _act(job, target, group, now_ms, timing, result)
    _save_outcomes(
        [item for item in items if item.outcome in (BulkItemOutcome.MOVED, BulkItemOutcome.REFUSED)]
    )
    _move_workflows(job, done, workflows, now_ms)
    for item in items:
        if item.outcome == BulkItemOutcome.DONE:
            result.done += 1
        elif item.outcome == BulkItemOutcome.MOVED:
            result.moved += 1
        elif item.outcome == BulkItemOutcome.REFUSED:
            result.refused += 1
    return result


def _save_outcomes(judged: list[ChunkItem]) -> None:
    """One UPDATE per distinct (outcome, detail) of the chunk: a handful of set-based
    statements instead of a row each (a done item's new epoch is its frozen one plus one)."""
    groups: dict[tuple[str, str, int | None], list[int]] = defaultdict(list)
    for item in judged:
        assert item.acted_at_ms is not None
        groups[(item.outcome, item.detail, item.acted_at_ms)].append(item.id)
    for (outcome, detail, acted_at_ms), ids in groups.items():
        epoch_after = F("frozen_epoch") + 1 if outcome == BulkItemOutcome.DONE else None
        BulkJobItem.objects.filter(AnyOf(F("id"), ids)).update(
            outcome=outcome, detail=detail, acted_at_ms=acted_at_ms, epoch_after=epoch_after
        )


def _judge(item: ChunkItem, outcome: BulkItemOutcome, now_ms: int, detail: str) -> None:
    item.outcome = outcome
    item.detail = detail[:200]
    item.acted_at_ms = now_ms


def _holder_columns(target: Target | None, now_ms: int, timing: ClaimTiming) -> dict[str, Any]:
    """The holder a done item's claim gets: the target engine's (claims.protocol.decisions
    new_holder's rule, at the new epoch), or none."""
    if target is None:
        return {
            "holder_engine_id": None,
            "holder_epoch": None,
            "holder_expires_at_ms": None,
            "holder_claimed_at_ms": None,
            "holder_session_epoch": None,
        }
    session = target.session_epoch
    return {
        "holder_engine_id": target.engine_id,
        "holder_epoch": F("epoch") + 1,
        "holder_expires_at_ms": None if session is not None else now_ms + timing.ttl_ms,
        "holder_claimed_at_ms": now_ms,
        "holder_session_epoch": session,
    }


def _act(
    job: BulkJob,
    target: Target | None,
    items: list[ChunkItem],
    now_ms: int,
    timing: ClaimTiming,
    result: ChunkResult,
) -> list[ChunkItem]:
    """Move each item's claim to its next epoch (with the target as holder, or none) and
    write its event; returns the items done."""
    holder = _holder_columns(target, now_ms, timing)
    rows = [item for item in items if item.frozen_epoch > 0]
    done = list(rows)
    if rows:
        # Every row is locked and was read at its frozen epoch: the epoch term is the
        # compare-and-swap all the same, and a count short of the rows undoes the chunk.
        changed = WorkflowClaim.objects.filter(
            AnyOf(F("workflow_id"), [item.workflow_id for item in rows]),
            epoch__in={item.frozen_epoch for item in rows},
        ).update(epoch=F("epoch") + 1, **holder)
        if changed != len(rows):
            raise RuntimeError(f"bulk job #{job.pk}: {changed} of {len(rows)} claims changed")
    for item in items:
        if item.frozen_epoch == 0 and _insert_claim(item, holder):
            done.append(item)
        elif item.frozen_epoch == 0:
            _judge(item, BulkItemOutcome.MOVED, now_ms, "claimed since")
    engine_id = None if target is None else target.engine_id
    for item in done:
        _judge(item, BulkItemOutcome.DONE, now_ms, "" if engine_id is None else f"to {engine_id}")
        item.epoch_after = item.frozen_epoch + 1
    if done:
        _save_outcomes(done)
        _write_events(job, engine_id, [item.id for item in done], now_ms)
    if target is not None and target.queue is not None and done:
        result.adopt.setdefault(target.queue, []).extend(
            (item.workflow_id, item.frozen_epoch + 1) for item in done
        )
    return done


def _write_events(job: BulkJob, engine_id: str | None, item_ids: list[int], now_ms: int) -> None:
    """One claim event per done item, naming the job: copied from the items by one
    INSERT ... SELECT, not built a row at a time."""
    text: CharField[str, str] = CharField()
    number: BigIntegerField[int, int] = BigIntegerField()
    rows = (
        BulkJobItem.objects.filter(AnyOf(F("id"), item_ids))
        .order_by("id")
        .annotate(
            event_kind=Value(ACTION_RULES[job.action].event_kind.value, output_field=text),
            event_epoch_before=NullIf(F("frozen_epoch"), Value(0)),
            event_engine=Value(engine_id, output_field=text),
            event_actor=Value(job.requested_by, output_field=text),
            event_reason=Value(job.reason, output_field=text),
            event_at=Value(now_ms, output_field=number),
            # A job's moves name no holder before: every engine reads them (§12).
            event_holder_before=Value(None, output_field=text),
            event_job=Value(job.pk, output_field=number),
        )
        .values_list(
            "workflow_id",
            "event_kind",
            "event_epoch_before",
            "epoch_after",
            "event_engine",
            "event_actor",
            "event_reason",
            "event_at",
            "event_holder_before",
            "event_job",
        )
    )
    insert_select(ClaimEvent, (*EVENT_FIELDS, "bulk_job_id"), rows)


def _insert_claim(item: ChunkItem, holder: dict[str, Any]) -> bool:
    """A workflow never claimed gets its first claim row at epoch 1; False when one was
    inserted since the chunk looked (an engine claimed it: the item moved)."""
    values = {key: (1 if key == "holder_epoch" else value) for key, value in holder.items()}
    if values["holder_engine_id"] is None:
        values["holder_epoch"] = None
    try:
        with transaction.atomic():
            WorkflowClaim.objects.create(workflow_id=item.workflow_id, epoch=1, **values)
    except IntegrityError:
        return False
    return True


def _move_workflows(
    job: BulkJob, done: list[ChunkItem], workflows: dict[str, LockedWorkflow], now_ms: int
) -> None:
    """Cancel, suspend and resume move each done workflow to the action's status, and its
    visibility row with it (claims.store.workflows.workflow_index, set-based)."""
    status = ACTION_RULES[job.action].new_status
    if status is None or not done:
        return
    ids = [item.workflow_id for item in done]
    Workflow.objects.filter(AnyOf(F("workflow_id"), ids)).update(
        status=status, updated_at_ms=now_ms
    )
    indexed = set(
        WorkflowVisibility.objects.filter(AnyOf(F("workflow_id"), ids)).values_list(
            "workflow_id", flat=True
        )
    )
    WorkflowVisibility.objects.filter(AnyOf(F("workflow_id"), list(indexed))).update(
        status=status, updated_at_ms=now_ms
    )
    WorkflowVisibility.objects.bulk_create(
        WorkflowVisibility(
            workflow_id=workflow_id,
            status=status,
            # Locked with its workflow row (locks.lock_workflows), so its type was read.
            workflow_type=workflows[workflow_id].workflow_type or "",
            updated_at_ms=now_ms,
        )
        for workflow_id in ids
        if workflow_id not in indexed
    )
