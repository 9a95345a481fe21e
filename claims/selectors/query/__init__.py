"""A query (claims.query) as the conditions the claim and workflow listings filter on:
Django expressions over the same columns and indexes the pages read, never SQL text."""

from .claims import claim_query_condition
from .context import QueryContext
from .workflows import workflow_query_condition

__all__ = ["QueryContext", "claim_query_condition", "workflow_query_condition"]
