"""The rules every write obeys, whatever interface asked for it: the read-only switch,
the operator's reason, and a workflow type some engine can run.

They live here, in the services, so the pages, the API and the admin cannot disagree:
an interface may check early for a friendlier answer, but the service always checks.
"""

from __future__ import annotations

from django.conf import settings

from claims.conf import read_only_reason
from claims.protocol.errors import ClaimConfigError
from claims.protocol.text import check_reason
from claims.workflow_types import (
    UnknownWorkflowTypeError,
    is_type_registered,
    load_workflow_modules,
)
from claims.workflow_types import check_workflow_input as check_type_input

from .errors import ReadOnlyError


def refuse_if_read_only() -> None:
    """Raise ReadOnlyError while writes are switched off (claims.conf.read_only_reason)."""
    if reason := read_only_reason():
        raise ReadOnlyError(reason)


def operator_reason(reason: str | None, *, required: bool = True) -> str:
    """The one operator-reason rule (claims.protocol.text.check_reason): an operator's
    action (cancel, force release, force takeover) owes the audit log a reason without
    control characters. A program ending its own workflow passes ``required=False``;
    what it gives still follows the rule. Raises InvalidInputError."""
    return check_reason(reason or "", required=required)


def check_workflow_input(workflow_type: str, value: object) -> None:
    """The type's own input check (``@workflow(..., check_input=...)``), for a type
    ``registered_workflow_type`` has loaded. Raises InvalidInputError."""
    check_type_input(workflow_type, value)


def registered_workflow_type(workflow_type: str) -> str:
    """Only types some engine can run: load the engines' workflow modules
    (WEFTBOARD_WORKFLOW_MODULES), then ask the registry. Raises UnknownWorkflowTypeError."""
    if not workflow_type:
        raise ClaimConfigError("a workflow type is required")
    load_workflow_modules(settings.WEFTBOARD_WORKFLOW_MODULES)
    if not is_type_registered(workflow_type):
        raise UnknownWorkflowTypeError(workflow_type)
    return workflow_type
