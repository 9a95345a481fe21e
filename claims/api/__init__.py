"""The claims app's JSON API: one Router, mounted by weftboard.api under /api/v1/."""

from . import backfills, engines, ownership, reclaim, saved_queries, workflows
from .router import router

__all__ = ["backfills", "engines", "ownership", "reclaim", "router", "saved_queries", "workflows"]
