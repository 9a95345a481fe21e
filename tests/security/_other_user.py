"""Another local user, unprivileged, tries to read every file and list every folder of a
var folder: what it got, and the modes the owner sees.

The attempts run as ``nobody`` through ``setpriv`` (or ``runuser``), so the test process
must be root, as it is in CI. Elsewhere the test skips with the reason; with
WEFTBOARD_REQUIRE_SERVICES=1 (CI) a missing tool or user fails it instead.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import require_service

OTHER_USER = "nobody"

# Runs as the other user: its uid, then for each "d:PATH" (list it) or "f:PATH" (read its
# first byte) one line "STATUS<TAB>PATH<TAB>ERROR". Only shell tools, so the test needs no
# interpreter the other user can run.
ATTEMPTS = r"""
id -u
for arg; do
    kind=${arg%%:*}
    path=${arg#*:}
    if [ "$kind" = d ]; then
        error=$(ls -a -- "$path" 2>&1 >/dev/null)
    else
        error=$(head -c 1 -- "$path" 2>&1 >/dev/null)
    fi
    printf '%s\t%s\t%s\n' "$?" "$path" "$error" | tr '\n' ' ' | sed 's/ $//'
    echo
done
"""


@dataclass(frozen=True)
class Attempt:
    path: str
    status: int
    error: str

    @property
    def refused(self) -> bool:
        return self.status != 0 and "Permission denied" in self.error


def as_other_user_argv() -> list[str]:
    """The command prefix that runs a program as ``nobody``; skips (or fails in CI) where
    that cannot be done."""
    require_service(
        "root, to run a second user",
        os.geteuid() == 0,
        "the test must run as root to try the files as an unprivileged user (CI does)",
    )
    try:
        user = pwd.getpwnam(OTHER_USER)
    except KeyError:
        user = None
    require_service(f"the user {OTHER_USER!r}", user is not None, "no such user on this system")
    assert user is not None
    setpriv, runuser = shutil.which("setpriv"), shutil.which("runuser")
    require_service(
        "setpriv or runuser", bool(setpriv or runuser), "neither is on PATH (util-linux)"
    )
    if setpriv:
        return [
            setpriv,
            f"--reuid={user.pw_uid}",
            f"--regid={user.pw_gid}",
            "--clear-groups",
            "--",
        ]
    assert runuser is not None
    return [runuser, "-u", OTHER_USER, "--"]


def try_as_other_user(prefix: list[str], targets: dict[str, str]) -> list[Attempt]:
    """``targets``: path -> "d" (list it) or "f" (read it). Asserts the attempts really ran
    as the other user."""
    result = subprocess.run(
        [*prefix, "/bin/sh", "-c", ATTEMPTS, "sh", *(f"{k}:{p}" for p, k in targets.items())],
        cwd="/",
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    uid, *lines = result.stdout.splitlines()
    assert int(uid) == pwd.getpwnam(OTHER_USER).pw_uid, result.stdout
    attempts = []
    for line in lines:
        status, path, error = line.split("\t", 2)
        attempts.append(Attempt(path, int(status), error))
    assert len(attempts) == len(targets), result.stdout
    return attempts


@contextmanager
def reachable_folder() -> Iterator[Path]:
    """A new folder every user can enter (0755): what is in it is protected only by its
    own modes. (pytest's tmp_path lies in a folder of root's alone, which would hide
    every file from the other user whatever its mode.) Holds a control file the other user
    must be able to read, proving the attempts can succeed."""
    folder = Path(tempfile.mkdtemp(prefix="weftboard-private-var-"))
    try:
        folder.chmod(0o755)
        control = folder / "control.txt"
        control.write_text("readable by everyone\n")
        control.chmod(0o644)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def entries(root: Path) -> dict[str, str]:
    """Every folder ("d") and file ("f") under ``root``, itself included; symlinks left out
    (their target's mode is what counts, and none point outside in these tests)."""
    found = {str(root): "d"}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            if not path.is_symlink():
                found[str(path)] = "d" if name in dirs else "f"
    return found


def loose_modes(targets: dict[str, str]) -> list[str]:
    """The entries that are not exactly 0700 (folders) or 0600 (anything else); one that
    vanished meanwhile (a consumed spool message, a -wal at its last close) is skipped."""
    loose = []
    for path, kind in targets.items():
        try:
            mode = stat.S_IMODE(os.lstat(path).st_mode)
        except FileNotFoundError:
            continue
        if mode != (0o700 if kind == "d" else 0o600):
            loose.append(f"{oct(mode)} {path}")
    return loose


def assert_private(prefix: list[str], root: Path, required: list[str]) -> None:
    """Every entry under ``root`` is refused to the other user and has its private mode;
    ``required`` (paths relative to ``root``) must be among them."""
    targets = entries(root)
    missing = [name for name in required if str(root / name) not in targets]
    assert missing == [], f"not created: {missing}; found {sorted(targets)}"
    control = root.parent / "control.txt"
    attempts = try_as_other_user(prefix, {**targets, str(control): "f"})
    by_path = {attempt.path: attempt for attempt in attempts}
    assert by_path.pop(str(control)).status == 0, "the other user cannot read anything at all"
    readable = [
        f"{a.path} (exit {a.status}: {a.error or 'read'})"
        for a in by_path.values()
        if not a.refused
    ]
    assert readable == [], "another user could read:\n" + "\n".join(readable)
    assert loose_modes(targets) == []
