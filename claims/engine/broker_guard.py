"""What a consumer does with a message it cannot decode: log it with its queue, count it,
and carry on. A worker must never exit over one bad message (kombu's transports raise, and
Celery takes any error out of ``drain_events`` as an unrecoverable consumer error).
"""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any

from kombu.serialization import loads as decode_body_content
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads

logger = logging.getLogger("weftboard.broker")

# The JSON envelope of a message on a virtual transport, as kombu writes it.
ENVELOPE_KEYS = ("body", "properties", "content-type", "content-encoding", "headers")
# What Celery accepts by default. Never None here: kombu would then unpickle a pickled body,
# running code from whoever could write to the queue.
ACCEPT_CONTENT = frozenset({"application/json"})

_rejected = 0
_rejected_lock = threading.Lock()


class UndecodableMessage(ValueError):
    """A raw message that is not one kombu could deliver; the text says why."""


def rejected_total() -> int:
    """Messages this process has refused since it started (the engine persists the count)."""
    return _rejected


def record_rejection(queue: str, reason: str, *, where: str = "dropped") -> None:
    global _rejected
    with _rejected_lock:
        _rejected += 1
    logger.error("undecodable message on queue %r (%s); %s", queue, reason, where)


def decode_envelope(raw: bytes | str, *, accept: frozenset[str] = ACCEPT_CONTENT) -> dict[str, Any]:
    """The message envelope in ``raw``, checked as far as a consumer will read it.

    Raises UndecodableMessage for an empty or truncated write, JSON that is not an
    envelope, a body that does not decode, or a content type the consumer refuses.
    """
    try:
        payload: Any = loads(bytes_to_str(raw))
    except (ValueError, UnicodeDecodeError) as error:
        raise UndecodableMessage(f"not JSON: {error}") from error
    check_envelope(payload, accept=accept)
    envelope: dict[str, Any] = payload  # check_envelope refused anything but an object
    return envelope


def check_envelope(payload: Any, *, accept: frozenset[str] = ACCEPT_CONTENT) -> None:
    if not isinstance(payload, dict):
        raise UndecodableMessage(f"a JSON {type(payload).__name__}, not a message envelope")
    missing = [key for key in ENVELOPE_KEYS if key not in payload]
    if missing:
        raise UndecodableMessage(f"envelope lacks {', '.join(missing)}")
    properties = payload["properties"]
    if not isinstance(properties, dict) or not isinstance(properties.get("delivery_info"), dict):
        raise UndecodableMessage("envelope properties lack delivery_info")
    if "delivery_tag" not in properties:
        raise UndecodableMessage("envelope properties lack a delivery_tag")
    if not isinstance(payload["headers"], dict):
        raise UndecodableMessage("envelope headers are not a mapping")
    body = payload["body"]
    try:
        if properties.get("body_encoding") == "base64":
            body = base64.b64decode(body, validate=True)
        decode_body_content(
            body,
            payload["content-type"],
            payload["content-encoding"],
            accept=accept,
        )
    except Exception as error:
        raise UndecodableMessage(
            f"body of type {payload['content-type']!r} does not decode: {error!r}"
        ) from error
