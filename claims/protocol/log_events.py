"""The log lines an operator acts on, one per event, in one format an eye or grep can read:
``event=claim-lost workflow=wf-1 epoch=3 engine=4f1c…``. Routine work (ticks, passes) is
not logged at INFO; these are (docs/design.md §10)."""

from __future__ import annotations

import logging


def event_line(event: str, **fields: object) -> str:
    """``event=<name>`` then ``key=value`` per field, in the order given; None reads ``-``."""
    parts = [f"event={event}"]
    parts += [f"{key}={_value(value)}" for key, value in fields.items()]
    return " ".join(parts)


def _value(value: object) -> str:
    text = "-" if value is None else str(value)
    # Quoted only when a space or quote would make the line ambiguous to split.
    return f'"{text}"' if any(c in text for c in ' "=') else text


def log_event(logger: logging.Logger, level: int, event: str, **fields: object) -> None:
    """Log one event line; ``record.event`` carries its name for filters and tests."""
    logger.log(level, "%s", event_line(event, **fields), extra={"event": event})


_claims_logger = logging.getLogger("weftboard.claims")


# A batch that took over more claims than this (a dead engine's hundreds) is logged as one
# line naming the first few: each grant is in the audit log, and a line per claim would
# bury everything else.
TAKEOVER_LINES_MAX = 5


def log_takeovers(granted: dict[str, int], engine_id: str) -> None:
    """The takeovers one set-based attempt won: a line each, or one line for a crowd."""
    if len(granted) <= TAKEOVER_LINES_MAX:
        for workflow_id, epoch in granted.items():
            log_takeover(workflow_id, epoch, engine_id)
        return
    shown = list(granted)[:TAKEOVER_LINES_MAX]
    log_event(
        _claims_logger,
        logging.INFO,
        "takeover",
        count=len(granted),
        engine=engine_id,
        workflows=" ".join(shown) + f" +{len(granted) - len(shown)} more (see the audit log)",
    )


def log_takeover(workflow_id: str, epoch: int, engine_id: str) -> None:
    """A takeover this engine won: once per grant, whichever reclaim path granted it."""
    log_event(
        _claims_logger,
        logging.INFO,
        "takeover",
        workflow=workflow_id,
        epoch=epoch,
        engine=engine_id,
    )
