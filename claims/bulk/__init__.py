"""Bulk operations: act on every workflow a query selects, as a fenced, tracked,
resumable job (docs/design.md §7, "Bulk operations").

``preview`` counts what an action would do; the services (claims.services.bulk) freeze a
job's items (``freeze``) and pause, resume or abort it; ``runner`` acts on the items a
chunk at a time (``chunk``), each fenced on the epoch it was frozen at.
"""

from .preview import BulkPreview, bulk_preview
from .runner import BulkHooks, bulk_run, bulk_run_due

__all__ = ["BulkHooks", "BulkPreview", "bulk_preview", "bulk_run", "bulk_run_due"]
