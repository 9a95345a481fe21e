"""The claims app's JSON API: one Router, mounted by weftboard.api under /api/v1/."""

from . import backfills, fleet, ownership, workflows
from .router import router

__all__ = ["backfills", "fleet", "ownership", "router", "workflows"]
