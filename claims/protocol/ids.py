"""What a workflow id may be: every interface checks ids with the same rule."""

from __future__ import annotations

import unicodedata

from .errors import InvalidWorkflowIdError

WORKFLOW_ID_MAX_LENGTH = 255


def check_workflow_id(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidWorkflowIdError(f"a workflow id must be a non-empty string; got {value!r}")
    if len(value) > WORKFLOW_ID_MAX_LENGTH:
        raise InvalidWorkflowIdError(
            f"a workflow id must be at most {WORKFLOW_ID_MAX_LENGTH} characters; got {len(value)}"
        )
    # Control characters would corrupt logs, headers and terminal output.
    if any(unicodedata.category(char).startswith("C") for char in value):
        raise InvalidWorkflowIdError("a workflow id must not contain control characters")
    return value
