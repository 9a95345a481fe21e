"""The workflow runtime (docs/design.md §5): registered workflow functions, durable steps and
sleeps checkpointed by fenced writes, and the driver that runs one held workflow.

Importing ``claims.runtime.demo_workflows`` registers the demo types.
"""

from claims.workflow_types import (
    DuplicateWorkflowTypeError,
    UnknownWorkflowTypeError,
    is_type_registered,
    load_workflow_modules,
    registered_types,
    workflow,
    workflow_function,
)

from .context import WorkflowContext
from .driver import DriveOutcome, WorkflowDriver
from .errors import (
    DriveParked,
    DrivePaused,
    DriveStopped,
    DuplicateStepError,
    InvalidSleepError,
    InvalidStepNameError,
    NotJsonSerializableError,
    WorkflowCodeError,
)

__all__ = [
    "DriveOutcome",
    "DriveParked",
    "DrivePaused",
    "DriveStopped",
    "DuplicateStepError",
    "DuplicateWorkflowTypeError",
    "InvalidSleepError",
    "InvalidStepNameError",
    "NotJsonSerializableError",
    "UnknownWorkflowTypeError",
    "WorkflowCodeError",
    "WorkflowContext",
    "WorkflowDriver",
    "is_type_registered",
    "load_workflow_modules",
    "registered_types",
    "workflow",
    "workflow_function",
]
