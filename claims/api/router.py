"""The one Router of the claims app; the route modules of this package decorate it."""

from __future__ import annotations

from django.urls import register_converter
from django.urls.converters import get_converters
from ninja import Router

router = Router(tags=["claims"])


class WorkflowIdConverter:
    """Any non-empty text, slashes and control characters included, so that every id
    reaches check_workflow_id and a bad one gets a 422 rather than a 404."""

    regex = "(?s:.+)"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


if "workflowid" not in get_converters():
    register_converter(WorkflowIdConverter, "workflowid")

# The URL segment for a workflow id in route paths.
WORKFLOW = "{workflowid:workflow_id}"
