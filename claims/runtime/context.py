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

from .errors import (
    DriveParked,
    DrivePaused,
    DuplicateStepError,
    InvalidSleepError,
    InvalidStepNameError,
    NotJsonSerializableError,
)
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
        result = json_value(fn(*args), what=f"the result of step {name!r}")
        now = self._clock()
        record = {"result": result, "epoch": self.epoch, "engine_id": self.engine_id, "at_ms": now}
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

    # -- internals -------------------------------------------------------------

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
