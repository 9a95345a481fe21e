"""claims.protocol stays pure Python: no Django, Celery, kombu or ninja (docs/design.md §3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import claims.protocol
from tests.purity import absolute_imports, is_forbidden

PROTOCOL_DIR = Path(claims.protocol.__file__).resolve().parent
REPO_ROOT = PROTOCOL_DIR.parent.parent
SOURCES = sorted(PROTOCOL_DIR.rglob("*.py"))


def _is_forbidden(module: str) -> bool:
    return is_forbidden(module, ("claims.protocol",))


def test_the_protocol_package_has_sources():
    """The walk below sees the protocol modules (guards against an empty glob)."""
    names = {path.name for path in SOURCES}
    assert {"__init__.py", "registry.py", "timing.py", "testing.py"} <= names


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: path.name)
def test_no_framework_import_in_protocol_module(path):
    """No protocol module imports Django, Celery, kombu, ninja or claims outside claims.protocol."""
    forbidden = [name for name in absolute_imports(path) if _is_forbidden(name)]

    assert forbidden == [], f"{path.relative_to(REPO_ROOT)} imports {forbidden}"


def test_importing_the_protocol_loads_no_framework():
    """A fresh interpreter importing claims.protocol (and its testing fakes) loads no framework."""
    code = (
        "import sys, claims.protocol, claims.protocol.testing; "
        "print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in {'django', 'celery', 'kombu', 'ninja'}))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )

    assert completed.stdout.strip() == "[]"
