"""A release or takeover chunk on PostgreSQL: one statement instead of six.

The same judgement and writes as claims.bulk.chunk, made by one data-modifying statement:
lock the items' claim rows (the same locking read as chunk.lock_claims, SKIP LOCKED, in
workflow id order, with their workflow's status), judge each item against its frozen
epoch and the action's rules, move the claims judged done to their next epoch with the
target as holder (or none), write one claim event per item naming the job, and write every
judged item's outcome. The rows cross the network once, are found by their indexes once,
and the statement is planned once for the chunk (in chunk.py each of six statements found
the same rows again). The rules stay in Python (claims.bulk.actions.refusal): the statement
is handed them as a table, one refusal per (workflow status, held).

Only chunks of claimed workflows (every frozen epoch above 0) of a release or a takeover
that has a target take this path: they write the claim row alone. A workflow never claimed
(its first claim row is an INSERT that can lose a race) and the transitions (they lock and
move the workflow rows and their index) go through chunk.py, as every chunk on SQLite does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.db.models import Model

from claims.models import (
    BulkAction,
    BulkItemOutcome,
    BulkJob,
    BulkJobItem,
    ClaimEvent,
    WorkflowClaim,
    WorkflowStatus,
)
from claims.protocol.timing import ClaimTiming

from .actions import ACTION_RULES, refusal
from .locks import locked_claims_query

if TYPE_CHECKING:
    from .chunk import ChunkItem, ChunkResult
    from .targets import Target, Targets

SET_ACTIONS = frozenset({BulkAction.RELEASE, BulkAction.TAKEOVER})
# The statement's word for an item whose claim row another writer holds: left pending.
SKIPPED = "skipped"
# Every status a workflow row can hold, and None for a row that is gone: the statement is
# handed the refusal of each, held and not. A status outside them (no weftboard code
# writes one) is judged as a running workflow is: for a release and a takeover the rules
# single out only the gone, the finished and the suspended (tests/bulk/test_chunk_set.py
# holds refusal to that).
_STATUSES: tuple[str | None, ...] = (*WorkflowStatus.values, None)


def applies(job: BulkJob, items: Sequence[ChunkItem], targets: Targets | None) -> bool:
    return (
        connection.vendor == "postgresql"
        and job.action in SET_ACTIONS
        and all(item.frozen_epoch > 0 for item in items)
        and (targets is None or targets.refusal is None)
    )


def _table(model: type[Model]) -> str:
    return str(connection.ops.quote_name(model._meta.db_table))


def _statement(lock_sql: str) -> str:
    claims, events, items = _table(WorkflowClaim), _table(ClaimEvent), _table(BulkJobItem)
    return f"""
WITH batch AS (
    SELECT * FROM unnest(%s::bigint[], %s::text[], %s::bigint[])
        AS b(id, workflow_id, frozen_epoch)
), rules AS (
    SELECT * FROM unnest(%s::text[], %s::boolean[], %s::text[]) AS r(status, held, refusal)
), targets AS (
    SELECT * FROM unnest(%s::text[], %s::bigint[]) WITH ORDINALITY AS t(engine_id, session, turn)
), locked (workflow_id, epoch, held, status) AS (
    {lock_sql}
), judged AS (
    SELECT b.id, b.workflow_id, b.frozen_epoch, l.epoch,
        CASE WHEN l.workflow_id IS NULL THEN 'skipped'
             WHEN l.epoch <> b.frozen_epoch THEN 'moved'
             WHEN r.refusal IS NOT NULL THEN 'refused'
             ELSE 'done' END AS outcome,
        r.refusal
    FROM batch b
    LEFT JOIN locked l ON l.workflow_id = b.workflow_id
    LEFT JOIN rules r ON r.held = l.held AND r.status IS NOT DISTINCT FROM (
        CASE WHEN l.status IS NULL OR l.status = ANY(%s::text[]) THEN l.status ELSE %s END)
), acting AS (
    SELECT j.id, j.workflow_id, j.frozen_epoch,
        (row_number() OVER (ORDER BY j.id) - 1) %% (SELECT count(*) FROM targets) + 1 AS turn
    FROM judged j WHERE j.outcome = 'done'
), changed AS (
    UPDATE {claims} c SET
        epoch = c.epoch + 1,
        holder_engine_id = t.engine_id,
        holder_epoch = CASE WHEN t.engine_id IS NULL THEN NULL ELSE c.epoch + 1 END,
        holder_expires_at_ms = CASE WHEN t.engine_id IS NULL OR t.session IS NOT NULL
                                    THEN NULL ELSE %s::bigint END,
        holder_claimed_at_ms = CASE WHEN t.engine_id IS NULL THEN NULL ELSE %s::bigint END,
        holder_session_epoch = t.session
    FROM acting a JOIN targets t ON t.turn = a.turn
    WHERE c.workflow_id = a.workflow_id AND c.epoch = a.frozen_epoch
    RETURNING a.id AS item_id, c.workflow_id, c.epoch, c.holder_engine_id
), audited AS (
    INSERT INTO {events}
        (workflow_id, kind, epoch_before, epoch_after, engine_id, actor, reason, at_ms,
         bulk_job_id)
    SELECT m.workflow_id, %s, m.epoch - 1, m.epoch, m.holder_engine_id, %s, %s, %s::bigint,
        %s::bigint
    FROM changed m
    ORDER BY m.item_id
), recorded AS (
    UPDATE {items} i SET
        outcome = j.outcome,
        epoch_after = CASE WHEN j.outcome = 'done' THEN j.frozen_epoch + 1 END,
        acted_at_ms = %s::bigint,
        detail = CASE j.outcome
            WHEN 'moved' THEN 'at epoch ' || j.epoch || ' now'
            WHEN 'refused' THEN j.refusal
            ELSE COALESCE('to ' || m.holder_engine_id, '') END
    FROM judged j LEFT JOIN changed m ON m.item_id = j.id
    -- The chunk's id range: the items are read by their primary key even where the
    -- table's statistics are older than the freeze that filled it.
    WHERE i.id BETWEEN %s AND %s AND i.id = j.id AND j.outcome <> 'skipped'
)
SELECT j.outcome, j.workflow_id, m.epoch, m.holder_engine_id
FROM judged j LEFT JOIN changed m ON m.item_id = j.id
ORDER BY j.id
"""


def _rules(action: str) -> tuple[list[str | None], list[bool], list[str | None]]:
    statuses, helds, refusals = [], [], []
    for status in _STATUSES:
        for held in (True, False):
            rule = refusal(action, status, held)
            statuses.append(status)
            helds.append(held)
            refusals.append(None if rule is None else rule[:200])
    return statuses, helds, refusals


def act_in_one_statement(
    job: BulkJob,
    items: Sequence[ChunkItem],
    targets: Targets | None,
    result: ChunkResult,
    *,
    now_ms: int,
    timing: ClaimTiming,
) -> None:
    """Judge and act on ``items`` (``applies`` said this path may); fills in ``result``."""
    ids = [item.workflow_id for item in items]
    lock_sql, lock_params = locked_claims_query(ids, with_status=True).query.sql_with_params()
    chosen: list[Target | None] = [None] if targets is None else list(targets.all)
    params: list[Any] = [
        # batch
        [item.id for item in items],
        ids,
        [item.frozen_epoch for item in items],
        # rules
        *_rules(job.action),
        # targets
        [None if target is None else target.engine_id for target in chosen],
        [None if target is None else target.session_epoch for target in chosen],
        # locked
        *lock_params,
        # judged: a status outside the known ones takes a running workflow's rules
        list(WorkflowStatus.values),
        WorkflowStatus.RUNNING.value,
        # changed: a holder's expiry and claim time
        now_ms + timing.ttl_ms,
        now_ms,
        # audited
        ACTION_RULES[job.action].event_kind.value,
        job.requested_by,
        job.reason,
        now_ms,
        job.pk,
        # recorded
        now_ms,
        min(item.id for item in items),
        max(item.id for item in items),
    ]
    with connection.cursor() as cursor:
        cursor.execute(_statement(lock_sql), params)
        rows = cursor.fetchall()
    outcomes = Counter(outcome for outcome, *_ in rows)
    acting = outcomes[BulkItemOutcome.DONE]
    changed = sum(1 for _, _, epoch, _ in rows if epoch is not None)
    if changed != acting:
        # Every acting row was locked at its frozen epoch: a shortfall is a broken
        # invariant, and raising rolls the whole chunk back.
        raise RuntimeError(f"bulk job #{job.pk}: {changed} of {acting} claims changed")
    result.done += acting
    result.moved += outcomes[BulkItemOutcome.MOVED]
    result.refused += outcomes[BulkItemOutcome.REFUSED]
    result.skipped += outcomes[SKIPPED]
    queues = {} if targets is None else {t.engine_id: t.queue for t in targets.all}
    for _, workflow_id, epoch, engine_id in rows:
        queue = queues.get(engine_id)
        if epoch is not None and queue is not None:
            result.adopt.setdefault(queue, []).append((workflow_id, epoch))
