"""Broker transports: the embedded spool, and the decoding guard every consumer relies on."""

from __future__ import annotations

from kombu.transport import TRANSPORT_ALIASES

SPOOL_TRANSPORT = "weftboard.broker.spool:Transport"


def register_transports() -> None:
    """Make ``spool://`` a kombu URL in this process (the Celery app calls this at import)."""
    TRANSPORT_ALIASES.setdefault("spool", SPOOL_TRANSPORT)
