"""What a workflow id may be: every interface checks ids with the same rule."""

from __future__ import annotations

import unicodedata

from .errors import InvalidInputError, InvalidWorkflowIdError
from .text import check_identifier

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


# A path segment of only these is resolved away by every browser and URL library (".."
# climbs a level), so a page could never link to such a workflow; weft refuses them too.
DOT_SEGMENTS = frozenset({".", ".."})


def check_new_workflow_id(value: object) -> str:
    """``check_workflow_id``, and not ``.`` or ``..``: the id a workflow is created under.
    Existing rows keep their ids (a bulk import may hold anything), so lookups use
    ``check_workflow_id`` alone."""
    workflow_id = check_workflow_id(value)
    if workflow_id in DOT_SEGMENTS:
        raise InvalidWorkflowIdError(f"a workflow id must not be {workflow_id!r}")
    return workflow_id


ENGINE_ID_MAX_LENGTH = 255


def check_engine_id(value: object) -> str:
    """An engine id as a path, a filter or a form names it: the text rule (no control
    characters, at most 255 characters), and not empty."""
    if value == "":
        raise InvalidInputError("an engine id must not be empty")
    return check_identifier(value, what="an engine id", max_length=ENGINE_ID_MAX_LENGTH)
