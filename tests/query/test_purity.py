"""claims.query is pure Python: no framework, and no part of claims but the protocol."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import claims.query
from claims.models.workflows import WorkflowStatus
from claims.protocol.states import CLAIM_STATES
from claims.query import STATES, WORKFLOW_STATUSES
from tests.purity import absolute_imports, is_forbidden

QUERY_DIR = Path(claims.query.__file__).resolve().parent
REPO_ROOT = QUERY_DIR.parent.parent
SOURCES = sorted(QUERY_DIR.rglob("*.py"))


def _is_forbidden(module: str) -> bool:
    return is_forbidden(module, ("claims.query", "claims.protocol"))


def test_the_query_package_has_sources():
    assert {"__init__.py", "grammar.py", "parser.py", "evaluate.py"} <= {p.name for p in SOURCES}


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: path.name)
def test_no_framework_import_in_query_module(path):
    forbidden = [name for name in absolute_imports(path) if _is_forbidden(name)]

    assert forbidden == [], f"{path.relative_to(REPO_ROOT)} imports {forbidden}"


def test_importing_the_query_language_loads_no_framework():
    code = (
        "import sys, claims.query; claims.query.parse('epoch = 1'); "
        "print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in {'django', 'celery', 'kombu', 'ninja'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )

    assert result.stdout.strip() == "[]"


def test_workflow_statuses_are_the_models():
    assert list(WORKFLOW_STATUSES) == [status.value for status in WorkflowStatus]


def test_states_are_the_protocols_and_the_two_flags():
    expected = (*CLAIM_STATES, "stranded", "attention")

    assert expected == STATES
