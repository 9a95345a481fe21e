"""The spool's files: message names, publishing and claiming by rename, upkeep, exchanges.

The layout and why each step is a rename are in ``weftboard.broker.spool``; this module
holds the file operations, and the kombu Channel there turns them into a transport.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from kombu.exceptions import ChannelError
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps, loads

from claims.engine.broker_guard import record_rejection
from weftboard.private_var import DIR_MODE, FILE_MODE, close_to_others, make_private_dir

logger = logging.getLogger("weftboard.broker")

# Queue and exchange names become file names: no separators, no "..", nothing a shell or
# another platform would read differently. '~' is kept out: it joins a claimed file's name.
NAME_RE = re.compile(r"\A(?!\.+\Z)[A-Za-z0-9@._-]{1,200}\Z")
MESSAGE_SUFFIX = ".msg"
# A listing is read in slices, so a backlog of many thousand files is not sorted per message.
LISTING_SLICE = 512
SUBFOLDERS = ("queues", "tmp", "claimed", "rejected", "exchanges")

_sequence = itertools.count()

Bindings = list[list[str]]


def make_folders(root: Path) -> None:
    """The root and its subfolders, 0700; ones an older version left open are closed."""
    make_private_dir(root)
    close_to_others(root)
    for sub in SUBFOLDERS:
        (root / sub).mkdir(mode=DIR_MODE, exist_ok=True)
        close_to_others(root / sub)


def create_file(path: Path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_EXCL) -> int:
    """Open a new file 0600, not with the mode ``open()`` would take from the umask."""
    return os.open(path, flags, FILE_MODE)


def checked_name(kind: str, name: str) -> str:
    """``name`` if it is safe as a file name, else a ChannelError naming the ``kind``."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ChannelError(f"invalid {kind} name for the spool transport: {name!r}")
    return name


def expires_ms(message: dict[str, Any]) -> int | None:
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


def name_expired(name: str, now_ms: float) -> bool:
    """Whether a message file's name says it expired before ``now_ms``."""
    stem = name[: -len(MESSAGE_SUFFIX)]
    _, marker, expires = stem.rpartition("-x")
    # isascii(): a name from another program may hold digits int() refuses ("²").
    return bool(marker) and expires.isascii() and expires.isdigit() and int(expires) < now_ms


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def message_name(message: dict[str, Any]) -> str:
    """A new message's file name: oldest first when sorted, its expiry in the name."""
    name = f"{time.time_ns():020d}-{os.getpid()}-{next(_sequence):09d}"
    expires = expires_ms(message)
    if expires is not None:
        name += f"-x{expires}"
    return name + MESSAGE_SUFFIX


def publish(root: Path, folder: Path, message: dict[str, Any]) -> None:
    """Write the message under ``tmp/`` and rename the whole file into its queue folder."""
    name = message_name(message)
    temporary = root / "tmp" / name
    try:
        with os.fdopen(create_file(temporary), "wb") as file:
            file.write(str_to_bytes(dumps(message)))
        try:
            os.replace(temporary, folder / name)
        except FileNotFoundError:
            make_private_dir(folder)
            os.replace(temporary, folder / name)
    except OSError as error:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise ChannelError(f"cannot publish to queue {folder.name!r}: {error}") from error


def list_all(folder: Path) -> list[str]:
    try:
        return [name for name in os.listdir(folder) if name.endswith(MESSAGE_SUFFIX)]
    except FileNotFoundError:
        return []


def list_ready(folder: Path) -> list[str]:
    """The oldest slice of a queue's messages, oldest first."""
    names = list_all(folder)
    names.sort()
    return names[:LISTING_SLICE]


def claim(root: Path, folder: Path, queue: str, name: str) -> Path | None:
    """Rename a ready message into ``claimed/`` for this process; None if another won it."""
    claimed = root / "claimed" / f"{os.getpid()}~{queue}~{name}"
    try:
        os.rename(folder / name, claimed)
    except FileNotFoundError:
        return None
    return claimed


def unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def set_aside(root: Path, queue: str, name: str, claimed: Path, reason: str) -> None:
    """Keep a message that did not decode under ``rejected/`` for a person, and count it."""
    target = root / "rejected" / queue / name
    try:
        make_private_dir(target.parent)
        os.replace(claimed, target)
        where = f"moved to {target}"
    except OSError as error:
        unlink_quietly(claimed)
        where = f"dropped ({error})"
    record_rejection(queue, reason, where=where)


def restore_orphans(root: Path) -> None:
    """Put back what consumers that died mid-read had claimed."""
    claimed = root / "claimed"
    for entry in os.listdir(claimed):
        pid, _, rest = entry.partition("~")
        queue, _, name = rest.partition("~")
        if not (pid.isascii() and pid.isdigit() and name and NAME_RE.match(queue)):
            continue
        if pid_alive(int(pid)):
            continue
        folder = root / "queues" / queue
        folder.mkdir(mode=DIR_MODE, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.rename(claimed / entry, folder / name)
            logger.warning("queue %r: restored a message a dead consumer had claimed", queue)


def delete_expired(root: Path) -> None:
    """Delete expired messages in every queue, including queues whose consumer is gone."""
    now_ms = time.time() * 1000
    for folder in (root / "queues").iterdir():
        for name in list_all(folder):
            if name_expired(name, now_ms):
                unlink_quietly(folder / name)


# -- exchanges ---------------------------------------------------------------------


def exchange_file(root: Path, exchange: str) -> Path:
    return root / "exchanges" / f"{checked_name('exchange', exchange)}.json"


def read_exchange(path: Path) -> dict[str, Any]:
    try:
        data = loads(path.read_bytes())
    except FileNotFoundError:
        return {"type": None, "bindings": []}
    return data if isinstance(data, dict) else {"type": None, "bindings": []}


@contextlib.contextmanager
def exchange_lock(path: Path) -> Iterator[None]:
    with os.fdopen(create_file(path.with_suffix(".lock"), os.O_WRONLY | os.O_CREAT), "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def update_exchange(
    root: Path, path: Path, change: Callable[[Bindings], Bindings], type_name: str | None
) -> None:
    """Read, change and replace an exchange's bindings under its lock; readers never lock,
    because they only ever see a whole file."""
    with exchange_lock(path):
        data = read_exchange(path)
        data["bindings"] = change(list(data.get("bindings") or []))
        if type_name:
            data["type"] = type_name
        temporary = root / "tmp" / f"{path.name}.{os.getpid()}.{next(_sequence)}"
        unlink_quietly(temporary)  # left by a process that died here with this pid
        with os.fdopen(create_file(temporary), "wb") as file:
            file.write(str_to_bytes(dumps(data)))
        os.replace(temporary, path)
