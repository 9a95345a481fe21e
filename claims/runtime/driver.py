"""Drive a held workflow on the calling thread until it ends, parks, pauses or is deposed.

Ending is a fenced terminal write plus the claim's release in ONE transaction
(``registry.finish``). A database error is not a workflow failure: it leaves
the drive (and the claim) as they are and propagates; the engine logs it, and its
wake pass drives the workflow again while it holds the claim.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

from django.db.models import Exists, OuterRef

from claims.models import Workflow, WorkflowClaim, WorkflowStatus
from claims.protocol import ClaimRegistry, Clock, EngineDeposedError
from claims.protocol.log_events import log_event
from claims.workflow_types import UnknownWorkflowTypeError, workflow_function

from .context import WorkflowContext, json_value
from .errors import DriveStopped
from .writes import workflow_terminal_write

logger = logging.getLogger("weftboard.claims.runtime")

DriveOutcome = Literal[
    "completed", "failed", "parked", "paused", "deposed", "not-running", "unknown-type", "busy"
]


class WorkflowDriver:
    def __init__(
        self,
        registry: ClaimRegistry,
        *,
        clock: Clock,
        disposing: Callable[[], bool] = lambda: False,
    ) -> None:
        self.registry = registry
        self.clock = clock
        self.disposing = disposing
        self._lock = threading.Lock()
        self._driving: set[str] = set()
        # Claims a fenced write refused while the registry still caches them (until its
        # next renewal finds them lost): re-driving one would rerun a step for nothing.
        self._deposed: dict[str, int] = {}

    def drive(self, workflow_id: str) -> DriveOutcome:
        """Run the workflow from its last checkpoint. A drive of an id already in a drive
        of this driver answers "busy" at once, so one process never runs it twice."""
        with self._lock:
            if workflow_id in self._driving:
                return "busy"
            self._driving.add(workflow_id)
        try:
            return self._drive(workflow_id)
        finally:
            with self._lock:
                self._driving.discard(workflow_id)

    def due_now(self, given: Sequence[str] | None = None) -> list[str]:
        """The running workflows this engine holds whose next drive is due by now (not
        parked, or parked past their wake time), the soonest due first. One query through
        the due-time index (claims.models.parks): a parked workflow costs nothing until
        its time comes. No cap: a cap would be filled first by workflows due at 0 (ones this
        engine cannot drive stay there) and starve the sleepers behind them. Only ids the
        registry holds are answered: a claim the database names this engine for but the
        registry does not know (a grant whose answer was lost) is not this engine's to
        drive yet, and one the registry still caches but the row names another engine for
        is not its any more. ``given``: the ids beat found due for this engine (its share
        of one read for the fleet), which stand in for the read."""
        if given is not None:
            held_ids = set(self.registry.held_workflow_ids())
            return [workflow_id for workflow_id in given if workflow_id in held_ids]
        held_here = WorkflowClaim.objects.filter(
            workflow_id=OuterRef("workflow_id"), holder_engine_id=self.registry.engine_id
        )
        due = (
            Workflow.objects.filter(status=WorkflowStatus.RUNNING, due_at_ms__lte=self.clock())
            .filter(Exists(held_here))
            .order_by("due_at_ms", "workflow_id")
            .values_list("workflow_id", flat=True)
        )
        held = set(self.registry.held_workflow_ids())
        return [workflow_id for workflow_id in due if workflow_id in held]

    # -- internals -------------------------------------------------------------

    def _drive(self, workflow_id: str) -> DriveOutcome:
        epoch = self.registry.current_epoch(workflow_id)
        with self._lock:
            deposed_at = self._deposed.get(workflow_id)
            if deposed_at is not None and deposed_at != epoch:
                del self._deposed[workflow_id]  # a new grant since: drive it
                deposed_at = None
        if epoch is not None and deposed_at == epoch:
            return "deposed"
        row = (
            Workflow.objects.filter(workflow_id=workflow_id)
            .values_list("workflow_type", "status", "state")
            .first()
        )
        if row is None or row[1] != WorkflowStatus.RUNNING:
            return "not-running"
        workflow_type, _, raw_state = row
        if epoch is None:
            logger.warning(
                "engine %s was asked to drive workflow %s, which it does not hold",
                self.registry.engine_id,
                workflow_id,
            )
            return "deposed"
        try:
            fn = workflow_function(workflow_type)
        except UnknownWorkflowTypeError:
            logger.warning(
                "engine %s cannot drive workflow %s: type %r is not registered here",
                self.registry.engine_id,
                workflow_id,
                workflow_type,
            )
            return "unknown-type"
        ctx = WorkflowContext(
            workflow_id=workflow_id,
            state=_loaded_state(raw_state),
            epoch=epoch,
            registry=self.registry,
            clock=self.clock,
            disposing=self.disposing,
        )
        try:
            result = fn(ctx)
        except BaseException as error:
            if ctx.stopped_by is not None:
                return self._stopped(ctx, ctx.stopped_by)
            if isinstance(error, DriveStopped | EngineDeposedError):
                return self._stopped(ctx, error)
            if not isinstance(error, Exception):
                raise  # KeyboardInterrupt, SystemExit: the process is going away
            return self._fail(ctx, workflow_type, error)
        if ctx.stopped_by is not None:
            # The workflow code caught the stop and returned: what it returned is void.
            return self._stopped(ctx, ctx.stopped_by)
        try:
            stored = json_value(result, what="the result of the workflow")
        except Exception as error:
            return self._fail(ctx, workflow_type, error)
        return self._end(ctx, workflow_type, WorkflowStatus.COMPLETED, stored)

    def _stopped(self, ctx: WorkflowContext, error: BaseException) -> DriveOutcome:
        if isinstance(error, DriveStopped):
            logger.debug("%s", error)
            return error.outcome
        if isinstance(error, EngineDeposedError):
            self._note_deposed(ctx)
            return "deposed"
        raise error  # the database failed under a checkpoint: the caller re-drives later

    def _fail(self, ctx: WorkflowContext, workflow_type: str, error: Exception) -> DriveOutcome:
        """End the workflow as failed, recording why while the traceback is at hand."""
        failure = ctx.failure_of(error, at_ms=self.clock())
        return self._end(
            ctx, workflow_type, WorkflowStatus.FAILED, _error_record(error), failure=failure
        )

    def _end(
        self,
        ctx: WorkflowContext,
        workflow_type: str,
        status: WorkflowStatus,
        value: Any,
        *,
        failure: dict[str, Any] | None = None,
    ) -> DriveOutcome:
        now = self.clock()
        key = "result" if status == WorkflowStatus.COMPLETED else "error"
        state = {**ctx.state, key: value}
        state.pop("park", None)

        def write() -> None:
            ctx.check_epoch_unchanged()
            workflow_terminal_write(
                ctx.workflow_id,
                workflow_type=workflow_type,
                status=status,
                state=state,
                now_ms=now,
                failure=failure,
            )

        try:
            self.registry.finish(ctx.workflow_id, write)
        except EngineDeposedError:
            self._note_deposed(ctx)
            return "deposed"
        if status == WorkflowStatus.COMPLETED:
            return "completed"
        logger.info("workflow %s failed: %s", ctx.workflow_id, value)
        return "failed"

    def _note_deposed(self, ctx: WorkflowContext) -> None:
        with self._lock:
            # Forget the claims the registry has dropped or re-granted meanwhile.
            for workflow_id, epoch in list(self._deposed.items()):
                if self.registry.current_epoch(workflow_id) != epoch:
                    del self._deposed[workflow_id]
            self._deposed[ctx.workflow_id] = ctx.epoch
        # The drive stopped unwritten: a fenced write found the claim had moved on.
        log_event(
            logger,
            logging.WARNING,
            "deposed",
            workflow=ctx.workflow_id,
            epoch=ctx.epoch,
            engine=self.registry.engine_id,
        )


def _loaded_state(raw: Any) -> dict[str, Any]:
    return dict(raw) if isinstance(raw, dict) else {"input": raw}


def _error_record(error: BaseException) -> dict[str, str]:
    return {"type": type(error).__name__, "message": str(error)}
