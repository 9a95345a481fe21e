"""Bulk jobs: create one (its items frozen in the same transaction), pause, resume and
abort it. Each obeys claims.services.rules (nothing while read-only, a reason) and writes an
operator record (claims.services.audit) with the change it makes.

Permissions are the interfaces' to check (claims.bulk.actions.permissions_for): a job needs
its action's own permission and ``claims.bulk_operate``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from claims.bulk.freeze import freeze_items
from claims.bulk.preview import max_items
from claims.fleet_clock import fleet_now
from claims.models import (
    FINISHED_BULK_STATUSES,
    AuditSubject,
    BulkAction,
    BulkJob,
    BulkJobStatus,
    BulkList,
    Engine,
    EngineStatus,
)
from claims.protocol.errors import ClaimConfigError, InvalidInputError
from claims.protocol.ids import check_engine_id
from claims.protocol.text import check_identifier
from claims.query import Query, format_query, parse
from claims.selectors.query import QueryContext

from .audit import audit_record
from .errors import BulkCountChangedError, BulkJobStateError
from .rules import operator_reason, refuse_if_read_only

logger = logging.getLogger("weftboard.claims")

# Above this many workflows the operator types the count to confirm (the pages ask).
TYPED_CONFIRMATION_ABOVE = 100
# The most items a second an operator may cap a job at (the pages and the API say the same).
MAX_RATE_PER_S = 100_000


@dataclass(frozen=True)
class BulkRequest:
    """What an operator asks of a job."""

    list_name: str
    query: str
    action: str
    reason: str
    target_engine_id: str | None = None
    # The count the operator previewed (and typed, above TYPED_CONFIRMATION_ABOVE).
    expected_count: int | None = None
    accept_count_change: bool = False
    rate_per_s: int | None = None
    # The caller's name for this request (at most 64 characters): sent again by the same
    # requester, it returns the job the first request created instead of another.
    request_key: str | None = None


def bulk_job_create(request: BulkRequest, *, actor: str | None) -> BulkJob:
    """Freeze the workflows the query selects, with their epochs, into a new queued job, and
    start its run once committed. Raises InvalidInputError (or QueryError, one of them) for
    bad input, ClaimConfigError for a target engine that is not live, and
    BulkCountChangedError when the frozen count is not the expected one (nothing is kept)."""
    refuse_if_read_only()
    list_name = _choice(BulkList, request.list_name, "list")
    action = _choice(BulkAction, request.action, "action")
    query = parse(request.query)
    reason = operator_reason(request.reason)
    target = _target_engine(action, request.target_engine_id)
    if request.rate_per_s is not None and not 1 <= request.rate_per_s <= MAX_RATE_PER_S:
        raise InvalidInputError(
            f"rate_per_s must be between 1 and {MAX_RATE_PER_S:,} items a second"
        )
    if request.expected_count is not None and request.expected_count < 0:
        raise InvalidInputError("expected_count must not be negative")
    key = None
    if request.request_key is not None:
        key = check_identifier(request.request_key, what="request_key", max_length=64)
        if not key:
            raise InvalidInputError("request_key must not be empty (leave it out instead)")
    asked = {
        "list_name": list_name,
        "query": format_query(query),
        "action": action,
        "target_engine_id": target,
    }
    if key is not None and (earlier := _earlier_job(actor, key, asked)) is not None:
        return earlier
    try:
        return _create(request, query, asked, key, reason, actor)
    except IntegrityError:
        # The same key, committed by a concurrent request between the look and the insert.
        if key is None or (earlier := _earlier_job(actor, key, asked)) is None:
            raise
        return earlier


def _earlier_job(actor: str | None, key: str, asked: dict[str, str | None]) -> BulkJob | None:
    """The job this requester created with ``key``, if any; the key names one request, so
    another request under it is refused."""
    earlier = BulkJob.objects.filter(requested_by=actor, request_key=key).first()
    if earlier is None:
        return None
    if any(getattr(earlier, name) != value for name, value in asked.items()):
        raise InvalidInputError(
            f"request_key {key!r} named bulk job #{earlier.pk}, another request; choose a new key"
        )
    return earlier


def _create(
    request: BulkRequest,
    query: Query,
    asked: dict[str, str | None],
    key: str | None,
    reason: str,
    actor: str | None,
) -> BulkJob:
    list_name, action = str(asked["list_name"]), str(asked["action"])
    target = asked["target_engine_id"]
    now_ms, timing = fleet_now()
    limit = max_items()
    with transaction.atomic():
        job = BulkJob.objects.create(
            list_name=list_name,
            query=str(asked["query"]),
            action=action,
            target_engine_id=target,
            reason=reason,
            requested_by=actor,
            request_key=key,
            created_at_ms=now_ms,
            previewed_count=request.expected_count,
            rate_per_s=request.rate_per_s,
        )
        frozen = freeze_items(job, query, QueryContext(now_ms, timing), limit)
        if frozen > limit:
            raise InvalidInputError(
                f"the query selects more than {limit:,} workflows, the most one job may act"
                " on (WEFTBOARD_BULK_MAX_ITEMS); narrow it"
            )
        if frozen == 0:
            raise InvalidInputError("the query selects no workflows: there is nothing to do")
        expected = request.expected_count
        if expected is None and frozen > TYPED_CONFIRMATION_ABOVE:
            raise InvalidInputError(
                f"the query selects {frozen:,} workflows: above {TYPED_CONFIRMATION_ABOVE}"
                " a job is confirmed with the count previewed (expected_count)"
            )
        if expected is not None and expected != frozen and not request.accept_count_change:
            raise BulkCountChangedError(expected, frozen)
        job.frozen_count = frozen
        job.save(update_fields=["frozen_count"])
        audit_record(
            AuditSubject.BULK_JOB,
            job.pk,
            "create",
            actor=actor,
            reason=reason,
            detail={
                "list": list_name,
                "query": job.query,
                "action": action,
                "target_engine_id": target,
                "previewed": expected,
                "frozen": frozen,
            },
        )
        transaction.on_commit(lambda: _start_run(job.pk))
    return job


def bulk_job_pause(job_id: int, *, actor: str | None) -> BulkJob:
    """Stop a queued or running job after its chunk in flight; ``resume`` carries on."""
    return _change(job_id, "pause", (BulkJobStatus.QUEUED, BulkJobStatus.RUNNING), actor)


def bulk_job_resume(job_id: int, *, actor: str | None) -> BulkJob:
    """Carry on with a paused job from its cursor."""
    job = _change(job_id, "resume", (BulkJobStatus.PAUSED,), actor)
    transaction.on_commit(lambda: _start_run(job_id))
    return job


def bulk_job_abort(job_id: int, *, actor: str | None, reason: str = "") -> BulkJob:
    """End a job that has not ended; its pending items stay pending, never acted on."""
    active = (BulkJobStatus.QUEUED, BulkJobStatus.RUNNING, BulkJobStatus.PAUSED)
    return _change(job_id, "abort", active, actor, reason)


_NEXT_STATUS = {
    "pause": BulkJobStatus.PAUSED,
    "resume": BulkJobStatus.QUEUED,
    "abort": BulkJobStatus.ABORTED,
}


def _change(
    job_id: int,
    verb: str,
    allowed_from: tuple[BulkJobStatus, ...],
    actor: str | None,
    reason: str = "",
) -> BulkJob:
    refuse_if_read_only()
    reason = operator_reason(reason, required=False)
    now_ms, _ = fleet_now()
    with transaction.atomic():
        # Waits for the chunk in flight (it holds the job row): what follows sees its counts.
        job = BulkJob.objects.select_for_update().get(pk=job_id)
        if job.status not in allowed_from:
            past = {"pause": "paused", "resume": "resumed", "abort": "aborted"}[verb]
            raise BulkJobStateError(job_id, job.status, past)
        before = job.status
        job.status = _NEXT_STATUS[verb]
        fields = ["status"]
        if job.status in FINISHED_BULK_STATUSES:
            job.finished_at_ms = now_ms
            fields.append("finished_at_ms")
        if verb == "resume":
            job.error = ""
            fields.append("error")
        job.save(update_fields=fields)
        audit_record(
            AuditSubject.BULK_JOB,
            job.pk,
            verb,
            actor=actor,
            reason=reason,
            detail={"from": before, "to": job.status, "acted": job.acted_count},
        )
    return job


def _choice(choices: type[BulkList] | type[BulkAction], value: str, what: str) -> str:
    if value not in choices.values:
        allowed = ", ".join(choices.values)
        raise InvalidInputError(f"{what} must be one of {allowed}, not {value!r}")
    return value


def _target_engine(action: str, engine_id: str | None) -> str | None:
    """A takeover's named engine, which must be live and not draining now (each chunk
    checks again); the other actions take none."""
    if engine_id is None:
        return None
    if action != BulkAction.TAKEOVER:
        raise InvalidInputError("only a takeover names a target engine")
    engine_id = check_engine_id(engine_id)
    live = Engine.objects.filter(
        engine_id=engine_id, status=EngineStatus.ACTIVE, drain_requested_at_ms__isnull=True
    )
    if not live.exists():
        raise ClaimConfigError(f"engine {engine_id!r} is not a live engine that is not draining")
    return engine_id


def _start_run(job_id: int) -> None:
    from claims.tasks import bulk_run

    try:
        bulk_run.apply_async((job_id,), retry=False)
    except Exception as error:
        # Beat's bulk_run_due starts it within its poll interval all the same.
        logger.warning("bulk job #%s: the run could not be sent (%s)", job_id, error)
