"""The claims app's JSON API: one Router, mounted by weftboard.api under /api/v1/."""

from . import backfills, bulk, engines, ownership, reclaim, saved_queries, workflows
from .router import router

__all__ = [
    "backfills",
    "bulk",
    "engines",
    "ownership",
    "reclaim",
    "router",
    "saved_queries",
    "workflows",
]
