"""How a drive stops early, and the mistakes in workflow code that fail a workflow."""

from __future__ import annotations

from typing import Literal

StopOutcome = Literal["paused", "parked"]


class DriveStopped(BaseException):
    """Unwinds the workflow function when the drive must stop without a terminal write.

    A BaseException, like GeneratorExit: workflow code that catches ``Exception``
    around a step must not swallow it and carry on with side effects.
    """

    outcome: StopOutcome = "paused"

    def __init__(self, workflow_id: str, reason: str) -> None:
        super().__init__(f"drive of workflow {workflow_id!r} stopped: {reason}")
        self.workflow_id = workflow_id
        self.reason = reason


class DrivePaused(DriveStopped):
    """Disposing, or past the local deadline: a later drive resumes from the last checkpoint."""

    outcome: StopOutcome = "paused"


class DriveParked(DriveStopped):
    """The workflow sleeps until ``wake_at_ms``; it stays running and its claim is kept."""

    outcome: StopOutcome = "parked"

    def __init__(self, workflow_id: str, wake_at_ms: int) -> None:
        super().__init__(workflow_id, f"parked until {wake_at_ms} ms")
        self.wake_at_ms = wake_at_ms


class WorkflowCodeError(Exception):
    """Workflow code broke a rule of the runtime; the workflow fails with this message."""


class DuplicateStepError(WorkflowCodeError, ValueError):
    def __init__(self, workflow_id: str, step: str) -> None:
        super().__init__(
            f"workflow {workflow_id!r} ran step {step!r} twice: step names are checkpoint "
            "keys and must be unique within a workflow"
        )
        self.workflow_id = workflow_id
        self.step = step


class InvalidStepNameError(WorkflowCodeError, ValueError):
    """A step name that is not a non-empty string of at most 100 characters."""


class InvalidSleepError(WorkflowCodeError, ValueError):
    """A sleep of a negative, infinite or non-numeric number of seconds."""


class NotJsonSerializableError(WorkflowCodeError, TypeError):
    """A step result or a workflow result that cannot be stored as JSON."""
