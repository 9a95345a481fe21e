"""What a workflow function sees: its input, and durable ``step`` and ``sleep``.

A step's result is checkpointed into ``Workflow.state["steps"][name]`` by a
fenced write before the next step starts, so a re-drive (by this engine or a
successor) replays it from the record instead of running it again. A new side
effect only starts while this engine still holds the claim at the drive's
epoch, is not disposing, and is within the claim's local deadline.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from django.db import InterfaceError, OperationalError

from claims.protocol import ClaimRegistry, Clock, EngineDeposedError
from claims.protocol.times import MAX_TIME_MS

from .errors import (
    DriveParked,
    DrivePaused,
    DuplicateStepError,
    InvalidSleepError,
    InvalidStepNameError,
    NotJsonSerializableError,
)
from .failures import STEP_ERRORS_KEPT, error_summary, failure_record
from .writes import workflow_checkpoint_write

T = TypeVar("T")

STEP_NAME_MAX_LENGTH = 100  # StepLedger.step, and a sane checkpoint key


def json_value(value: Any, *, what: str) -> Any:
    """``value`` as it will read back from the database (tuples become lists, keys strings).

    First runs and replays then return the same thing. Raises NotJsonSerializableError.
    """
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise NotJsonSerializableError(
            f"{what} is a {type(value).__name__}, which cannot be stored as JSON: {error}"
        ) from None
    return json.loads(text)


class WorkflowContext:
    """One drive's view of a workflow. Not thread-safe: one drive runs on one thread."""

    def __init__(
        self,
        *,
        workflow_id: str,
        state: dict[str, Any],
        epoch: int,
        registry: ClaimRegistry,
        clock: Clock,
        disposing: Callable[[], bool],
    ) -> None:
        self.workflow_id = workflow_id
        self.epoch = epoch
        self._state = state
        self._registry = registry
        self._clock = clock
        self._disposing = disposing
        self._steps_seen: set[str] = set()
        self._sleeps_seen = 0
        self._stopped_by: BaseException | None = None
        # Step retries within this drive: runs per step name, and each run that raised
        # (kept for the failure record and the checkpoint of a step that then succeeded).
        self._step_runs: dict[str, int] = {}
        self._step_errors: list[dict[str, Any]] = []
        # The last exceptions that left a step, with its name (held, not keyed by id():
        # an id is reused once its exception is collected).
        self._raised_in_step: list[tuple[BaseException, str]] = []

    @property
    def input(self) -> Any:
        return self._state.get("input")

    @property
    def engine_id(self) -> str:
        return self._registry.engine_id

    @property
    def state(self) -> dict[str, Any]:
        """The state as last committed by this drive (or as loaded)."""
        return self._state

    @property
    def stopped_by(self) -> BaseException | None:
        """Why the drive stopped without a terminal write, even if workflow code caught it."""
        return self._stopped_by

    def now_ms(self) -> int:
        return self._clock()

    def step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` once for the workflow's life and return its (JSON) result."""
        self._refuse_after_stop()
        if not isinstance(name, str) or not name or len(name) > STEP_NAME_MAX_LENGTH:
            raise InvalidStepNameError(
                f"a step name is a non-empty string of at most {STEP_NAME_MAX_LENGTH} "
                f"characters, not {name!r}"
            )
        if name in self._steps_seen:
            raise DuplicateStepError(self.workflow_id, name)
        recorded = self._records("steps").get(name)
        if isinstance(recorded, dict) and "result" in recorded:
            self._steps_seen.add(name)
            # A copy: workflow code that edits what it got must not edit the checkpoint.
            return copy.deepcopy(recorded["result"])
        self._check_may_start_side_effect(name)
        # A step that raised has no result: workflow code may catch that and retry the name.
        result = self._run_step(name, fn, *args)
        now = self._clock()
        record = {"result": result, "epoch": self.epoch, "engine_id": self.engine_id, "at_ms": now}
        record.update(self._retry_note(name))
        state = {**self._state, "steps": {**self._records("steps"), name: record}}
        state.pop("park", None)  # a step after a sleep means the sleep is over
        self._commit(state, now)
        self._steps_seen.add(name)
        return copy.deepcopy(result)

    def sleep(self, seconds: float) -> None:
        """Park the workflow for ``seconds``; a later drive continues after the wake time.

        Sleeps are numbered in call order. A zero sleep returns at once and writes nothing.
        """
        self._refuse_after_stop()
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not math.isfinite(seconds)
            or seconds < 0
        ):
            raise InvalidSleepError(f"cannot sleep for {seconds!r} seconds")
        number = self._sleeps_seen
        self._sleeps_seen += 1
        now = self._clock()
        recorded = self._records("sleeps").get(str(number))
        if isinstance(recorded, dict) and isinstance(recorded.get("wake_at_ms"), int):
            wake_at: int = recorded["wake_at_ms"]
            if wake_at <= now:
                return
            self._halt(DriveParked(self.workflow_id, wake_at))
        if seconds == 0:
            return
        # Checked before rounding: 1e308 seconds is finite, its milliseconds are not.
        if seconds * 1000 > MAX_TIME_MS - now:
            # Stored, it could never be shown or compared by anything that reads dates.
            raise InvalidSleepError(
                f"cannot sleep for {seconds!r} seconds: the wake-up would fall after "
                "9999-12-31T23:59:59.999Z"
            )
        wake_at = now + math.ceil(seconds * 1000)
        record = {
            "seconds": seconds,
            "wake_at_ms": wake_at,
            "epoch": self.epoch,
            "engine_id": self.engine_id,
            "at_ms": now,
        }
        state = {
            **self._state,
            "sleeps": {**self._records("sleeps"), str(number): record},
            "park": {"sleep": number, "wake_at_ms": wake_at},
        }
        self._commit(state, now)
        self._halt(DriveParked(self.workflow_id, wake_at))

    def failure_of(self, error: BaseException, *, at_ms: int) -> dict[str, Any]:
        """Why this drive fails with ``error``: the record Workflow.failure keeps
        (claims.runtime.failures), naming the step the error (or one it chains) left."""
        return failure_record(
            error,
            step=self._step_of(error),
            at_ms=at_ms,
            epoch=self.epoch,
            engine_id=self.engine_id,
            step_errors=self._step_errors,
        )

    # -- internals -------------------------------------------------------------

    def _run_step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        """One run of a step's function, its result as JSON; a run that raises is noted."""
        self._step_runs[name] = self._step_runs.get(name, 0) + 1
        try:
            return json_value(fn(*args), what=f"the result of step {name!r}")
        except Exception as error:
            self._raised_in_step = [*self._raised_in_step[-STEP_ERRORS_KEPT + 1 :], (error, name)]
            self._step_errors = self._step_errors[-STEP_ERRORS_KEPT + 1 :]
            self._step_errors.append(
                {
                    "step": name,
                    "attempt": self._step_runs[name],
                    **error_summary(error),
                    "at_ms": self._clock(),
                }
            )
            raise

    def _retry_note(self, name: str) -> dict[str, Any]:
        """For a step that succeeded after runs that raised: how many runs, and the last
        error, kept in its checkpoint so the workflow's history shows the retries."""
        runs = self._step_runs.get(name, 1)
        if runs <= 1:
            return {}
        errors = [e for e in self._step_errors if e["step"] == name]
        last = errors[-1] if errors else None
        note: dict[str, Any] = {"attempts": runs}
        if last is not None:
            note["last_error"] = f"{last['type']}: {last['message']}"
        return note

    def _step_of(self, error: BaseException) -> str | None:
        """The step ``error`` was raised in, following its cause and context chain (workflow
        code may wrap a step's error in its own); None for an error outside every step."""
        seen: set[int] = set()
        current: BaseException | None = error
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            for raised, step in self._raised_in_step:
                if raised is current:
                    return step
            current = current.__cause__ or current.__context__
        return None

    def _records(self, key: str) -> dict[str, Any]:
        records = self._state.get(key)
        return records if isinstance(records, dict) else {}

    def _check_may_start_side_effect(self, step: str) -> None:
        if self._registry.current_epoch(self.workflow_id) != self.epoch:
            self._halt(EngineDeposedError(self.workflow_id))
        if self._disposing():
            self._halt(DrivePaused(self.workflow_id, f"engine is disposing (before step {step!r})"))
        if not self._registry.within_deadline(self.workflow_id):
            self._halt(
                DrivePaused(
                    self.workflow_id,
                    f"past the local deadline of its claim (before step {step!r})",
                )
            )

    def fenced(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` in a transaction that commits only while this drive's epoch is current.

        For a side effect kept in the same database: the claim row stays locked until the
        transaction ends, so an engine deposed meanwhile cannot commit it late.
        """
        self._refuse_after_stop()

        def write() -> T:
            self.check_epoch_unchanged()
            return fn()

        try:
            return self._registry.fenced_write(self.workflow_id, write)
        except (EngineDeposedError, OperationalError, InterfaceError) as error:
            # Deposed, or the database failed under the fence: this drive writes no more,
            # and a lost connection is the engine's to retry, not the workflow's failure.
            self._stopped_by = error
            raise

    def check_epoch_unchanged(self) -> None:
        """Inside a fence: the registry fenced at the epoch it caches now, but this drive's
        state is only current at the epoch the drive began with (epochs only grow)."""
        if self._registry.current_epoch(self.workflow_id) != self.epoch:
            raise EngineDeposedError(self.workflow_id)

    def _commit(self, state: dict[str, Any], now_ms: int) -> None:
        def write() -> None:
            self.check_epoch_unchanged()
            workflow_checkpoint_write(self.workflow_id, state=state, now_ms=now_ms)

        try:
            self._registry.fenced_write(self.workflow_id, write)
        except BaseException as error:
            # Deposed, or the database failed: either way this drive writes no more.
            self._stopped_by = error
            raise
        self._state = state

    def _halt(self, error: BaseException) -> NoReturn:
        self._stopped_by = error
        raise error

    def _refuse_after_stop(self) -> None:
        if self._stopped_by is not None:
            raise self._stopped_by
