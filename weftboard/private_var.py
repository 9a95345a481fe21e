"""Files under the var folder are their owner's alone: 0700 folders, 0600 files.

The embedded database holds live session keys and password hashes, and the spool holds
every message between processes, so another local user must be able to read none of it.
``./scripts/run`` sets ``umask 077`` for itself and every child, but a process may be
started another way (a bare ``celery`` command, a test, a harness) with the usual 022 or
even 000: each place that creates a file here passes its mode explicitly instead.

``python -m weftboard.private_var FOLDER`` tightens an existing folder that is too open
(``./scripts/run`` does it at every start) and says so in one line.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path
from typing import Any

DIR_MODE = 0o700
FILE_MODE = 0o600
# Read, write or search by the group or by others.
OPEN_BITS = 0o077
# SQLite's side files: it creates them with the database file's own mode.
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def make_private_dir(path: Path) -> None:
    """Create ``path`` and each missing parent 0700; an existing folder is left as it is.

    ``Path.mkdir(parents=True)`` gives the parents it creates the default 0777 less the
    umask, so each missing level is made here with the mode.
    """
    missing: list[Path] = []
    level = path
    while not level.exists():
        missing.append(level)
        level = level.parent
    for folder in reversed(missing):
        # mkdir's mode can only lose bits to the umask: the folder is never more open.
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=DIR_MODE)


def create_private_file(path: Path) -> None:
    """Create an empty file 0600 if it is missing (never truncates an existing one)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))


def close_to_others(path: Path) -> bool:
    """Take the group's and others' bits off ``path`` (never through a symlink); True if
    it had any. A missing path is not an error: spool files come and go."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(mode) or not mode & OPEN_BITS:
        return False
    with contextlib.suppress(FileNotFoundError):
        os.chmod(path, stat.S_IMODE(mode) & ~OPEN_BITS)
    return True


def tighten_tree(root: Path) -> int:
    """Take the group's and others' bits off ``root`` and everything below it; the number
    of entries that had any.

    The walk holds each folder open by descriptor and never follows a symlink, so a link
    inside cannot lead it to change anything outside ``root``; the links themselves are
    left alone (their mode means nothing). A folder is closed before its entries, so once
    it is private nobody else can swap an entry for a link while the walk goes on.
    """
    changed = 0
    for _, _, names, folder_fd in os.fwalk(root.resolve()):
        mode = os.fstat(folder_fd).st_mode
        if mode & OPEN_BITS:
            os.fchmod(folder_fd, stat.S_IMODE(mode) & ~OPEN_BITS)
            changed += 1
        for name in names:
            try:
                mode = os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mode
                if stat.S_ISLNK(mode) or not mode & OPEN_BITS:
                    continue
                os.chmod(name, stat.S_IMODE(mode) & ~OPEN_BITS, dir_fd=folder_fd)
            except FileNotFoundError:
                continue  # a spool message consumed meanwhile
            changed += 1
    return changed


def close_sqlite_files(sender: Any, connection: Any, **kwargs: Any) -> None:
    """``connection_created``: the embedded database and its side files are 0600.

    SQLite creates a database file 0644 whatever the umask, and its -wal, -shm and
    -journal with that file's mode, so a test database (which Django deletes and creates
    again) or one a process made before this rule are closed here; the default database is
    already created 0600 by the settings. Only files under the var folder: a database
    placed elsewhere keeps the modes its operator gave it.
    """
    if connection.vendor != "sqlite":
        return
    from django.conf import settings

    name = str(connection.settings_dict.get("NAME") or "")
    if not name or name == ":memory:" or name.startswith("file:"):
        return
    database = Path(name).resolve()
    if not database.is_relative_to(Path(settings.VAR_DIR)):
        return
    for path in (database, *(Path(f"{database}{suffix}") for suffix in SQLITE_SIDECARS)):
        close_to_others(path)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m weftboard.private_var FOLDER", file=sys.stderr)
        return 2
    root = Path(argv[0])
    if not root.is_dir():
        print(f"weftboard: {root} is not a folder", file=sys.stderr)
        return 2
    try:
        changed = tighten_tree(root)
    except PermissionError as error:
        print(
            f"weftboard: cannot make {root} private to its owner: {error} "
            "(is it another user's? chown it, or point WEFTBOARD_VAR_DIR elsewhere)",
            file=sys.stderr,
        )
        return 1
    if changed:
        print(
            f"weftboard: {root} was open to other users; closed {changed} of its files and "
            "folders to everyone but their owner"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
