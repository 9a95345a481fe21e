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

Delivery is exactly once while consumers live. A consumer that dies between its claim and
its read leaves the file in ``claimed/``; the next channel opened on the root puts it back
(at least once). As on kombu's other virtual transports, a message already handed to a
consumer's memory dies with it: what weftboard sends this way (ticks, adopt orders) either
expires or is sent again.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import logging
import os
import re
import time
from collections import deque
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import virtual
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps, loads

from weftboard.broker.guard import UndecodableMessage, decode_envelope, record_rejection

logger = logging.getLogger("weftboard.broker")

# Queue and exchange names become file names: no separators, no "..", nothing a shell or
# another platform would read differently. '~' is kept out: it joins a claimed file's name.
NAME_RE = re.compile(r"\A(?!\.+\Z)[A-Za-z0-9@._-]{1,200}\Z")
MESSAGE_SUFFIX = ".msg"
# A listing is read in slices, so a backlog of many thousand files is not sorted per message.
LISTING_SLICE = 512
# How often a consumer deletes expired messages in every queue, including queues whose
# consumer is gone (a dead engine's ticks would otherwise stay forever).
SWEEP_INTERVAL_S = 60.0
DEFAULT_POLLING_INTERVAL_S = 0.1

_sequence = itertools.count()


def _checked_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ChannelError(f"invalid {kind} name for the spool transport: {name!r}")
    return name


def _expires_ms(message: dict[str, Any]) -> int | None:
    """When a message stops being worth delivering: Celery's ``expires`` header (ISO 8601)."""
    expires = (message.get("headers") or {}).get("expires")
    if not isinstance(expires, str):
        return None
    try:
        moment = datetime.fromisoformat(expires)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None  # a naive time is ambiguous; let the consumer judge it
    return int(moment.timestamp() * 1000)


def _name_expired(name: str, now_ms: float) -> bool:
    stem = name[: -len(MESSAGE_SUFFIX)]
    _, marker, expires = stem.rpartition("-x")
    # isascii(): a name from another program may hold digits int() refuses ("²").
    return bool(marker) and expires.isascii() and expires.isdigit() and int(expires) < now_ms


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Channel(virtual.Channel):
    supports_fanout = True

    def __init__(self, connection: Any, **kwargs: Any) -> None:
        options = connection.client.transport_options
        folder = options.get("spool_folder")
        if not folder:
            raise ChannelError("the spool transport needs the transport option 'spool_folder'")
        self.root = Path(folder)
        for sub in ("queues", "tmp", "claimed", "rejected", "exchanges"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._ready: dict[str, deque[str]] = {}
        self._next_sweep = 0.0
        super().__init__(connection, **kwargs)
        self._restore_orphans()

    # -- messages ------------------------------------------------------------------

    def _queue_folder(self, queue: str) -> Path:
        return self.root / "queues" / _checked_name("queue", queue)

    def _put(self, queue: str, message: dict[str, Any], **kwargs: Any) -> None:
        folder = self._queue_folder(queue)
        name = f"{time.time_ns():020d}-{os.getpid()}-{next(_sequence):09d}"
        expires = _expires_ms(message)
        if expires is not None:
            name += f"-x{expires}"
        name += MESSAGE_SUFFIX
        temporary = self.root / "tmp" / name
        try:
            with open(temporary, "xb") as file:
                file.write(str_to_bytes(dumps(message)))
            try:
                os.replace(temporary, folder / name)
            except FileNotFoundError:
                folder.mkdir(parents=True, exist_ok=True)
                os.replace(temporary, folder / name)
        except OSError as error:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise ChannelError(f"cannot publish to queue {queue!r}: {error}") from error

    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        self._sweep_when_due()
        folder = self._queue_folder(queue)
        ready = self._ready.get(queue)
        if not ready:
            ready = self._ready[queue] = deque(self._list_ready(folder))
        now_ms = time.time() * 1000
        while ready:
            name = ready.popleft()
            if _name_expired(name, now_ms):
                with contextlib.suppress(OSError):
                    (folder / name).unlink()
                continue
            claimed = self.root / "claimed" / f"{os.getpid()}~{queue}~{name}"
            try:
                os.rename(folder / name, claimed)
            except FileNotFoundError:
                continue  # another consumer claimed it first
            try:
                raw = claimed.read_bytes()
                payload = decode_envelope(raw)
            except UndecodableMessage as error:
                self._set_aside(queue, name, claimed, str(error))
                continue
            except OSError as error:
                raise ChannelError(f"cannot read {claimed}: {error}") from error
            claimed.unlink()
            return payload
        raise Empty()

    def _list_ready(self, folder: Path) -> list[str]:
        try:
            names = [name for name in os.listdir(folder) if name.endswith(MESSAGE_SUFFIX)]
        except FileNotFoundError:
            return []
        names.sort()
        return names[:LISTING_SLICE]

    def _set_aside(self, queue: str, name: str, claimed: Path, reason: str) -> None:
        target = self.root / "rejected" / queue / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(claimed, target)
            where = f"moved to {target}"
        except OSError as error:
            with contextlib.suppress(OSError):
                claimed.unlink()
            where = f"dropped ({error})"
        record_rejection(queue, reason, where=where)

    def _size(self, queue: str) -> int:
        folder = self._queue_folder(queue)
        try:
            return sum(name.endswith(MESSAGE_SUFFIX) for name in os.listdir(folder))
        except FileNotFoundError:
            return 0

    def _purge(self, queue: str) -> int:
        folder = self._queue_folder(queue)
        self._ready.pop(queue, None)
        count = 0
        for name in self._list_all(folder):
            with contextlib.suppress(FileNotFoundError):
                (folder / name).unlink()
                count += 1
        return count

    def _list_all(self, folder: Path) -> list[str]:
        try:
            return [name for name in os.listdir(folder) if name.endswith(MESSAGE_SUFFIX)]
        except FileNotFoundError:
            return []

    def _new_queue(self, queue: str, **kwargs: Any) -> None:
        self._queue_folder(queue).mkdir(exist_ok=True)

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

    # -- upkeep --------------------------------------------------------------------

    def _restore_orphans(self) -> None:
        """Put back what consumers that died mid-read had claimed."""
        claimed = self.root / "claimed"
        for entry in os.listdir(claimed):
            pid, _, rest = entry.partition("~")
            queue, _, name = rest.partition("~")
            if not (pid.isascii() and pid.isdigit() and name and NAME_RE.match(queue)):
                continue
            if _pid_alive(int(pid)):
                continue
            folder = self.root / "queues" / queue
            folder.mkdir(exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                os.rename(claimed / entry, folder / name)
                logger.warning("queue %r: restored a message a dead consumer had claimed", queue)

    def _sweep_when_due(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_INTERVAL_S
        now_ms = time.time() * 1000
        for folder in (self.root / "queues").iterdir():
            for name in self._list_all(folder):
                if _name_expired(name, now_ms):
                    with contextlib.suppress(OSError):
                        (folder / name).unlink()

    # -- exchanges -----------------------------------------------------------------

    def _exchange_file(self, exchange: str) -> Path:
        return self.root / "exchanges" / f"{_checked_name('exchange', exchange)}.json"

    def _read_exchange(self, exchange: str) -> dict[str, Any]:
        try:
            data = loads(self._exchange_file(exchange).read_bytes())
        except FileNotFoundError:
            return {"type": None, "bindings": []}
        return data if isinstance(data, dict) else {"type": None, "bindings": []}

    @contextlib.contextmanager
    def _exchange_lock(self, exchange: str) -> Iterator[None]:
        lock_path = self._exchange_file(exchange).with_suffix(".lock")
        with open(lock_path, "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _update_table(self, exchange: str, change: Any, *, type_name: str | None = None) -> None:
        """Read, change and replace an exchange's bindings under its lock; readers never lock,
        because they only ever see a whole file."""
        path = self._exchange_file(exchange)
        with self._exchange_lock(exchange):
            data = self._read_exchange(exchange)
            data["bindings"] = change(list(data.get("bindings") or []))
            if type_name:
                data["type"] = type_name
            temporary = self.root / "tmp" / f"{path.name}.{os.getpid()}.{next(_sequence)}"
            temporary.write_bytes(str_to_bytes(dumps(data)))
            os.replace(temporary, path)

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
