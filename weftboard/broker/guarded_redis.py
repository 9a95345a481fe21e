"""kombu's Redis transport, with the decoding guard on the one path a worker consumes by.

kombu decodes a popped message inside ``_brpop_read`` and lets the error escape, so one
line of garbage pushed onto a queue by another program stops the worker. This channel
decodes it through the guard first: a bad message is logged with its queue, counted and
dropped (it has already left Redis), and the worker goes on.
"""

from __future__ import annotations

from queue import Empty
from typing import Any

from kombu.transport import redis
from kombu.utils.encoding import bytes_to_str

from claims.engine.broker_guard import UndecodableMessage, decode_envelope, record_rejection


class Channel(redis.Channel):
    def _brpop_read(self, **options: Any) -> bool:
        # kombu 5.7's own body, with the decode moved in front of the delivery.
        try:
            try:
                popped = self.client.parse_response(self.client.connection, "BRPOP", **options)
            except self.connection_errors:  # type: ignore[attr-defined]
                self.client.connection.disconnect()
                raise
            if not popped:
                raise Empty()
            destination, item = popped
            queue = bytes_to_str(destination).rsplit(self.sep, 1)[0]
            self._queue_cycle.rotate(queue)  # type: ignore[attr-defined]
            try:
                payload = decode_envelope(item)
            except UndecodableMessage as error:
                record_rejection(queue, str(error))
                return True
            self.connection._deliver(payload, queue)
            return True
        finally:
            self._in_poll = None
            flush_reauth = getattr(self, "_flush_brpop_reauth", None)  # kombu 5.7 and later
            if flush_reauth is not None:
                flush_reauth()


class Transport(redis.Transport):
    Channel = Channel
