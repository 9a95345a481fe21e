"""The embedded broker: a kombu transport with one folder per queue and one file per message.

kombu's filesystem transport writes a message file in place, so a consumer in another
process can take and read it before the write has ended, and a worker dies on the half
message. Here a publisher writes under ``tmp/`` and renames the finished file into its
queue's folder (a rename within one filesystem is atomic, so a consumer sees a whole file
or none), and a consumer claims a file by renaming it into ``claimed/``: of several
consumers, exactly one rename succeeds.

Layout under the root folder (transport option ``spool_folder``)::

    queues/<queue>/<time_ns>-<pid>-<seq>[-x<expires_ms>].msg   ready, oldest name first
    tmp/                      messages being written; nobody lists it
    claimed/<pid>~<queue>~<name>   taken by the consumer with that pid, being read
    rejected/<queue>/<name>   messages that did not decode, kept for a person to look at
    exchanges/<exchange>.json the exchange's type and bindings, replaced whole under its .lock

Messages carry task arguments between processes, so every folder is made 0700 and every
file 0600 here, whatever the umask of the process that opened the channel.

Delivery is exactly once while consumers live. A consumer that dies between its claim and
its read leaves the file in ``claimed/``; the next channel opened on the root puts it back
(at least once). As on kombu's other virtual transports, a message already handed to a
consumer's memory dies with it: what weftboard sends this way (ticks, adopt orders) either
expires or is sent again.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import virtual

from claims.engine.broker_guard import UndecodableMessage, decode_envelope
from weftboard.broker import spool_files as files
from weftboard.private_var import DIR_MODE

# How often a consumer deletes expired messages in every queue, including queues whose
# consumer is gone (a dead engine's ticks would otherwise stay forever).
SWEEP_INTERVAL_S = 60.0
DEFAULT_POLLING_INTERVAL_S = 0.1


class Channel(virtual.Channel):
    """kombu's virtual channel over the spool's folders (operations in ``spool_files``)."""

    supports_fanout = True

    def __init__(self, connection: Any, **kwargs: Any) -> None:
        options = connection.client.transport_options
        folder = options.get("spool_folder")
        if not folder:
            raise ChannelError("the spool transport needs the transport option 'spool_folder'")
        self.root = Path(folder)
        files.make_folders(self.root)
        self._ready: dict[str, deque[str]] = {}
        self._next_sweep = 0.0
        super().__init__(connection, **kwargs)
        files.restore_orphans(self.root)

    # -- messages ------------------------------------------------------------------

    def _queue_folder(self, queue: str) -> Path:
        return self.root / "queues" / files.checked_name("queue", queue)

    def _put(self, queue: str, message: dict[str, Any], **kwargs: Any) -> None:
        files.publish(self.root, self._queue_folder(queue), message)

    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        self._sweep_when_due()
        folder = self._queue_folder(queue)
        ready = self._ready.get(queue)
        if not ready:
            ready = self._ready[queue] = deque(files.list_ready(folder))
        now_ms = time.time() * 1000
        while ready:
            name = ready.popleft()
            if files.name_expired(name, now_ms):
                files.unlink_quietly(folder / name)
                continue
            claimed = files.claim(self.root, folder, queue, name)
            if claimed is None:
                continue  # another consumer claimed it first
            try:
                payload = decode_envelope(claimed.read_bytes())
            except UndecodableMessage as error:
                files.set_aside(self.root, queue, name, claimed, str(error))
                continue
            except OSError as error:
                raise ChannelError(f"cannot read {claimed}: {error}") from error
            claimed.unlink()
            return payload
        raise Empty()

    def _size(self, queue: str) -> int:
        return len(files.list_all(self._queue_folder(queue)))

    def _purge(self, queue: str) -> int:
        folder = self._queue_folder(queue)
        self._ready.pop(queue, None)
        count = 0
        for name in files.list_all(folder):
            with contextlib.suppress(FileNotFoundError):
                (folder / name).unlink()
                count += 1
        return count

    def _new_queue(self, queue: str, **kwargs: Any) -> None:
        self._queue_folder(queue).mkdir(mode=DIR_MODE, exist_ok=True)

    def _has_queue(self, queue: str, **kwargs: Any) -> bool:
        return self._queue_folder(queue).is_dir()

    def _delete(self, queue: str, *args: Any, **kwargs: Any) -> None:
        if args:  # kombu passes (exchange, routing_key, pattern, queue) per binding
            exchange, routing_key, pattern = (*args, "", "", "")[:3]
            self._update_table(
                exchange,
                lambda bindings: [
                    b for b in bindings if b != [routing_key or "", pattern or "", queue]
                ],
            )
        self._purge(queue)
        with contextlib.suppress(OSError):
            self._queue_folder(queue).rmdir()

    def _sweep_when_due(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_INTERVAL_S
        files.delete_expired(self.root)

    # -- exchanges -----------------------------------------------------------------

    def _read_exchange(self, exchange: str) -> dict[str, Any]:
        return files.read_exchange(files.exchange_file(self.root, exchange))

    def _update_table(self, exchange: str, change: Any, *, type_name: str | None = None) -> None:
        path = files.exchange_file(self.root, exchange)
        files.update_exchange(self.root, path, change, type_name)

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        binding = [routing_key or "", pattern or "", queue or ""]
        declared: dict[str, Any] = self.state.exchanges or {}
        type_name = declared.get(exchange, {}).get("type")
        self._update_table(
            exchange,
            lambda bindings: bindings if binding in bindings else [binding, *bindings],
            type_name=type_name,
        )

    def _put_fanout(
        self, exchange: str, message: dict[str, Any], routing_key: str, **kwargs: Any
    ) -> None:
        for _, _, queue in self.get_table(exchange):
            self._put(queue, message, **kwargs)

    def get_table(self, exchange: str) -> list[tuple[str, str, str]]:
        bindings = self._read_exchange(exchange).get("bindings") or []
        return [(str(key), str(pattern), str(queue)) for key, pattern, queue in bindings]

    def typeof(self, exchange: str, default: str = "direct") -> Any:
        """A publisher that never declared an exchange still routes by its stored type, so a
        fanout reaches every bound queue (kombu's filesystem transport treats it as direct)."""
        if exchange and exchange not in (self.state.exchanges or {}):
            stored = self._read_exchange(exchange).get("type")
            if stored in self.exchange_types:
                return self.exchange_types[stored]
        return super().typeof(exchange, default)


class Transport(virtual.Transport):
    Channel = Channel
    polling_interval = DEFAULT_POLLING_INTERVAL_S
    default_port = 0
    driver_type = "spool"
    driver_name = "spool"
    implements = virtual.Transport.implements.extend(
        asynchronous=False,
        exchange_type=frozenset(["direct", "topic", "fanout"]),
    )

    @property
    def default_connection_params(self) -> dict[str, Any]:
        # No host to default to: kombu would otherwise warn on every connection that it
        # "reverts to localhost".
        return {"port": self.default_port}

    def driver_version(self) -> str:
        return "1"
