"""The log lines an operator acts on, one per event, in one format an eye or grep can read:
``event=claim-lost workflow=wf-1 epoch=3 engine=4f1c…``. Routine work (ticks, passes) is
not logged at INFO; these are (docs/design.md §10)."""

from __future__ import annotations

import logging


def event_line(event: str, **fields: object) -> str:
    """``event=<name>`` then ``key=value`` per field, in the order given; None reads ``-``.

    A value is written bare only when it cannot be misread: anything else is quoted with
    its quotes, backslashes and invisible characters escaped, so that no value (a workflow
    id, an error message) can add a field or a line of its own."""
    parts = [f"event={event}"]
    parts += [f"{key}={_value(value)}" for key, value in fields.items()]
    return " ".join(parts)


# Characters a line is split on or quoted with, by a reader of these lines or a shell.
_SEPARATORS = frozenset(" \"'=\\")
# The escapes a reader of C, Python or JSON strings knows; any other character that
# is not printable is written as its code point.
_NAMED_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quoted(text: str) -> str:
    """``text`` in double quotes, with ``\\``, ``"`` and every character that is not
    printable (control characters, DEL, C1, line and paragraph separators, lone
    surrogates, format characters) escaped: ``\\n``, ``\\x1b``, ``\\u2028``."""
    return '"' + "".join(_escaped(c) for c in text) + '"'


def _escaped(char: str) -> str:
    named = _NAMED_ESCAPES.get(char)
    if named is not None:
        return named
    if char.isprintable():
        return char
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _value(value: object) -> str:
    text = "-" if value is None else str(value)
    bare = text != "" and all(c.isprintable() and c not in _SEPARATORS for c in text)
    return text if bare else quoted(text)


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
