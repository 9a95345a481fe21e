"""The registry of workflow types: ``@workflow("order")`` maps a type name to its function.

An engine only claims workflows whose type it can run (``is_type_registered``
is the reclaim target's gate). Importing ``claims.runtime.demo_workflows`` registers the
demo types; ``load_workflow_modules`` imports whatever modules an engine runs.

It stands below both of its askers, the runtime (which drives the functions) and the
services (which refuse a type no engine can run), and imports neither: a registered
function is called with the runtime's ``claims.runtime.context.WorkflowContext``, but the
registry only keeps it, so it names no type of the runtime.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

# Called with a claims.runtime.context.WorkflowContext (see the module's docstring).
WorkflowFunction = Callable[[Any], Any]
# Raises claims.protocol.errors.InvalidInputError, naming the field, for input the type
# cannot run; returns nothing.
InputCheck = Callable[[Any], None]
F = TypeVar("F", bound=WorkflowFunction)

DEFAULT_WORKFLOW_MODULES = ("claims.runtime.demo_workflows",)
WORKFLOW_TYPE_MAX_LENGTH = 100  # Workflow.workflow_type

_lock = threading.Lock()
_functions: dict[str, WorkflowFunction] = {}
_input_checks: dict[str, InputCheck] = {}


class UnknownWorkflowTypeError(LookupError):
    def __init__(self, workflow_type: str) -> None:
        super().__init__(f"no workflow function is registered for type {workflow_type!r}")
        self.workflow_type = workflow_type


class DuplicateWorkflowTypeError(ValueError):
    def __init__(self, workflow_type: str, existing: str) -> None:
        super().__init__(f"workflow type {workflow_type!r} is already registered by {existing}")
        self.workflow_type = workflow_type
        self.existing = existing


def _origin(fn: WorkflowFunction) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def workflow(name: str, *, check_input: InputCheck | None = None) -> Callable[[F], F]:
    """Register the decorated function as the code of workflow type ``name``.

    ``check_input``, when given, is asked before a workflow of the type starts (the API
    answers 422 with its message, and nothing is written); the function should call it
    too, for a workflow written by another program. Registering the same function again
    (a module reloaded) is allowed; another function under a taken name raises
    DuplicateWorkflowTypeError.
    """
    if not isinstance(name, str) or not name or len(name) > WORKFLOW_TYPE_MAX_LENGTH:
        raise ValueError(
            f"a workflow type name is a non-empty string of at most "
            f"{WORKFLOW_TYPE_MAX_LENGTH} characters, not {name!r}"
        )

    def register(fn: F) -> F:
        with _lock:
            existing = _functions.get(name)
            if existing is not None and _origin(existing) != _origin(fn):
                raise DuplicateWorkflowTypeError(name, _origin(existing))
            _functions[name] = fn
            if check_input is not None:
                _input_checks[name] = check_input
        return fn

    return register


def is_type_registered(name: str) -> bool:
    with _lock:
        return name in _functions


def workflow_function(name: str) -> WorkflowFunction:
    """The function of a type; raises UnknownWorkflowTypeError for an unregistered one."""
    with _lock:
        fn = _functions.get(name)
    if fn is None:
        raise UnknownWorkflowTypeError(name)
    return fn


def check_workflow_input(name: str, value: Any) -> None:
    """Ask the type's input check, if it has one; raises InvalidInputError."""
    with _lock:
        check = _input_checks.get(name)
    if check is not None:
        check(value)


def registered_types() -> list[str]:
    with _lock:
        return sorted(_functions)


def load_workflow_modules(modules: Iterable[str] = DEFAULT_WORKFLOW_MODULES) -> list[str]:
    """Import the modules that define an engine's workflow types; returns the types known."""
    for module in modules:
        importlib.import_module(module)
    return registered_types()
