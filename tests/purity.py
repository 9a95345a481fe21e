"""The pure packages' import rule, read from their source: which modules a file imports."""

from __future__ import annotations

import ast
from pathlib import Path

# The frameworks no pure package may import (claims/protocol, claims/query).
FRAMEWORKS = frozenset({"django", "celery", "kombu", "ninja"})


def absolute_imports(path: Path) -> list[str]:
    """Every module ``path`` imports by absolute name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def is_forbidden(module: str, allowed_claims: tuple[str, ...]) -> bool:
    """A framework, or a part of claims outside ``allowed_claims``."""
    root = module.split(".")[0]
    in_claims = any(module == name or module.startswith(name + ".") for name in allowed_claims)
    return root in FRAMEWORKS or (root == "claims" and not in_claims)
